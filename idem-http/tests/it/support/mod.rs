//! A real axum server on loopback with the layer in front of a payments handler, a real HTTP
//! client, and a store whose faults the tests control.

#![allow(dead_code)] // each test file uses part of it

#[macro_use]
mod actix_server;
pub mod frames;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use idem_conformance::{Intercepted, Interceptor, Operation};
use idem_core::{store::Store, Idempotency, Key, StoreError};
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify, Semaphore};

/// How long a test waits for something that must happen before it calls it a hang: 60 s, or
/// `IDEM_TEST_HANG_SECS` (mutation runs set less, so that a hang fails its test by name
/// before the run's own timeout).
pub fn hang() -> Duration {
    let secs = std::env::var("IDEM_TEST_HANG_SECS").ok();
    Duration::from_secs(secs.and_then(|secs| secs.parse().ok()).unwrap_or(60))
}

/// Waits for `what` for up to [`hang`], and fails the test if it does not come.
pub async fn soon<T>(what: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(hang(), what)
        .await
        .expect("waited longer than hang() for what must happen")
}

/// A server listening on a free loopback port, and a client for it.
pub struct Server {
    pub url: String,
    pub client: reqwest::Client,
}

/// Serves `app` on 127.0.0.1 on a free port until the test ends.
pub async fn serve(app: Router) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Server {
        url: format!("http://{addr}"),
        client: reqwest::Client::builder()
            .default_headers(client_credentials())
            .timeout(hang())
            .build()
            .unwrap(),
    }
}

/// A client without the test credentials. Like [`Server::client`], it gives up on an answer
/// after [`hang`].
pub fn anonymous_client() -> reqwest::Client {
    reqwest::Client::builder().timeout(hang()).build().unwrap()
}

/// The `Authorization` every request of the test client carries unless it sets its own: the
/// layer refuses keyed requests without a scope.
pub fn client_credentials() -> reqwest::header::HeaderMap {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "authorization",
        reqwest::header::HeaderValue::from_static("Bearer test-client"),
    );
    headers
}

impl Server {
    /// A POST of `body` to `path`, with `key` as its `Idempotency-Key` when given.
    pub fn post(&self, path: &str, key: Option<&str>, body: &str) -> reqwest::RequestBuilder {
        let request = self
            .client
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .body(body.to_owned());
        match key {
            Some(key) => request.header("idempotency-key", key),
            None => request,
        }
    }
}

/// What the payments handler does, and what the tests see of it.
pub struct Payments {
    /// How many times the handler started.
    pub runs: AtomicUsize,
    /// How many times it finished.
    pub finished: AtomicUsize,
    /// The status it answers (201 unless set).
    pub status: std::sync::Mutex<Option<StatusCode>>,
    /// When set, the handler waits for a permit before answering.
    pub hold: AtomicBool,
    pub permits: Semaphore,
    /// Told each time the handler starts.
    pub started_tx: std::sync::Mutex<Option<mpsc::UnboundedSender<()>>>,
    /// The size of the answer's body, when set: a streamed body of that many bytes.
    pub streamed_len: std::sync::Mutex<Option<usize>>,
}

impl Default for Payments {
    fn default() -> Self {
        Payments {
            runs: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            status: Default::default(),
            hold: AtomicBool::new(false),
            permits: Semaphore::new(0),
            started_tx: Default::default(),
            streamed_len: Default::default(),
        }
    }
}

impl Payments {
    /// A handler that waits for [`release`](Payments::release) before it answers, and reports
    /// each start on the returned channel.
    pub fn held() -> (Arc<Self>, mpsc::UnboundedReceiver<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let payments = Payments::default();
        payments.hold.store(true, Ordering::SeqCst);
        *payments.started_tx.lock().unwrap() = Some(tx);
        (Arc::new(payments), rx)
    }

    pub fn answering(status: StatusCode) -> Arc<Self> {
        let payments = Payments::default();
        *payments.status.lock().unwrap() = Some(status);
        Arc::new(payments)
    }

    pub fn release(&self) {
        self.permits.add_permits(1);
    }

    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

async fn create_payment(
    State(payments): State<Arc<Payments>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let run = payments.runs.fetch_add(1, Ordering::SeqCst) + 1;
    if let Some(started) = &*payments.started_tx.lock().unwrap() {
        let _ = started.send(());
    }
    if payments.hold.load(Ordering::SeqCst) {
        payments.permits.acquire().await.unwrap().forget();
    }
    payments.finished.fetch_add(1, Ordering::SeqCst);
    let status = payments
        .status
        .lock()
        .unwrap()
        .unwrap_or(StatusCode::CREATED);
    let principal = headers
        .get("authorization")
        .map(|value| value.to_str().unwrap().to_owned());
    let mut response = if let Some(len) = *payments.streamed_len.lock().unwrap() {
        let chunks = (0..len.div_ceil(1024))
            .map(move |i| Ok::<_, std::io::Error>(vec![b'x'; 1024.min(len - i * 1024)]));
        let stream = futures_stream(chunks.collect());
        (status, axum::body::Body::from_stream(stream)).into_response()
    } else {
        let json = serde_json::json!({ "payment": run, "request": body, "principal": principal });
        (status, axum::Json(json)).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        "location",
        HeaderValue::from_str(&format!("/payments/{run}")).unwrap(),
    );
    headers.insert("set-cookie", HeaderValue::from_static("session=secret"));
    headers.insert(
        "date",
        HeaderValue::from_static("Mon, 01 Jan 2001 00:00:00 GMT"),
    );
    headers.insert(
        "x-request-id",
        HeaderValue::from_str(&run.to_string()).unwrap(),
    );
    response
}

/// A stream of already-made items.
fn futures_stream<T: Send + 'static>(items: Vec<T>) -> impl futures_core::Stream<Item = T> + Send {
    Items(items.into_iter())
}

struct Items<T>(std::vec::IntoIter<T>);

impl<T> futures_core::Stream for Items<T> {
    type Item = T;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        std::task::Poll::Ready(self.0.next())
    }
}

impl<T> Unpin for Items<T> {}

async fn list_payments(State(payments): State<Arc<Payments>>) -> String {
    let run = payments.runs.fetch_add(1, Ordering::SeqCst) + 1;
    format!("listed {run}")
}

/// The payments router behind `layer`.
pub fn app(layer: IdempotencyLayer, payments: Arc<Payments>) -> Router {
    routes(payments).layer(layer)
}

/// The payments router, with no layer.
pub fn routes(payments: Arc<Payments>) -> Router {
    Router::new()
        .route(
            "/payments",
            post(create_payment)
                .get(list_payments)
                .put(create_payment)
                .patch(create_payment),
        )
        .route("/refunds", post(create_payment))
        .with_state(payments)
}

/// A memory store whose faults the test switches on.
pub type FaultyStore = Intercepted<Faults>;

/// The faults of a [`FaultyStore`].
#[derive(Default)]
pub struct Faults {
    pub memory: MemoryStore,
    /// Reserving and storing an outcome fail, as when the store cannot be reached.
    pub unreachable: AtomicBool,
    /// Storing an outcome fails.
    pub complete_fails: AtomicBool,
    /// Told each time a caller waits for a key to change.
    pub waiting: Notify,
    /// How many times a caller waited for a key to change.
    pub waits: AtomicUsize,
}

impl Faults {
    /// Returns once callers have waited for a key to change `count` times in all.
    pub async fn waited(&self, count: usize) {
        while self.waits.load(Ordering::SeqCst) < count {
            self.waiting.notified().await;
        }
    }
}

#[async_trait::async_trait]
impl Interceptor for Faults {
    fn inner(&self) -> &dyn Store {
        &self.memory
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        let down = self.unreachable.load(Ordering::SeqCst);
        match operation {
            Operation::Reserve if down => Err(StoreError::backend("connection refused")),
            Operation::Complete if down || self.complete_fails.load(Ordering::SeqCst) => {
                Err(StoreError::backend("connection refused"))
            }
            Operation::Changed => {
                self.waits.fetch_add(1, Ordering::SeqCst);
                self.waiting.notify_one();
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// A response body the test writes chunk by chunk: what it sends on the returned sender
/// becomes the next frame, an error fails the body, and dropping the sender ends it.
pub fn events() -> (
    mpsc::UnboundedSender<Result<bytes::Bytes, std::io::Error>>,
    axum::body::Body,
) {
    let (sender, receiver) = mpsc::unbounded_channel();
    (sender, axum::body::Body::from_stream(Received(receiver)))
}

struct Received<T>(mpsc::UnboundedReceiver<T>);

impl<T> futures_core::Stream for Received<T> {
    type Item = T;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        self.0.poll_recv(cx)
    }
}

/// A handle on a fresh memory store.
pub fn memory() -> Idempotency {
    Idempotency::new(MemoryStore::new())
}

/// The status, headers and body of an answer.
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: bytes::Bytes,
}

impl Answer {
    pub async fn of(response: reqwest::Response) -> Answer {
        Answer {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.bytes().await.unwrap(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|value| value.to_str().unwrap())
    }

    pub fn replayed(&self) -> bool {
        self.header("idempotent-replayed") == Some("true")
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// Checks that this is a problem answer of `kind` and `status` whose detail names `key`.
    pub fn assert_problem(&self, status: u16, kind: &str, key: Option<&str>) {
        assert_eq!(self.status, status, "{:?}", self.body);
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json")
        );
        let problem = self.json();
        assert_eq!(problem["type"], kind);
        assert_eq!(problem["status"], status);
        if let Some(key) = key {
            let detail = problem["detail"].as_str().unwrap();
            assert!(detail.contains(key), "{detail}");
        }
    }
}

/// Sends `request` and reads its answer.
pub async fn send(request: reqwest::RequestBuilder) -> Answer {
    Answer::of(request.send().await.unwrap()).await
}
