//! What the client is told when the idempotency machinery, not the handler, answers.

use std::fmt;
use std::time::Duration;

use http::StatusCode;
use idem_core::Error;

use crate::config::{Config, ScopeMissing};
use crate::problem::{self, Problem};
use crate::stored::NotKept;

/// Whose request a problem speaks of: the client's key, or a key the problem does not name.
#[derive(Clone, Copy)]
pub(crate) enum Subject<'a> {
    /// The client's `Idempotency-Key`.
    Key(&'a str),
    /// A key the application built, say from an order id, which the client never sent.
    Unnamed,
}

impl fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Key(key) => write!(f, "idempotency key `{key}`"),
            Subject::Unnamed => f.write_str("this idempotency key"),
        }
    }
}

/// The problem answer for an engine error on the client's key `key`.
pub(crate) fn engine_error(error: &Error, key: &str, config: &Config) -> Problem {
    judged(
        error,
        Subject::Key(key),
        config.retry_after,
        config.mismatch.status(),
    )
}

/// The problem answer for `error` about `subject`: a duplicate in flight is told to retry after
/// at most `retry_after`, a reused key gets `mismatch`.
pub(crate) fn judged(
    error: &Error,
    subject: Subject<'_>,
    retry_after: Duration,
    mismatch: StatusCode,
) -> Problem {
    match error {
        Error::InProgress {
            retry_after: engine_says,
            ..
        } => Problem::new(
            problem::IN_PROGRESS,
            StatusCode::CONFLICT,
            "Request in progress",
            format!("a request with {subject} is still being processed; retry later"),
        )
        .with_retry_after(retry_after.min(*engine_says)),
        Error::Mismatch { .. } => Problem::new(
            problem::KEY_REUSED,
            mismatch,
            "Idempotency key reused",
            format!("{subject} was already used for a different request"),
        ),
        Error::Store { .. } => Problem::new(
            problem::STORE_UNAVAILABLE,
            StatusCode::SERVICE_UNAVAILABLE,
            "Idempotency store unavailable",
            format!("the request with {subject} was not processed; retry later"),
        ),
        Error::InvalidKey(reason) => Problem::new(
            problem::KEY_INVALID,
            StatusCode::BAD_REQUEST,
            "Invalid idempotency key",
            format!("{subject} cannot be used: {reason}"),
        ),
        error if error.ran_without_record() || matches!(error, Error::Aborted { .. }) => {
            not_recorded_for(subject)
        }
        _ => failed_for(subject),
    }
}

/// Any other failure of the idempotency machinery.
pub(crate) fn failed(key: &str) -> Problem {
    failed_for(Subject::Key(key))
}

fn failed_for(subject: Subject<'_>) -> Problem {
    Problem::new(
        problem::FAILED,
        StatusCode::INTERNAL_SERVER_ERROR,
        "Idempotency failure",
        format!("the request with {subject} failed"),
    )
}

/// The request was handled, or may have been, but its response was not recorded.
pub(crate) fn not_recorded(key: &str) -> Problem {
    not_recorded_for(Subject::Key(key))
}

fn not_recorded_for(subject: Subject<'_>) -> Problem {
    Problem::new(
        problem::NOT_RECORDED,
        StatusCode::INTERNAL_SERVER_ERROR,
        "Response not recorded",
        format!(
            "the request with {subject} may have been processed but its response was not \
             recorded; check its effect before retrying"
        ),
    )
}

/// The request was handled and answered with `status`, but its response was not kept.
pub(crate) fn not_kept(key: &str, status: u16, why: NotKept) -> Problem {
    Problem::new(
        problem::RESPONSE_NOT_KEPT,
        StatusCode::GONE,
        "Response not kept",
        format!(
            "the request with idempotency key `{key}` was handled (status {status}) but {}, so \
             it cannot be replayed; it will not run again, so do not resend it",
            why.reason()
        ),
    )
    .with_handled_status(status)
}

/// The stored body is in a content coding the retry does not accept.
pub(crate) fn encoding_not_accepted(key: &str, encoding: &str) -> Problem {
    Problem::new(
        problem::ENCODING_NOT_ACCEPTED,
        StatusCode::NOT_ACCEPTABLE,
        "Stored response encoding not accepted",
        format!(
            "the response to the request with idempotency key `{key}` is stored in the \
             `{encoding}` coding; resend it accepting `{encoding}` (in `Accept-Encoding`, or \
             `grpc-accept-encoding` for a gRPC call) to get it"
        ),
    )
}

/// The layer takes its scope from a request extension this request lacks.
pub(crate) fn scope_missing(key: &str, missing: &ScopeMissing) -> Problem {
    Problem::new(
        problem::SCOPE_MISSING,
        StatusCode::INTERNAL_SERVER_ERROR,
        "Idempotency scope missing",
        format!(
            "the request with idempotency key `{key}` was not processed: the idempotency layer \
             takes its scope from the request extension `{}`, which no layer set; put the \
             layer that sets it outside the idempotency layer",
            missing.0
        ),
    )
}

pub(crate) fn key_missing() -> Problem {
    Problem::new(
        problem::KEY_MISSING,
        StatusCode::BAD_REQUEST,
        "Idempotency key missing",
        "this request needs an `Idempotency-Key` header".to_owned(),
    )
}

pub(crate) fn key_invalid(received: &str, reason: &str) -> Problem {
    Problem::new(
        problem::KEY_INVALID,
        StatusCode::BAD_REQUEST,
        "Invalid idempotency key",
        format!(
            "idempotency key `{received}` is invalid: {reason}; send one `Idempotency-Key` of 1 \
             to 255 visible ASCII characters"
        ),
    )
}

pub(crate) fn body_too_large(key: &str, limit: usize) -> Problem {
    Problem::new(
        problem::BODY_TOO_LARGE,
        StatusCode::PAYLOAD_TOO_LARGE,
        "Request body too large",
        format!(
            "the body of the request with idempotency key `{key}` is over {limit} bytes; \
             nothing was processed"
        ),
    )
}

pub(crate) fn body_unreadable(key: &str) -> Problem {
    Problem::new(
        problem::BODY_UNREADABLE,
        StatusCode::BAD_REQUEST,
        "Request body unreadable",
        format!("the body of the request with idempotency key `{key}` could not be read"),
    )
}
