//! The frame: each response reads back as it was written, its body a slice of the frame, and
//! anything else it is handed, cut short, changed or made up, is refused without a panic.

use http::header::{CONTENT_TYPE, ETAG, LOCATION};
use http::{HeaderMap, HeaderName, HeaderValue, Response};
use http_body_util::BodyExt;
use proptest::prelude::*;

use super::*;
use crate::body::Body;
use crate::response::replay_limits::ReplayLimits;
use crate::response::stored::DEFAULT_REPLAY_HEADERS;

/// A digest whose bytes all differ, so that one out of place shows.
const DIGEST: [u8; DIGEST_LEN] = {
    let mut digest = [0; DIGEST_LEN];
    let mut at = 0;
    while at < DIGEST_LEN {
        digest[at] = 0xe0 ^ at as u8;
        at += 1;
    }
    digest
};

/// The headers the layer replays unless told more.
fn names() -> Vec<HeaderName> {
    DEFAULT_REPLAY_HEADERS
        .iter()
        .map(|name| HeaderName::from_static(name))
        .collect()
}

fn head(pairs: &[(HeaderName, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(name, HeaderValue::from_static(value));
    }
    map
}

fn grpc_trailers() -> HeaderMap {
    head(&[
        (HeaderName::from_static("grpc-status"), "0"),
        (HeaderName::from_static("grpc-message"), "ok then"),
    ])
}

/// One response of each kind the layer stores.
fn kinds() -> Vec<StoredResponse> {
    let head = head(&[
        (CONTENT_TYPE, "application/octet-stream"),
        (LOCATION, "/payments/1"),
        (ETAG, "\"a-long-one-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\""),
    ]);
    let names = names();
    let streamed = |status, body: &[u8], trailers: Option<&HeaderMap>| {
        StoredResponse::streamed(status, &head, body, trailers, &names)
    };
    let not_kept = |why| StoredResponse::not_kept(StatusCode::CREATED, &head, why, &names);
    vec![
        streamed(StatusCode::CREATED, b"charged", None),
        streamed(StatusCode::OK, b"\0\xff\0binary, with NULs\0", None),
        streamed(StatusCode::OK, b"", None),
        streamed(StatusCode::NO_CONTENT, b"none sent", Some(&grpc_trailers())),
        streamed(StatusCode::OK, b"msg", Some(&grpc_trailers())),
        streamed(StatusCode::OK, &[b'x'; 300], None),
        not_kept(NotKept::TooLarge),
        not_kept(NotKept::Failed),
        not_kept(NotKept::Abandoned),
    ]
}

/// Every response of [`kinds`], without a digest and with one.
fn frames() -> Vec<Bytes> {
    kinds()
        .iter()
        .flat_map(|response| [encode(response, None), encode(response, Some(&DIGEST))])
        .collect()
}

#[test]
fn every_kind_of_response_reads_back_as_written_with_its_digest_if_any() {
    for response in kinds() {
        for digest in [None, Some(&DIGEST)] {
            let frame = encode(&response, digest);
            let (read, read_digest) = decode(frame.clone()).unwrap();
            assert_eq!(read, response);
            assert_eq!(read_digest.as_ref(), digest);
            assert_eq!(encode(&read, digest), frame, "one frame per response");
        }
    }
}

#[test]
fn the_request_digest_is_read_from_the_head_alone() {
    for frame in frames() {
        let (_, digest) = decode(frame.clone()).unwrap();
        assert_eq!(request_digest(&frame), digest);
        let head = MAGIC.len() + 4 + DIGEST_LEN;
        if digest.is_some() {
            assert_eq!(
                request_digest(&frame[..head]),
                digest,
                "nothing after it read"
            );
            assert_eq!(request_digest(&frame[..head - 1]), None, "cut short");
            let mut newer = frame.to_vec();
            newer[MAGIC.len()] = VERSION + 1;
            assert_eq!(request_digest(&newer), None, "another version");
            newer[MAGIC.len()] = VERSION;
            newer[MAGIC.len() + 1] |= 0b1000;
            assert_eq!(request_digest(&newer), None, "a flag not known");
        }
    }
    let json = serde_json::to_vec(&kinds()[0]).unwrap();
    assert_eq!(request_digest(&json), None, "the JSON form holds none");
}

#[test]
fn what_each_kind_holds_is_there() {
    let kinds = kinds();
    let body = |at: usize| kinds[at].body.clone();
    assert_eq!(
        body(1),
        StoredBody::Kept(Bytes::from_static(b"\0\xff\0binary, with NULs\0"))
    );
    assert_eq!(body(2), StoredBody::Kept(Bytes::new()));
    assert_eq!(
        body(3),
        StoredBody::Kept(Bytes::new()),
        "a 204 keeps no content"
    );
    assert!(kinds[3].trailers.is_empty(), "nor trailers");
    assert_eq!(kinds[4].trailers.len(), 2);
    assert_eq!(body(7), StoredBody::NotKept(NotKept::Failed));
    assert_eq!(kinds[0].headers.len(), 3);
}

#[test]
fn a_body_read_from_a_frame_is_a_slice_of_it() {
    for frame in frames() {
        for read in [
            decode(frame.clone()).unwrap().0,
            StoredResponse::from_outcome(frame.clone()).unwrap(),
        ] {
            let StoredBody::Kept(body) = &read.body else {
                continue;
            };
            if body.is_empty() {
                continue;
            }
            let within = frame.as_ptr_range();
            assert!(within.contains(&body.as_ptr()), "{frame:?}");
            assert_eq!(
                body.as_ptr_range().end,
                within.end,
                "the body ends the frame"
            );
        }
    }
}

#[test]
fn every_cut_of_a_frame_and_a_byte_more_are_refused() {
    for frame in frames() {
        for len in 0..frame.len() {
            assert!(decode(frame.slice(..len)).is_err(), "{len} of {frame:?}");
            if len > 0 {
                assert!(StoredResponse::from_outcome(frame.slice(..len)).is_err());
            }
        }
        let mut longer = frame.to_vec();
        longer.push(b'x');
        let error = decode(Bytes::from(longer)).unwrap_err();
        assert!(error.to_string().contains("past its body"), "{error}");
    }
}

#[test]
fn a_frame_is_never_taken_for_a_sealed_value_nor_a_sealed_value_for_a_frame() {
    for frame in frames() {
        assert!(!idem_core::seal::is_sealed(&frame), "{frame:?}");
    }
    let sealed = Bytes::from_static(b"\0iS\x02a sealed value's nonce and ciphertext");
    assert!(idem_core::seal::is_sealed(&sealed));
    let error = StoredResponse::from_outcome(sealed).unwrap_err();
    assert!(
        error.to_string().contains("not with the frame's magic"),
        "{error}"
    );
}

#[test]
fn the_documented_frame_is_the_one_written() {
    let response = StoredResponse::streamed(
        StatusCode::CREATED,
        &head(&[(CONTENT_TYPE, "text/plain")]),
        b"charged",
        None,
        &names(),
    );
    let documented = b"\0iH\x01\x00\x00\xc9\x01\x0ccontent-type\x0atext/plain\x00\x07charged";
    assert_eq!(&encode(&response, None)[..], &documented[..]);
}

/// `frame` with the four bytes of its magic and version first.
fn after_magic(frame: &[u8]) -> Bytes {
    [&b"\0iH\x01"[..], frame].concat().into()
}

#[test]
fn a_damaged_or_made_up_frame_is_refused_saying_why() {
    let cases: Vec<(Bytes, &str)> = vec![
        (
            Bytes::from_static(b"\0iH\x02\x00\x00\xc8\x00\x00\x00"),
            "version 2, written by a newer idem-http; this one reads version 1",
        ),
        (
            Bytes::from_static(b"\0iH\x00\x00\x00\xc8\x00\x00\x00"),
            "version 0, which no idem-http writes",
        ),
        (
            Bytes::from_static(b"\0iX\x01\x00\x00\xc8\x00\x00\x00"),
            "not with the frame's magic",
        ),
        (
            after_magic(b"\x08\x00\xc8\x00\x00\x00"),
            "flags 0b00001000 set bits this idem-http does not know",
        ),
        (
            after_magic(b"\x80\x00\xc8\x00\x00\x00"),
            "set bits this idem-http does not know",
        ),
        (
            after_magic(b"\x00\x00\x00\x00\x00\x00"),
            "0 is no HTTP status",
        ),
        (
            after_magic(b"\x00\x03\xe8\x00\x00\x00"),
            "1000 is no HTTP status",
        ),
        (
            after_magic(b"\x04\x00\xc8\x00\x00\x00"),
            "ends inside its request digest",
        ),
        (
            after_magic(b"\x00\x00\xc8\x01\x00\x00\x00\x00"),
            "header 0's name is no header name",
        ),
        (
            after_magic(b"\x00\x00\xc8\x01\x03a b\x00\x00\x00"),
            "header 0's name is no header name",
        ),
        (
            after_magic(b"\x00\x00\xc8\x01\x01A\x00\x00\x00"),
            "header 0's name is no header name in lower case",
        ),
        (
            after_magic(b"\x00\x00\xc8\x01\x01a\x01\n\x00\x00"),
            "header 0's value is no header value",
        ),
        (
            after_magic(b"\x00\x00\xc8\x01\x01a\x01\xff\x00\x00"),
            "header 0 is not UTF-8",
        ),
        (
            after_magic(b"\x00\x00\xc8\x00\x01\x01a\x01\x7f\x00"),
            "trailer 0's value is no header value",
        ),
        (
            after_magic(b"\x00\x00\xc8\x05\x01a\x01b\x00\x00"),
            "counts 5 headers, more than its 6 bytes left can hold",
        ),
        (
            // Three bytes a pair at least: a name's length and letter, a value's length.
            after_magic(b"\x00\x00\xc8\x03\x01a\x01b\x00\x00"),
            "counts 3 headers, more than its 6 bytes left can hold",
        ),
        (
            after_magic(b"\x00\x00\xc8\xff\xff\xff\xff\x0f\x00\x00"),
            "counts 4294967295 headers",
        ),
        (
            after_magic(b"\x00\x00\xc8\x01\x7fab\x00\x00"),
            "ends inside its header 0's name: 127 bytes",
        ),
        (
            after_magic(b"\x00\x00\xc8\x00\x00\x80\x00"),
            "body length is not in its shortest form",
        ),
        (
            after_magic(b"\x00\x00\xc8\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"),
            "body length does not fit in 64 bits",
        ),
        (
            after_magic(b"\x00\x00\xc8\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
            "ends inside its body",
        ),
        (
            after_magic(b"\x00\x00\xc8\x00\x00\x05abc"),
            "ends inside its body: 5 bytes from byte 10, and 3 are left",
        ),
        (
            after_magic(b"\x00\x00\xc8\x00\x00\x01abc"),
            "it goes on 2 bytes past its body",
        ),
        (
            after_magic(b"\x02\x00\xc8\x00\x00\x01x"),
            "its body was not kept, yet its body length is 1",
        ),
        (
            after_magic(b"\x00\x00\xc8\x00"),
            "ends inside its count of trailers",
        ),
    ];
    for (frame, why) in cases {
        let error = StoredResponse::from_outcome(frame.clone())
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("not a response stored by idem-http: "),
            "{error}"
        );
        assert!(error.contains(why), "{frame:?}: {error}, not {why}");
    }
}

/// What a replay carries, read whole.
async fn carried(replay: Response<Body>) -> (StatusCode, HeaderMap, Bytes, Option<HeaderMap>) {
    let (parts, body) = replay.into_parts();
    let collected = body.collect().await.unwrap();
    let trailers = collected.trailers().cloned();
    (parts.status, parts.headers, collected.to_bytes(), trailers)
}

#[tokio::test]
async fn a_replay_from_a_frame_is_the_replay_from_the_json_form() {
    let names = names();
    let limits = ReplayLimits {
        headers: &names,
        max_body: 1024,
    };
    for response in kinds() {
        let json = serde_json::to_vec(&response).unwrap();
        let from_json = StoredResponse::from_outcome(Bytes::from(json)).unwrap();
        let from_frame = StoredResponse::from_outcome(encode(&response, Some(&DIGEST))).unwrap();
        match (
            from_json.into_replay(&limits),
            from_frame.into_replay(&limits),
        ) {
            (Ok(json), Ok(frame)) => {
                let json = carried(json).await;
                assert!(!json.1.is_empty(), "{json:?}");
                assert_eq!(carried(frame).await, json);
            }
            (Err(json), Err(frame)) => assert_eq!(frame, json),
            (json, frame) => panic!("{response:?}: {json:?} from JSON, {frame:?} from a frame"),
        }
    }
}

/// A header name, and a value of visible ASCII or other UTF-8.
fn header() -> impl Strategy<Value = (String, String)> {
    ("[a-z][a-z0-9-]{0,20}", "[ -~éü😀]{0,150}")
}

/// Text pairs as stored headers: each a valid header.
fn stored_headers(pairs: Vec<(String, String)>) -> StoredHeaders {
    pairs
        .into_iter()
        .map(|(name, value)| {
            (
                HeaderName::try_from(name).unwrap(),
                HeaderValue::try_from(value).unwrap(),
            )
        })
        .collect()
}

/// Any response the layer could store, and some it would not (a status it does not replay).
fn response() -> impl Strategy<Value = StoredResponse> {
    let body = prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..400).prop_map(|bytes| StoredBody::Kept(bytes.into())),
        1 => "[ -~\n]{0,200}".prop_map(|text| StoredBody::Kept(text.into())),
        1 => prop_oneof![Just(NotKept::TooLarge), Just(NotKept::Failed), Just(NotKept::Abandoned)]
            .prop_map(StoredBody::NotKept),
    ];
    (
        100u16..1000,
        proptest::collection::vec(header(), 0..5),
        body,
        proptest::collection::vec(header(), 0..3),
    )
        .prop_map(|(status, headers, body, trailers)| StoredResponse {
            status,
            headers: stored_headers(headers),
            body,
            trailers: stored_headers(trailers),
            fresh: None,
        })
}

proptest! {
    #[test]
    fn any_response_reads_back_from_a_frame_no_longer_than_its_json(
        response in response(),
        digest in proptest::option::of(any::<[u8; DIGEST_LEN]>()),
    ) {
        let frame = encode(&response, digest.as_ref());
        let (read, read_digest) = decode(frame.clone()).unwrap();
        prop_assert_eq!(&read, &response);
        prop_assert_eq!(read_digest, digest);
        let json = serde_json::to_vec(&response).unwrap();
        prop_assert!(frame.len() <= json.len(), "{} > {}", frame.len(), json.len());
        prop_assert_eq!(&StoredResponse::from_outcome(json.into()).unwrap(), &response);
    }

    #[test]
    fn a_frame_with_a_byte_changed_is_read_or_refused_never_a_panic(
        response in response(),
        at in any::<proptest::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut frame = encode(&response, None).to_vec();
        let at = at.index(frame.len());
        frame[at] = byte;
        if let Ok((read, digest)) = decode(Bytes::from(frame.clone())) {
            prop_assert_eq!(&encode(&read, digest.as_ref())[..], &frame[..], "one frame per response");
        }
    }

    #[test]
    fn made_up_bytes_after_the_magic_are_read_or_refused_never_a_panic(
        flags in 0u8..8,
        rest in proptest::collection::vec(any::<u8>(), 0..80),
    ) {
        let frame = after_magic(&[&[flags][..], &rest].concat());
        if let Ok((read, digest)) = decode(frame.clone()) {
            prop_assert_eq!(request_digest(&frame), digest, "the head says what the frame holds");
            prop_assert_eq!(encode(&read, digest.as_ref()), frame, "one frame per response");
        }
    }
}

#[test]
fn a_frame_is_no_longer_than_the_json_form_even_with_its_digest() {
    let bare = StoredResponse::streamed(StatusCode::OK, &HeaderMap::new(), b"", None, &[]);
    for response in kinds().into_iter().chain([bare]) {
        let json = serde_json::to_vec(&response).unwrap();
        let frame = encode(&response, Some(&DIGEST));
        assert!(
            frame.len() <= json.len(),
            "{frame:?} against {}",
            String::from_utf8_lossy(&json)
        );
    }
}
