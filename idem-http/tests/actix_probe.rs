//! The actix-web middleware under requests, handlers, middleware orders and server lifecycles
//! that actix-web treats its own way, each on a real server on loopback with a real client,
//! and compared with the tower layer in axum where the two must answer alike.

use std::convert::Infallible;
use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpResponse, HttpServer};
use bytes::Bytes;
use idem_core::Idempotency;
use idem_http::{problem, IdempotencyLayer};
use idem_stores::memory::MemoryStore;
use tokio::sync::{Notify, Semaphore};

const HANG: Duration = Duration::from_secs(60);

/// Starts an actix-web server of `$workers` workers whose apps `$app` makes, on a thread of
/// its own; its URL and handle.
macro_rules! actix_serve {
    ($workers:expr, $app:expr) => {{
        let (started, serving) = std::sync::mpsc::channel();
        let app = $app;
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(app)
                    .workers($workers)
                    .disable_signals()
                    .shutdown_timeout(30)
                    .bind(("127.0.0.1", 0))
                    .unwrap();
                let url = format!("http://{}", server.addrs()[0]);
                let server = server.run();
                started.send((url, server.handle())).unwrap();
                server.await
            })
        });
        let (url, handle): (String, ServerHandle) = serving.recv_timeout(HANG).unwrap();
        (url, handle)
    }};
}

/// Serves `router` on loopback; its URL.
async fn axum_serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(HANG).build().unwrap()
}

fn keyed(client: &reqwest::Client, url: &str, key: &str, body: &str) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("idempotency-key", key)
        .header("authorization", "Bearer probe")
        .body(body.to_owned())
}

/// What a client saw of one answer.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    status: u16,
    replayed: bool,
    /// The problem document's `type`, or the body itself.
    said: String,
}

async fn seen(response: reqwest::Response) -> Seen {
    let status = response.status().as_u16();
    let replayed = response.headers().get("idempotent-replayed").is_some();
    let problem = response
        .headers()
        .get("content-type")
        .is_some_and(|value| value == "application/problem+json");
    let body = response.bytes().await.unwrap();
    let said = if problem {
        let document: serde_json::Value = serde_json::from_slice(&body).unwrap();
        document["type"].as_str().unwrap().to_owned()
    } else {
        String::from_utf8_lossy(&body).into_owned()
    };
    Seen {
        status,
        replayed,
        said,
    }
}

async fn send(request: reqwest::RequestBuilder) -> Seen {
    seen(request.send().await.unwrap()).await
}

/// A body whose stream yields `first` and then panics: a handler whose effect was made, whose
/// answer was not.
struct PanicsAfterFirst(u8);

impl futures_core::Stream for PanicsAfterFirst {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0 += 1;
        match self.0 {
            1 => Poll::Ready(Some(Ok(Bytes::from_static(b"first")))),
            _ => panic!("the response stream fails halfway"),
        }
    }
}

/// A body whose stream yields `first` and then fails with an error.
struct FailsAfterFirst(u8);

impl futures_core::Stream for FailsAfterFirst {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0 += 1;
        Poll::Ready(Some(match self.0 {
            1 => Ok(Bytes::from_static(b"first")),
            _ => Err(std::io::Error::other("the response stream fails halfway")),
        }))
    }
}

/// What the first client and the retry saw of a handler whose streamed body broke halfway.
#[derive(Debug, PartialEq, Eq)]
struct BrokenStream {
    /// Whether the first client read a whole body, as if nothing went wrong.
    first_read_whole: bool,
    retry: Seen,
}

async fn broken_stream(url: &str) -> BrokenStream {
    let client = client();
    let first = keyed(&client, url, "stream-1", "{}").send().await.unwrap();
    let first_read_whole = first.bytes().await.is_ok();
    let retry = send(keyed(&client, url, "stream-1", "{}")).await;
    BrokenStream {
        first_read_whole,
        retry,
    }
}

/// A streamed body that panics halfway is a failed body under the tower layer: the first
/// client's body breaks off, and the retry is told the answer was not kept. Under actix-web
/// the same handler must not leave a truncated body stored as the whole answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_body_that_panics_halfway_is_not_stored_as_whole() {
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_url = axum_serve(
        axum::Router::new()
            .route(
                "/stream",
                axum::routing::post(|| async {
                    axum::body::Body::from_stream(PanicsAfterFirst(0))
                }),
            )
            .layer(tower_layer),
    )
    .await;
    let tower = broken_stream(&format!("{tower_url}/stream")).await;

    let (url, _server) = actix_serve!(1, move || {
        App::new().wrap(layer.clone()).route(
            "/stream",
            web::post().to(|| async { HttpResponse::Ok().streaming(PanicsAfterFirst(0)) }),
        )
    });
    let actix = broken_stream(&format!("{url}/stream")).await;

    assert_eq!(tower.retry.said, problem::RESPONSE_NOT_KEPT);
    assert!(!tower.first_read_whole);
    assert_eq!(
        tower, actix,
        "the tower layer (left) and actix-web (right) differ"
    );
}

/// The same with a body of declared length (`Content-Length` set before `streaming`): under
/// the tower layer the body is read whole before it is answered, its panic is a failure, and
/// both the first client and the retry are told the answer was not kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sized_streamed_body_that_panics_halfway_is_not_stored_as_whole() {
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_url = axum_serve(
        axum::Router::new()
            .route(
                "/stream",
                axum::routing::post(|| async {
                    axum::response::Response::builder()
                        .header("content-length", "10")
                        .body(axum::body::Body::from_stream(PanicsAfterFirst(0)))
                        .unwrap()
                }),
            )
            .layer(tower_layer),
    )
    .await;
    let (url, _server) = actix_serve!(1, move || {
        App::new().wrap(layer.clone()).route(
            "/stream",
            web::post().to(|| async {
                HttpResponse::Ok()
                    .insert_header(("content-length", "10"))
                    .streaming(PanicsAfterFirst(0))
            }),
        )
    });
    let client = client();
    let mut seen_by = Vec::new();
    for url in [tower_url, url] {
        let url = format!("{url}/stream");
        let first = send(keyed(&client, &url, "sized-1", "{}")).await;
        let retry = send(keyed(&client, &url, "sized-1", "{}")).await;
        seen_by.push((first, retry));
    }
    let (tower, actix) = (&seen_by[0], &seen_by[1]);
    assert_eq!(tower.0.said, problem::RESPONSE_NOT_KEPT);
    assert_eq!(tower.1.said, problem::RESPONSE_NOT_KEPT);
    assert_eq!(
        tower, actix,
        "the tower layer (left) and actix-web (right) differ"
    );
}

/// A streamed body that fails with an error: the retry is told the answer was not kept, on
/// both front ends alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_body_that_fails_halfway_is_not_kept_on_both() {
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_url = axum_serve(
        axum::Router::new()
            .route(
                "/stream",
                axum::routing::post(|| async { axum::body::Body::from_stream(FailsAfterFirst(0)) }),
            )
            .layer(tower_layer),
    )
    .await;
    let tower = broken_stream(&format!("{tower_url}/stream")).await;
    let (url, _server) = actix_serve!(1, move || {
        App::new().wrap(layer.clone()).route(
            "/stream",
            web::post().to(|| async { HttpResponse::Ok().streaming(FailsAfterFirst(0)) }),
        )
    });
    let actix = broken_stream(&format!("{url}/stream")).await;
    assert_eq!(tower.retry.said, problem::RESPONSE_NOT_KEPT);
    assert_eq!(tower, actix);
}

/// Middleware outside the layer (CORS, default headers) decorates every answer the layer
/// gives under tower, the 500 for a panicked handler included; under actix-web it must too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_to_a_panicked_handler_passes_through_outer_middleware() {
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_url = axum_serve(
        axum::Router::new()
            .route(
                "/panics",
                axum::routing::post(|| async {
                    if true {
                        panic!("the handler fails halfway");
                    }
                }),
            )
            .layer(tower_layer)
            .layer(axum::middleware::map_response(
                |mut response: axum::response::Response| async move {
                    response
                        .headers_mut()
                        .insert("x-outer", "set".parse().unwrap());
                    response
                },
            )),
    )
    .await;
    let (url, _server) = actix_serve!(1, move || {
        App::new()
            .wrap(layer.clone())
            .wrap(actix_web::middleware::DefaultHeaders::new().add(("x-outer", "set")))
            .route(
                "/panics",
                web::post().to(|| async {
                    if true {
                        panic!("the handler fails halfway");
                    }
                    HttpResponse::Ok().finish()
                }),
            )
    });
    let client = client();
    for url in [tower_url, url] {
        let response = keyed(&client, &format!("{url}/panics"), "p-1", "{}")
            .send()
            .await
            .unwrap();
        let outer = response.headers().get("x-outer").cloned();
        let seen = seen(response).await;
        assert_eq!(
            (seen.status, seen.said.as_str()),
            (500, problem::NOT_RECORDED)
        );
        assert_eq!(
            outer.as_ref().map(|v| v.to_str().unwrap()),
            Some("set"),
            "{url}: the outer middleware's header"
        );
    }
}

/// Counts runs and holds each one at a gate the test opens.
struct Gated {
    runs: AtomicUsize,
    started: Notify,
    gate: Semaphore,
    finished: AtomicUsize,
}

impl Default for Gated {
    fn default() -> Self {
        Gated {
            runs: AtomicUsize::new(0),
            started: Notify::new(),
            gate: Semaphore::new(0),
            finished: AtomicUsize::new(0),
        }
    }
}

impl Gated {
    async fn run(&self) -> HttpResponse {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.started.notify_one();
        self.gate.acquire().await.unwrap().forget();
        self.finished.fetch_add(1, Ordering::SeqCst);
        HttpResponse::Created().body("done")
    }
}

fn gated_server(store: MemoryStore, gated: Arc<Gated>, lease: Duration) -> (String, ServerHandle) {
    let layer = IdempotencyLayer::builder(Idempotency::new(store))
        .lease(lease)
        .build();
    actix_serve!(1, move || {
        let gated = gated.clone();
        App::new().wrap(layer.clone()).route(
            "/gated",
            web::post().to(move || {
                let gated = gated.clone();
                async move { gated.run().await }
            }),
        )
    })
}

/// A graceful stop waits for the keyed request in flight: its answer is stored, and a new
/// server over the same store replays it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_mid_handler_stores_its_answer_for_the_next_server() {
    let store = MemoryStore::new();
    let gated = Arc::new(Gated::default());
    let (url, server) = gated_server(store.clone(), gated.clone(), Duration::from_secs(300));
    let client = client();
    let first = tokio::spawn(keyed(&client, &format!("{url}/gated"), "g-1", "{}").send());
    tokio::time::timeout(HANG, gated.started.notified())
        .await
        .unwrap();
    let stopping = tokio::spawn(server.stop(true));
    gated.gate.add_permits(1);
    let first = seen(first.await.unwrap().unwrap()).await;
    assert_eq!((first.status, first.replayed), (201, false));
    tokio::time::timeout(HANG, stopping).await.unwrap().unwrap();

    let (url, _next) = gated_server(store, gated.clone(), Duration::from_secs(300));
    let retry = send(keyed(&client, &format!("{url}/gated"), "g-1", "{}")).await;
    assert_eq!((retry.status, retry.replayed), (201, true));
    assert_eq!(gated.runs.load(Ordering::SeqCst), 1);
}

/// A forced stop cuts the handler off: the key stays held (the effect may be half made), and a
/// new server over the same store answers the retry with a 409 until the lease passes, then
/// runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_stop_mid_handler_keeps_the_key_held_until_its_lease() {
    let store = MemoryStore::new();
    let gated = Arc::new(Gated::default());
    let lease = Duration::from_secs(2);
    let (url, server) = gated_server(store.clone(), gated.clone(), lease);
    let client = client();
    let first = tokio::spawn(keyed(&client, &format!("{url}/gated"), "f-1", "{}").send());
    tokio::time::timeout(HANG, gated.started.notified())
        .await
        .unwrap();
    tokio::time::timeout(HANG, server.stop(false))
        .await
        .unwrap();
    assert!(first.await.unwrap().is_err(), "the first client is cut off");
    assert_eq!(gated.finished.load(Ordering::SeqCst), 0);

    let (url, _next) = gated_server(store, gated.clone(), lease);
    let retry = send(keyed(&client, &format!("{url}/gated"), "f-1", "{}")).await;
    assert_eq!(retry.status, 409);
    assert_eq!(retry.said, problem::IN_PROGRESS);
    // Waiting out the lease is the documented way back in.
    tokio::time::sleep(lease + Duration::from_millis(500)).await;
    gated.gate.add_permits(1);
    let after = send(keyed(&client, &format!("{url}/gated"), "f-1", "{}")).await;
    assert_eq!((after.status, after.replayed), (201, false));
    assert_eq!(gated.runs.load(Ordering::SeqCst), 2);
}

/// A client gone mid-handler leaves the handler running; a graceful stop that follows must not
/// cut it off, or the key stays held though nothing is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_after_the_client_left_lets_the_handler_finish() {
    let store = MemoryStore::new();
    let gated = Arc::new(Gated::default());
    let (url, server) = gated_server(store.clone(), gated.clone(), Duration::from_secs(300));
    let client = client();
    let gone = tokio::spawn(keyed(&client, &format!("{url}/gated"), "d-1", "{}").send());
    tokio::time::timeout(HANG, gated.started.notified())
        .await
        .unwrap();
    gone.abort();
    let _ = gone.await;
    let stopping = tokio::spawn(server.stop(true));
    gated.gate.add_permits(1);
    tokio::time::timeout(HANG, stopping).await.unwrap().unwrap();

    let (url, _next) = gated_server(store, gated.clone(), Duration::from_secs(300));
    let retry = send(keyed(&client, &format!("{url}/gated"), "d-1", "{}")).await;
    assert_eq!(
        (retry.status, retry.replayed, retry.said.as_str()),
        (201, true, "done"),
        "the handler ran to its end and its answer was stored"
    );
    assert_eq!(gated.runs.load(Ordering::SeqCst), 1);
}

/// Sends `request` as raw bytes and reads the answer until the server closes.
fn raw(url: &str, request: &[u8]) -> String {
    let address = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(HANG)).unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// A counter of runs behind the layer, on actix-web, echoing the request's body.
fn echo_server(workers: usize) -> (String, ServerHandle, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let layer = IdempotencyLayer::builder(Idempotency::new(MemoryStore::new()))
        .wait(HANG)
        .build();
    let (url, handle) = actix_serve!(workers, move || {
        let runs = counted.clone();
        App::new().wrap(layer.clone()).default_service(web::to(
            move |request: actix_web::HttpRequest, body: Bytes| {
                let runs = runs.clone();
                async move {
                    let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                    HttpResponse::Created().body(format!(
                        "run {n}: {} {} {}",
                        request.path(),
                        request.query_string(),
                        String::from_utf8_lossy(&body)
                    ))
                }
            },
        ))
    });
    (url, handle, runs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_actix_web_reads_its_own_way_are_fingerprinted_alike() {
    let (url, _server, runs) = echo_server(1);
    let client = client();
    // Chunked and sized bodies of the same bytes are one request.
    let sized = send(keyed(&client, &format!("{url}/pay"), "c-1", "abc")).await;
    let url1 = url.clone();
    let chunked = tokio::task::spawn_blocking(move || {
        raw(
            &url1,
            b"POST /pay HTTP/1.1\r\nhost: x\r\nidempotency-key: c-1\r\n\
              authorization: Bearer probe\r\ntransfer-encoding: chunked\r\n\
              connection: close\r\n\r\n1\r\na\r\n2\r\nbc\r\n0\r\n\r\n",
        )
    })
    .await
    .unwrap();
    let chunked = Seen {
        status: chunked[9..12].parse().unwrap(),
        replayed: chunked.contains("idempotent-replayed: true"),
        said: chunked.split("\r\n\r\n").nth(1).unwrap().to_owned(),
    };
    assert_eq!((sized.status, chunked.replayed), (201, true));
    assert_eq!(chunked.said, sized.said);
    // Queries: the same in another order is a retry, another value is another request.
    let q = send(keyed(&client, &format!("{url}/pay?a=1&b=2"), "q-1", "")).await;
    let q2 = send(keyed(&client, &format!("{url}/pay?b=2&a=1"), "q-1", "")).await;
    let q3 = send(keyed(&client, &format!("{url}/pay?a=1&b=3"), "q-1", "")).await;
    assert_eq!((q.status, q2.replayed, q3.status), (201, true, 422));
    // Percent-encoded paths.
    let p = send(keyed(&client, &format!("{url}/caf%C3%A9/a%2Fb"), "p-1", "")).await;
    let p2 = send(keyed(&client, &format!("{url}/caf%C3%A9/a%2Fb"), "p-1", "")).await;
    let p3 = send(keyed(&client, &format!("{url}/caf%C3%A9/a/b"), "p-1", "")).await;
    assert_eq!((p.status, p2.replayed, p3.status), (201, true, 422));
    // Empty bodies.
    let e = send(keyed(&client, &format!("{url}/e"), "e-1", "")).await;
    let e2 = send(keyed(&client, &format!("{url}/e"), "e-1", "")).await;
    assert!(e2.replayed && e.status == 201);
    // A non-UTF-8 Authorization is a scope like any other.
    let latin = reqwest::header::HeaderValue::from_bytes(b"Bearer caf\xe9").unwrap();
    let n = client
        .post(format!("{url}/n"))
        .header("idempotency-key", "n-1")
        .header("authorization", latin.clone());
    let n1 = send(n).await;
    let n2 = send(
        client
            .post(format!("{url}/n"))
            .header("idempotency-key", "n-1")
            .header("authorization", latin),
    )
    .await;
    assert_eq!((n1.status, n2.replayed), (201, true));
    // Two keys are no key.
    let two =
        send(keyed(&client, &format!("{url}/t"), "t-1", "").header("idempotency-key", "t-2")).await;
    assert_eq!(two.status, 400);
    assert_eq!(runs.load(Ordering::SeqCst), 5);

    // HTTP/1.0, and `Expect: 100-continue`, on raw connections.
    let old = |key: &str| {
        format!(
            "POST /old HTTP/1.0\r\nidempotency-key: {key}\r\nauthorization: Bearer probe\r\n\
             content-length: 3\r\n\r\nold"
        )
    };
    let url2 = url.clone();
    let (h10, h10_again) = tokio::task::spawn_blocking(move || {
        (
            raw(&url2, old("h-1").as_bytes()),
            raw(&url2, old("h-1").as_bytes()),
        )
    })
    .await
    .unwrap();
    assert!(h10.starts_with("HTTP/1.0 201"), "{h10}");
    assert!(
        h10_again.contains("idempotent-replayed: true"),
        "{h10_again}"
    );
    assert!(h10_again.ends_with(" old"), "{h10_again}");
    let url3 = url.clone();
    let expect = tokio::task::spawn_blocking(move || {
        let address = url3.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(HANG)).unwrap();
        stream
            .write_all(
                b"POST /expect HTTP/1.1\r\nhost: x\r\nidempotency-key: x-1\r\n\
                  authorization: Bearer probe\r\nexpect: 100-continue\r\n\
                  content-length: 4\r\nconnection: close\r\n\r\n",
            )
            .unwrap();
        let mut go = [0u8; 25];
        stream.read_exact(&mut go).unwrap();
        stream.write_all(b"body").unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        (
            String::from_utf8_lossy(&go).into_owned(),
            String::from_utf8_lossy(&answer).into_owned(),
        )
    })
    .await
    .unwrap();
    assert!(expect.0.starts_with("HTTP/1.1 100 Continue"), "{expect:?}");
    assert!(expect.1.starts_with("HTTP/1.1 201"), "{expect:?}");
    assert!(expect.1.ends_with("/expect  body"), "{expect:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 7);
}

/// Many duplicates of one key at once run the handler once, on one worker and on four; many
/// distinct keys at once each run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_duplicates_run_once_and_distinct_keys_each_once() {
    for workers in [1, 4] {
        let (url, _server, runs) = echo_server(workers);
        let client = client();
        let duplicates: Vec<_> = (0..32)
            .map(|_| tokio::spawn(keyed(&client, &format!("{url}/d"), "same", "x").send()))
            .collect();
        let mut said = Vec::new();
        for duplicate in duplicates {
            let seen = seen(duplicate.await.unwrap().unwrap()).await;
            assert_eq!(seen.status, 201, "{workers} workers: {seen:?}");
            said.push(seen.said);
        }
        assert!(said.iter().all(|s| s == &said[0]));
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{workers} workers");
        let distinct: Vec<_> = (0..64)
            .map(|i| {
                tokio::spawn(keyed(&client, &format!("{url}/d"), &format!("k{i}"), "x").send())
            })
            .collect();
        for one in distinct {
            assert_eq!(one.await.unwrap().unwrap().status(), 201);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 65, "{workers} workers");
    }
}

/// What handlers return, as the first client and the retry see it on actix-web.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_answers_are_stored_and_replayed_as_the_contract_says() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let layer = IdempotencyLayer::builder(Idempotency::new(MemoryStore::new()))
        .max_response_body(1024)
        .build();
    #[derive(serde::Deserialize, serde::Serialize)]
    struct Order {
        amount: u32,
    }
    let (url, _server) = actix_serve!(1, move || {
        let runs = counted.clone();
        let count = move || runs.fetch_add(1, Ordering::SeqCst);
        let c1 = count.clone();
        let c2 = count.clone();
        let c3 = count.clone();
        let c4 = count.clone();
        let c5 = count.clone();
        let c6 = count.clone();
        let c7 = count.clone();
        App::new()
            .wrap(layer.clone())
            .route(
                "/finish",
                web::post().to(move || {
                    c1();
                    async { HttpResponse::Ok().finish() }
                }),
            )
            .route(
                "/nocontent",
                web::post().to(move || {
                    c2();
                    async { HttpResponse::NoContent().finish() }
                }),
            )
            .route(
                "/cookies",
                web::post().to(move || {
                    c3();
                    async {
                        HttpResponse::Ok()
                            .append_header(("set-cookie", "a=1"))
                            .append_header(("set-cookie", "b=2"))
                            .insert_header(("content-length", "2"))
                            .body("ok")
                    }
                }),
            )
            .route(
                "/error",
                web::post().to(move || {
                    c4();
                    async {
                        Err::<HttpResponse, _>(actix_web::error::ErrorInternalServerError("boom"))
                    }
                }),
            )
            .route(
                "/json",
                web::post().to(move |order: web::Json<Order>| {
                    c5();
                    async move {
                        web::Json(Order {
                            amount: order.amount * 2,
                        })
                    }
                }),
            )
            .route(
                "/large",
                web::post().to(move || {
                    c6();
                    async { HttpResponse::Ok().body("z".repeat(4096)) }
                }),
            )
            .route(
                "/notmodified",
                web::post().to(move || {
                    c7();
                    async {
                        HttpResponse::NotModified()
                            .insert_header(("etag", "\"v1\""))
                            .finish()
                    }
                }),
            )
    });
    let client = client();
    let twice = |path: &'static str, key: &'static str, body: &'static str| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let go = || {
                keyed(&client, &format!("{url}{path}"), key, body)
                    .header("content-type", "application/json")
            };
            let first = go().send().await.unwrap();
            let first_cookies = first.headers().get_all("set-cookie").iter().count();
            let first = seen(first).await;
            let again = go().send().await.unwrap();
            let again_cookies = again.headers().get_all("set-cookie").iter().count();
            (first, first_cookies, seen(again).await, again_cookies)
        }
    };
    let (f, _, f2, _) = twice("/finish", "f", "{}").await;
    assert_eq!(
        (f.status, f2.status, f2.replayed, f2.said.as_str()),
        (200, 200, true, "")
    );
    let (n, _, n2, _) = twice("/nocontent", "n", "{}").await;
    assert_eq!((n.status, n2.status, n2.replayed), (204, 204, true));
    let (c, c_cookies, c2, c2_cookies) = twice("/cookies", "c", "{}").await;
    assert_eq!(
        (c.said.as_str(), c_cookies),
        ("ok", 2),
        "the first answer has both cookies"
    );
    assert_eq!((c2.replayed, c2.said.as_str(), c2_cookies), (true, "ok", 0));
    let (e, _, e2, _) = twice("/error", "e", "{}").await;
    assert_eq!(
        (e.status, e2.status, e2.replayed),
        (500, 500, false),
        "a 500 releases"
    );
    let (j, _, j2, _) = twice("/json", "j", "not json").await;
    assert_eq!(
        (j.status, j2.status, j2.replayed),
        (400, 400, false),
        "a 400 releases"
    );
    let (k, _, k2, _) = twice("/json", "k", r#"{"amount":2}"#).await;
    assert_eq!((k.said.as_str(), k2.replayed), (r#"{"amount":4}"#, true));
    let (l, _, l2, _) = twice("/large", "l", "{}").await;
    assert_eq!(
        (l.said.len(), l2.said.as_str()),
        (4096, problem::RESPONSE_NOT_KEPT)
    );
    let (m, _, m2, _) = twice("/notmodified", "m", "{}").await;
    assert_eq!((m.status, m2.status, m2.replayed), (304, 304, true));
    // Once each but the error, which runs twice, and the bad JSON, which never reaches it.
    assert_eq!(runs.load(Ordering::SeqCst), 8);
}

/// What a handler behind the layer reads of its request.
async fn views(
    request: actix_web::HttpRequest,
    data: web::Data<String>,
    body: Bytes,
) -> HttpResponse {
    use actix_web::HttpMessage;
    struct Marker;
    request.extensions_mut().insert(Marker);
    let outer = request.extensions().get::<Outer>().map(|o| o.0);
    HttpResponse::Created().body(format!(
        "id={} peer={} host={} data={} outer={:?} body={}",
        request.match_info().get("id").unwrap_or("-"),
        request.peer_addr().is_some(),
        request.connection_info().host().starts_with("127.0.0.1:"),
        data.get_ref(),
        outer,
        String::from_utf8_lossy(&body),
    ))
}

#[derive(Clone, Copy)]
struct Outer(&'static str);

/// Where the layer is wrapped: the app, a scope, a resource.
#[derive(Clone, Copy, Debug)]
enum Wrapped {
    None,
    App,
    Scope,
    Resource,
}

fn views_server(wrapped: Wrapped) -> (String, ServerHandle) {
    use actix_web::dev::Service;
    use actix_web::middleware::{Compress, Condition, Logger};
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    actix_serve!(1, move || {
        let on = |at| {
            matches!(
                (wrapped, at),
                (Wrapped::App, 1) | (Wrapped::Scope, 2) | (Wrapped::Resource, 3)
            )
        };
        let resource = web::resource("/items/{id}").route(web::post().to(views));
        let scope = web::scope("/api")
            .wrap(Logger::default())
            .wrap(Condition::new(on(2), layer.clone()))
            .wrap(Compress::default())
            .service(resource.wrap(Condition::new(on(3), layer.clone())));
        App::new()
            .app_data(web::Data::new("shared".to_owned()))
            .wrap(Logger::default())
            .wrap(Condition::new(on(1), layer.clone()))
            .wrap_fn(|request, service| {
                use actix_web::HttpMessage;
                request.extensions_mut().insert(Outer("set outside"));
                let answer = service.call(request);
                async move {
                    let mut answer = answer.await?;
                    let marked = answer.request().extensions().get::<Outer>().is_some();
                    answer.headers_mut().insert(
                        actix_web::http::header::HeaderName::from_static("x-outer-saw"),
                        actix_web::http::header::HeaderValue::from_static(if marked {
                            "yes"
                        } else {
                            "no"
                        }),
                    );
                    Ok(answer)
                }
            })
            .wrap(actix_web::middleware::DefaultHeaders::new().add(("x-default", "1")))
            .service(scope)
    })
}

/// What a handler reads of its request (route parameters, peer, host, app data, extensions
/// set outside) is the same behind the layer wherever it is wrapped as without it, and the
/// middleware outside sees the answer and its request alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_behind_the_layer_read_their_request_as_without_it() {
    let client = client();
    let mut seen_by = Vec::new();
    for wrapped in [
        Wrapped::None,
        Wrapped::App,
        Wrapped::Scope,
        Wrapped::Resource,
    ] {
        let (url, _server) = views_server(wrapped);
        let url = format!("{url}/api/items/42?x=1");
        let mut answers = Vec::new();
        for _ in 0..2 {
            let response = keyed(&client, &url, "v-1", "hello")
                .header("accept-encoding", "identity")
                .send()
                .await
                .unwrap();
            let headers = response.headers().clone();
            let get = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_owned());
            let flags = (
                get("x-default"),
                get("x-outer-saw"),
                get("content-encoding"),
            );
            answers.push((flags, seen(response).await));
        }
        seen_by.push((wrapped, answers));
    }
    let (_, without) = &seen_by[0];
    for (wrapped, answers) in &seen_by[1..] {
        assert_eq!(answers[0], without[0], "{wrapped:?}: the first answer");
        assert!(answers[1].1.replayed, "{wrapped:?}");
        assert_eq!(
            answers[1].1.said, without[0].1.said,
            "{wrapped:?}: the replay"
        );
        assert_eq!(
            answers[1].0, without[0].0,
            "{wrapped:?}: the replay's outer headers"
        );
    }
}
