//! The errors an idempotent call can end with.

use std::error::Error as StdError;
use std::fmt;

/// A boxed error from a store's backend or a codec.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// Why an idempotent call did not run the function or return its stored result.
///
/// Every variant maps to an HTTP status through [`Error::http_status`], so a web handler can answer
/// a client the way the Idempotency-Key draft and Stripe do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another call with the same key is still running (HTTP 409). Retry later, or ask the call to
    /// wait for it (`wait = "10s"`).
    #[error("a call with idempotency key `{key}` is already in progress")]
    InProgress {
        /// The stored key.
        key: String,
    },
    /// The key was used before with other arguments (HTTP 422). A key must not be reused for a
    /// different request.
    #[error("idempotency key `{key}` was already used with different arguments")]
    Mismatch {
        /// The stored key.
        key: String,
    },
    /// The store could not be reached or failed (HTTP 503). The function did not run, or its
    /// result could not be recorded.
    #[error("idempotency store failed: {0}")]
    Store(#[source] BoxError),
    /// This call's reservation was taken over by another caller after its lease passed, so its
    /// result was not recorded (HTTP 409).
    #[error("lease on idempotency key `{key}` was lost to another caller")]
    LeaseLost {
        /// The stored key.
        key: String,
    },
    /// No [`Idempotency`](crate::Idempotency) handle was given and none is installed (HTTP 500).
    /// Call [`idem_core::install`](crate::install) at start-up or pass `store = "..."`.
    #[error("no idempotency handle installed: call `idem_core::install(handle)` at start-up or pass `store = \"...\"` to `#[idempotent]`")]
    NotInstalled,
    /// A result or error could not be serialised or deserialised (HTTP 500).
    #[error("idempotency codec failed: {0}")]
    Codec(#[source] BoxError),
    /// A record in the store is malformed (HTTP 500). The key stays blocked until the record
    /// expires or is removed with [`Idempotency::forget`](crate::Idempotency::forget).
    #[error("idempotency record under `{key}` is corrupt: {reason}")]
    CorruptRecord {
        /// The stored key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The idempotency key cannot be used, for example because it is too long (HTTP 400).
    #[error("invalid idempotency key: {0}")]
    InvalidKey(String),
    /// The store refused a request that retrying cannot fix, such as an outcome larger than a
    /// DynamoDB item may be (HTTP 500). When it refuses the outcome after the function ran, the
    /// key stays reserved until its lease passes.
    #[error("idempotency store refused the request: {0}")]
    Rejected(#[source] BoxError),
}

impl Error {
    /// The HTTP status code this error stands for: 409 for [`InProgress`](Error::InProgress) and
    /// [`LeaseLost`](Error::LeaseLost), 422 for [`Mismatch`](Error::Mismatch), 400 for
    /// [`InvalidKey`](Error::InvalidKey), 503 for [`Store`](Error::Store), 500 otherwise.
    pub fn http_status(&self) -> u16 {
        match self {
            Error::InProgress { .. } | Error::LeaseLost { .. } => 409,
            Error::Mismatch { .. } => 422,
            Error::InvalidKey(_) => 400,
            Error::Store(_) => 503,
            Error::NotInstalled
            | Error::Codec(_)
            | Error::CorruptRecord { .. }
            | Error::Rejected(_) => 500,
        }
    }

    /// Whether retrying the same call later is safe and may succeed: `true` for
    /// [`InProgress`](Error::InProgress) and for a [`Store`](Error::Store) failure before the
    /// function ran; `false` when the function ran but its outcome was not recorded
    /// ([`OutcomeNotRecorded`]), since a retry once the lease passes would run it again.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::InProgress { .. } => true,
            Error::Store(source) => !source.is::<OutcomeNotRecorded>(),
            _ => false,
        }
    }

    /// Whether the function ran but its outcome could not be recorded ([`OutcomeNotRecorded`]).
    pub fn ran_without_record(&self) -> bool {
        match self {
            Error::Store(source) | Error::Rejected(source) => source.is::<OutcomeNotRecorded>(),
            _ => false,
        }
    }

    pub(crate) fn codec(source: impl Into<BoxError>) -> Self {
        Error::Codec(source.into())
    }
}

/// What a [`Store`](crate::Store) operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The record is not held by the given owner any more: it was taken over, completed by
    /// another owner, or removed.
    #[error("the record is no longer held by this owner")]
    LeaseLost,
    /// The stored record cannot be read.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// The backend failed or could not be reached; the same request may succeed later.
    #[error(transparent)]
    Backend(BoxError),
    /// The request can never succeed as it stands (a value over the backend's size limit, say);
    /// the engine does not retry it.
    #[error(transparent)]
    Rejected(BoxError),
}

impl StoreError {
    /// Wraps a backend error.
    pub fn backend(source: impl Into<BoxError>) -> Self {
        StoreError::Backend(source.into())
    }

    /// Wraps the reason a request can never succeed.
    pub fn rejected(source: impl Into<BoxError>) -> Self {
        StoreError::Rejected(source.into())
    }

    /// The caller-facing [`Error`] for a failure to record an outcome after the function ran.
    pub(crate) fn not_recorded(self, key: &str) -> Error {
        let wrap = |source| Box::new(OutcomeNotRecorded { source }) as BoxError;
        match self {
            StoreError::Backend(source) => Error::Store(wrap(source)),
            StoreError::Rejected(source) => Error::Rejected(wrap(source)),
            other => other.into_error(key),
        }
    }

    /// Turns this store error into the caller-facing [`Error`] for `key`.
    pub(crate) fn into_error(self, key: &str) -> Error {
        match self {
            StoreError::LeaseLost => Error::LeaseLost {
                key: key.to_owned(),
            },
            StoreError::Corrupt(reason) => Error::CorruptRecord {
                key: key.to_owned(),
                reason,
            },
            StoreError::Backend(source) => Error::Store(source),
            StoreError::Rejected(source) => Error::Rejected(source),
        }
    }
}

/// The source of an [`Error::Store`] or [`Error::Rejected`] returned after the function ran:
/// its side effect happened but its outcome could not be recorded. The key stays reserved until
/// the lease passes; a retry after that runs the function again, so don't retry blindly.
#[derive(Debug)]
pub struct OutcomeNotRecorded {
    source: BoxError,
}

impl OutcomeNotRecorded {
    /// Why the store refused or failed.
    pub fn cause(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.source
    }
}

impl fmt::Display for OutcomeNotRecorded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the function ran but its outcome could not be recorded: {}",
            self.source
        )
    }
}

impl StdError for OutcomeNotRecorded {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
}

/// A message as an error, for sources that have no error type of their own.
#[derive(Debug)]
pub(crate) struct Message(pub(crate) String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for Message {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_maps_to_its_http_status() {
        let key = || "k".to_string();
        let cases = [
            (Error::InProgress { key: key() }, 409, true),
            (Error::LeaseLost { key: key() }, 409, false),
            (Error::Mismatch { key: key() }, 422, false),
            (Error::InvalidKey("too long".into()), 400, false),
            (Error::Store(Box::new(Message("down".into()))), 503, true),
            (Error::NotInstalled, 500, false),
            (
                Error::Codec(Box::new(Message("bad json".into()))),
                500,
                false,
            ),
            (
                Error::CorruptRecord {
                    key: key(),
                    reason: "garbage".into(),
                },
                500,
                false,
            ),
        ];
        for (error, status, retryable) in cases {
            assert_eq!(error.http_status(), status, "{error}");
            assert_eq!(error.is_retryable(), retryable, "{error}");
        }
    }

    #[test]
    fn store_errors_become_caller_errors_with_the_key() {
        assert!(matches!(
            StoreError::LeaseLost.into_error("k"),
            Error::LeaseLost { key } if key == "k"
        ));
        assert!(matches!(
            StoreError::Corrupt("no fingerprint".into()).into_error("k"),
            Error::CorruptRecord { key, reason } if key == "k" && reason == "no fingerprint"
        ));
        let backend = StoreError::backend(Message("connection refused".into())).into_error("k");
        assert_eq!(
            backend.to_string(),
            "idempotency store failed: connection refused"
        );
    }

    #[test]
    fn a_rejected_request_is_not_retryable() {
        let rejected = StoreError::rejected(Message("item too large".into())).into_error("k");
        assert!(matches!(rejected, Error::Rejected(_)));
        assert_eq!(rejected.http_status(), 500);
        assert!(!rejected.is_retryable());
    }

    #[test]
    fn an_unrecorded_outcome_is_not_retryable() {
        let before = StoreError::backend(Message("down".into())).into_error("k");
        assert!(before.is_retryable() && !before.ran_without_record());
        let after = StoreError::backend(Message("down".into())).not_recorded("k");
        assert!(matches!(after, Error::Store(_)));
        assert!(!after.is_retryable() && after.ran_without_record());
        assert_eq!(
            after.to_string(),
            "idempotency store failed: the function ran but its outcome could not be recorded: down"
        );
        let too_large = StoreError::rejected(Message("too large".into())).not_recorded("k");
        assert!(matches!(too_large, Error::Rejected(_)) && too_large.ran_without_record());
    }

    #[test]
    fn not_installed_says_what_to_do() {
        assert!(Error::NotInstalled
            .to_string()
            .contains("idem_core::install"));
    }
}
