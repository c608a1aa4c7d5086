//! What the client is told when the idempotency machinery, not the handler, answers.

use http::{Response, StatusCode};
use idem_core::Error;

use crate::body::Body;
use crate::config::MismatchStatus;
use crate::problem::{self, Problem};

/// The problem answer for an engine error on the client's key `key`.
pub(crate) fn engine_error(error: &Error, key: &str, mismatch: MismatchStatus) -> Response<Body> {
    let problem = match error {
        Error::InProgress { retry_after, .. } => Problem::new(
            problem::IN_PROGRESS,
            StatusCode::CONFLICT,
            "Request in progress",
            format!("a request with idempotency key `{key}` is still being processed; retry later"),
        )
        .with_retry_after(*retry_after),
        Error::Mismatch { .. } => Problem::new(
            problem::KEY_REUSED,
            mismatch.status(),
            "Idempotency key reused",
            format!("idempotency key `{key}` was already used for a different request"),
        ),
        Error::Store { .. } => Problem::new(
            problem::STORE_UNAVAILABLE,
            StatusCode::SERVICE_UNAVAILABLE,
            "Idempotency store unavailable",
            format!("the request with idempotency key `{key}` was not processed; retry later"),
        ),
        Error::InvalidKey(reason) => Problem::new(
            problem::KEY_INVALID,
            StatusCode::BAD_REQUEST,
            "Invalid idempotency key",
            format!("idempotency key `{key}` cannot be used: {reason}"),
        ),
        error if error.ran_without_record() || matches!(error, Error::Aborted { .. }) => {
            not_recorded(key)
        }
        _ => Problem::new(
            problem::FAILED,
            StatusCode::INTERNAL_SERVER_ERROR,
            "Idempotency failure",
            format!("the request with idempotency key `{key}` failed"),
        ),
    };
    problem.into_response()
}

/// The request was handled, or may have been, but its response was not recorded.
pub(crate) fn not_recorded(key: &str) -> Problem {
    Problem::new(
        problem::NOT_RECORDED,
        StatusCode::INTERNAL_SERVER_ERROR,
        "Response not recorded",
        format!(
            "the request with idempotency key `{key}` may have been processed but its response \
             was not recorded; check its effect before retrying"
        ),
    )
}

pub(crate) fn key_missing() -> Response<Body> {
    Problem::new(
        problem::KEY_MISSING,
        StatusCode::BAD_REQUEST,
        "Idempotency key missing",
        "this request needs an `Idempotency-Key` header".to_owned(),
    )
    .into_response()
}

pub(crate) fn key_invalid(received: &str, reason: &str) -> Response<Body> {
    Problem::new(
        problem::KEY_INVALID,
        StatusCode::BAD_REQUEST,
        "Invalid idempotency key",
        format!(
            "idempotency key `{received}` is invalid: {reason}; send one `Idempotency-Key` of 1 \
             to 255 visible ASCII characters"
        ),
    )
    .into_response()
}

pub(crate) fn body_too_large(key: &str, limit: usize) -> Response<Body> {
    Problem::new(
        problem::BODY_TOO_LARGE,
        StatusCode::PAYLOAD_TOO_LARGE,
        "Request body too large",
        format!(
            "the body of the request with idempotency key `{key}` is over {limit} bytes; \
             nothing was processed"
        ),
    )
    .into_response()
}

pub(crate) fn body_unreadable(key: &str) -> Response<Body> {
    Problem::new(
        problem::BODY_UNREADABLE,
        StatusCode::BAD_REQUEST,
        "Request body unreadable",
        format!("the body of the request with idempotency key `{key}` could not be read"),
    )
    .into_response()
}
