//! The JSON form is what it was: records written before read back as the same responses, and
//! the layer writes each response byte for byte as it did.

use bytes::Bytes;
use http::header::{CONTENT_TYPE, ETAG, LOCATION, VARY};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

use crate::response::stored::{NotKept, StoredBody, StoredResponse};

/// Records as the layer wrote them before the body was held as bytes, each beside the
/// response it was written for.
fn written_before() -> Vec<(&'static str, StoredResponse)> {
    let head = |pairs: &[(HeaderName, &'static str)]| {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name, HeaderValue::from_static(value));
        }
        map
    };
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    trailers.insert("grpc-message", HeaderValue::from_static("ok then"));
    let names = [CONTENT_TYPE, LOCATION, ETAG, VARY];
    let streamed = |status, head: &HeaderMap, body: &[u8], trailers: Option<&HeaderMap>| {
        StoredResponse::streamed(status, head, body, trailers, &names)
    };
    let not_kept =
        |status, head: &HeaderMap, why| StoredResponse::not_kept(status, head, why, &names);
    vec![
        (
            r#"{"status":201,"headers":[["content-type","application/octet-stream"],["location","/payments/1"]],"body":{"base64":"AJ+Slv8="}}"#,
            streamed(
                StatusCode::CREATED,
                &head(&[
                    (CONTENT_TYPE, "application/octet-stream"),
                    (LOCATION, "/payments/1"),
                ]),
                &[0, 159, 146, 150, 255],
                None,
            ),
        ),
        (
            r#"{"status":200,"headers":[["content-type","application/grpc"]],"body":{"text":"msg"},"trailers":[["grpc-status","0"],["grpc-message","ok then"]]}"#,
            streamed(
                StatusCode::OK,
                &head(&[(CONTENT_TYPE, "application/grpc")]),
                b"msg",
                Some(&trailers),
            ),
        ),
        (
            r#"{"status":201,"headers":[["location","/payments/1"]],"body":{"not_kept":"too_large"}}"#,
            not_kept(
                StatusCode::CREATED,
                &head(&[(LOCATION, "/payments/1")]),
                NotKept::TooLarge,
            ),
        ),
        (
            r#"{"status":200,"headers":[],"body":{"not_kept":"failed"}}"#,
            not_kept(StatusCode::OK, &head(&[]), NotKept::Failed),
        ),
        (
            r#"{"status":200,"headers":[],"body":{"not_kept":"abandoned"}}"#,
            not_kept(StatusCode::OK, &head(&[]), NotKept::Abandoned),
        ),
        (
            r#"{"status":200,"headers":[],"body":{"base64":"AQEBAQE="}}"#,
            streamed(StatusCode::OK, &head(&[]), &[1; 5], None),
        ),
        (
            r#"{"status":204,"headers":[["etag","\"v1\""]],"body":{"text":""}}"#,
            streamed(
                StatusCode::NO_CONTENT,
                &head(&[(ETAG, "\"v1\"")]),
                b"x",
                Some(&trailers),
            ),
        ),
        (
            r#"{"status":200,"headers":[["content-type","application/json"],["vary","accept"],["vary","accept-encoding"]],"body":{"text":"{\"a\":\"b\"}\n"}}"#,
            streamed(
                StatusCode::OK,
                &head(&[
                    (CONTENT_TYPE, "application/json"),
                    (VARY, "accept"),
                    (VARY, "accept-encoding"),
                ]),
                b"{\"a\":\"b\"}\n",
                None,
            ),
        ),
        (
            r#"{"status":200,"headers":[["content-type","text/plain; charset=utf-8"]],"body":{"text":"déjà 😀"}}"#,
            streamed(
                StatusCode::OK,
                &head(&[(CONTENT_TYPE, "text/plain; charset=utf-8")]),
                "déjà 😀".as_bytes(),
                None,
            ),
        ),
        (
            // `RecordedResponse::decode`'s example.
            r#"{"status":201,"headers":[["content-type","text/plain"]],"body":{"text":"charged"}}"#,
            streamed(
                StatusCode::CREATED,
                &head(&[(CONTENT_TYPE, "text/plain")]),
                b"charged",
                None,
            ),
        ),
    ]
}

#[test]
fn a_record_written_before_reads_back_as_the_response_it_was_written_for() {
    for (record, response) in written_before() {
        let read = StoredResponse::from_outcome(Bytes::from_static(record.as_bytes())).unwrap();
        assert_eq!(read, response, "{record}");
        let read: StoredResponse = serde_json::from_str(record).unwrap();
        assert_eq!(read, response, "{record}");
    }
}

#[test]
fn each_response_is_written_byte_for_byte_as_before() {
    for (record, response) in written_before() {
        assert_eq!(serde_json::to_string(&response).unwrap(), record);
    }
}

#[test]
fn a_binary_body_reads_back_as_its_bytes() {
    let (record, _) = &written_before()[0];
    let read = StoredResponse::from_outcome(Bytes::from_static(record.as_bytes())).unwrap();
    assert_eq!(
        read.body,
        StoredBody::Kept(Bytes::from_static(&[0, 159, 146, 150, 255]))
    );
}

#[test]
fn whitespace_around_a_record_is_read_past_as_serde_json_reads_it() {
    let (record, response) = written_before().swap_remove(1);
    let padded = format!(" \t\r\n{record}\n ");
    let read = StoredResponse::from_outcome(Bytes::from(padded)).unwrap();
    assert_eq!(read, response);
}

#[test]
fn a_body_that_is_not_base64_is_refused_as_the_record_is_read() {
    let record = br#"{"status":200,"headers":[],"body":{"base64":"!!"}}"#;
    let error = StoredResponse::from_outcome(Bytes::from_static(record)).unwrap_err();
    assert!(
        error.to_string().contains("stored body is not base64"),
        "{error}"
    );
}
