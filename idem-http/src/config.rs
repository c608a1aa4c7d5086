//! What the layer does: its settings, shared by every service it makes, and their defaults.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;
use http::{HeaderName, Method, StatusCode};
use idem_core::Idempotency;

use crate::request::scope::{ScopeSecret, Unscoped};
use crate::request::shared_bodies::SharedBodies;
use crate::response::hook::ResponseHook;

/// The largest request body the layer reads by default: 1 MiB.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 1024 * 1024;

/// The largest response body the layer stores by default: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BODY: usize = 1024 * 1024;

/// How long the layer goes on reading a streamed response once its client has gone, so that
/// the retry can get it whole, unless set otherwise: 10 seconds.
pub const DEFAULT_ABANDONED_STREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// The name keys are stored and measured under, next to the namespace and scope, unless
/// [`name`](crate::IdempotencyLayerBuilder::name) says otherwise: `http`.
pub const DEFAULT_NAME: &str = "http";

/// Reads the scope of a request, or says which request extension it lacks.
type ScopeFn = dyn Fn(&Parts) -> Result<Option<String>, ScopeMissing> + Send + Sync;

/// Why a request's scope cannot be read: the layer is set up to read it from what the request
/// lacks.
pub(crate) enum ScopeMissing {
    /// The request extension the scope is taken from, by its type name, is missing.
    Extension(&'static str),
    /// On actix-web, the scope is read by a [`scope`](crate::IdempotencyLayerBuilder::scope)
    /// closure, which would see the request's head without its extensions.
    #[cfg(feature = "actix-web")]
    ActixExtensionsUnseen,
}

impl ScopeMissing {
    /// What is missing, for a log.
    pub(crate) fn describe(&self) -> String {
        match self {
            ScopeMissing::Extension(extension) => {
                format!("the request lacks the extension `{extension}`")
            }
            #[cfg(feature = "actix-web")]
            ScopeMissing::ActixExtensionsUnseen => {
                "a `scope` closure cannot see an actix-web request's extensions".to_owned()
            }
        }
    }
}

/// Reads the scope of an actix-web request, whose extensions its head lacks.
#[cfg(feature = "actix-web")]
pub(crate) type ActixScopeFn =
    dyn Fn(&actix_web::HttpRequest) -> Result<Option<String>, ScopeMissing> + Send + Sync;

/// The scope from the request extension of type `T`, by its `Display` form.
pub(crate) fn scope_from<T: fmt::Display + 'static>(
    principal: Option<&T>,
) -> Result<Option<String>, ScopeMissing> {
    match principal {
        Some(principal) => Ok(Some(principal.to_string())),
        None => Err(ScopeMissing::Extension(std::any::type_name::<T>())),
    }
}

/// [`scope_from`] an actix-web request's extensions.
#[cfg(feature = "actix-web")]
pub(crate) fn actix_scope_from<T: fmt::Display + 'static>(
    request: &actix_web::HttpRequest,
) -> Result<Option<String>, ScopeMissing> {
    use actix_web::HttpMessage;
    scope_from(request.extensions().get::<T>())
}
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

/// The layer's settings, shared by every service it makes.
pub(crate) struct Config {
    pub(crate) idem: Idempotency,
    /// The name keys are stored and measured under.
    pub(crate) name: String,
    /// Called with every replay before it is sent.
    pub(crate) response_hook: Option<Arc<ResponseHook>>,
    pub(crate) methods: Vec<Method>,
    pub(crate) require_key: bool,
    pub(crate) scope: Arc<ScopeFn>,
    /// What the actix-web middleware reads instead of `scope`, when the scope is taken from a
    /// request extension.
    #[cfg(feature = "actix-web")]
    pub(crate) actix_scope: Option<Arc<ActixScopeFn>>,
    /// Whether `scope` is still the default digest of `Authorization`.
    pub(crate) scope_is_default: bool,
    pub(crate) scope_secret: Option<ScopeSecret>,
    pub(crate) unscoped: Unscoped,
    pub(crate) fingerprint_headers: Vec<HeaderName>,
    pub(crate) replay_headers: Vec<HeaderName>,
    pub(crate) max_request_body: usize,
    pub(crate) max_response_body: usize,
    pub(crate) store_when: Arc<StoreWhenFn>,
    pub(crate) mismatch: MismatchStatus,
    pub(crate) retry_after: Duration,
    pub(crate) abandoned_stream_timeout: Duration,
    pub(crate) wait: Option<Duration>,
    pub(crate) ttl: Duration,
    pub(crate) lease: Option<Duration>,
    /// The large request bodies in flight, held once for every duplicate that sent them.
    pub(crate) bodies: SharedBodies,
}

impl Config {
    /// The client's `key` as this layer's logs name it: not at all when the handle hides
    /// clear keys ([`Idempotency::names_keys_by_digest`]), since the engine's own events name the
    /// call by its digest.
    pub(crate) fn logged_key<'a>(&self, key: &'a str) -> Option<&'a str> {
        (!self.idem.names_keys_by_digest()).then_some(key)
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("idem", &self.idem)
            .field("name", &self.name)
            .field("response_hook", &self.response_hook.is_some())
            .field("methods", &self.methods)
            .field("require_key", &self.require_key)
            .field("fingerprint_headers", &self.fingerprint_headers)
            .field("replay_headers", &self.replay_headers)
            .field("max_request_body", &self.max_request_body)
            .field("max_response_body", &self.max_response_body)
            .field("mismatch", &self.mismatch)
            .field("retry_after", &self.retry_after)
            .field("abandoned_stream_timeout", &self.abandoned_stream_timeout)
            .field("wait", &self.wait)
            .field("ttl", &self.ttl)
            .field("lease", &self.lease)
            .field("scope_secret", &self.scope_secret.is_some())
            .field("unscoped", &self.unscoped)
            .finish_non_exhaustive()
    }
}
