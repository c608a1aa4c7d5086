//! The RFC 9457 `application/problem+json` answers of the layer, and their stable `type` URIs,
//! one per case.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Response, StatusCode};
use idem_core::Error;
pub use idem_protocol::problem::ProblemType;
use serde::Serialize;

use crate::body::{self, Body};

/// `type` of the 400 for a request without a key when the layer requires one.
pub const KEY_MISSING: &str = ProblemType::KeyMissing.uri();
/// `type` of the 400 for a malformed key, or two `Idempotency-Key` headers.
pub const KEY_INVALID: &str = ProblemType::KeyInvalid.uri();
/// `type` of the 413 for a request body over the layer's limit.
pub const BODY_TOO_LARGE: &str = ProblemType::BodyTooLarge.uri();
/// `type` of the 400 for a request body that could not be read.
pub const BODY_UNREADABLE: &str = ProblemType::BodyUnreadable.uri();
/// `type` of the 409 for a request whose key is still being processed.
pub const IN_PROGRESS: &str = ProblemType::InProgress.uri();
/// `type` of the answer (422 by default) for a key reused with another request.
pub const KEY_REUSED: &str = ProblemType::KeyReused.uri();
/// `type` of the 429 for a request with a new key whose scope (principal) is over its
/// [`Quota`](idem_core::Quota): nothing ran; `Retry-After` says when the scope may have room.
/// Keys the scope already used are still answered.
pub const QUOTA_EXCEEDED: &str = ProblemType::QuotaExceeded.uri();
/// `type` of the 503 for a request with a new key when every scope together keeps the most
/// records or bytes the [`Quota`](idem_core::Quota) allows in all (its total bound), and this
/// request's scope is not one already keeping records within its own bound: nothing ran;
/// `Retry-After` says when the store may have room. Keys already used are still answered.
pub const STORE_FULL: &str = ProblemType::StoreFull.uri();
/// `type` of the 503 for an idempotency store that cannot be reached: nothing ran.
pub const STORE_UNAVAILABLE: &str = ProblemType::StoreUnavailable.uri();
/// `type` of the 500 for a request that was handled but whose response was not recorded: do
/// not retry it blindly.
pub const NOT_RECORDED: &str = ProblemType::NotRecorded.uri();
/// `type` of the 410 for a request that was handled but whose response was not kept (too
/// large, failed while sent, or abandoned mid-stream): it will not run again, and its answer
/// cannot be replayed. The problem's `handled_status` member is the status it was answered with.
pub const RESPONSE_NOT_KEPT: &str = ProblemType::ResponseNotKept.uri();
/// `type` of the 406 for a replay whose stored body is in a content coding (`gzip`, say) that
/// the retry does not accept in its `Accept-Encoding`.
pub const ENCODING_NOT_ACCEPTED: &str = ProblemType::EncodingNotAccepted.uri();
/// `type` of the 500 for a request without the extension the layer takes its scope from
/// ([`scope_from_extension`](crate::IdempotencyLayerBuilder::scope_from_extension)): the
/// authentication layer that sets it must run before this one. Nothing ran.
pub const SCOPE_MISSING: &str = ProblemType::ScopeMissing.uri();
/// `type` of the 400 for a keyed request the layer finds no scope (principal) for, under
/// [`Unscoped::Refused`](crate::Unscoped::Refused), the default: nothing ran.
pub const UNSCOPED: &str = ProblemType::Unscoped.uri();
/// `type` of the 500 for idempotency that is not set up right (no handle installed for an
/// `#[idempotent]` function in a handler, two functions under one name): nothing ran.
pub const MISCONFIGURED: &str = ProblemType::Misconfigured.uri();
/// `type` of the 500 for any other failure of the idempotency machinery.
pub const FAILED: &str = ProblemType::Failed.uri();

/// The layer's own answer to `error`, for an [`idem_core::Error`] that an `#[idempotent]`
/// function returned inside a handler: the same `application/problem+json` document, status
/// and `Retry-After` (on a 409, at most [`DEFAULT_RETRY_AFTER`](crate::DEFAULT_RETRY_AFTER))
/// as the layer gives for its own key, so that both paths answer alike. A reused key is a
/// 422. The key itself is not named: it was built from the request, not sent by the client.
///
/// ```
/// use axum::response::{IntoResponse, Response};
///
/// # #[derive(Debug)] struct Receipt;
/// # async fn charge(_: &str) -> Result<Receipt, idem_core::Error> {
/// #     Err(idem_core::Error::InvalidKey("empty".into()))
/// # }
/// async fn pay(order_id: String) -> Response {
///     match charge(&order_id).await {
///         Ok(receipt) => format!("{receipt:?}").into_response(),
///         Err(error) => idem_http::problem::response_for(&error).into_response(),
///     }
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let response = pay("order-42".into()).await;
/// assert_eq!(response.status(), 400);
/// # }
/// ```
pub fn response_for(error: &idem_core::Error) -> Response<Body> {
    judged(
        error,
        Subject::Unnamed,
        crate::response::statuses::DEFAULT_RETRY_AFTER,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .into_response()
}

/// One problem answer, before it becomes a response. Its `type` and `title` are its row's.
#[derive(Debug, Serialize)]
pub(crate) struct Problem {
    #[serde(flatten, serialize_with = "type_and_title")]
    pub(crate) problem_type: ProblemType,
    pub(crate) status: u16,
    pub(crate) detail: String,
    /// For a response not kept: the status the request was answered with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) handled_status: Option<u16>,
    #[serde(skip)]
    pub(crate) retry_after: Option<Duration>,
}

impl Problem {
    /// The answer of `problem_type` about `subject`: its detail is the row's message after the
    /// subject, then `more` when there is more to say.
    pub(crate) fn about(problem_type: ProblemType, subject: Subject<'_>, more: &str) -> Self {
        let mut detail = format!("{subject} {}", problem_type.message());
        if !more.is_empty() {
            detail.push_str(" (");
            detail.push_str(more);
            detail.push(')');
        }
        Problem {
            problem_type,
            status: problem_type.status().as_u16(),
            detail,
            handled_status: None,
            retry_after: None,
        }
    }

    /// The same answer with another status than its row's.
    pub(crate) fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status.as_u16();
        self
    }

    pub(crate) fn with_handled_status(mut self, status: u16) -> Self {
        self.handled_status = Some(status);
        self
    }

    pub(crate) fn with_retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = Some(retry_after);
        self
    }

    pub(crate) fn into_response(self) -> Response<Body> {
        let json = serde_json::to_vec(&self).expect("a problem serialises");
        let mut response = Response::new(body::full(Bytes::from(json)));
        *response.status_mut() =
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let headers = response.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static(idem_protocol::header::PROBLEM_JSON),
        );
        if let Some(retry_after) = self.retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from(whole_seconds(retry_after)));
        }
        response
    }
}

/// A problem document's `type` and `title`: its row's URI and title.
fn type_and_title<S: serde::Serializer>(
    row: &ProblemType,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(2))?;
    map.serialize_entry("type", row.uri())?;
    map.serialize_entry("title", row.title())?;
    map.end()
}

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

/// The problem answer for `error` about `subject`: a duplicate in flight is told to retry after
/// at most `retry_after`, a reused key gets `mismatch`.
pub(crate) fn judged(
    error: &Error,
    subject: Subject<'_>,
    retry_after: Duration,
    mismatch: StatusCode,
) -> Problem {
    let problem_type = error.problem_type();
    match error {
        Error::InProgress {
            retry_after: engine_says,
            ..
        } => Problem::about(problem_type, subject, "")
            .with_retry_after(retry_after.min(*engine_says)),
        Error::Mismatch { .. } => Problem::about(problem_type, subject, "").with_status(mismatch),
        Error::QuotaExceeded {
            reason,
            retry_after,
            ..
        }
        | Error::StoreFull {
            reason,
            retry_after,
            ..
        } => Problem::about(problem_type, subject, reason).with_retry_after(*retry_after),
        Error::InvalidKey(reason) => Problem::about(problem_type, subject, reason),
        _ => Problem::about(problem_type, subject, ""),
    }
}

/// Rounds up to whole seconds, and to at least one, so that a client never retries at once.
pub(crate) fn whole_seconds(duration: Duration) -> u64 {
    let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    seconds.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::from_millis(29_001)), 30);
        assert_eq!(whole_seconds(Duration::from_secs(30)), 30);
        assert_eq!(whole_seconds(Duration::ZERO), 1);
    }

    #[test]
    fn every_constant_is_its_rows_uri() {
        let constants = [
            KEY_MISSING,
            KEY_INVALID,
            BODY_TOO_LARGE,
            BODY_UNREADABLE,
            IN_PROGRESS,
            KEY_REUSED,
            QUOTA_EXCEEDED,
            STORE_FULL,
            STORE_UNAVAILABLE,
            NOT_RECORDED,
            RESPONSE_NOT_KEPT,
            ENCODING_NOT_ACCEPTED,
            SCOPE_MISSING,
            UNSCOPED,
            MISCONFIGURED,
            FAILED,
        ];
        assert_eq!(constants.len(), ProblemType::ALL.len());
        for (constant, kind) in constants.iter().zip(ProblemType::ALL) {
            assert_eq!(*constant, kind.uri());
        }
    }
}
