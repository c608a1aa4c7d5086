//! The load generator: keep-alive HTTP/1.1 connections made with hyper's own client, each
//! sending one request after another, so that the client costs as little as it can beside
//! the server it measures.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, COOKIE, SET_COOKIE};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::routers::{PAYMENTS, SESSION};

/// The request body every payment carries.
const BODY: &str = r#"{"amount":1000,"currency":"eur","order":"order-42"}"#;

/// Which key each request carries.
#[derive(Clone, Copy, Debug)]
pub enum Keys {
    /// A new key per request: the handler runs and its response is kept.
    Fresh,
    /// The connection's own key, answered once before the phase: every request is a replay.
    Replayed,
}

/// What one phase measured.
pub struct Measured {
    /// Requests per second over all the phase's connections.
    pub rate: f64,
    /// Every request's latency, from sending it to reading its whole answer, sorted.
    latencies: Vec<Duration>,
}

impl Measured {
    /// The latency `fraction` of the requests took at most (0.5 for the median).
    pub fn percentile(&self, fraction: f64) -> Duration {
        let Some(last) = self.latencies.len().checked_sub(1) else {
            return Duration::ZERO;
        };
        self.latencies[((last as f64 * fraction).round() as usize).min(last)]
    }
}

/// One keep-alive connection to a router.
pub struct Connection {
    sender: SendRequest<Full<Bytes>>,
    id: usize,
    cookie: Option<HeaderValue>,
}

/// A request that did not get the answer the phase expects.
fn unexpected(what: &str, status: StatusCode, body: &Bytes) -> ! {
    panic!(
        "{what}: answered {status}: {}",
        String::from_utf8_lossy(body)
    )
}

impl Connection {
    /// Connects to `address`; with `session`, opens a session there first and sends its
    /// cookie with every request after.
    pub async fn open(address: SocketAddr, id: usize, session: bool) -> Connection {
        Connection::try_open(address, id, session)
            .await
            .expect("the router accepts a connection")
    }

    /// [`Connection::open`], or why the connection could not be made (out of file
    /// descriptors, most likely).
    pub async fn try_open(
        address: SocketAddr,
        id: usize,
        session: bool,
    ) -> std::io::Result<Connection> {
        let stream = TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(connection);
        let mut connection = Connection {
            sender,
            id,
            cookie: None,
        };
        if session {
            let response = connection.send(SESSION, None).await;
            let cookie = response
                .headers()
                .get(SET_COOKIE)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.split(';').next())
                .expect("the session route sets a cookie");
            connection.cookie =
                Some(HeaderValue::from_str(cookie).expect("a cookie is a header value"));
        }
        Ok(connection)
    }

    async fn send(
        &mut self,
        path: &str,
        key: Option<&str>,
    ) -> hyper::Response<hyper::body::Incoming> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(hyper::header::HOST, "127.0.0.1")
            .header(CONTENT_TYPE, "application/json")
            // idem-http refuses a keyed request it cannot tell whose it is.
            .header(AUTHORIZATION, "Bearer bench-client");
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        if let Some(cookie) = &self.cookie {
            request = request.header(COOKIE, cookie.clone());
        }
        let request = request
            .body(Full::new(Bytes::from_static(BODY.as_bytes())))
            .expect("a well-formed request");
        self.sender
            .ready()
            .await
            .expect("the connection stays open");
        self.sender.send_request(request).await.expect("an answer")
    }

    /// Sends one payment with `key`; whether it was answered as a replay.
    async fn pay(&mut self, key: &str) -> bool {
        let response = self.send(PAYMENTS, Some(key)).await;
        let status = response.status();
        let replayed = ["idempotent-replayed", "idempotency-replayed"]
            .iter()
            .any(|name| response.headers().contains_key(*name));
        let body = response
            .into_body()
            .collect()
            .await
            .expect("a whole body")
            .to_bytes();
        if status != StatusCode::CREATED {
            unexpected(key, status, &body);
        }
        replayed
    }

    fn replayed_key(&self) -> String {
        format!("replayed-{}", self.id)
    }

    /// Answers this connection's replayed key once, so that a phase of replays replays it.
    pub async fn prepare_replays(&mut self) {
        let key = self.replayed_key();
        self.pay(&key).await;
        assert!(
            self.pay(&key).await,
            "{key}: the second request is a replay"
        );
    }
}

/// Requests per second and latencies over `connections` for `length`, each connection sending
/// requests one after another with `keys`; the connections come back for the next phase.
pub async fn phase(
    connections: Vec<Connection>,
    keys: Keys,
    length: Duration,
) -> (Measured, Vec<Connection>) {
    static NEXT_KEY: AtomicU64 = AtomicU64::new(0);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = connections
        .into_iter()
        .map(|mut connection| {
            let (stop, done) = (stop.clone(), done.clone());
            tokio::spawn(async move {
                let replayed_key = connection.replayed_key();
                let mut latencies = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let sent = Instant::now();
                    let replayed = match keys {
                        Keys::Fresh => {
                            let n = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
                            connection.pay(&format!("fresh-{n}")).await
                        }
                        Keys::Replayed => connection.pay(&replayed_key).await,
                    };
                    latencies.push(sent.elapsed());
                    assert_eq!(
                        replayed,
                        matches!(keys, Keys::Replayed),
                        "{keys:?}: a fresh key runs the handler, a replayed one does not"
                    );
                    done.fetch_add(1, Ordering::Relaxed);
                }
                (connection, latencies)
            })
        })
        .collect();
    tokio::time::sleep(length).await;
    stop.store(true, Ordering::Relaxed);
    let mut connections = Vec::with_capacity(tasks.len());
    let mut latencies = Vec::new();
    for task in tasks {
        let (connection, its_latencies) = task.await.expect("a connection's task ends");
        connections.push(connection);
        latencies.extend(its_latencies);
    }
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    (Measured { rate, latencies }, connections)
}
