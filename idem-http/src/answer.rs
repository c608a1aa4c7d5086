//! What the client is told when the idempotency machinery, not the handler, answers: each
//! answer is its row of the contract's vocabulary ([`ProblemType`]), about the client's key.

use idem_core::Error;

use crate::config::{Config, ScopeMissing};
use crate::response::problem::{judged, Problem, ProblemType, Subject};
use crate::response::stored::NotKept;

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
    Problem::about(ProblemType::Failed, Subject::Key(key), "")
}

/// The request was handled, or may have been, but its response was not recorded.
pub(crate) fn not_recorded(key: &str) -> Problem {
    Problem::about(ProblemType::NotRecorded, Subject::Key(key), "")
}

/// The request was handled and answered with `status`, but its response was not kept.
pub(crate) fn not_kept(key: &str, status: u16, why: NotKept) -> Problem {
    let more = format!(
        "it was answered with status {status}, but {}; do not resend it",
        why.reason()
    );
    Problem::about(ProblemType::ResponseNotKept, Subject::Key(key), &more)
        .with_handled_status(status)
}

/// The stored body is in a content coding the retry does not accept.
pub(crate) fn encoding_not_accepted(key: &str, encoding: &str) -> Problem {
    let more = format!(
        "the answer is stored in the `{encoding}` coding; resend the request accepting \
         `{encoding}` (in `Accept-Encoding`, or `grpc-accept-encoding` for a gRPC call)"
    );
    Problem::about(ProblemType::EncodingNotAccepted, Subject::Key(key), &more)
}

/// The layer takes its scope from a request extension this request lacks.
pub(crate) fn scope_missing(key: &str, missing: &ScopeMissing) -> Problem {
    let more = match missing {
        ScopeMissing::Extension(extension) => format!(
            "the idempotency layer takes its scope from the request extension `{extension}`, \
             which no layer set; put the layer that sets it outside the idempotency layer"
        ),
        #[cfg(feature = "actix-web")]
        ScopeMissing::ActixExtensionsUnseen => "on actix-web, a `scope` closure sees the \
             request's head without its extensions, so the layer does not guess whose key \
             this is; read the scope with `actix_scope` (or `scope_from_extension`)"
            .to_owned(),
    };
    Problem::about(ProblemType::ScopeMissing, Subject::Key(key), &more)
}

/// A keyed request without a scope, refused.
pub(crate) fn unscoped(key: &str) -> Problem {
    let more = "the layer reads the principal from `Authorization` unless told otherwise; a \
                key without one would be shared with every other such client";
    Problem::about(ProblemType::Unscoped, Subject::Key(key), more)
}

pub(crate) fn key_missing() -> Problem {
    Problem::about(ProblemType::KeyMissing, Subject::Unnamed, "")
}

pub(crate) fn key_invalid(received: &str, reason: &str) -> Problem {
    let more = format!("{reason}; send one `Idempotency-Key` header");
    Problem::about(ProblemType::KeyInvalid, Subject::Key(received), &more)
}

pub(crate) fn body_too_large(key: &str, limit: usize) -> Problem {
    let more = format!("the limit is {limit} bytes");
    Problem::about(ProblemType::BodyTooLarge, Subject::Key(key), &more)
}

/// A keyed request under a gRPC content type whose body is not one whole gRPC message.
pub(crate) fn grpc_not_one_message(key: &str) -> Problem {
    let more = "a keyed gRPC call sends exactly one request message (a unary or \
                server-streaming call); send a client-streaming call without an idempotency \
                key, and a plain HTTP body without a gRPC content type";
    Problem::about(ProblemType::BodyUnreadable, Subject::Key(key), more)
}

pub(crate) fn body_unreadable(key: &str) -> Problem {
    Problem::about(ProblemType::BodyUnreadable, Subject::Key(key), "")
}
