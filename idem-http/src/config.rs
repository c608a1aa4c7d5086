//! What the layer does, and the builder that says it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;
use http::{HeaderName, Method, StatusCode};
use idem_core::{Idempotency, DEFAULT_TTL};

use crate::{scope, IdempotencyLayer, DEFAULT_REPLAY_HEADERS};

/// The largest request body the layer reads by default: 1 MiB.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 1024 * 1024;

/// The largest response body the layer stores by default: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BODY: usize = 1024 * 1024;

/// The stable name keys are stored under, next to the namespace and scope.
pub(crate) const KEY_NAME: &str = "http";

type ScopeFn = dyn Fn(&Parts) -> Option<String> + Send + Sync;
type StoreWhenFn = dyn Fn(StatusCode) -> bool + Send + Sync;

/// The status of the answer to a key reused with another request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MismatchStatus {
    /// 422 Unprocessable Content, as the IETF draft says.
    #[default]
    UnprocessableContent,
    /// 400 Bad Request, as Stripe answers.
    BadRequest,
    /// 409 Conflict.
    Conflict,
}

impl MismatchStatus {
    pub(crate) fn status(self) -> StatusCode {
        match self {
            MismatchStatus::UnprocessableContent => StatusCode::UNPROCESSABLE_ENTITY,
            MismatchStatus::BadRequest => StatusCode::BAD_REQUEST,
            MismatchStatus::Conflict => StatusCode::CONFLICT,
        }
    }
}

/// Whether a response with `status` is stored by default: 200 to 499, except the statuses that
/// say "try again" (408, 409, 425, 429), which a retry must be able to get past.
pub fn stored_by_default(status: StatusCode) -> bool {
    matches!(status.as_u16(), 200..=499) && !matches!(status.as_u16(), 408 | 409 | 425 | 429)
}

/// The layer's settings, shared by every service it makes.
pub(crate) struct Config {
    pub(crate) idem: Idempotency,
    pub(crate) methods: Vec<Method>,
    pub(crate) require_key: bool,
    pub(crate) scope: Arc<ScopeFn>,
    pub(crate) fingerprint_headers: Vec<HeaderName>,
    pub(crate) replay_headers: Vec<HeaderName>,
    pub(crate) max_request_body: usize,
    pub(crate) max_response_body: usize,
    pub(crate) store_when: Arc<StoreWhenFn>,
    pub(crate) mismatch: MismatchStatus,
    pub(crate) wait: Option<Duration>,
    pub(crate) ttl: Duration,
    pub(crate) lease: Option<Duration>,
}

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
                methods: vec![Method::POST, Method::PATCH],
                require_key: false,
                scope: Arc::new(scope::authorization_digest),
                fingerprint_headers: Vec::new(),
                replay_headers: DEFAULT_REPLAY_HEADERS
                    .iter()
                    .map(|name| HeaderName::from_static(name))
                    .collect(),
                max_request_body: DEFAULT_MAX_REQUEST_BODY,
                max_response_body: DEFAULT_MAX_RESPONSE_BODY,
                store_when: Arc::new(stored_by_default),
                mismatch: MismatchStatus::default(),
                wait: None,
                ttl: DEFAULT_TTL,
                lease: None,
            },
        }
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
    /// digest of the `Authorization` header, under which a request without `Authorization` is
    /// unscoped: all such requests share one key space.
    ///
    /// The scope is stored in the key: digest anything secret (a session cookie) first.
    pub fn scope<F>(mut self, scope: F) -> Self
    where
        F: Fn(&Parts) -> Option<String> + Send + Sync + 'static,
    {
        self.config.scope = Arc::new(scope);
        self
    }

    /// Request headers that are part of the fingerprint, so that a retry with other values is
    /// refused (none by default).
    pub fn fingerprint_headers(mut self, names: impl IntoIterator<Item = HeaderName>) -> Self {
        self.config.fingerprint_headers = names.into_iter().collect();
        self
    }

    /// Response headers replayed besides the default ones (`content-type`, `location`,
    /// `content-location`, `etag`, `last-modified`, `link`).
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

    /// The largest response body stored, in bytes (1 MiB by default). A larger response
    /// reaches the client unstored, the key is released and a warning is logged.
    pub fn max_response_body(mut self, bytes: usize) -> Self {
        self.config.max_response_body = bytes;
        self
    }

    /// Which response statuses are stored and replayed; the others release the key. By default
    /// [`stored_by_default`]: 200 to 499 except 408, 409, 425 and 429. `|_| true` stores every
    /// response, 5xx included, as Stripe does.
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

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("idem", &self.idem)
            .field("methods", &self.methods)
            .field("require_key", &self.require_key)
            .field("fingerprint_headers", &self.fingerprint_headers)
            .field("replay_headers", &self.replay_headers)
            .field("max_request_body", &self.max_request_body)
            .field("max_response_body", &self.max_response_body)
            .field("mismatch", &self.mismatch)
            .field("wait", &self.wait)
            .field("ttl", &self.ttl)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_and_client_errors_are_stored_but_try_again_answers_are_not() {
        for stored in [200, 201, 204, 302, 400, 404, 422] {
            assert!(
                stored_by_default(StatusCode::from_u16(stored).unwrap()),
                "{stored}"
            );
        }
        for released in [100, 408, 409, 425, 429, 500, 502, 503] {
            assert!(
                !stored_by_default(StatusCode::from_u16(released).unwrap()),
                "{released}"
            );
        }
    }
}
