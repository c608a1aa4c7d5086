//! The response as the store keeps it, and the answers built from it.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
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

/// The longest stored response the layer reads back for a body of at most `max_body` bytes:
/// the body in base64 (text is stored as is only when that is no longer), and room for the
/// rest. A longer record was not written by this layer, and is refused before it is parsed.
pub(crate) fn max_stored_len(max_body: usize) -> usize {
    max_body
        .div_ceil(3)
        .saturating_mul(4)
        .saturating_add(STORED_HEAD_ROOM)
}

/// A response the layer stores: status, allow-listed headers, body and trailers.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StoredResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: StoredBody,
    /// Every trailer, in order: a gRPC answer's `grpc-status` is one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    trailers: Vec<(String, String)>,
    /// The handler's own head and body, for the first answer, which is not a replay.
    #[serde(skip)]
    fresh: Option<(Parts, Bytes)>,
}

/// The body as stored: text as it is, anything else in base64, or why it was not kept.
#[derive(Debug, Serialize, Deserialize)]
enum StoredBody {
    #[serde(rename = "text")]
    Text(String),
    #[serde(rename = "base64")]
    Base64(String),
    #[serde(rename = "not_kept")]
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
        let mut stored =
            StoredResponse::streamed(parts.status, &parts.headers, &body, None, replay_headers);
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
        // What a response without content sends is no content, whatever its handler gave.
        let body = if has_no_content(status) {
            &[][..]
        } else {
            body
        };
        let trailers = trailers.filter(|_| !has_no_content(status));
        let stored_body = match std::str::from_utf8(body) {
            Ok(text) if !costly_to_escape(text) => StoredBody::Text(text.to_owned()),
            _ => StoredBody::Base64(BASE64.encode(body)),
        };
        StoredResponse {
            status: status.as_u16(),
            headers: allowed(headers, replay_headers),
            body: stored_body,
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
            StoredBody::Text(text) => {
                limits.body_len(text.len())?;
                Bytes::from(text)
            }
            StoredBody::Base64(encoded) => {
                limits.body_len(base64_decoded_len(&encoded))?;
                Bytes::from(decode_base64(&encoded)?)
            }
            StoredBody::NotKept(_) => return Err("the stored response has no body".to_owned()),
        };
        let trailers = limits.replayed_headers(self.trailers);
        limits.content_allowed(status, body.len(), trailers.len())?;
        // HTTP/1.1 sends only the trailers its `Trailer` header announces.
        let announced = trailers
            .iter()
            .map(|(name, _)| name.to_ascii_lowercase())
            .collect::<Vec<_>>()
            .join(", ");
        let body = if trailers.is_empty() {
            body::full(body)
        } else {
            body::with_trailers(body, header_map(trailers)?)
        };
        let mut response = Response::new(body);
        *response.status_mut() = status;
        let headers_out = response.headers_mut();
        *headers_out = header_map(limits.replayed_headers(self.headers))?;
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

/// The content codings `headers` name, in the order they were applied.
fn content_codings(headers: &[(String, String)]) -> impl Iterator<Item = &str> {
    headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case(CONTENT_ENCODING.as_str()))
        .flat_map(|(_, value)| value.split(','))
        .map(str::trim)
        .filter(|coding| !coding.is_empty())
}

/// The compression of gRPC messages `headers` name, when they name one.
fn grpc_compression(headers: &[(String, String)]) -> Option<&str> {
    headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("grpc-encoding"))
        .map(|(_, value)| value.trim())
}

/// A stored base64 body, decoded.
fn decode_base64(encoded: &str) -> Result<Vec<u8>, String> {
    BASE64
        .decode(encoded)
        .map_err(|e| format!("stored body is not base64: {e}"))
}

/// The length of what `encoded` decodes to, without decoding it.
fn base64_decoded_len(encoded: &str) -> usize {
    let padding = encoded
        .bytes()
        .rev()
        .take_while(|byte| *byte == b'=')
        .count();
    (encoded.len() / 4 * 3).saturating_sub(padding.min(2))
}

/// Whether `text`, escaped for the JSON record, would take more room than in base64: control
/// characters take six bytes each there.
fn costly_to_escape(text: &str) -> bool {
    let escaped: usize = text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum();
    escaped > text.len().div_ceil(3) * 4
}

/// The headers among `names`, those never replayed aside. Values that are not visible ASCII are left
/// out rather than mangled.
fn allowed(headers: &HeaderMap, names: &[HeaderName]) -> Vec<(String, String)> {
    names
        .iter()
        .filter(|name| !never_replayed(name.as_str()))
        .flat_map(|name| {
            headers.get_all(name).iter().filter_map(move |value| {
                Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            })
        })
        .collect()
}

fn every_header(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| !never_replayed(name.as_str()))
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect()
}

fn header_map(pairs: Vec<(String, String)>) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        let name = HeaderName::try_from(name).map_err(|e| e.to_string())?;
        let value = HeaderValue::try_from(value).map_err(|e| e.to_string())?;
        map.append(name, value);
    }
    Ok(map)
}

mod recorded;

pub use recorded::{NotAStoredResponse, RecordedBody, RecordedResponse};

#[cfg(test)]
mod tests;
