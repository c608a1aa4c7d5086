//! What the layer tells operators besides its `tracing` events (whose target is
//! [`idem_protocol::log::HTTP`]): `idem_http_requests_total{outcome}`, what it did with each
//! request.

use metrics::{Key, Label, Level, Metadata};

/// The counter's name.
pub const HTTP_REQUESTS_TOTAL: &str = "idem_http_requests_total";

/// What the layer did with a request: the `outcome` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RequestOutcome {
    /// Not the layer's: a method it does not cover, no key (and none required), no scope
    /// (with unscoped requests passed through).
    PassedThrough,
    /// 400: the key header is missing (and required) or invalid.
    KeyRefused,
    /// Refused for its scope: missing from the request, or unscoped requests refused.
    ScopeRefused,
    /// 413: the request body is over the limit.
    TooLarge,
    /// 400: the request body could not be read.
    Unreadable,
    /// The handler ran and its response was stored.
    Executed,
    /// A stored response was replayed.
    Replayed,
    /// The handler's response was streamed to the client while being stored.
    Streamed,
    /// The handler's status is not one the layer stores: passed on, the key released.
    NotStored,
    /// 409: a request with the same key is in flight.
    InProgress,
    /// 422: the key was used with another request.
    Mismatch,
    /// 429: the key's scope is over its quota.
    QuotaExceeded,
    /// 503: the store could not be reached; the handler did not run.
    StoreUnavailable,
    /// The handler ran (or may have) but its response was not stored, or it panicked.
    NotRecorded,
    /// The handler's service failed, or the engine refused otherwise.
    Failed,
    /// The client went away before its answer (the handler, if it started, runs on).
    Disconnected,
}

/// Counts a request's outcome in `idem_http_requests_total` when dropped: a request whose
/// client went away before its answer counts too, as [`RequestOutcome::Disconnected`].
pub(crate) struct Counted(RequestOutcome);

impl Counted {
    pub(crate) fn new() -> Self {
        Counted(RequestOutcome::Disconnected)
    }

    /// What became of the request.
    pub(crate) fn set(&mut self, outcome: RequestOutcome) {
        self.0 = outcome;
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.count();
    }
}

impl RequestOutcome {
    /// The outcome of a request the engine answered with `error`.
    pub(crate) fn of(error: &idem_core::Error) -> Self {
        use idem_core::Error;
        match error {
            Error::InProgress { .. } => RequestOutcome::InProgress,
            Error::Mismatch { .. } => RequestOutcome::Mismatch,
            Error::QuotaExceeded { .. } | Error::StoreFull { .. } => RequestOutcome::QuotaExceeded,
            Error::Store { .. } => RequestOutcome::StoreUnavailable,
            Error::InvalidKey(_) => RequestOutcome::KeyRefused,
            Error::Aborted { .. } => RequestOutcome::NotRecorded,
            error if error.ran_without_record() => RequestOutcome::NotRecorded,
            _ => RequestOutcome::Failed,
        }
    }

    /// Counts one request with this outcome.
    pub(crate) fn count(self) {
        static METADATA: Metadata<'static> =
            Metadata::new(crate::TARGET, Level::INFO, Some(module_path!()));
        let key = &KEYS[self as usize];
        metrics::with_recorder(|recorder| recorder.register_counter(key, &METADATA).increment(1));
    }
}

/// Every value of the `outcome` label of [`HTTP_REQUESTS_TOTAL`], as the README's table explains them.
pub const HTTP_OUTCOMES: [&str; 16] = [
    "passed_through",
    "key_refused",
    "scope_refused",
    "too_large",
    "unreadable",
    "executed",
    "replayed",
    "streamed",
    "not_stored",
    "in_progress",
    "mismatch",
    "quota_exceeded",
    "store_unavailable",
    "not_recorded",
    "failed",
    "disconnected",
];

/// The counter's key for each outcome, built at compile time.
static KEYS: [Key; 16] = {
    macro_rules! key {
        ($index:literal) => {{
            static LABELS: [Label; 1] =
                [Label::from_static_parts("outcome", HTTP_OUTCOMES[$index])];
            Key::from_static_parts(HTTP_REQUESTS_TOTAL, &LABELS)
        }};
    }
    [
        key!(0),
        key!(1),
        key!(2),
        key!(3),
        key!(4),
        key!(5),
        key!(6),
        key!(7),
        key!(8),
        key!(9),
        key!(10),
        key!(11),
        key!(12),
        key!(13),
        key!(14),
        key!(15),
    ]
};
