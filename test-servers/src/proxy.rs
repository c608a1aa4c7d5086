//! A TCP proxy on loopback in front of one HTTP/1.1 server that loses answers on purpose, one
//! connection at a time: the request reaches the server whole, and the client's connection is
//! closed before the answer is passed on. What a client's retries must survive.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long the proxy waits for the handler to start before it calls it a hang.
const HANG: Duration = Duration::from_secs(60);

/// What the proxy does to one connection.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// Forwards the request, reads the start of the server's answer, and closes the client's
    /// connection without passing it on.
    LoseAnswer,
    /// Forwards the request, waits for the server's handler to start on it, and closes the
    /// client's connection; the server's answer, when it comes, is read and dropped. Needs a
    /// proxy started [`watching`](Proxy::watching) the handler.
    CutOnceRunning,
}

/// The handler behind the server, as far as [`Fault::CutOnceRunning`] watches it.
pub trait Handler: Send + Sync + 'static {
    /// How many times it has started.
    fn runs(&self) -> usize;
    /// Resolves once it has started `runs` times in all.
    fn ran(&self, runs: usize) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// A proxy on a free loopback port in front of one server.
pub struct Proxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    server: SocketAddr,
    handler: Option<Arc<dyn Handler>>,
    /// For each coming connection, in order: its fault. Connections after the plan pass.
    plan: Mutex<VecDeque<Fault>>,
    /// How many answers to lose yet of the requests with each `Idempotency-Key`.
    losses: Mutex<HashMap<String, usize>>,
    /// How many answers were lost after the server had started to send them.
    lost: AtomicUsize,
}

impl Proxy {
    /// Starts a proxy to `server` that passes every connection until [`plan`](Proxy::plan)
    /// says otherwise.
    pub async fn start(server: SocketAddr) -> Arc<Proxy> {
        Proxy::spawn(server, None).await
    }

    /// The same, watching `handler`, for [`Fault::CutOnceRunning`].
    pub async fn watching(server: SocketAddr, handler: Arc<dyn Handler>) -> Arc<Proxy> {
        Proxy::spawn(server, Some(handler)).await
    }

    async fn spawn(server: SocketAddr, handler: Option<Arc<dyn Handler>>) -> Arc<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Arc::new(Proxy {
            url: format!("http://{}", listener.local_addr().unwrap()),
            server,
            handler,
            plan: Mutex::new(VecDeque::new()),
            losses: Mutex::new(HashMap::new()),
            lost: AtomicUsize::new(0),
        });
        let serving = proxy.clone();
        tokio::spawn(async move {
            loop {
                let (client, _) = listener.accept().await.unwrap();
                let fault = serving.plan.lock().unwrap().pop_front();
                tokio::spawn(serving.clone().relay(client, fault));
            }
        });
        proxy
    }

    /// The faults for the next connections, in order; the ones after them pass.
    pub fn plan(&self, faults: impl IntoIterator<Item = Fault>) {
        self.plan.lock().unwrap().extend(faults);
    }

    /// Loses the first answers to the requests with each key, as many as `losses` says for
    /// it, and passes the ones after: what a proxy that loses each answer at random does to
    /// each key's attempts, drawn beforehand. Applies to the connections [`plan`](Proxy::plan)
    /// leaves alone.
    pub fn lose_answers_by_key(&self, losses: impl IntoIterator<Item = (String, usize)>) {
        self.losses.lock().unwrap().extend(losses);
    }

    /// How many answers [`Fault::LoseAnswer`] has lost so far after the server had started
    /// to send them (its handler ran).
    pub fn lost(&self) -> usize {
        self.lost.load(Ordering::SeqCst)
    }

    /// Whether some key has answers to lose.
    fn loses_by_key(&self) -> bool {
        !self.losses.lock().unwrap().is_empty()
    }

    /// [`Fault::LoseAnswer`] if `request`'s key has answers to lose yet, counting this one.
    fn fault_for(&self, request: &[u8]) -> Option<Fault> {
        let end = find(request, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&request[..end]).into_owned();
        let key = head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("idempotency-key")
                .then(|| value.trim().to_owned())
        })?;
        let mut losses = self.losses.lock().unwrap();
        let left = losses.get_mut(&key).filter(|left| **left > 0)?;
        *left -= 1;
        Some(Fault::LoseAnswer)
    }

    async fn relay(self: Arc<Self>, mut client: TcpStream, fault: Option<Fault>) {
        let mut server = TcpStream::connect(self.server).await.unwrap();
        if fault.is_none() && !self.loses_by_key() {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            return;
        }
        let Some(request) = read_request(&mut client).await else {
            return;
        };
        let fault = fault.or_else(|| self.fault_for(&request));
        let watched = self.handler.as_ref().map(|handler| handler.runs());
        server.write_all(&request).await.unwrap();
        let Some(fault) = fault else {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            return;
        };
        let mut answer = [0; 4096];
        match fault {
            Fault::LoseAnswer => {
                // The server has answered (the handler ran) once its first bytes arrive.
                if matches!(server.read(&mut answer).await, Ok(n) if n > 0) {
                    self.lost.fetch_add(1, Ordering::SeqCst);
                }
            }
            Fault::CutOnceRunning => {
                let handler = self
                    .handler
                    .as_ref()
                    .expect("CutOnceRunning needs a proxy started watching the handler");
                let runs = watched.unwrap_or_default() + 1;
                tokio::time::timeout(HANG, handler.ran(runs))
                    .await
                    .unwrap_or_else(|_| panic!("the handler did not start within {HANG:?}"));
            }
        }
        drop(client);
        // The server's connection stays open until it has said all it had to say.
        while matches!(server.read(&mut answer).await, Ok(n) if n > 0) {}
    }
}

/// One HTTP/1.1 request, read whole: its head, then a body of its `Content-Length`, or chunks
/// up to the last one.
async fn read_request(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut request = Vec::new();
    let mut buffer = [0; 4096];
    loop {
        if let Some(end) = find(&request, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
            if head.contains("transfer-encoding: chunked") {
                if request[end + 4..].ends_with(b"0\r\n\r\n") {
                    return Some(request);
                }
            } else {
                let length: usize = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .map_or(0, |value| value.trim().parse().unwrap());
                if request.len() >= end + 4 + length {
                    return Some(request);
                }
            }
        }
        let read = client.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        request.extend_from_slice(&buffer[..read]);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
