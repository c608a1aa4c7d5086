//! The response as the store keeps it, and the answers built from it. It is stored in one of
//! two forms, read back alike: the JSON form (`json`), and the binary frame (`frame`), whose
//! body a replay slices out of the stored bytes.

use bytes::Bytes;
use http::header::CONTENT_ENCODING;
use http::response::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use serde::{Deserialize, Serialize};

use crate::body::{self, Body};
use crate::response::replay_limits::{has_no_content, never_replayed, ReplayLimits};

pub use idem_protocol::header::IDEMPOTENT_REPLAYED;

/// The response headers replayed unless the layer is told more: those that describe the
/// resource or the representation, what a client needs to decode the body
/// (`content-encoding`, `grpc-encoding`), and the status of a trailers-only gRPC answer.
/// `Set-Cookie` and `Date` are never among them, and never replayed even when added
/// ([`IdempotencyLayerBuilder::replay_headers`](crate::IdempotencyLayerBuilder::replay_headers)).
pub const DEFAULT_REPLAY_HEADERS: [&str; 12] = [
    "content-type",
    "content-encoding",
    "vary",
    "location",
    "content-location",
    "etag",
    "last-modified",
    "link",
    "grpc-encoding",
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
];

/// Room in a stored response for its status, headers and trailers, on top of its body.
const STORED_HEAD_ROOM: usize = 1 << 20;

/// The longest stored response the layer reads back for a body of at most `max_body` bytes,
/// in either form: the body in base64 (the JSON form keeps text as it is only when that is no
/// longer; the frame keeps any body as it is), and room for the rest. A frame is never longer
/// than the JSON form of the same response, its 32-byte request digest included: all it holds
/// besides the bytes of the headers, trailers and body takes at most 46 bytes (for a body
/// under 32 GiB), the least the JSON form takes, and a header's two lengths take fewer bytes
/// than its brackets, quotes and comma do in JSON. A longer record was not written by this
/// layer, and is refused before it is parsed.
pub(crate) fn max_stored_len(max_body: usize) -> usize {
    max_body
        .div_ceil(3)
        .saturating_mul(4)
        .saturating_add(STORED_HEAD_ROOM)
}

/// Headers or trailers as stored: each a valid header whose value is UTF-8 text (as the JSON
/// form holds it), in order, checked once when the response is built or read back, so that a
/// replay puts them on the wire as they are.
pub(crate) type StoredHeaders = Vec<(HeaderName, HeaderValue)>;

/// A response the layer stores: status, allow-listed headers, body and trailers. Its serde
/// form is the JSON one (`json`); [`StoredResponse::from_outcome`] reads either form.
#[derive(Debug)]
pub(crate) struct StoredResponse {
    status: u16,
    headers: StoredHeaders,
    body: StoredBody,
    /// Every trailer, in order: a gRPC answer's `grpc-status` is one.
    trailers: StoredHeaders,
    /// The handler's own head and body, for the first answer, which is not a replay.
    fresh: Option<(Parts, Bytes)>,
}

/// The body as stored, or why it was not kept.
#[derive(Clone, Debug, PartialEq, Eq)]
enum StoredBody {
    /// The body's bytes: in a record read back, a slice of the stored bytes where its form
    /// allows (a frame's).
    Kept(Bytes),
    /// Why the handled response's body was not kept.
    NotKept(NotKept),
}

/// Why a handled request's response body was not kept: its key stays handled, and retries are
/// told the answer cannot be replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum NotKept {
    /// The body went past the layer's response limit.
    TooLarge,
    /// The body failed while it was sent.
    Failed,
    /// The client went away and the stream did not end in time to be kept.
    Abandoned,
}

impl NotKept {
    /// Why, in words, for a problem's detail.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            NotKept::TooLarge => "its response body was over the size the layer keeps",
            NotKept::Failed => "its response body failed while it was sent",
            NotKept::Abandoned => "its client went away before its response stream ended",
        }
    }
}

impl StoredResponse {
    /// Keeps what a replay may carry of a response the handler just produced, read whole.
    pub(crate) fn capture(parts: Parts, body: Bytes, replay_headers: &[HeaderName]) -> Self {
        let mut stored = StoredResponse::kept(
            parts.status,
            &parts.headers,
            body.clone(),
            None,
            replay_headers,
        );
        stored.fresh = Some((parts, body));
        stored
    }

    /// Keeps what a replay may carry of a response already sent to the client as it came.
    pub(crate) fn streamed(
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
        trailers: Option<&HeaderMap>,
        replay_headers: &[HeaderName],
    ) -> Self {
        let body = Bytes::copy_from_slice(body);
        StoredResponse::kept(status, headers, body, trailers, replay_headers)
    }

    /// Keeps what a replay may carry of a response whose body is kept whole.
    fn kept(
        status: StatusCode,
        headers: &HeaderMap,
        body: Bytes,
        trailers: Option<&HeaderMap>,
        replay_headers: &[HeaderName],
    ) -> Self {
        // What a response without content sends is no content, whatever its handler gave.
        let body = if has_no_content(status) {
            Bytes::new()
        } else {
            body
        };
        let trailers = trailers.filter(|_| !has_no_content(status));
        StoredResponse {
            status: status.as_u16(),
            headers: allowed(headers, replay_headers),
            body: StoredBody::Kept(body),
            trailers: trailers.map(every_header).unwrap_or_default(),
            fresh: None,
        }
    }

    /// A handled response whose body could not be kept.
    pub(crate) fn not_kept(
        status: StatusCode,
        headers: &HeaderMap,
        why: NotKept,
        replay_headers: &[HeaderName],
    ) -> Self {
        StoredResponse {
            status: status.as_u16(),
            headers: allowed(headers, replay_headers),
            body: StoredBody::NotKept(why),
            trailers: Vec::new(),
            fresh: None,
        }
    }

    /// The response stored in `outcome`, the bytes of a record's `Outcome::Ok` (opened, if
    /// sealed), in either form: a frame, which starts with a zero byte as no JSON value does,
    /// or the JSON form, read by serde_json as it always was (whitespace around it and all).
    /// A frame's body is a slice of `outcome`, not a copy.
    pub(crate) fn from_outcome(outcome: Bytes) -> Result<Self, NotAStoredResponse> {
        if frame::is_frame(&outcome) {
            return frame::decode(outcome).map(|(response, _request_digest)| response);
        }
        serde_json::from_slice(&outcome).map_err(|error| NotAStoredResponse::new(error.to_string()))
    }

    /// The handler's own response, if this is the first answer rather than a replay.
    pub(crate) fn take_fresh(&mut self) -> Option<Response<Body>> {
        let (parts, body) = self.fresh.take()?;
        Some(Response::from_parts(parts, body::full(body)))
    }

    /// The handled status and why the body was not kept, when it was not.
    pub(crate) fn not_kept_reason(&self) -> Option<(u16, NotKept)> {
        match self.body {
            StoredBody::NotKept(why) => Some((self.status, why)),
            _ => None,
        }
    }

    /// The content codings the stored body is in, in the order they were applied.
    pub(crate) fn content_encodings(&self) -> impl Iterator<Item = &str> {
        content_codings(&self.headers)
    }

    /// The compression of the stored gRPC messages, when they have one.
    pub(crate) fn grpc_encoding(&self) -> Option<&str> {
        grpc_compression(&self.headers)
    }

    /// The replay: the stored status, headers, body and trailers, marked as replayed, within
    /// `limits`. Headers and trailers off the allow-list, and framing ones, are left out; a
    /// status no response is stored with, or a body over the limit, refuses the record.
    pub(crate) fn into_replay(self, limits: &ReplayLimits<'_>) -> Result<Response<Body>, String> {
        let status = limits.status(self.status)?;
        let body = match self.body {
            StoredBody::Kept(body) => {
                limits.body_len(body.len())?;
                body
            }
            StoredBody::NotKept(_) => return Err("the stored response has no body".to_owned()),
        };
        let trailers = limits.replayed_headers(self.trailers);
        limits.content_allowed(status, body.len(), trailers.len())?;
        // HTTP/1.1 sends only the trailers its `Trailer` header announces.
        let announced = trailers
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let body = if trailers.is_empty() {
            body::full(body)
        } else {
            body::with_trailers(body, header_map(trailers))
        };
        let mut response = Response::new(body);
        *response.status_mut() = status;
        let headers_out = response.headers_mut();
        *headers_out = header_map(limits.replayed_headers(self.headers));
        headers_out.insert(
            IDEMPOTENT_REPLAYED,
            HeaderValue::from_static(idem_protocol::header::REPLAYED),
        );
        if !announced.is_empty() {
            let announced = HeaderValue::try_from(announced).map_err(|e| e.to_string())?;
            headers_out.insert(http::header::TRAILER, announced);
        }
        Ok(response)
    }
}

/// A stored header's value as the text it is (see [`StoredHeaders`]).
fn text(value: &HeaderValue) -> &str {
    std::str::from_utf8(value.as_bytes()).unwrap_or_default()
}

/// A header as text, held as stored or as a [`RecordedResponse`] shows it.
trait HeaderText {
    fn name(&self) -> &str;
    fn value(&self) -> &str;
}

impl HeaderText for (HeaderName, HeaderValue) {
    fn name(&self) -> &str {
        self.0.as_str()
    }

    fn value(&self) -> &str {
        text(&self.1)
    }
}

impl HeaderText for (String, String) {
    fn name(&self) -> &str {
        &self.0
    }

    fn value(&self) -> &str {
        &self.1
    }
}

/// The content codings `headers` name, in the order they were applied.
fn content_codings<H: HeaderText>(headers: &[H]) -> impl Iterator<Item = &str> {
    headers
        .iter()
        .filter(|header| {
            header
                .name()
                .eq_ignore_ascii_case(CONTENT_ENCODING.as_str())
        })
        .flat_map(|header| header.value().split(','))
        .map(str::trim)
        .filter(|coding| !coding.is_empty())
}

/// The compression of gRPC messages `headers` name, when they name one.
fn grpc_compression<H: HeaderText>(headers: &[H]) -> Option<&str> {
    headers
        .iter()
        .find(|header| header.name().eq_ignore_ascii_case("grpc-encoding"))
        .map(|header| header.value().trim())
}

/// The headers among `names`, those never replayed aside. Values that are not visible ASCII are left
/// out rather than mangled.
fn allowed(headers: &HeaderMap, names: &[HeaderName]) -> StoredHeaders {
    names
        .iter()
        .filter(|name| !never_replayed(name.as_str()))
        .flat_map(|name| {
            headers
                .get_all(name)
                .iter()
                .filter(|value| value.to_str().is_ok())
                .map(move |value| (name.clone(), value.clone()))
        })
        .collect()
}

fn every_header(headers: &HeaderMap) -> StoredHeaders {
    headers
        .iter()
        .filter(|(name, value)| !never_replayed(name.as_str()) && value.to_str().is_ok())
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

fn header_map(pairs: StoredHeaders) -> HeaderMap {
    let mut map = HeaderMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        map.append(name, value);
    }
    map
}

/// Two responses are the same when what they hold is: the handler's own, kept for the first
/// answer only, aside.
#[cfg(test)]
impl PartialEq for StoredResponse {
    fn eq(&self, other: &Self) -> bool {
        (self.status, &self.headers, &self.body, &self.trailers)
            == (other.status, &other.headers, &other.body, &other.trailers)
    }
}

mod codec;
mod error;
mod frame;
mod json;
mod recorded;

pub(crate) use codec::FrameCodec;
pub use error::NotAStoredResponse;
pub use recorded::{RecordedBody, RecordedResponse};

#[cfg(test)]
mod tests;
