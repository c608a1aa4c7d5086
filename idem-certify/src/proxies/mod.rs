//! Network faults between each worker and the store: a TCP proxy per worker slot, whose
//! faults the coordinator starts and ends. It makes what a network makes (delay, stall, reset,
//! refusal, one-way silence that ends in a close) and never drops bytes from a connection it
//! leaves open: TCP delivers in order or closes, and a client's pipelined replies would
//! otherwise shift onto the wrong requests.

mod fault;
mod link;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use self::fault::NetFault;
use self::fault::{Active, Epoch};

/// One proxy in front of the store.
pub struct Proxy {
    /// Where workers connect: `127.0.0.1:PORT`.
    pub listen: String,
    faults: watch::Sender<Epoch>,
    accepting: JoinHandle<()>,
}

impl Proxy {
    /// A proxy named `name` to `upstream` (`host:port`), on a free loopback port, running on
    /// the current runtime.
    pub async fn start(name: &str, upstream: &str) -> Result<Proxy, String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| format!("starting proxy {name}: {error}"))?;
        let listen = listener
            .local_addr()
            .map_err(|error| format!("starting proxy {name}: {error}"))?
            .to_string();
        let (faults, watching) = watch::channel(Epoch {
            active: Active::Clear,
            generation: 0,
        });
        let accepting = tokio::spawn(accept(listener, upstream.to_owned(), watching));
        Ok(Proxy {
            listen,
            faults,
            accepting,
        })
    }

    /// Starts `fault`, in place of any other.
    pub async fn inject(&self, fault: NetFault, lease_ms: u64, rng: &mut fastrand::Rng) {
        self.set(fault.active(lease_ms, rng));
    }

    /// Ends `fault`: bytes flow again, and every connection that had bytes held is closed.
    pub async fn heal(&mut self, _fault: NetFault) -> Result<(), String> {
        self.set(Active::Clear);
        Ok(())
    }

    fn set(&self, active: Active) {
        self.faults.send_modify(|epoch| {
            epoch.active = active;
            epoch.generation += 1;
        });
    }
}

impl Drop for Proxy {
    /// Stops accepting; the links close as they see the faults' sender gone.
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// Accepts connections and links each to the store; while connections are refused, closes
/// each on arrival.
async fn accept(listener: TcpListener, upstream: String, faults: watch::Receiver<Epoch>) {
    while let Ok((client, _)) = listener.accept().await {
        if faults.borrow().active == Active::Refuse {
            continue;
        }
        let upstream = upstream.clone();
        let faults = faults.clone();
        tokio::spawn(async move {
            // A store that can't be reached is a connection closed, as a refused one.
            if let Ok(store) = TcpStream::connect(&upstream).await {
                link::run(client, store, faults).await;
            }
        });
    }
}

/// `url` with its `host:port` replaced by `listen`, and the `host:port` it had; `None` for a
/// URL without one.
pub fn through(url: &str, listen: &str) -> Option<(String, String)> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let host_start = rest[..end].rfind('@').map_or(0, |at| at + 1);
    let authority = &rest[host_start..end];
    authority.contains(':').then(|| {
        (
            format!("{}{listen}{}", &url[..start + host_start], &rest[end..]),
            authority.to_owned(),
        )
    })
}
