//! The errors an idempotent call can end with.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use idem_protocol::problem::ProblemType;

/// A boxed error from a store's backend or a codec.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// Why an idempotent call did not run the function or return its stored result.
///
/// Every variant maps to a row of the contract's error vocabulary through
/// [`Error::problem_type`]: its HTTP status ([`Error::http_status`]), problem type, Lambda
/// `errorType` and wording, the same in the attribute, the HTTP layer and the Lambda handler.
///
/// # After the function ran
///
/// Once the function has run, its side effect may have happened. Every failure from then on
/// is [`Error::NotRecorded`], whatever its cause: [`ran_without_record`](Error::ran_without_record)
/// is `true`, the status is 500 and [`is_retryable`](Error::is_retryable) is `false`. A client
/// must not retry such a call blindly: the key answers [`Error::InProgress`] until the lease
/// passes, and a retry after that runs the function again. Check the effect first (look the
/// payment up with the provider, by the key you sent it from
/// [`CallContext::downstream_key`](crate::CallContext::downstream_key)), or remove the record
/// with [`Idempotency::forget`](crate::Idempotency::forget) once you know.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another call with the same key is still running (HTTP 409). Retry after `retry_after`,
    /// or ask the call to wait for it (`wait = "10s"`).
    #[error("idempotency key `{key}` {}", ProblemType::InProgress.message())]
    InProgress {
        /// The stored key.
        key: String,
        /// How long until the running call's lease passes, as last renewed: the earliest a
        /// retry can take over if that call died. Fit for a `Retry-After` header.
        retry_after: Duration,
    },
    /// The key was used before with other arguments (HTTP 422). A key must not be reused for a
    /// different request.
    #[error("idempotency key `{key}` {}", ProblemType::KeyReused.message())]
    Mismatch {
        /// The stored key.
        key: String,
    },
    /// The store could not be reached or failed (HTTP 503). The function did not run.
    #[error("idempotency key `{key}` {}", ProblemType::StoreUnavailable.message())]
    Store {
        /// The stored key.
        key: String,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
    /// The key's scope has used up its [`Quota`](crate::Quota) (HTTP 429). The function did not
    /// run, and nothing was written; retry after `retry_after`. Keys the scope already used
    /// are still replayed.
    #[error("idempotency key `{key}` {} ({reason})", ProblemType::QuotaExceeded.message())]
    QuotaExceeded {
        /// The stored key.
        key: String,
        /// What ran out, as the quota says.
        reason: String,
        /// How long until the scope may have room again. Fit for a `Retry-After` header.
        retry_after: Duration,
    },
    /// Every scope together has used up the [`Quota`](crate::Quota)'s total bound (HTTP 503),
    /// and this key's scope is not one that already keeps records within its own bound. The
    /// function did not run, and nothing was written; retry after `retry_after`. Keys already
    /// used are still replayed.
    #[error("idempotency key `{key}` {} ({reason})", ProblemType::StoreFull.message())]
    StoreFull {
        /// The stored key.
        key: String,
        /// What ran out, as the quota says.
        reason: String,
        /// How long until the store may have room again. Fit for a `Retry-After` header.
        retry_after: Duration,
    },
    /// This call's reservation was taken over by another caller after its lease passed, so its
    /// result was not recorded. Only ever the cause of an [`Error::NotRecorded`].
    #[error("lease on idempotency key `{key}` was lost to another caller")]
    LeaseLost {
        /// The stored key.
        key: String,
    },
    /// The function ran but its outcome was not recorded (HTTP 500, not retryable): see
    /// [After the function ran](Error#after-the-function-ran). `cause` says why (the store
    /// failed or refused, the lease was lost, the value could not be serialised).
    #[error("idempotency key `{key}` {}", ProblemType::NotRecorded.message())]
    NotRecorded {
        /// The stored key.
        key: String,
        /// Why the outcome was not recorded.
        #[source]
        cause: Box<Error>,
    },
    /// The first call with this key ran but left no outcome to replay (HTTP 500, not
    /// retryable): it was aborted (a panic or a dropped future) after its function started,
    /// under `on_abort = "fail"`, or its function answered but the store refused to keep the
    /// answer (over the backend's size limit, say). The first result stands until the TTL
    /// passes: check the call's effect rather than retrying it.
    #[error(
        "the call with idempotency key `{key}` ran but left no outcome to replay (it was aborted, or its answer could not be kept); check its effect before retrying"
    )]
    Aborted {
        /// The stored key.
        key: String,
    },
    /// No [`Idempotency`](crate::Idempotency) handle was given and none is installed (HTTP 500).
    /// Call [`idem_core::install`](crate::install) at start-up or pass `store = "..."`.
    #[error("no idempotency handle installed: call `idem_core::install(handle)` at start-up or pass `store = \"...\"` to `#[idempotent]`")]
    NotInstalled,
    /// A result, an error or an argument could not be serialised or deserialised (HTTP 500).
    #[error("idempotency codec failed")]
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
    /// The body ran a [`step`](crate::step) under a name that already holds a value in this
    /// call, recorded, replayed or still running (HTTP 500): a retry could not tell which step
    /// the recorded value belongs to. Give each step its own name. (A step whose future
    /// returned `Err` holds no value: trying it again under its name is fine.)
    #[error("step `{step}` ran twice in the call with idempotency key `{key}`; each step needs a name of its own")]
    DuplicateStep {
        /// The stored key.
        key: String,
        /// The step's name.
        step: String,
    },
    /// A [`step`](crate::step) name that every store cannot keep (HTTP 500): empty, longer
    /// than [`MAX_STEP_NAME_LEN`](crate::MAX_STEP_NAME_LEN) bytes, or holding a control
    /// character. The step did not run.
    #[error("step name {step:?} in the call with idempotency key `{key}` is invalid: {reason}")]
    InvalidStepName {
        /// The stored key.
        key: String,
        /// The step's name.
        step: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two `#[idempotent]` functions linked into this program have the same name (HTTP 500),
    /// so they would share records and one would replay the other's results: neither runs
    /// until each has a `name` of its own. A function defined inside another function's body
    /// is named after the module around it, like one beside it.
    #[error(
        "two `#[idempotent]` functions are named `{name}` ({}), so they would share records: give \
         each its own `name = \"...\"` (a function defined inside another function's body is \
         named after the module around it)",
        sites.join(", ")
    )]
    DuplicateName {
        /// The name they share.
        name: String,
        /// Where each is defined, `file:line`.
        sites: Vec<String>,
    },
    /// The idempotency key cannot be used, for example because it is too long (HTTP 400).
    #[error("the idempotency key {message}: {0}", message = ProblemType::KeyInvalid.message())]
    InvalidKey(String),
    /// The store does not offer what an operator asked of it (a listing, a purge).
    #[error("the `{store}` store can't {what}")]
    Unsupported {
        /// The store's [`name`](crate::store::Store::name).
        store: String,
        /// What it was asked to do.
        what: &'static str,
    },
    /// The store refused a request that retrying cannot fix, such as an outcome larger than a
    /// DynamoDB item may be (HTTP 500).
    #[error("idempotency store refused the request on key `{key}`")]
    Rejected {
        /// The stored key.
        key: String,
        /// Why the store refused.
        #[source]
        source: BoxError,
    },
}

impl Error {
    /// The row of the contract's error vocabulary this error stands for: its status, problem
    /// type, Lambda `errorType` and wording (see [`idem_protocol::problem`]).
    ///
    /// | error | problem type |
    /// |---|---|
    /// | [`InProgress`](Error::InProgress) | `InProgress` (409) |
    /// | [`Mismatch`](Error::Mismatch) | `KeyReused` (422) |
    /// | [`InvalidKey`](Error::InvalidKey) | `KeyInvalid` (400) |
    /// | [`QuotaExceeded`](Error::QuotaExceeded) | `QuotaExceeded` (429) |
    /// | [`Store`](Error::Store) | `StoreUnavailable` (503) |
    /// | [`StoreFull`](Error::StoreFull) | `StoreFull` (503) |
    /// | [`NotRecorded`](Error::NotRecorded), [`LeaseLost`](Error::LeaseLost), [`Aborted`](Error::Aborted) | `NotRecorded` (500) |
    /// | [`NotInstalled`](Error::NotInstalled), [`DuplicateName`](Error::DuplicateName) | `Misconfigured` (500) |
    /// | every other | `Failed` (500) |
    pub fn problem_type(&self) -> ProblemType {
        match self {
            Error::InProgress { .. } => ProblemType::InProgress,
            Error::Mismatch { .. } => ProblemType::KeyReused,
            Error::InvalidKey(_) => ProblemType::KeyInvalid,
            Error::QuotaExceeded { .. } => ProblemType::QuotaExceeded,
            Error::StoreFull { .. } => ProblemType::StoreFull,
            Error::Store { .. } => ProblemType::StoreUnavailable,
            Error::LeaseLost { .. } | Error::NotRecorded { .. } | Error::Aborted { .. } => {
                ProblemType::NotRecorded
            }
            Error::NotInstalled | Error::DuplicateName { .. } => ProblemType::Misconfigured,
            Error::Codec(_)
            | Error::CorruptRecord { .. }
            | Error::DuplicateStep { .. }
            | Error::InvalidStepName { .. }
            | Error::Unsupported { .. }
            | Error::Rejected { .. } => ProblemType::Failed,
        }
    }

    /// The HTTP status code this error stands for, its [problem type](Error::problem_type)'s:
    /// 409 for [`InProgress`](Error::InProgress), 422 for [`Mismatch`](Error::Mismatch), 400 for
    /// [`InvalidKey`](Error::InvalidKey), 429 for [`QuotaExceeded`](Error::QuotaExceeded), 503
    /// for [`Store`](Error::Store) and [`StoreFull`](Error::StoreFull), 500 otherwise (every failure after the function ran among
    /// them).
    pub fn http_status(&self) -> u16 {
        self.problem_type().status().as_u16()
    }

    /// Whether retrying the same call later is safe and may succeed: `true` for
    /// [`InProgress`](Error::InProgress), [`QuotaExceeded`](Error::QuotaExceeded),
    /// [`StoreFull`](Error::StoreFull) and a [`Store`](Error::Store) failure (the function did not run); `false` otherwise, and always
    /// once the function ran.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::InProgress { .. }
                | Error::QuotaExceeded { .. }
                | Error::StoreFull { .. }
                | Error::Store { .. }
        )
    }

    /// Whether the function ran but its outcome was not recorded: [`NotRecorded`](Error::NotRecorded),
    /// or [`LeaseLost`](Error::LeaseLost) (another caller took the key over while it ran).
    pub fn ran_without_record(&self) -> bool {
        matches!(self, Error::NotRecorded { .. } | Error::LeaseLost { .. })
    }

    pub(crate) fn codec(source: impl Into<BoxError>) -> Self {
        Error::Codec(source.into())
    }

    /// This error, raised after the function ran under `key`.
    pub(crate) fn after_run(self, key: &str) -> Self {
        match self {
            Error::NotRecorded { .. } => self,
            cause => Error::NotRecorded {
                key: key.to_owned(),
                cause: Box::new(cause),
            },
        }
    }
}

/// What a [`Store`](crate::store::Store) operation can fail with.
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
            StoreError::Backend(source) => Error::Store {
                key: key.to_owned(),
                source,
            },
            StoreError::Rejected(source) => Error::Rejected {
                key: key.to_owned(),
                source,
            },
        }
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
mod tests;
