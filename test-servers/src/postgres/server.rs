//! PostgreSQL servers for the tests: a cluster of their own (`initdb` into a scratch directory,
//! then `postgres` on a free loopback port), or the server named by `IDEM_POSTGRES_URL`.
//!
//! The programs are looked up in `IDEM_POSTGRES_BIN` if set, then in Debian's
//! `/usr/lib/postgresql/<version>/bin` (newest first; Debian keeps them off `PATH`), then on
//! `PATH`. PostgreSQL refuses to run as root, so as root the cluster runs as the `postgres`
//! user, or `nobody`. It listens on 127.0.0.1 only, with its socket in its data directory,
//! trusts local connections and does not fsync (a killed server keeps every commit: its WAL
//! is written at commit, only not flushed to disk).
//!
//! When no server can be had, [`TestPostgres::start`] returns `None`, and the test returns
//! early: the [harness](crate::availability) reports it as ignored, with the reason. With
//! `IDEM_REQUIRE_BACKENDS=1` (set by CI) it panics instead.

use std::fs;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::{
    connectable, scratch_dir, start_failure, ServerCommand, ServerKind, ServerProcess, TestServer,
};
use crate::shared::SharedServer;

/// The environment variable naming an existing server to use instead of starting one, as a
/// URL whose user may create databases (`postgres://postgres@127.0.0.1:5432`).
pub const URL_VAR: &str = "IDEM_POSTGRES_URL";

/// The environment variable naming the directory of `initdb` and `postgres`.
pub const BIN_VAR: &str = "IDEM_POSTGRES_BIN";

/// The program started when no URL is given.
pub const PROGRAM: &str = "postgres";

/// The superuser of a cluster the tests start.
const SUPERUSER: &str = "postgres";

/// PostgreSQL: `postgres`, ready once `pg_isready` says it accepts connections (it may still
/// be recovering after a crash).
#[derive(Debug)]
pub struct Postgres;

impl ServerKind for Postgres {
    const PROGRAM: &'static str = PROGRAM;

    fn ready(addr: SocketAddr) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let status = Command::new(program("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &addr.port().to_string(), "-t", "1"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?;
            if status.success() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "PostgreSQL does not accept connections (pg_isready)",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A PostgreSQL server a test talks to.
pub type TestPostgres = TestServer<Postgres>;

/// The cluster the tests of a binary that shares servers use.
static SHARED: SharedServer<Postgres> = SharedServer::new();

/// Stops the shared cluster, if one was started.
pub(crate) fn stop_shared() {
    SHARED.stop();
}

impl TestPostgres {
    /// The server named by `IDEM_POSTGRES_URL` if set, else the cluster this binary's tests
    /// share ([`shared`](crate::shared)), else a fresh cluster on a free loopback port. `None`
    /// if none works, unless backends are required. The test keeps to a database of its own.
    pub fn start() -> Option<TestPostgres> {
        match std::env::var(URL_VAR) {
            Ok(url) if !url.is_empty() => match reachable(&url) {
                Ok(()) => Some(TestPostgres::external(url.trim_end_matches('/').to_owned())),
                Err(error) => unavailable(&format!("{URL_VAR}={url} is not reachable: {error}")),
            },
            _ => SHARED
                .handle(Self::start_owned)
                .unwrap_or_else(Self::start_owned),
        }
    }

    /// A fresh cluster owned by this test, which it may kill and restart; its data survive a
    /// restart. Ignores `IDEM_POSTGRES_URL`.
    pub fn start_owned() -> Option<TestPostgres> {
        Self::start_owned_with(&[])
    }

    /// Like [`start_owned`](TestPostgres::start_owned), with `extra` arguments for `postgres`
    /// (`-c shared_preload_libraries=pg_stat_statements`...).
    pub fn start_owned_with(extra: &[&str]) -> Option<TestPostgres> {
        let dir = match scratch_dir("postgres") {
            Ok(dir) => dir,
            Err(error) => return unavailable(&format!("no scratch directory: {error}")),
        };
        match init_and_start(&dir, extra) {
            Ok(process) => Some(TestPostgres::owned(
                format!("postgres://{SUPERUSER}@{}", process.addr()),
                process,
                Some(dir),
            )),
            Err(error) => {
                let _ = fs::remove_dir_all(&dir);
                unavailable(&start_failure(PROGRAM, &error))
            }
        }
    }

    /// The server's URL, without a database: append `/<database>`.
    pub fn server_url(&self) -> &str {
        self.address()
    }

    /// Starts a killed server again on the same port and data directory, waiting for it to
    /// recover. A SIGKILLed postmaster leaves its backends to notice and exit, and a new one
    /// refuses to start while they hold its shared memory, so this retries for a while.
    pub fn restart_after_kill(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let process = self.process();
            match process
                .restart()
                .and_then(|()| Postgres::ready(process.addr()))
            {
                Ok(()) => return,
                Err(error) if Instant::now() >= deadline => {
                    panic!("PostgreSQL did not restart: {error}")
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
}

/// Runs `initdb` into `dir`, then starts `postgres` on it and waits until it is ready.
fn init_and_start(dir: &Path, extra: &[&str]) -> io::Result<ServerProcess> {
    let user = unprivileged_user()?;
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(dir, Some(uid), Some(gid))?;
    }
    let data = dir.join("data");
    let mut initdb = Command::new(program("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-U", SUPERUSER, "--auth=trust", "--no-sync", "-E", "UTF8"])
        .args(["--locale=C", "--no-instructions"])
        .stdin(Stdio::null());
    if let Some((uid, gid)) = user {
        std::os::unix::process::CommandExt::uid(&mut initdb, uid);
        std::os::unix::process::CommandExt::gid(&mut initdb, gid);
    }
    let output = initdb
        .output()
        .map_err(|error| io::Error::new(error.kind(), format!("cannot run `initdb`: {error}")))?;
    if !output.status.success() {
        return Err(io::Error::other(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let data = data.to_string_lossy().into_owned();
    let mut command = ServerCommand::new(program(PROGRAM))
        .args(["-D", &data, "-p", "{port}", "-k", &data])
        .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
        .args(["-c", "full_page_writes=off"])
        .args([
            "-c",
            "max_connections=200",
            "-c",
            "log_min_messages=warning",
        ])
        .args(extra.iter().copied());
    if let Some((uid, gid)) = user {
        command = command.user(uid, gid);
    }
    let process = ServerProcess::start(command)?;
    Postgres::ready(process.addr())?;
    Ok(process)
}

/// The user to run the cluster as: none when not root, else `postgres` or `nobody`.
fn unprivileged_user() -> io::Result<Option<(u32, u32)>> {
    let passwd = fs::read_to_string("/etc/passwd")?;
    let entry = |name: &str| {
        passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&name) && fields.len() > 3)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
    };
    let whoami = Command::new("id").arg("-u").output()?;
    if String::from_utf8_lossy(&whoami.stdout).trim() != "0" {
        return Ok(None);
    }
    entry("postgres")
        .or_else(|| entry("nobody"))
        .map(Some)
        .ok_or_else(|| io::Error::other("running as root, and no `postgres` or `nobody` user"))
}

/// The path of PostgreSQL's program `name`: in `IDEM_POSTGRES_BIN`, Debian's newest
/// `/usr/lib/postgresql/<version>/bin`, or on `PATH`.
pub fn program(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(BIN_VAR).filter(|dir| !dir.is_empty()) {
        return PathBuf::from(dir).join(name);
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin").join(name)))
        })
        .filter(|(_, path)| path.exists())
        .collect();
    versions.sort();
    versions
        .pop()
        .map_or_else(|| PathBuf::from(name), |(_, path)| path)
}

fn unavailable<T>(reason: &str) -> Option<T> {
    crate::availability::unavailable(
        "PostgreSQL",
        "No PostgreSQL",
        &format!(
            "install it (scripts/services.sh) or set {URL_VAR}=postgres://postgres@127.0.0.1:5432"
        ),
        reason,
    )
}

/// Checks that the host and port of a `postgres://user@host:port/db` URL accept TCP
/// connections.
fn reachable(url: &str) -> io::Result<()> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let host_port = if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:5432")
    };
    connectable(&host_port)
}
