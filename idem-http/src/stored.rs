//! The response as the store keeps it, and the answers built from it.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use bytes::Bytes;
use http::response::Parts;
use http::{HeaderName, HeaderValue, Response, StatusCode};
use serde::{Deserialize, Serialize};

use crate::body::{self, Body};

/// The header a replayed answer carries.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The response headers replayed unless the layer is told more: those that describe the
/// resource or the representation. `Set-Cookie` and `Date` are never among them.
pub const DEFAULT_REPLAY_HEADERS: [&str; 6] = [
    "content-type",
    "location",
    "content-location",
    "etag",
    "last-modified",
    "link",
];

/// A response the layer stores: status, allow-listed headers and body.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StoredResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: StoredBody,
    /// The handler's own head and body, for the first answer, which is not a replay.
    #[serde(skip)]
    fresh: Option<(Parts, Bytes)>,
}

/// The body as stored: text as it is, anything else in base64.
#[derive(Debug, Serialize, Deserialize)]
enum StoredBody {
    #[serde(rename = "text")]
    Text(String),
    #[serde(rename = "base64")]
    Base64(String),
}

impl StoredResponse {
    /// Keeps what a replay may carry of a response the handler just produced.
    pub(crate) fn capture(parts: Parts, body: Bytes, replay_headers: &[HeaderName]) -> Self {
        let headers = replay_headers
            .iter()
            .flat_map(|name| {
                parts.headers.get_all(name).iter().filter_map(move |value| {
                    // Values that are not visible ASCII are left out rather than mangled.
                    Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
                })
            })
            .collect();
        let stored_body = match std::str::from_utf8(&body) {
            Ok(text) => StoredBody::Text(text.to_owned()),
            Err(_) => StoredBody::Base64(BASE64.encode(&body)),
        };
        StoredResponse {
            status: parts.status.as_u16(),
            headers,
            body: stored_body,
            fresh: Some((parts, body)),
        }
    }

    /// The answer: the handler's own response the first time, the stored one on a replay.
    pub(crate) fn into_response(self, replayed: bool) -> Result<Response<Body>, String> {
        if let (Some((parts, body)), false) = (self.fresh, replayed) {
            return Ok(Response::from_parts(parts, body::full(body)));
        }
        let body = match self.body {
            StoredBody::Text(text) => Bytes::from(text),
            StoredBody::Base64(encoded) => BASE64
                .decode(encoded)
                .map(Bytes::from)
                .map_err(|e| format!("stored body is not base64: {e}"))?,
        };
        let mut response = Response::new(body::full(body));
        *response.status_mut() = StatusCode::from_u16(self.status)
            .map_err(|_| format!("stored status {} is not a status", self.status))?;
        let headers = response.headers_mut();
        for (name, value) in self.headers {
            let name = HeaderName::try_from(name).map_err(|e| e.to_string())?;
            let value = HeaderValue::try_from(value).map_err(|e| e.to_string())?;
            headers.append(name, value);
        }
        headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{CONTENT_TYPE, DATE, LOCATION, SET_COOKIE};
    use http_body_util::BodyExt;

    fn handled(body: &'static [u8]) -> StoredResponse {
        let response = Response::builder()
            .status(201)
            .header(CONTENT_TYPE, "application/octet-stream")
            .header(LOCATION, "/payments/1")
            .header(SET_COOKIE, "session=secret")
            .header(DATE, "Mon, 30 Nov 2026 03:00:00 GMT")
            .body(())
            .unwrap();
        let names: Vec<HeaderName> = DEFAULT_REPLAY_HEADERS
            .iter()
            .map(|name| HeaderName::from_static(name))
            .collect();
        StoredResponse::capture(response.into_parts().0, Bytes::from_static(body), &names)
    }

    #[tokio::test]
    async fn a_replay_has_the_status_body_and_allowed_headers_only() {
        let binary: &[u8] = &[0, 159, 146, 150, 255];
        let json = serde_json::to_vec(&handled(binary)).unwrap();
        let stored: StoredResponse = serde_json::from_slice(&json).unwrap();
        let replay = stored.into_response(true).unwrap();
        assert_eq!(replay.status(), 201);
        assert_eq!(replay.headers()[LOCATION], "/payments/1");
        assert_eq!(replay.headers()[IDEMPOTENT_REPLAYED], "true");
        assert!(replay.headers().get(SET_COOKIE).is_none());
        assert!(replay.headers().get(DATE).is_none());
        let body = replay.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], binary);
    }

    #[test]
    fn the_first_answer_keeps_every_header() {
        let fresh = handled(b"ok").into_response(false).unwrap();
        assert_eq!(fresh.headers()[SET_COOKIE], "session=secret");
        assert!(fresh.headers().get(IDEMPOTENT_REPLAYED).is_none());
    }
}
