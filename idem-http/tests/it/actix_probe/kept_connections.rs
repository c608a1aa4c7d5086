//! A request the layer refuses (400, 413) before reading its body keeps its connection open on
//! actix-web: the layer reads and drops a small body, so the client's next request (its
//! retry with a good key, say) goes on the same connection.

use std::net::TcpStream;

use super::support::*;

/// One HTTP/1.1 answer read off `stream`: its status, whether it said `connection: close`,
/// and its body.
fn answer(stream: &mut TcpStream) -> (u16, bool, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut byte).unwrap();
        assert_eq!(read, 1, "the connection closed mid-head: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map(|value| value.trim().parse().unwrap())
        .expect("an answer of known length");
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    let close = head.lines().any(|line| line == "connection: close");
    (status, close, String::from_utf8_lossy(&body).into_owned())
}

/// A keyed POST of `body` (sized) with `key` and `extra` header lines.
fn request(key: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /pay HTTP/1.1\r\nhost: x\r\nidempotency-key: {key}\r\n{extra}\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_with_a_small_body_keeps_its_connection() {
    let layer = IdempotencyLayer::builder(Idempotency::new(MemoryStore::new()))
        .max_request_body(16)
        .build();
    let (url, _server) = actix_serve!(1, move || {
        App::new()
            .wrap(layer.clone())
            .default_service(web::to(|body: Bytes| async move {
                HttpResponse::Created().body(format!("paid {}", String::from_utf8_lossy(&body)))
            }))
    });
    let address = url.trim_start_matches("http://").to_owned();
    tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(&address).unwrap();
        stream.set_read_timeout(Some(HANG)).unwrap();
        let bearer = "authorization: Bearer probe\r\n";
        let refusals = [
            (
                "an invalid key",
                request("bad key", bearer, "{\"order\":1}"),
                400,
            ),
            ("no scope", request("k-1", "", "{\"order\":1}"), 400),
            (
                "a body past the limit",
                request("k-2", bearer, &"x".repeat(100)),
                413,
            ),
        ];
        for (what, refused, status) in refusals {
            stream.write_all(&refused).unwrap();
            let (seen, close, body) = answer(&mut stream);
            assert_eq!(seen, status, "{what}: {body}");
            assert!(
                !close,
                "{what}: the server closes the connection after its {status}"
            );
            // The next request goes on the same connection and is answered.
            stream.write_all(&request("k-3", bearer, "ok")).unwrap();
            let (seen, close, body) = answer(&mut stream);
            assert!((200..300).contains(&seen), "after {what}: {seen} {body}");
            assert!(!close, "after {what}");
        }
    })
    .await
    .unwrap();
}
