//! Network faults between each worker and the store: a noxious proxy (a Rust port of
//! Toxiproxy) per worker slot, whose toxics the coordinator adds and removes.

use std::net::TcpListener as StdListener;

use bmrng::RequestSender;
use noxious::proxy::{ProxyConfig, ProxyRunner, Runner, Toxics};
use noxious::signal::{Close, Stop, Stopper};
use noxious::socket::TcpListener;
use noxious::toxic::{
    StreamDirection, Toxic, ToxicEvent, ToxicEventKind, ToxicEventResult, ToxicKind,
};

/// The network faults a proxy injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetFault {
    /// Every byte delayed by about a quarter of the lease, both ways.
    Latency,
    /// Nothing gets through for a while; then the connections are closed.
    Stall,
    /// Connections cut after a few hundred bytes: requests broken off mid-way.
    Cut,
    /// Requests reach the store, which acts on them; its answers are dropped, then the
    /// connections closed.
    DropAnswers,
}

impl NetFault {
    /// Every network fault.
    pub const ALL: [NetFault; 4] = [
        NetFault::Latency,
        NetFault::Stall,
        NetFault::Cut,
        NetFault::DropAnswers,
    ];

    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            NetFault::Latency => "net-latency",
            NetFault::Stall => "net-stall",
            NetFault::Cut => "net-cut",
            NetFault::DropAnswers => "net-drop-answers",
        }
    }

    fn toxics(self, lease_ms: u64, rng: &mut fastrand::Rng) -> Vec<Toxic> {
        let toxic = |kind: ToxicKind, direction: StreamDirection| Toxic {
            name: format!("{}-{direction}", self.name()),
            kind,
            toxicity: 1.0,
            direction,
        };
        match self {
            NetFault::Latency => [StreamDirection::Upstream, StreamDirection::Downstream]
                .into_iter()
                .map(|direction| {
                    toxic(
                        ToxicKind::Latency {
                            latency: lease_ms / 4,
                            jitter: lease_ms / 8,
                        },
                        direction,
                    )
                })
                .collect(),
            NetFault::Stall => vec![toxic(
                ToxicKind::Timeout { timeout: lease_ms },
                StreamDirection::Upstream,
            )],
            NetFault::Cut => vec![toxic(
                ToxicKind::LimitData {
                    bytes: rng.u64(40..400),
                },
                StreamDirection::Upstream,
            )],
            NetFault::DropAnswers => vec![toxic(
                ToxicKind::Timeout {
                    timeout: lease_ms / 2,
                },
                StreamDirection::Downstream,
            )],
        }
    }
}

/// One proxy in front of the store.
pub struct Proxy {
    name: String,
    upstream: String,
    /// Where workers connect: `127.0.0.1:PORT`.
    pub listen: String,
    running: Running,
}

/// A proxy's running task: where its toxics go, how to stop it, and when it stopped.
struct Running {
    events: RequestSender<ToxicEvent, ToxicEventResult>,
    stopper: Stopper,
    stopped: Close,
}

impl NetFault {
    /// Whether it drops bytes from streams it keeps open: Toxiproxy's timeout keeps a
    /// connection after dropping data, and a stream resumed with a gap is not something TCP
    /// does, so such connections are closed when the fault ends.
    fn drops_bytes(self) -> bool {
        matches!(self, NetFault::Stall | NetFault::DropAnswers)
    }
}

impl Proxy {
    /// A proxy named `name` to `upstream` (`host:port`), on a free loopback port, running on
    /// the current runtime.
    pub async fn start(name: &str, upstream: &str) -> Result<Proxy, String> {
        let port = StdListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|error| format!("finding a free port: {error}"))?
            .port();
        let listen = format!("127.0.0.1:{port}");
        let running = Self::run(name, upstream, &listen).await?;
        Ok(Proxy {
            name: name.to_owned(),
            upstream: upstream.to_owned(),
            listen,
            running,
        })
    }

    async fn run(name: &str, upstream: &str, listen: &str) -> Result<Running, String> {
        let config = ProxyConfig {
            name: name.to_owned(),
            listen: listen.to_owned(),
            upstream: upstream.to_owned(),
            enabled: true,
            rand_seed: None,
        };
        // The port of a proxy just stopped may take a moment to be free again.
        let mut attempts = 0;
        let (listener, info) = loop {
            match ProxyRunner::initialize_proxy::<TcpListener>(config.clone(), Toxics::empty())
                .await
            {
                Ok(started) => break started,
                Err(_) if attempts < 50 => {
                    attempts += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                Err(error) => return Err(format!("starting the proxy on {listen}: {error}")),
            }
        };
        let (stop, stopper) = Stop::new();
        let (stopped, closer) = Close::new();
        let (events, receiver) = bmrng::channel(16);
        tokio::spawn(async move {
            let _ = ProxyRunner::run_proxy(listener, info, receiver, stop, closer).await;
        });
        Ok(Running {
            events,
            stopper,
            stopped,
        })
    }

    /// Starts `fault`.
    pub async fn inject(&self, fault: NetFault, lease_ms: u64, rng: &mut fastrand::Rng) {
        for toxic in fault.toxics(lease_ms, rng) {
            self.send(ToxicEventKind::AddToxic(toxic)).await;
        }
    }

    /// Ends `fault`: its toxics removed, and the connections it cut bytes from closed (the
    /// proxy is started again on its port).
    pub async fn heal(&mut self, fault: NetFault) -> Result<(), String> {
        if !fault.drops_bytes() {
            self.send(ToxicEventKind::RemoveAllToxics).await;
            return Ok(());
        }
        let Running {
            stopper, stopped, ..
        } = std::mem::replace(&mut self.running, Self::placeholder());
        stopper.stop();
        let _ = stopped.recv().await;
        self.running = Self::run(&self.name, &self.upstream, &self.listen).await?;
        Ok(())
    }

    /// A running proxy's stand-in while it is started again: nothing listens to it.
    fn placeholder() -> Running {
        let (events, _) = bmrng::channel(1);
        let (_, stopper) = Stop::new();
        let (stopped, _) = Close::new();
        Running {
            events,
            stopper,
            stopped,
        }
    }

    async fn send(&self, kind: ToxicEventKind) {
        // A proxy that stopped has nothing to heal or poison.
        let _ = self
            .running
            .events
            .send_receive(ToxicEvent::new(self.name.clone(), kind))
            .await;
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
