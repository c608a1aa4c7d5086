//! A TCP proxy on loopback that loses answers on purpose, one connection at a time: the
//! request reaches the server whole, the server answers, and the client's connection is closed
//! before the answer is passed on.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A proxy on a free loopback port in front of one server.
pub struct Proxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// How many connections were given to the plan to lose their answer.
    lost: AtomicUsize,
    /// For each coming connection, in order: whether its answer is lost. Connections after
    /// the plan pass.
    plan: Mutex<VecDeque<bool>>,
}

impl Proxy {
    /// Starts a proxy to `server` that passes every connection until told otherwise.
    pub async fn start(server: SocketAddr) -> Arc<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Arc::new(Proxy {
            url: format!("http://{}", listener.local_addr().unwrap()),
            lost: AtomicUsize::new(0),
            plan: Mutex::new(VecDeque::new()),
        });
        let serving = proxy.clone();
        tokio::spawn(async move {
            loop {
                let (client, _) = listener.accept().await.unwrap();
                let lose = serving.plan.lock().unwrap().pop_front().unwrap_or(false);
                let proxy = serving.clone();
                tokio::spawn(async move { proxy.relay(client, server, lose).await });
            }
        });
        proxy
    }

    /// Loses the answers of the next `connections` connections.
    pub fn lose_answers(&self, connections: usize) {
        self.plan
            .lock()
            .unwrap()
            .extend(std::iter::repeat_n(true, connections));
    }

    /// How many answers the proxy has lost so far.
    pub fn lost(&self) -> usize {
        self.lost.load(Ordering::SeqCst)
    }

    async fn relay(&self, mut client: TcpStream, server: SocketAddr, lose: bool) {
        let mut upstream = TcpStream::connect(server).await.unwrap();
        if !lose {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            return;
        }
        let Some(request) = read_request(&mut client).await else {
            return;
        };
        upstream.write_all(&request).await.unwrap();
        let mut answer = [0; 4096];
        // The server has answered (the handler ran) once its first bytes arrive.
        if matches!(upstream.read(&mut answer).await, Ok(n) if n > 0) {
            self.lost.fetch_add(1, Ordering::SeqCst);
        }
        drop(client);
        while matches!(upstream.read(&mut answer).await, Ok(n) if n > 0) {}
    }
}

/// One HTTP/1.1 request with a `Content-Length` body (or none), read whole.
async fn read_request(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut request = Vec::new();
    let mut buffer = [0; 4096];
    loop {
        if let Some(end) = request.windows(4).position(|window| window == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |value| value.trim().parse().unwrap());
            if request.len() >= end + 4 + length {
                return Some(request);
            }
        }
        let read = client.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        request.extend_from_slice(&buffer[..read]);
    }
}
