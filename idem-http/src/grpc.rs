//! gRPC over the layer: telling gRPC calls apart, judging their answers by `grpc-status`, and
//! answering them in gRPC's terms when the layer itself answers.

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Response, StatusCode};

use crate::body::{self, Body};
use crate::response::problem::Problem;

/// The trailer (or, in a trailers-only answer, the header) with a gRPC call's status code.
const GRPC_STATUS: &str = "grpc-status";

/// Whether a request or response with `headers` is gRPC (`application/grpc`, with or without
/// a `+format` suffix). gRPC-Web carries its status in the body, and is plain HTTP here.
pub(crate) fn is_grpc(headers: &HeaderMap) -> bool {
    let Some(content_type) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = content_type.split(';').next().unwrap_or("").trim();
    let essence = essence.to_ascii_lowercase();
    essence == "application/grpc" || essence.starts_with("application/grpc+")
}

/// The HTTP status a gRPC answer stands for, from its `grpc-status` (in the trailers, or in
/// the head of a trailers-only answer), by the mapping of `google.rpc.Code`; `None` when it has
/// none (yet). An unknown or unreadable code is an `UNKNOWN` failure.
pub(crate) fn judged(head: &HeaderMap, trailers: Option<&HeaderMap>) -> Option<StatusCode> {
    let value = trailers
        .and_then(|trailers| trailers.get(GRPC_STATUS))
        .or_else(|| head.get(GRPC_STATUS))?;
    let code = value
        .to_str()
        .ok()
        .and_then(|code| code.trim().parse::<u16>().ok());
    let status = match code {
        Some(0) => 200,          // OK
        Some(1) => 499,          // CANCELLED
        Some(3 | 9 | 11) => 400, // INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
        Some(4) => 504,          // DEADLINE_EXCEEDED
        Some(5) => 404,          // NOT_FOUND
        Some(6 | 10) => 409,     // ALREADY_EXISTS, ABORTED
        Some(7) => 403,          // PERMISSION_DENIED
        Some(8) => 429,          // RESOURCE_EXHAUSTED
        Some(12) => 501,         // UNIMPLEMENTED
        Some(14) => 503,         // UNAVAILABLE
        Some(16) => 401,         // UNAUTHENTICATED
        _ => 500,                // UNKNOWN, INTERNAL, DATA_LOSS, or unreadable
    };
    Some(StatusCode::from_u16(status).expect("a valid status"))
}

/// How many length-prefixed messages a gRPC request body holds (one for a unary or
/// server-streaming call), or `None` if it is not made of whole messages.
pub(crate) fn message_count(body: &[u8]) -> Option<usize> {
    let mut rest = body;
    let mut count = 0;
    while !rest.is_empty() {
        // A compression flag, then the message's length in 4 bytes, big-endian.
        let [_, a, b, c, d, after @ ..] = rest else {
            return None;
        };
        let len = usize::try_from(u32::from_be_bytes([*a, *b, *c, *d])).ok()?;
        rest = after.get(len..)?;
        count += 1;
    }
    Some(count)
}

/// `problem` as a trailers-only gRPC answer: HTTP 200, with `grpc-status` and a
/// percent-encoded `grpc-message` in its head.
pub(crate) fn problem_response(problem: Problem) -> Response<Body> {
    let mut response = Response::new(body::full(Bytes::new()));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(GRPC_STATUS, HeaderValue::from(code_of(&problem)));
    let message = percent_encode(&format!(
        "{}: {}",
        problem.problem_type.title(),
        problem.detail
    ));
    if let Ok(message) = HeaderValue::try_from(message) {
        headers.insert("grpc-message", message);
    }
    if let Some(retry_after) = problem.retry_after {
        let millis = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX);
        headers.insert("grpc-retry-pushback-ms", HeaderValue::from(millis));
    }
    response
}

/// The gRPC status code of a problem of the layer.
fn code_of(problem: &Problem) -> u16 {
    problem.problem_type.grpc_code()
}

/// `grpc-message` encoding: every byte outside printable ASCII, and `%`, as `%XX`.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if (0x20..=0x7e).contains(&byte) && byte != b'%' {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::problem::Subject;
    use std::time::Duration;

    fn with_status(code: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_STATUS, code.parse().unwrap());
        headers
    }

    #[test]
    fn transient_codes_stand_for_statuses_that_release_the_key() {
        let head = HeaderMap::new();
        let status = |code| judged(&head, Some(&with_status(code))).unwrap().as_u16();
        assert_eq!(status("0"), 200);
        assert_eq!(status("14"), 503);
        assert_eq!(status("10"), 409);
        assert_eq!(status("8"), 429);
        assert_eq!(status("4"), 504);
        assert_eq!(status("3"), 400);
        assert_eq!(status("5"), 404);
        assert_eq!(status("x"), 500);
        assert_eq!(judged(&with_status("7"), None).unwrap().as_u16(), 403);
        assert_eq!(judged(&head, None), None);
    }

    #[test]
    fn the_layer_s_answers_have_their_own_codes() {
        let code = |error: idem_core::Error| {
            let problem = crate::response::problem::judged(
                &error,
                Subject::Unnamed,
                Duration::from_secs(1),
                StatusCode::UNPROCESSABLE_ENTITY,
            );
            code_of(&problem)
        };
        let quota = idem_core::Error::QuotaExceeded {
            key: "k".into(),
            reason: "1 records".into(),
            retry_after: Duration::from_secs(60),
        };
        assert_eq!(code(quota), 8, "RESOURCE_EXHAUSTED");
        assert_eq!(code(idem_core::Error::Mismatch { key: "k".into() }), 9);
        assert_eq!(code(idem_core::Error::InvalidKey("empty".into())), 3);
    }

    #[test]
    fn grpc_content_types_are_told_apart_from_grpc_web() {
        let typed = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(CONTENT_TYPE, value.parse().unwrap());
            is_grpc(&headers)
        };
        assert!(typed("application/grpc"));
        assert!(typed("application/grpc+proto"));
        assert!(!typed("application/grpc-web"));
        assert!(!typed("application/json"));
    }

    #[test]
    fn request_messages_are_counted_by_their_length_prefix() {
        let message = |payload: &[u8]| {
            let mut framed = vec![0];
            framed.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            framed.extend_from_slice(payload);
            framed
        };
        assert_eq!(message_count(&message(b"charge")), Some(1));
        assert_eq!(message_count(&message(b"")), Some(1));
        assert_eq!(
            message_count(&[message(b"a"), message(b"bc")].concat()),
            Some(2)
        );
        assert_eq!(message_count(b""), Some(0));
        assert_eq!(message_count(&message(b"charge")[..7]), None);
        assert_eq!(message_count(&[0, 0, 0]), None);
    }

    #[test]
    fn messages_are_percent_encoded() {
        assert_eq!(percent_encode("a `k` 100% é"), "a `k` 100%25 %C3%A9");
    }
}
