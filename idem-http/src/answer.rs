//! What the client is told when the idempotency machinery, not the handler, answers.

use http::StatusCode;
use idem_core::Error;

use crate::config::{Config, ScopeMissing};
use crate::problem::{self, failed_for, judged, not_recorded_for, Problem, Subject};
use crate::stored::NotKept;

/// The problem answer for an engine error on the client's key `key`.
pub(crate) fn engine_error(error: &Error, key: &str, config: &Config) -> Problem {
    judged(
        error,
        Subject::Key(key),
        config.retry_after,
        config.mismatch.status(),
    )
}

/// Any other failure of the idempotency machinery.
pub(crate) fn failed(key: &str) -> Problem {
    failed_for(Subject::Key(key))
}

/// The request was handled, or may have been, but its response was not recorded.
pub(crate) fn not_recorded(key: &str) -> Problem {
    not_recorded_for(Subject::Key(key))
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

/// A keyed request without a scope, refused.
pub(crate) fn unscoped(key: &str) -> Problem {
    Problem::new(
        problem::UNSCOPED,
        StatusCode::BAD_REQUEST,
        "Idempotency key without a principal",
        format!(
            "the request with idempotency key `{key}` was not processed: it carries no \
             principal to scope its key by (the layer reads it from `Authorization` unless \
             told otherwise), and a key without one would be shared with every other such \
             client; authenticate, or send it without `Idempotency-Key`"
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
