//! A stored response read back as data, for tools that show a record (the `idem` command):
//! the same forms the layer writes and replays, decoded by the same code.

use bytes::Bytes;

use super::{
    content_codings, grpc_compression, text, NotAStoredResponse, StoredBody, StoredHeaders,
    StoredResponse,
};

/// A response as an idem layer stored it in a record's outcome (`Outcome::Ok`), decoded:
/// what a replay of the record would carry, before the replay's own checks (allow-list,
/// status and size limits). For operators and tools; a service replays records through the
/// layer.
///
/// ```
/// use idem_http::{RecordedBody, RecordedResponse};
/// let outcome = br#"{"status":201,"headers":[["content-type","text/plain"]],"body":{"text":"charged"}}"#;
/// let response = RecordedResponse::decode(outcome)?;
/// assert_eq!(response.status, 201);
/// assert_eq!(response.headers, [("content-type".to_owned(), "text/plain".to_owned())]);
/// assert_eq!(response.body, RecordedBody::Kept(b"charged".to_vec()));
/// assert_eq!(response.content_codings(), Vec::<&str>::new());
///
/// // The same response in the layer's binary form: its magic and version 1, its flags (the
/// // body kept, no request digest), status 201 in two bytes, one header (its name and value
/// // each after its length), no trailer, and a body of 7 bytes.
/// let frame = b"\0iH\x01\x00\x00\xc9\x01\x0ccontent-type\x0atext/plain\x00\x07charged";
/// assert_eq!(RecordedResponse::decode(frame)?, response);
/// # Ok::<(), idem_http::NotAStoredResponse>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedResponse {
    /// The status the handler answered with.
    pub status: u16,
    /// The headers kept (those on the layer's replay allow-list), in order.
    pub headers: Vec<(String, String)>,
    /// The body, or why it was not kept.
    pub body: RecordedBody,
    /// The trailers, in order (a gRPC answer's `grpc-status` is one).
    pub trailers: Vec<(String, String)>,
}

/// The body of a [`RecordedResponse`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordedBody {
    /// The body's bytes as the handler sent them: still in their content coding
    /// ([`RecordedResponse::content_codings`]), if they have one.
    Kept(Vec<u8>),
    /// The handler answered with a stored status, but its body was not kept: why, in words
    /// (too large, failed while sent, abandoned by its client). A replay answers with a
    /// problem saying so.
    NotKept(&'static str),
}

impl RecordedResponse {
    /// The response stored in `outcome`, the value of a record's `Outcome::Ok` (opened, if
    /// sealed), in either of the layer's forms (JSON, or its binary frame), or why it is none.
    pub fn decode(outcome: &[u8]) -> Result<Self, NotAStoredResponse> {
        let stored = StoredResponse::from_outcome(Bytes::copy_from_slice(outcome))?;
        // What the layer stores is a status it answered, so one HTTP has.
        http::StatusCode::from_u16(stored.status)
            .map_err(|_| NotAStoredResponse::new(format!("{} is no HTTP status", stored.status)))?;
        let body = match stored.body {
            StoredBody::Kept(bytes) => RecordedBody::Kept(Vec::from(bytes)),
            StoredBody::NotKept(why) => RecordedBody::NotKept(why.reason()),
        };
        Ok(RecordedResponse {
            status: stored.status,
            headers: strings(stored.headers),
            body,
            trailers: strings(stored.trailers),
        })
    }

    /// The codings the body is in, in the order they were applied: those of its
    /// `content-encoding` headers, then the compression of its gRPC messages
    /// (`grpc-encoding`) unless `identity`. Empty for a body as it reads.
    pub fn content_codings(&self) -> Vec<&str> {
        content_codings(&self.headers)
            .chain(grpc_compression(&self.headers))
            .filter(|coding| !coding.eq_ignore_ascii_case("identity"))
            .collect()
    }
}

/// Stored headers as text: names as HTTP spells them (lower case), values as stored.
fn strings(headers: StoredHeaders) -> Vec<(String, String)> {
    headers
        .into_iter()
        .map(|(name, value)| (name.as_str().to_owned(), text(&value).to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use http::header::{CONTENT_ENCODING, CONTENT_TYPE, SET_COOKIE};
    use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

    use super::*;
    use crate::response::stored::{frame, NotKept, DEFAULT_REPLAY_HEADERS};

    /// `stored` in each form the layer writes: JSON, and a frame.
    fn stored_bytes(stored: &StoredResponse) -> [Vec<u8>; 2] {
        [
            serde_json::to_vec(stored).unwrap(),
            frame::encode(stored, Some(&[7; frame::DIGEST_LEN])).to_vec(),
        ]
    }

    fn names() -> Vec<HeaderName> {
        DEFAULT_REPLAY_HEADERS
            .iter()
            .map(|name| HeaderName::from_static(name))
            .collect()
    }

    #[test]
    fn what_the_layer_stores_is_read_back_as_it_was_sent() {
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        headers.insert(SET_COOKIE, HeaderValue::from_static("session=1"));
        for body in [&b"plain text"[..], b"\xff\xfe\x00binary", b"\x1b[2J\x07"] {
            let stored =
                StoredResponse::streamed(StatusCode::CREATED, &headers, body, None, &names());
            for bytes in stored_bytes(&stored) {
                let read = RecordedResponse::decode(&bytes).unwrap();
                assert_eq!(read.status, 201);
                assert_eq!(
                    read.headers,
                    [(
                        "content-type".to_owned(),
                        "application/octet-stream".to_owned()
                    )]
                );
                assert_eq!(read.body, RecordedBody::Kept(body.to_vec()));
                assert!(read.trailers.is_empty());
            }
        }
    }

    #[test]
    fn a_body_not_kept_and_a_coded_body_say_so() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip, br"));
        let stored =
            StoredResponse::not_kept(StatusCode::OK, &headers, NotKept::TooLarge, &names());
        for bytes in stored_bytes(&stored) {
            let read = RecordedResponse::decode(&bytes).unwrap();
            assert_eq!(read.body, RecordedBody::NotKept(NotKept::TooLarge.reason()));
            assert_eq!(read.content_codings(), ["gzip", "br"]);
        }
    }

    #[test]
    fn other_values_are_no_stored_response() {
        for value in [
            &b"\"receipt\""[..],
            b"{\"status\":200}",
            b"\xff",
            b"{\"status\":200,\"headers\":[],\"body\":{\"base64\":\"!!\"}}",
            b"{\"status\":0,\"headers\":[],\"body\":{\"text\":\"x\"}}",
            b"{\"status\":65535,\"headers\":[],\"body\":{\"text\":\"x\"}}",
            b"",
            b"\0",
            b"\0iS\x02sealed",
            b"\0iH\x02\x00\x00\xc8\x00\x00\x00",
            b"\0iH\x01\x00\x00\xc8\x00\x00\x01",
        ] {
            let error = RecordedResponse::decode(value).unwrap_err();
            assert!(
                error
                    .to_string()
                    .starts_with("not a response stored by idem-http"),
                "{error}"
            );
        }
    }
}
