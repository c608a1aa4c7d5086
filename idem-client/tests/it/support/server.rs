//! A real axum server with `idem_http::IdempotencyLayer` on a memory store whose faults the
//! test switches on, and a route that answers what the test scripts, for the retry table.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use idem_conformance::{Intercepted, Interceptor, Operation};
use idem_core::store::Store;
use idem_core::{Idempotency, Key, StoreError};
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub key: Option<String>,
    pub status: u16,
}

/// The server's side of a test: what its handler does, and what it saw.
pub struct Shop {
    pub addr: SocketAddr,
    /// How many times the payments handler ran.
    pub runs: AtomicUsize,
    /// Every request answered, in order.
    seen: Mutex<Vec<Seen>>,
    answered: Notify,
    /// Told each time the payments handler starts.
    started: Notify,
    /// While set, the payments handler waits for a permit of `gate`.
    held: std::sync::atomic::AtomicBool,
    gate: Semaphore,
    /// The answers of `/scripted`, in order; `200 done` once they run out.
    script: Mutex<VecDeque<Scripted>>,
    faults: Arc<Intercepted<Faults>>,
}

/// An answer of `/scripted`.
pub struct Scripted {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

impl Scripted {
    pub fn status(status: u16) -> Scripted {
        Scripted {
            status,
            headers: Vec::new(),
            body: String::new(),
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Scripted {
        self.headers.push((name, value.into()));
        self
    }

    pub fn body(mut self, body: String) -> Scripted {
        self.body = body;
        self
    }

    pub fn problem(self, kind: &str) -> Scripted {
        let mut scripted = self.header("content-type", "application/problem+json");
        scripted.body = serde_json::json!({ "type": kind, "title": "scripted" }).to_string();
        scripted
    }
}

/// The memory store's faults.
#[derive(Default)]
pub struct Faults {
    memory: MemoryStore,
    /// Reservations refused, as by a store that cannot be reached, before they pass again.
    pub reservations_refused: AtomicUsize,
    /// Whether storing an outcome fails.
    pub completion_fails: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl Interceptor for Faults {
    fn inner(&self) -> &dyn Store {
        &self.memory
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        let refused = || {
            self.reservations_refused
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                    left.checked_sub(1)
                })
                .is_ok()
        };
        match operation {
            Operation::Reserve if refused() => Err(StoreError::backend("connection refused")),
            Operation::Complete if self.completion_fails.load(Ordering::SeqCst) => {
                Err(StoreError::backend("connection refused"))
            }
            _ => Ok(()),
        }
    }
}

impl Shop {
    /// Serves on a free loopback port: `POST /payments` behind the layer, `GET /orders`
    /// and `POST /scripted` without it.
    pub async fn open() -> Arc<Shop> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let faults = Arc::new(Intercepted(Faults::default()));
        let shop = Arc::new(Shop {
            addr: listener.local_addr().unwrap(),
            runs: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
            answered: Notify::new(),
            started: Notify::new(),
            held: Default::default(),
            gate: Semaphore::new(0),
            script: Mutex::new(VecDeque::new()),
            faults: faults.clone(),
        });
        // A short lease, so that a completion the store keeps refusing is given up in seconds.
        // The tests' clients are one party, and send no `Authorization`.
        let layer = IdempotencyLayer::builder(Idempotency::from_arc(faults))
            .lease(std::time::Duration::from_secs(2))
            .unscoped(idem_http::Unscoped::Shared)
            .build();
        let app = Router::new()
            .route("/payments", post(pay))
            .layer(layer)
            .route("/orders", axum::routing::get(list))
            .route("/scripted", post(scripted).get(scripted))
            .layer(middleware::from_fn_with_state(shop.clone(), record))
            .with_state(shop.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        shop
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn faults(&self) -> &Faults {
        &self.faults.0
    }

    /// Every request the server answered so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The keys of the requests answered, in order.
    pub fn keys(&self) -> Vec<Option<String>> {
        self.seen().into_iter().map(|seen| seen.key).collect()
    }

    /// Returns once the server has answered a request with `status`.
    pub async fn answered(&self, status: u16) {
        loop {
            let notified = self.answered.notified();
            if self.seen().iter().any(|seen| seen.status == status) {
                return;
            }
            notified.await;
        }
    }

    /// Returns once the payments handler has started `runs` times in all.
    pub async fn ran(&self, runs: usize) {
        loop {
            let notified = self.started.notified();
            if self.runs() >= runs {
                return;
            }
            notified.await;
        }
    }

    /// Makes the payments handler wait until [`release`](Shop::release).
    pub fn hold(&self) {
        self.held.store(true, Ordering::SeqCst);
    }

    pub fn release(&self) {
        self.gate.add_permits(1);
    }

    pub fn script(&self, answers: impl IntoIterator<Item = Scripted>) {
        self.script.lock().unwrap().extend(answers);
    }

    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

/// What the proxy's [`CutOnceRunning`](idem_test_servers::proxy::Fault::CutOnceRunning) waits
/// for: the payments handler starting.
impl idem_test_servers::proxy::Handler for Shop {
    fn runs(&self) -> usize {
        Shop::runs(self)
    }

    fn ran(&self, runs: usize) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(Shop::ran(self, runs))
    }
}

async fn record(State(shop): State<Arc<Shop>>, request: Request, next: Next) -> Response {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let key = request
        .headers()
        .get("idempotency-key")
        .map(|value| value.to_str().unwrap().to_owned());
    let response = next.run(request).await;
    let status = response.status().as_u16();
    shop.seen.lock().unwrap().push(Seen {
        method,
        path,
        key,
        status,
    });
    shop.answered.notify_waiters();
    response
}

async fn pay(State(shop): State<Arc<Shop>>, body: String) -> impl IntoResponse {
    let run = shop.runs.fetch_add(1, Ordering::SeqCst) + 1;
    shop.started.notify_waiters();
    if shop.held.load(Ordering::SeqCst) {
        shop.gate.acquire().await.unwrap().forget();
    }
    let json = serde_json::json!({ "payment": format!("pay_{run}"), "request": body });
    (StatusCode::CREATED, axum::Json(json))
}

async fn list() -> &'static str {
    "[]"
}

async fn scripted(State(shop): State<Arc<Shop>>) -> Response {
    let Some(answer) = shop.script.lock().unwrap().pop_front() else {
        return (StatusCode::OK, "done").into_response();
    };
    let mut headers = HeaderMap::new();
    for (name, value) in answer.headers {
        headers.insert(name, value.parse().unwrap());
    }
    let status = StatusCode::from_u16(answer.status).unwrap();
    (status, headers, answer.body).into_response()
}
