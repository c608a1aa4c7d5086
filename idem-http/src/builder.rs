//! The builder that says what the layer does, setting by setting.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;
use http::{HeaderName, Method, StatusCode};
use idem_core::{Idempotency, DEFAULT_TTL};

use crate::config::{
    scope_from, Config, MismatchStatus, DEFAULT_ABANDONED_STREAM_TIMEOUT, DEFAULT_MAX_REQUEST_BODY,
    DEFAULT_MAX_RESPONSE_BODY, DEFAULT_NAME,
};
use crate::layer::IdempotencyLayer;
use crate::request::scope::{self, Unscoped};
use crate::request::shared_bodies::SharedBodies;
use crate::response::statuses::{stored_by_default, DEFAULT_RETRY_AFTER};
use crate::response::stored::DEFAULT_REPLAY_HEADERS;

/// Builds an [`IdempotencyLayer`] with settings other than the defaults.
///
/// ```
/// # fn demo(idem: idem_core::Idempotency) {
/// use std::time::Duration;
/// use idem_http::{IdempotencyLayer, MismatchStatus};
///
/// let layer = IdempotencyLayer::builder(idem)
///     .require_key(true)
///     .scope(|parts| {
///         let tenant = parts.headers.get("x-tenant-id")?;
///         Some(tenant.to_str().ok()?.to_owned())
///     })
///     .wait(Duration::from_secs(5))
///     .mismatch_status(MismatchStatus::BadRequest)
///     .build();
/// # let _ = layer; }
/// ```
#[must_use = "call `build` to get the layer"]
pub struct IdempotencyLayerBuilder {
    config: Config,
}

impl IdempotencyLayerBuilder {
    pub(crate) fn new(idem: Idempotency) -> Self {
        IdempotencyLayerBuilder {
            config: Config {
                idem,
                name: DEFAULT_NAME.to_owned(),
                response_hook: None,
                methods: vec![Method::POST, Method::PATCH],
                require_key: false,
                scope: Arc::new(|parts| Ok(scope::authorization_digest(parts))),
                #[cfg(feature = "actix-web")]
                actix_scope: None,
                scope_is_default: true,
                scope_secret: None,
                unscoped: Unscoped::default(),
                fingerprint_headers: Vec::new(),
                replay_headers: DEFAULT_REPLAY_HEADERS
                    .iter()
                    .map(|name| HeaderName::from_static(name))
                    .collect(),
                max_request_body: DEFAULT_MAX_REQUEST_BODY,
                max_response_body: DEFAULT_MAX_RESPONSE_BODY,
                store_when: Arc::new(stored_by_default),
                mismatch: MismatchStatus::default(),
                retry_after: DEFAULT_RETRY_AFTER,
                abandoned_stream_timeout: DEFAULT_ABANDONED_STREAM_TIMEOUT,
                wait: None,
                ttl: DEFAULT_TTL,
                lease: None,
                bodies: SharedBodies::default(),
            },
        }
    }

    /// The name this layer's keys are stored under and its calls are measured under (the
    /// `function` label of idem's metrics, and what `idem list --function` filters by):
    /// [`DEFAULT_NAME`] (`http`) unless set. Name each layer when a service has several (two
    /// routers, two APIs), so that their calls can be told apart. Layers with different names
    /// keep different records: a key sent to both runs once on each. Renaming a layer leaves
    /// its records under the old name, so the retries of requests made before the rename run
    /// again. Give it a name no `#[idempotent]` function on the same handle has: they would
    /// share one key space, where a client's key could take a function's.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.config.name = name.into();
        self
    }

    /// Calls `hook` with every response built from the store (a retry's replay, a waiter's
    /// answer) before it is sent, as Powertools' `response_hook` does: to add a header, say,
    /// or to change what a retry is told. The handler's own first response is not passed to
    /// it, nor the layer's problem answers. The response already carries
    /// `Idempotent-Replayed: true`.
    ///
    /// ```
    /// # fn demo(idem: idem_core::Idempotency) {
    /// use http::HeaderValue;
    ///
    /// let layer = idem_http::IdempotencyLayer::builder(idem)
    ///     .response_hook(|response, _replay| {
    ///         response.headers_mut().insert("cache-control", HeaderValue::from_static("no-store"));
    ///     })
    ///     .build();
    /// # let _ = layer; }
    /// ```
    pub fn response_hook<F>(mut self, hook: F) -> Self
    where
        F: Fn(&mut http::Response<crate::body::Body>, &crate::response::hook::Replay<'_>)
            + Send
            + Sync
            + 'static,
    {
        self.config.response_hook = Some(Arc::new(hook));
        self
    }

    /// The methods whose requests are made idempotent (POST and PATCH unless told otherwise).
    /// Requests with other methods pass through untouched.
    pub fn methods(mut self, methods: impl IntoIterator<Item = Method>) -> Self {
        self.config.methods = methods.into_iter().collect();
        self
    }

    /// Answers 400 to a request of a handled method that carries no `Idempotency-Key`, instead
    /// of passing it through (off by default).
    pub fn require_key(mut self, require: bool) -> Self {
        self.config.require_key = require;
        self
    }

    /// Whose keys these are: a principal or tenant read from the request head, or `None` for a
    /// request without one. Two scopes never share a record. Replaces the default, a SHA-256
    /// digest of the `Authorization` header. A request without a scope is refused unless
    /// [`unscoped`](Self::unscoped) says otherwise.
    ///
    /// The scope is stored in the key: digest anything secret (a session cookie) first.
    ///
    /// Behind an authentication layer, prefer
    /// [`scope_from_extension`](Self::scope_from_extension).
    ///
    /// actix-web keeps a request's extensions on its worker's thread, where this closure cannot
    /// see them: as actix-web middleware, a layer with a `scope` closure refuses keyed
    /// requests (a 500 that says so) unless [`actix_scope`](Self::actix_scope) reads the
    /// scope there.
    pub fn scope<F>(mut self, scope: F) -> Self
    where
        F: Fn(&Parts) -> Option<String> + Send + Sync + 'static,
    {
        self.config.scope = Arc::new(move |parts| Ok(scope(parts)));
        #[cfg(feature = "actix-web")]
        {
            self.config.actix_scope = None;
        }
        self.config.scope_is_default = false;
        self
    }

    /// Takes the scope from the request extension of type `T` that an authentication layer
    /// sets (a user or account id), by its `Display` form. A client whose token was refreshed
    /// keeps its records, which the default digest of `Authorization` does not.
    ///
    /// The authentication layer must run first: put it outside this one (added after it with
    /// axum's `Router::layer`, or before it in a `ServiceBuilder`). A request without the
    /// extension gets a 500 saying so, and nothing runs, whatever
    /// [`unscoped`](Self::unscoped) says: a missing principal there is a misconfiguration.
    ///
    /// ```
    /// # fn demo(idem: idem_core::Idempotency) {
    /// /// Set by the authentication layer on every request it lets through.
    /// #[derive(Clone)]
    /// struct UserId(u64);
    ///
    /// impl std::fmt::Display for UserId {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         write!(f, "user:{}", self.0)
    ///     }
    /// }
    ///
    /// let layer = idem_http::IdempotencyLayer::builder(idem)
    ///     .scope_from_extension::<UserId>()
    ///     .build();
    /// # let _ = layer; }
    /// ```
    pub fn scope_from_extension<T>(mut self) -> Self
    where
        T: fmt::Display + Send + Sync + 'static,
    {
        self.config.scope = Arc::new(|parts| scope_from(parts.extensions.get::<T>()));
        #[cfg(feature = "actix-web")]
        {
            self.config.actix_scope = Some(Arc::new(crate::config::actix_scope_from::<T>));
        }
        self.config.scope_is_default = false;
        self
    }

    /// How the actix-web middleware reads whose keys these are: from the actix-web request,
    /// its extensions included (where an authentication middleware puts its principal),
    /// `None` for a request without one. The counterpart of [`scope`](Self::scope), which
    /// the tower layer (axum, hyper, tonic, poem, salvo) reads; a layer used by both front
    /// ends sets both.
    ///
    /// ```
    /// # fn demo(idem: idem_core::Idempotency) {
    /// use actix_web::HttpMessage;
    ///
    /// /// Set by the authentication middleware on every request it lets through.
    /// #[derive(Clone)]
    /// struct Tenant(String);
    ///
    /// let layer = idem_http::IdempotencyLayer::builder(idem)
    ///     .actix_scope(|request| {
    ///         let tenant = request.extensions().get::<Tenant>().map(|t| t.0.clone());
    ///         tenant.or_else(|| Some(format!("ip:{}", request.peer_addr()?.ip())))
    ///     })
    ///     .build();
    /// # let _ = layer; }
    /// ```
    #[cfg(feature = "actix-web")]
    #[cfg_attr(docsrs, doc(cfg(feature = "actix-web")))]
    pub fn actix_scope<F>(mut self, scope: F) -> Self
    where
        F: Fn(&actix_web::HttpRequest) -> Option<String> + Send + Sync + 'static,
    {
        self.config.actix_scope = Some(Arc::new(move |request| Ok(scope(request))));
        self.config.scope_is_default = false;
        self
    }

    /// What happens to a keyed request without a scope ([`Unscoped::Refused`] by default: a
    /// 400). Under the default scope, that is a request without `Authorization`; under
    /// [`scope`](Self::scope), one for which it returns `None`.
    ///
    /// ```
    /// # fn demo(idem: idem_core::Idempotency) {
    /// use idem_http::Unscoped;
    ///
    /// // Behind the authentication inside the app: let it answer the anonymous ones.
    /// let layer = idem_http::IdempotencyLayer::builder(idem)
    ///     .unscoped(Unscoped::PassedThrough)
    ///     .build();
    /// # let _ = layer; }
    /// ```
    pub fn unscoped(mut self, unscoped: Unscoped) -> Self {
        self.config.unscoped = unscoped;
        self
    }

    /// Keys every scope with `secret`, a secret of this server, before it reaches the store:
    /// the stored scope is the HMAC-SHA256 of the scope under it. Without one, the default
    /// scope is a plain SHA-256 of the `Authorization` header, which anyone who can read the
    /// store can test guessed credentials against, a million guesses a second: a weak
    /// password or API key falls at once. Every server of one service needs the same secret,
    /// and changing it changes every scope, so that records stored before are not found.
    ///
    /// The secret is at least [`MIN_SCOPE_SECRET_BYTES`](crate::MIN_SCOPE_SECRET_BYTES) (32)
    /// bytes, random: a shorter one panics here, so that an unset variable read as empty
    /// never passes for one.
    ///
    /// ```no_run
    /// # fn demo(idem: idem_core::Idempotency) {
    /// let secret = std::env::var("IDEM_SCOPE_SECRET").expect("IDEM_SCOPE_SECRET is set");
    /// let layer = idem_http::IdempotencyLayer::builder(idem)
    ///     .scope_secret(secret)
    ///     .build();
    /// # let _ = layer; }
    /// ```
    pub fn scope_secret(mut self, secret: impl AsRef<[u8]>) -> Self {
        self.config.scope_secret = Some(scope::ScopeSecret::new(secret.as_ref()));
        self
    }

    /// Bounds what each scope (principal) may keep in the store, so that one client cannot
    /// fill it for the others: a request with a new key from a client over its quota gets a
    /// 429 ([`problem::QUOTA_EXCEEDED`](crate::problem::QUOTA_EXCEEDED)) with `Retry-After`,
    /// and nothing runs; its keys already used are still replayed. Requests under
    /// [`Unscoped::Shared`] share one allowance. The same as
    /// [`Idempotency::with_quota`](idem_core::Idempotency::with_quota) on the handle the
    /// layer was built with.
    ///
    /// ```
    /// # fn demo(idem: idem_core::Idempotency) {
    /// use idem_core::ScopeQuota;
    /// // Each client keeps at most 1,000 answers or 16 MiB of them for the TTL.
    /// let layer = idem_http::IdempotencyLayer::builder(idem)
    ///     .quota(ScopeQuota::new().max_records(1_000).max_bytes(16 << 20))
    ///     .build();
    /// # let _ = layer; }
    /// ```
    pub fn quota(mut self, quota: impl idem_core::Quota) -> Self {
        self.config.idem = self.config.idem.clone().with_quota(quota);
        self
    }

    /// Request headers that are part of the fingerprint, so that a retry with other values is
    /// refused (none by default).
    pub fn fingerprint_headers(mut self, names: impl IntoIterator<Item = HeaderName>) -> Self {
        self.config.fingerprint_headers = names.into_iter().collect();
        self
    }

    /// Response headers replayed besides the default ones ([`DEFAULT_REPLAY_HEADERS`]:
    /// `content-type`, `content-encoding`, `vary`, `location`, `content-location`, `etag`,
    /// `last-modified`, `link` and the `grpc-*` status and encoding). `Set-Cookie`, `Date` and
    /// the headers that frame a message (`content-length`, `transfer-encoding`, `connection`...)
    /// are never stored nor replayed, even when named here: a cookie set for the first caller
    /// belongs to that caller alone.
    ///
    /// [`DEFAULT_REPLAY_HEADERS`]: crate::DEFAULT_REPLAY_HEADERS
    pub fn replay_headers(mut self, names: impl IntoIterator<Item = HeaderName>) -> Self {
        self.config.replay_headers.extend(names);
        self
    }

    /// The largest request body read, in bytes (1 MiB by default). A larger one gets a 413
    /// before anything is reserved.
    pub fn max_request_body(mut self, bytes: usize) -> Self {
        self.config.max_request_body = bytes;
        self
    }

    /// The largest response body stored, in bytes (1 MiB by default). A larger response still
    /// reaches the client whole, streamed; it is not stored, but its key is kept as handled, so
    /// a retry gets a 410 ([`problem::RESPONSE_NOT_KEPT`](crate::problem::RESPONSE_NOT_KEPT))
    /// and never a second run.
    pub fn max_response_body(mut self, bytes: usize) -> Self {
        self.config.max_response_body = bytes;
        self
    }

    /// Which response statuses are stored and replayed; the others release the key. By default
    /// [`stored_by_default`]: 200 to 499 except 400, 401, 403, 407, 408, 409, 415, 422, 425,
    /// 429 and 499.
    /// `|_| true` stores every response, 5xx included, as Stripe does.
    ///
    /// A gRPC response is judged by the HTTP status its `grpc-status` maps to (see the
    /// [crate docs](crate#grpc)).
    pub fn store_when<F>(mut self, store: F) -> Self
    where
        F: Fn(StatusCode) -> bool + Send + Sync + 'static,
    {
        self.config.store_when = Arc::new(store);
        self
    }

    /// The status of the answer to a key reused with another request (422 by default).
    pub fn mismatch_status(mut self, status: MismatchStatus) -> Self {
        self.config.mismatch = status;
        self
    }

    /// The `Retry-After` of the 409 for a request still in progress (1 second by default),
    /// never past the running request's lease.
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        self.config.retry_after = retry_after;
        self
    }

    /// How long a streamed response is still read once its client has gone (10 seconds by
    /// default). If it ends within this time and the size limit, it is stored and the retry
    /// gets it whole; otherwise the layer stops reading it and its key is kept as handled,
    /// with a response not kept. A client that takes longer than this to take one frame
    /// counts as gone.
    pub fn abandoned_stream_timeout(mut self, timeout: Duration) -> Self {
        self.config.abandoned_stream_timeout = timeout;
        self
    }

    /// Waits up to `wait` for a request with the same key that is still running, and answers
    /// with its response, instead of a 409 at once (no waiting by default).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.config.wait = Some(wait);
        self
    }

    /// How long a response is replayed, from when it was stored (24 hours by default).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.config.ttl = ttl;
        self
    }

    /// How long a reservation holds without renewal ([`idem_core::DEFAULT_LEASE`] by
    /// default): a request whose server died is retried at the earliest this long after.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.config.lease = Some(lease);
        self
    }

    /// The layer.
    pub fn build(self) -> IdempotencyLayer {
        if self.config.scope_is_default && self.config.scope_secret.is_none() {
            tracing::warn!(
                target: crate::TARGET,
                "keys are scoped by an unkeyed SHA-256 digest of the Authorization header, which \
                 anyone who can read the idempotency store can test guessed credentials \
                 against; set IdempotencyLayerBuilder::scope_secret to key it with a secret of \
                 this server"
            );
        }
        IdempotencyLayer {
            config: Arc::new(self.config),
        }
    }
}

impl fmt::Debug for IdempotencyLayerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdempotencyLayerBuilder")
            .field("config", &self.config)
            .finish()
    }
}
