//! Duplicates waiting for the first request hold one copy of its body between them, not one
//! each. Measured with a counting allocator around the whole test process.

#[path = "it/support/mod.rs"]
mod support;

use std::alloc::System;
use std::sync::Arc;

use bytes::Bytes;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use support::{app, hang, serve, FaultyStore, Payments};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The bytes allocated and not yet freed by the whole process.
fn held() -> isize {
    let stats = ALLOCATOR.stats();
    // A reallocation is already counted in both.
    stats.bytes_allocated as isize - stats.bytes_deallocated as isize
}

const WAITERS: usize = 30;
/// Large next to what the HTTP connections buffer on either side, which is bounded, and
/// within the 2 MB the handler's extractor reads.
const BODY_BYTES: usize = 1536 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_duplicates_share_the_first_request_s_body() {
    let (payments, mut started) = Payments::held();
    let store = Arc::new(FaultyStore::default());
    let layer = IdempotencyLayer::builder(Idempotency::from_arc(store.clone()))
        .wait(hang())
        .max_request_body(2 * BODY_BYTES)
        .max_response_body(4 * BODY_BYTES)
        .build();
    let server = serve(app(layer, payments.clone())).await;
    let address = server.url.trim_start_matches("http://").to_owned();
    // One buffer on the client's side for every request, written as it is, so that only the
    // server's copies are counted.
    let body = Bytes::from(format!(r#"{{"note":"{}"}}"#, "n".repeat(BODY_BYTES - 11)));
    let send = |body: Bytes| tokio::spawn(post(address.clone(), body));
    let first = send(body.clone());
    timeout(hang(), started.recv()).await.unwrap().unwrap();
    let before = held();
    let duplicates: Vec<_> = (0..WAITERS).map(|_| send(body.clone())).collect();
    timeout(hang(), store.waited(WAITERS)).await.unwrap();
    let held_by_waiters = (held() - before).max(0) as usize;
    payments.release();

    let first = first.await.unwrap();
    assert_eq!(first.status, 201);
    for duplicate in duplicates {
        let duplicate = duplicate.await.unwrap();
        assert_eq!(duplicate.status, 201);
        assert!(duplicate.replayed);
        assert_eq!(duplicate.body, first.body);
    }
    assert_eq!(payments.runs(), 1);
    assert!(
        first.body.len() > BODY_BYTES,
        "the handler answered with the request"
    );
    assert!(
        held_by_waiters < WAITERS * BODY_BYTES / 2,
        "{WAITERS} waiters hold {held_by_waiters} bytes, for {BODY_BYTES}-byte bodies"
    );
}

/// A response as it came over the wire.
struct Raw {
    status: u16,
    replayed: bool,
    body: Vec<u8>,
}

/// POSTs `body` to `/payments` on a connection of its own, writing the buffer as it is (an
/// HTTP client would copy it into its own), and reads the answer to the end.
async fn post(address: String, body: Bytes) -> Raw {
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /payments HTTP/1.1\r\nhost: {address}\r\nidempotency-key: pay-1\r\n\
         authorization: Bearer test-client\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let end = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("a complete head");
    let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
    let status = head[9..12].parse().unwrap();
    let replayed = head.contains("\r\nidempotent-replayed: true");
    let body = dechunk(
        &response[end + 4..],
        head.contains("transfer-encoding: chunked"),
    );
    Raw {
        status,
        replayed,
        body,
    }
}

/// The body of an answer, joined from its chunks when it was sent in chunks.
fn dechunk(mut raw: &[u8], chunked: bool) -> Vec<u8> {
    if !chunked {
        return raw.to_vec();
    }
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        let size_text = std::str::from_utf8(&raw[..line_end]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&raw[line_end + 2..line_end + 2 + size]);
        raw = &raw[line_end + 2 + size + 2..];
    }
}
