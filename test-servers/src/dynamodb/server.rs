//! DynamoDB-compatible servers for the tests: `moto_server` started on a free loopback port, or
//! the endpoint named by `IDEM_DYNAMODB_ENDPOINT`.
//!
//! `moto_server` is looked up in the virtualenv that `scripts/services.sh` installs
//! (`$IDEM_SERVICES_DIR/venv/bin`, default `~/.cache/idem-services/venv/bin`), then on `PATH`.
//! When no server can be had, [`TestMoto::start`] returns `None`, and the test returns early: the
//! [harness](crate::availability) reports it as ignored, with the reason. With
//! `IDEM_REQUIRE_BACKENDS=1` (set by CI) it panics instead.
//!
//! # One request at a time
//!
//! moto serves requests on parallel threads, and its conditional writes read the item, check the
//! condition and write without a lock: two concurrent `PutItem`s with `attribute_not_exists`
//! can both succeed, which DynamoDB never allows (its conditional writes are atomic per item).
//! The conformance suite's 200-caller races hit that window under load. So the harness starts
//! moto's own entry point (`moto.server.main`, with `moto_server`'s arguments) through the
//! Python interpreter next to `moto_server`, with its WSGI application wrapped in one lock
//! ([`SERIALISED_MOTO`]). moto is CPU-bound under Python's global lock anyway, so this costs
//! little throughput. The script also lengthens the listen queue from werkzeug's 128 to 1024,
//! so that 200 callers connecting at once are queued instead of having their connections
//! dropped.

use std::io;
use std::path::{Path, PathBuf};

use crate::process::{
    connectable, start_failure, ServerCommand, ServerKind, ServerProcess, TestServer,
};
use crate::shared::SharedServer;

/// The environment variable naming an existing endpoint to use instead of starting a server.
pub const ENDPOINT_VAR: &str = "IDEM_DYNAMODB_ENDPOINT";

/// The environment variable naming the directory `scripts/services.sh` installs into.
pub const SERVICES_DIR_VAR: &str = "IDEM_SERVICES_DIR";

/// The program started when no endpoint is given.
pub const PROGRAM: &str = "moto_server";

/// moto: `moto_server`, ready once it accepts connections. It keeps its tables in memory, so a
/// restart loses them.
#[derive(Debug)]
pub struct Moto;

impl ServerKind for Moto {
    const PROGRAM: &'static str = PROGRAM;
}

/// A DynamoDB-compatible endpoint a test talks to.
pub type TestMoto = TestServer<Moto>;

/// The server the tests of a binary that shares servers use.
static SHARED: SharedServer<Moto> = SharedServer::new();

/// Stops the shared server, if one was started.
pub(crate) fn stop_shared() {
    SHARED.stop();
}

impl TestMoto {
    /// The endpoint named by `IDEM_DYNAMODB_ENDPOINT` if set, else a fresh `moto_server` on a
    /// free loopback port. `None` if neither works, unless backends are required.
    pub fn start() -> Option<TestMoto> {
        match std::env::var(ENDPOINT_VAR) {
            Ok(endpoint) if !endpoint.is_empty() => match reachable(&endpoint) {
                Ok(()) => Some(TestMoto::external(endpoint)),
                Err(error) => unavailable(&format!(
                    "{ENDPOINT_VAR}={endpoint} is not reachable: {error}"
                )),
            },
            _ => SHARED
                .handle(Self::start_owned)
                .unwrap_or_else(Self::start_owned),
        }
    }

    /// A fresh `moto_server` owned by this test, which it may kill and restart (moto keeps its
    /// tables in memory, so a restart loses them). Ignores `IDEM_DYNAMODB_ENDPOINT`.
    pub fn start_owned() -> Option<TestMoto> {
        let command = ServerCommand::new(python(&program()))
            .args(["-c", SERIALISED_MOTO])
            .args(["-H", "127.0.0.1", "-p", "{port}"]);
        match ServerProcess::start(command) {
            Ok(process) => Some(TestMoto::owned(
                format!("http://{}", process.addr()),
                process,
                None,
            )),
            Err(error) => unavailable(&start_failure(PROGRAM, &error)),
        }
    }

    /// The endpoint URL, `http://127.0.0.1:PORT` for a started server.
    pub fn endpoint(&self) -> &str {
        self.address()
    }
}

/// moto's server with every request handled under one lock: the script given to the Python
/// interpreter next to `moto_server`, followed by `moto_server`'s arguments.
pub const SERIALISED_MOTO: &str = "\
import sys, threading
from werkzeug import serving
from moto import server
from moto.moto_server import werkzeug_app
serving.BaseWSGIServer.request_queue_size = 1024
lock = threading.Lock()
handle = werkzeug_app.DomainDispatcherApplication.__call__
def serialised(self, environ, start_response):
    with lock:
        return list(handle(self, environ, start_response))
werkzeug_app.DomainDispatcherApplication.__call__ = serialised
server.main(sys.argv[1:])
";

/// `moto_server` from the services virtualenv if it is there, else from `PATH`, else the bare
/// name (which then fails to start with `NotFound`).
pub fn program() -> PathBuf {
    let services_dir = match std::env::var_os(SERVICES_DIR_VAR) {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".cache").join("idem-services")),
    };
    let on_path = || {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(PROGRAM))
            .find(|path| path.is_file())
    };
    services_dir
        .map(|dir| dir.join("venv").join("bin").join(PROGRAM))
        .filter(|path| path.is_file())
        .or_else(on_path)
        .unwrap_or_else(|| PathBuf::from(PROGRAM))
}

/// The Python interpreter that runs `moto_server`: the one beside it (a virtualenv's), else
/// `python3` from `PATH`. When `moto_server` itself was not found, its bare name, so that
/// starting fails with `NotFound` and the test is ignored with the install hint.
fn python(moto_server: &Path) -> PathBuf {
    let Some(dir) = moto_server
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
    else {
        return moto_server.to_path_buf();
    };
    ["python3", "python"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

fn unavailable<T>(reason: &str) -> Option<T> {
    crate::availability::unavailable(
        "DynamoDB",
        "No DynamoDB endpoint",
        &format!(
            "install moto_server (scripts/services.sh) or set {ENDPOINT_VAR}=http://127.0.0.1:8000"
        ),
        reason,
    )
}

/// Checks that the host and port of an `http://host:port` endpoint accept TCP connections.
pub fn reachable(endpoint: &str) -> io::Result<()> {
    let (scheme, rest) = endpoint.split_once("://").unwrap_or(("http", endpoint));
    let authority = rest.split('/').next().unwrap_or(rest);
    let host_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
    {
        authority.to_owned()
    } else {
        let port = if scheme == "https" { 443 } else { 80 };
        format!("{authority}:{port}")
    };
    connectable(&host_port)
}
