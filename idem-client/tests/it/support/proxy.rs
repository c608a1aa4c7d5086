//! A TCP proxy that loses answers on purpose, one connection at a time.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

use super::server::Shop;
use super::HANG;

/// What the proxy does to one connection.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// Forwards the request, reads the start of the server's answer, and closes the client's
    /// connection without passing it on.
    LoseAnswer,
    /// Forwards the request, waits for the payments handler to start on it, and closes the
    /// client's connection; the server's answer, when it comes, is read and dropped.
    CutOnceRunning,
}

/// A proxy on a free loopback port in front of a [`Shop`].
pub struct Proxy {
    pub url: String,
    plan: Mutex<VecDeque<Fault>>,
    /// How many answers to lose yet of the requests with each `Idempotency-Key`.
    losses: Mutex<HashMap<String, usize>>,
}

impl Proxy {
    /// Starts a proxy that passes every connection through until [`plan`](Proxy::plan) says
    /// otherwise.
    pub async fn start(shop: &Arc<Shop>) -> Arc<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Arc::new(Proxy {
            url: format!("http://{}", listener.local_addr().unwrap()),
            plan: Mutex::new(VecDeque::new()),
            losses: Mutex::new(HashMap::new()),
        });
        let serving = proxy.clone();
        let shop = shop.clone();
        tokio::spawn(async move {
            loop {
                let (client, _) = listener.accept().await.unwrap();
                let fault = serving.plan.lock().unwrap().pop_front();
                tokio::spawn(relay(client, shop.clone(), serving.clone(), fault));
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
}

async fn relay(mut client: TcpStream, shop: Arc<Shop>, proxy: Arc<Proxy>, fault: Option<Fault>) {
    let mut server = TcpStream::connect(shop.addr).await.unwrap();
    if fault.is_none() && !proxy.loses_by_key() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        return;
    }
    let Some(request) = read_request(&mut client).await else {
        return;
    };
    let fault = fault.or_else(|| proxy.fault_for(&request));
    let runs = shop.runs();
    server.write_all(&request).await.unwrap();
    let Some(fault) = fault else {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        return;
    };
    let mut answer = [0; 1024];
    match fault {
        Fault::LoseAnswer => {
            let _ = server.read(&mut answer).await;
        }
        Fault::CutOnceRunning => timeout(HANG, shop.ran(runs + 1)).await.unwrap(),
    }
    drop(client);
    // The server's connection stays open until it has said all it had to say.
    while matches!(server.read(&mut answer).await, Ok(n) if n > 0) {}
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
