//! Redis servers for the tests: one started on a free loopback port, or the one named by
//! `IDEM_REDIS_URL`.
//!
//! When neither can be had, [`TestRedis::start`] returns `None`, and the test returns early: the
//! [harness](crate::availability) reports it as ignored, with the reason. With
//! `IDEM_REQUIRE_BACKENDS=1` (set by CI) it panics instead.

use std::fs;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::process::{
    connectable, scratch_dir, start_failure, ServerCommand, ServerKind, ServerProcess, TestServer,
};

/// The environment variable naming an existing server to use instead of starting one.
pub const URL_VAR: &str = "IDEM_REDIS_URL";

/// The program started when no URL is given.
pub const PROGRAM: &str = "redis-server";

/// Redis: `redis-server`, ready once it answers `PING`.
#[derive(Debug)]
pub struct Redis;

impl ServerKind for Redis {
    const PROGRAM: &'static str = PROGRAM;

    fn ready(addr: SocketAddr) -> io::Result<()> {
        wait_for_pong(addr)
    }
}

/// A Redis server a test talks to.
pub type TestRedis = TestServer<Redis>;

impl TestRedis {
    /// The server named by `IDEM_REDIS_URL` if set, else a fresh `redis-server` on a free
    /// loopback port. `None` if neither works, unless backends are required.
    pub fn start() -> Option<TestRedis> {
        match std::env::var(URL_VAR) {
            Ok(url) if !url.is_empty() => match reachable(&url) {
                Ok(()) => Some(TestRedis::external(url)),
                Err(error) => unavailable(&format!("{URL_VAR}={url} is not reachable: {error}")),
            },
            _ => Self::start_owned(),
        }
    }

    /// A fresh `redis-server` owned by this test, which it may kill and restart; keeps no data
    /// across restarts. Ignores `IDEM_REDIS_URL`.
    pub fn start_owned() -> Option<TestRedis> {
        Self::start_with(&[])
    }

    /// Like [`start_owned`](TestRedis::start_owned), with `extra` arguments for the server
    /// (`--maxmemory-policy allkeys-lru`, `--replicaof 127.0.0.1 6379`...).
    ///
    /// Its directory is a scratch one, removed with it: a replica writes the snapshot it syncs
    /// from into its directory, and a server loads the one it finds there when it starts, so
    /// the working directory's would leak one test's keys into another's server.
    pub fn start_with(extra: &[&str]) -> Option<TestRedis> {
        let dir = match scratch_dir("redis") {
            Ok(dir) => dir,
            Err(error) => return unavailable(&format!("no scratch directory: {error}")),
        };
        let command = ServerCommand::new(PROGRAM)
            .args(base_args())
            .args(extra.iter().copied())
            .arg("--dir")
            .arg(dir.to_string_lossy().into_owned());
        Self::spawn(command, dir)
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.url()
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .expect("the URL ends with a port")
    }

    /// Like [`start_owned`](TestRedis::start_owned), but the server writes every change to an
    /// append-only file (fsync always) in a scratch directory, so records survive a kill and a
    /// restart.
    pub fn start_persistent() -> Option<TestRedis> {
        let dir = match scratch_dir("redis") {
            Ok(dir) => dir,
            Err(error) => return unavailable(&format!("no scratch directory: {error}")),
        };
        let command = ServerCommand::new(PROGRAM)
            .args(["--port", "{port}", "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            .arg("--dir")
            .arg(dir.to_string_lossy().into_owned());
        Self::spawn(command, dir)
    }

    fn spawn(command: ServerCommand, data_dir: PathBuf) -> Option<TestRedis> {
        match ServerProcess::start(command).and_then(|process| {
            wait_for_pong(process.addr())?;
            Ok(process)
        }) {
            Ok(process) => Some(TestRedis::owned(
                format!("redis://{}/", process.addr()),
                process,
                Some(data_dir),
            )),
            Err(error) => {
                let _ = fs::remove_dir_all(data_dir);
                unavailable(&start_failure(PROGRAM, &error))
            }
        }
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        self.address()
    }
}

/// The arguments of a throwaway server: loopback only, no persistence.
pub fn base_args() -> [&'static str; 8] {
    [
        "--port",
        "{port}",
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
}

pub(crate) fn unavailable<T>(reason: &str) -> Option<T> {
    crate::availability::unavailable(
        "Redis",
        "No Redis server",
        &format!(
            "install redis-server (scripts/services.sh) or set {URL_VAR}=redis://127.0.0.1:6379"
        ),
        reason,
    )
}

/// Sends `PING` until the server answers `+PONG`: a server that accepts connections may still
/// be loading its data and answer `-LOADING`.
fn wait_for_pong(addr: SocketAddr) -> io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
        stream.set_read_timeout(Some(Duration::from_secs(1)))?;
        stream.write_all(b"PING\r\n")?;
        let mut reply = [0u8; 64];
        let n = stream.read(&mut reply)?;
        if reply[..n].starts_with(b"+PONG") {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the server answers PING with {:?}",
                    String::from_utf8_lossy(&reply[..n])
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Checks that the host and port of a `redis://host:port/db` URL accept TCP connections.
fn reachable(url: &str) -> io::Result<()> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let host_port = if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:6379")
    };
    connectable(&host_port)
}
