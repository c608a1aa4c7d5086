//! What a stored response keeps, and what a replay of it carries.

use super::json::costly_to_escape;
use super::*;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use http::header::{CONTENT_TYPE, DATE, LOCATION, SET_COOKIE};
use http_body_util::BodyExt;

fn default_names() -> Vec<HeaderName> {
    DEFAULT_REPLAY_HEADERS
        .iter()
        .map(|name| HeaderName::from_static(name))
        .collect()
}

#[test]
fn the_longest_response_the_layer_keeps_is_read_back() {
    let max_body = 64 * 1024;
    let mut headers = HeaderMap::new();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(
        LOCATION,
        HeaderValue::from_str(&"l".repeat(60_000)).unwrap(),
    );
    for body in [
        vec![1u8; max_body],
        vec![0xff; max_body],
        vec![b'"'; max_body],
    ] {
        let stored =
            StoredResponse::streamed(StatusCode::OK, &headers, &body, None, &default_names());
        let encoded = serde_json::to_vec(&stored).unwrap();
        assert!(
            encoded.len() <= max_stored_len(max_body),
            "{}",
            encoded.len()
        );
        let framed = frame::encode(&stored, Some(&[0xff; frame::DIGEST_LEN]));
        assert!(framed.len() <= encoded.len(), "{}", framed.len());
    }
    assert_eq!(max_stored_len(usize::MAX), usize::MAX, "saturates");
}

fn replayed(stored: StoredResponse, max_body: usize) -> Result<Response<Body>, String> {
    let names = default_names();
    stored.into_replay(&ReplayLimits {
        headers: &names,
        max_body,
    })
}

fn handled(body: &'static [u8]) -> StoredResponse {
    let response = Response::builder()
        .status(201)
        .header(CONTENT_TYPE, "application/octet-stream")
        .header(LOCATION, "/payments/1")
        .header(SET_COOKIE, "session=secret")
        .header(DATE, "Mon, 30 Nov 2026 03:00:00 GMT")
        .body(())
        .unwrap();
    StoredResponse::capture(
        response.into_parts().0,
        Bytes::from_static(body),
        &default_names(),
    )
}

#[tokio::test]
async fn a_replay_has_the_status_body_and_allowed_headers_only() {
    let binary: &[u8] = &[0, 159, 146, 150, 255];
    let json = serde_json::to_vec(&handled(binary)).unwrap();
    let stored: StoredResponse = serde_json::from_slice(&json).unwrap();
    let replay = replayed(stored, 1024).unwrap();
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
    let fresh = handled(b"ok").take_fresh().unwrap();
    assert_eq!(fresh.headers()[SET_COOKIE], "session=secret");
    assert!(fresh.headers().get(IDEMPOTENT_REPLAYED).is_none());
}

#[tokio::test]
async fn trailers_are_replayed_after_the_body() {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let head = HeaderMap::new();
    let stored = StoredResponse::streamed(StatusCode::OK, &head, b"msg", Some(&trailers), &[]);
    let json = serde_json::to_vec(&stored).unwrap();
    let stored: StoredResponse = serde_json::from_slice(&json).unwrap();
    let collected = replayed(stored, 1024)
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap();
    assert_eq!(collected.trailers().unwrap()["grpc-status"], "0");
    assert_eq!(collected.to_bytes(), "msg");
}

#[test]
fn text_full_of_control_characters_is_stored_in_base64() {
    let head = HeaderMap::new();
    let stored = |body: &[u8]| {
        let stored = StoredResponse::streamed(StatusCode::OK, &head, body, None, &[]);
        serde_json::to_string(&stored).unwrap()
    };
    let controls = stored(&[1u8; 3000]);
    assert!(controls.contains("\"base64\""));
    assert!(controls.len() < 4200, "{}", controls.len());
    assert!(stored(b"{\"a\":\"b\"}\n").contains("\"text\""));
}

#[test]
fn text_is_kept_as_text_until_escaping_it_takes_more_room_than_base64() {
    // Three bytes take four in base64; a quote or a backslash takes two escaped, a newline
    // or a tab two, another control character six.
    assert!(!costly_to_escape("abc"));
    assert!(!costly_to_escape("a\"b"), "four bytes either way: text");
    assert!(costly_to_escape("a\"\""));
    assert!(costly_to_escape("\\\\\\"));
    assert!(costly_to_escape("a\n\t"));
    assert!(!costly_to_escape("ab\r"));
    assert!(costly_to_escape("\u{1}"));
}

#[test]
fn every_content_coding_applied_is_listed() {
    let mut head = HeaderMap::new();
    head.append(CONTENT_ENCODING, HeaderValue::from_static("gzip, br"));
    head.append(CONTENT_ENCODING, HeaderValue::from_static("zstd"));
    let stored = StoredResponse::streamed(StatusCode::OK, &head, b"", None, &[CONTENT_ENCODING]);
    let codings: Vec<&str> = stored.content_encodings().collect();
    assert_eq!(codings, ["gzip", "br", "zstd"]);
}

#[test]
fn a_response_not_kept_has_no_replay_but_keeps_its_status() {
    let mut head = HeaderMap::new();
    head.insert(LOCATION, HeaderValue::from_static("/payments/1"));
    let names = [LOCATION];
    let stored = StoredResponse::not_kept(StatusCode::CREATED, &head, NotKept::TooLarge, &names);
    let json = serde_json::to_vec(&stored).unwrap();
    let stored: StoredResponse = serde_json::from_slice(&json).unwrap();
    assert_eq!(stored.not_kept_reason(), Some((201, NotKept::TooLarge)));
    let reasons = [NotKept::TooLarge, NotKept::Failed, NotKept::Abandoned].map(NotKept::reason);
    assert!(reasons[0].contains("over the size"), "{}", reasons[0]);
    assert!(reasons[1].contains("failed"), "{}", reasons[1]);
    assert!(reasons[2].contains("went away"), "{}", reasons[2]);
    assert!(replayed(stored, 1024).is_err());
}

/// A record as someone with write access to the store could write it.
fn crafted(record: serde_json::Value) -> StoredResponse {
    serde_json::from_value(record).unwrap()
}

#[tokio::test]
async fn a_crafted_record_replays_no_header_off_the_list_and_no_framing() {
    let record = crafted(serde_json::json!({
        "status": 200,
        "headers": [
            ["location", "/payments/1"],
            ["set-cookie", "session=stolen"],
            ["access-control-allow-origin", "*"],
            ["content-length", "2"],
            ["transfer-encoding", "chunked"],
            ["connection", "close"],
        ],
        "body": { "text": "0123456789" },
        "trailers": [["grpc-status", "0"], ["content-length", "99"], ["set-cookie", "a=b"]],
    }));
    let replay = replayed(record, 1024).unwrap();
    let names: Vec<&str> = replay.headers().keys().map(HeaderName::as_str).collect();
    assert_eq!(names, ["location", IDEMPOTENT_REPLAYED.as_str(), "trailer"]);
    assert_eq!(replay.headers()["trailer"], "grpc-status");
    let collected = replay.into_body().collect().await.unwrap();
    let trailers = collected.trailers().unwrap().clone();
    assert_eq!(collected.to_bytes(), "0123456789");
    assert_eq!(trailers.len(), 1);
    assert_eq!(trailers["grpc-status"], "0");
}

#[test]
fn a_crafted_record_with_a_status_no_response_is_stored_with_is_refused() {
    for status in [101, 999, 0] {
        let record = crafted(serde_json::json!({
            "status": status, "headers": [], "body": { "text": "x" },
        }));
        assert!(replayed(record, 1024).is_err(), "{status}");
    }
}

#[test]
fn a_body_over_the_limit_is_refused() {
    let body = |body: serde_json::Value| {
        crafted(serde_json::json!({ "status": 200, "headers": [], "body": body }))
    };
    let ten = BASE64.encode(b"0123456789");
    assert!(replayed(body(serde_json::json!({ "text": "0123456789" })), 10).is_ok());
    assert!(replayed(body(serde_json::json!({ "base64": ten.clone() })), 10).is_ok());
    assert!(replayed(body(serde_json::json!({ "text": "0123456789!" })), 10).is_err());
    assert!(replayed(body(serde_json::json!({ "base64": ten })), 9).is_err());
}

#[test]
fn a_coding_is_found_whatever_the_case_of_its_header() {
    let record = crafted(serde_json::json!({
        "status": 200,
        "headers": [["Content-Encoding", "gzip"], ["GRPC-Encoding", "gzip"]],
        "body": { "text": "x" },
    }));
    assert_eq!(record.content_encodings().collect::<Vec<_>>(), ["gzip"]);
    assert_eq!(record.grpc_encoding(), Some("gzip"));
}

#[test]
fn framing_headers_are_never_stored() {
    let response = Response::builder()
        .header("content-length", "2")
        .header(LOCATION, "/payments/1")
        .body(())
        .unwrap();
    let names = [HeaderName::from_static("content-length"), LOCATION];
    let stored = StoredResponse::capture(response.into_parts().0, Bytes::new(), &names);
    assert_eq!(
        stored.headers,
        [(LOCATION, HeaderValue::from_static("/payments/1"))]
    );
}
