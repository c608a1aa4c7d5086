//! Stored responses written as the layer writes them, for tests that craft records: a
//! [`RecordedResponse`] as a frame (the layer's form), or in the JSON form records were
//! stored in before it.

use idem_http::{RecordedBody, RecordedResponse};
use serde_json::json;

/// What every frame starts with: the magic `\0iH` and version 1.
pub const FRAME_START: &[u8] = b"\0iH\x01";

/// `response` as a frame of version 1 with no request digest: its body must be kept.
pub fn frame(response: &RecordedResponse) -> Vec<u8> {
    let RecordedBody::Kept(body) = &response.body else {
        panic!("a crafted frame keeps its body");
    };
    let mut frame = FRAME_START.to_vec();
    frame.push(0); // flags: the body kept, no request digest
    frame.extend_from_slice(&response.status.to_be_bytes());
    for pairs in [&response.headers, &response.trailers] {
        put_varint(&mut frame, pairs.len());
        for (name, value) in pairs {
            put_bytes(&mut frame, name.as_bytes());
            put_bytes(&mut frame, value.as_bytes());
        }
    }
    put_bytes(&mut frame, body);
    frame
}

/// `response` in the JSON form, as the layer stored it before the frame: its body as text,
/// which it must be.
pub fn json_form(response: &RecordedResponse) -> Vec<u8> {
    let RecordedBody::Kept(body) = &response.body else {
        panic!("a crafted record keeps its body");
    };
    let text = std::str::from_utf8(body).expect("a crafted JSON record's body is text");
    let mut record = json!({
        "status": response.status,
        "headers": response.headers,
        "body": { "text": text },
    });
    if !response.trailers.is_empty() {
        record["trailers"] = json!(response.trailers);
    }
    serde_json::to_vec(&record).unwrap()
}

/// `bytes` after their length.
fn put_bytes(frame: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(frame, bytes.len());
    frame.extend_from_slice(bytes);
}

/// `value` as an unsigned LEB128 varint.
fn put_varint(frame: &mut Vec<u8>, mut value: usize) {
    while value >= 0x80 {
        frame.push(value as u8 | 0x80);
        value >>= 7;
    }
    frame.push(value as u8);
}
