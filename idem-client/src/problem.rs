//! Reading the `type` of an `application/problem+json` answer without taking its body from
//! the caller.

use bytes::Bytes;
use futures_util::stream::{self, Stream, StreamExt};
use http::header::CONTENT_TYPE;
use reqwest::{Response, ResponseBuilderExt};
use serde::Deserialize;

/// Problem documents are small; a body longer than this is not read for its type.
const READ_AT_MOST: usize = 64 * 1024;

/// A problem document's `type`; a member of another JSON type is ignored, as RFC 9457 says.
#[derive(Deserialize)]
struct Typed {
    #[serde(rename = "type")]
    kind: Option<serde_json::Value>,
}

/// What a response says of itself as an RFC 9457 problem.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    /// Not an `application/problem+json` response.
    None,
    /// A problem document, with its `type` when it has one.
    Read(Option<String>),
    /// A problem whose document could not be read: over 64 KiB, cut short, or not JSON.
    Unreadable,
}

/// What `response` says of itself as a problem, and the response with its body whole: the
/// bytes read are put back in front of the rest, and a failure to read them reaches the
/// caller when it reads the body (whose `content_length()` is then unknown).
pub(crate) async fn read(mut response: Response) -> (Response, Problem) {
    if !is_problem(&response) {
        return (response, Problem::None);
    }
    let url = response.url().clone();
    let mut head = http::Response::builder()
        .status(response.status())
        .version(response.version());
    if let Some(headers) = head.headers_mut() {
        *headers = response.headers().clone();
    }
    if let Some(extensions) = head.extensions_mut() {
        *extensions = response.extensions().clone();
    }
    let head = head.url(url);

    let mut read = Vec::new();
    let mut length = 0;
    let stopped = loop {
        if length > READ_AT_MOST {
            break Stopped::TooLong;
        }
        match response.chunk().await {
            Ok(Some(chunk)) => {
                length += chunk.len();
                read.push(chunk);
            }
            Ok(None) => break Stopped::Ended,
            Err(error) => break Stopped::Failed(error),
        }
    };

    let (body, problem) = match stopped {
        Stopped::Ended => {
            let whole = Bytes::from(read.concat());
            let problem = match serde_json::from_slice::<Typed>(&whole) {
                Ok(typed) => Problem::Read(typed.kind.and_then(|kind| match kind {
                    serde_json::Value::String(kind) => Some(kind),
                    _ => None,
                })),
                Err(_) => Problem::Unreadable,
            };
            (reqwest::Body::from(whole), problem)
        }
        Stopped::Failed(error) => (
            put_back(read, stream::once(async { Err(error) })),
            Problem::Unreadable,
        ),
        Stopped::TooLong => (put_back(read, response.bytes_stream()), Problem::Unreadable),
    };
    let rebuilt = head.body(body).expect("the parts of a valid response");
    (Response::from(rebuilt), problem)
}

/// Why the reading of a problem document stopped.
enum Stopped {
    Ended,
    Failed(reqwest::Error),
    TooLong,
}

fn is_problem(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| {
            essence
                .trim()
                .eq_ignore_ascii_case(idem_protocol::header::PROBLEM_JSON)
        })
}

/// A body of the `read` chunks, then `rest`: what is left of the body, or the failure that
/// stopped the reading.
fn put_back(
    read: Vec<Bytes>,
    rest: impl Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
) -> reqwest::Body {
    reqwest::Body::wrap_stream(stream::iter(read.into_iter().map(Ok)).chain(rest))
}
