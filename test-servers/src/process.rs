//! Server programs started by the tests on free loopback ports, like testcontainers without
//! Docker.
//!
//! A [`ServerProcess`] runs one program (redis-server, moto_server, ...) bound to `127.0.0.1`
//! on a port picked for it, waits until the port accepts TCP connections (or the program exits,
//! which is reported with the tail of its log), and kills the program when dropped. Fault tests
//! can [`kill`](ServerProcess::kill) it and [`restart`](ServerProcess::restart) it on the same
//! port.
//!
//! ```no_run
//! use idem_test_servers::process::{ServerCommand, ServerProcess};
//!
//! // `{port}` in an argument is replaced by the chosen port.
//! let command = ServerCommand::new("redis-server")
//!     .args(["--port", "{port}", "--bind", "127.0.0.1", "--save", ""]);
//! let mut server = ServerProcess::start(command).expect("redis-server starts");
//! let url = format!("redis://{}", server.addr());
//! server.kill(); // the port refuses connections now
//! server.restart().expect("redis-server starts again"); // same port, same arguments
//! drop(server); // killed
//! # let _ = url;
//! ```
//!
//! Start errors are `io::Error`s: [`io::ErrorKind::NotFound`] when the program is not
//! installed (the test is then reported as ignored), [`io::ErrorKind::TimedOut`] when it never
//! accepted connections, [`io::ErrorKind::Other`] when it exited early; the message includes its
//! log.

use std::collections::hash_map::DefaultHasher;
use std::ffi::OsString;
use std::fs::{self, File};
use std::hash::{Hash, Hasher};
use std::io;
use std::marker::PhantomData;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a server gets to accept connections unless the command says otherwise.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How often the port is probed while a server starts.
const PROBE_EVERY: Duration = Duration::from_millis(10);

/// Attempts at a fresh port when a server loses the race for the one it was given.
const PORT_ATTEMPTS: usize = 3;

/// The program to run and how: arguments (with `{port}` placeholders), environment, working
/// directory and readiness timeout.
#[derive(Clone, Debug)]
pub struct ServerCommand {
    program: OsString,
    args: Vec<String>,
    envs: Vec<(OsString, OsString)>,
    current_dir: Option<PathBuf>,
    ready_timeout: Duration,
    user: Option<(u32, u32)>,
}

impl ServerCommand {
    /// Runs `program` (a name looked up on `PATH`, or a path).
    pub fn new(program: impl Into<OsString>) -> Self {
        ServerCommand {
            program: program.into(),
            args: Vec::new(),
            envs: Vec::new(),
            current_dir: None,
            ready_timeout: DEFAULT_READY_TIMEOUT,
            user: None,
        }
    }

    /// Appends one argument; `{port}` in it is replaced by the server's port.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments; `{port}` in any of them is replaced by the server's port.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the program.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// Runs the program in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// Runs the program as user `uid` and group `gid` (the test must run as root to switch).
    pub fn user(mut self, uid: u32, gid: u32) -> Self {
        self.user = Some((uid, gid));
        self
    }

    /// How long the program may take to accept connections (default
    /// [`DEFAULT_READY_TIMEOUT`]).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    fn program_name(&self) -> String {
        Path::new(&self.program)
            .file_name()
            .unwrap_or(self.program.as_os_str())
            .to_string_lossy()
            .into_owned()
    }
}

/// A running server program on a loopback port; killed when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    command: ServerCommand,
    port: u16,
    child: Option<Child>,
    log: PathBuf,
}

impl ServerProcess {
    /// Starts the program on a free loopback port and waits until the port accepts
    /// connections.
    pub fn start(command: ServerCommand) -> io::Result<Self> {
        let mut last_error = None;
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port()?;
            let mut server = ServerProcess {
                log: log_path(&command.program_name(), port),
                command: command.clone(),
                port,
                child: None,
            };
            match server.spawn_and_wait() {
                Ok(()) => return Ok(server),
                // Another process may have taken the port between probe and bind: try another.
                Err(error) if error.kind() == io::ErrorKind::Other => last_error = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| io::Error::other("no port could be used")))
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// The file the program's stdout and stderr go to.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Whether the program is running (it was not killed and has not exited).
    pub fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Kills the program and the processes it started (SIGKILL, no clean shutdown) and waits
    /// for it to exit. The port then refuses connections, and no connection made before
    /// answers. Does nothing if it is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A PostgreSQL backend lives in a session of its own and outlives its postmaster
            // for a moment, answering on a connection a pool still holds: stop the parent so
            // that it starts no other, kill its children, then the parent.
            let pid = child.id().to_string();
            let _ = Command::new("kill").args(["-STOP", &pid]).status();
            let _ = Command::new("pkill").args(["-KILL", "-P", &pid]).status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the program if it runs, then starts it again with the same arguments on the same
    /// port and waits until it accepts connections.
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        self.spawn_and_wait()
    }

    fn spawn_and_wait(&mut self) -> io::Result<()> {
        let log = File::create(&self.log)?;
        let port = self.port.to_string();
        let mut command = Command::new(&self.command.program);
        command
            .args(self.command.args.iter().map(|a| a.replace("{port}", &port)))
            .envs(self.command.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        if let Some(dir) = &self.command.current_dir {
            command.current_dir(dir);
        }
        if let Some((uid, gid)) = self.command.user {
            std::os::unix::process::CommandExt::uid(&mut command, uid);
            std::os::unix::process::CommandExt::gid(&mut command, gid);
        }
        let child = command.spawn().map_err(|error| {
            io::Error::new(
                error.kind(),
                format!("cannot run `{}`: {error}", self.command.program_name()),
            )
        })?;
        self.child = Some(child);
        self.wait_until_ready()
    }

    /// Probes the port until it accepts a connection; fails if the program exits first or the
    /// timeout passes.
    fn wait_until_ready(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + self.command.ready_timeout;
        let addr = self.addr();
        loop {
            let Some(child) = self.child.as_mut() else {
                return Err(io::Error::other("the server is not running"));
            };
            if let Some(status) = child.try_wait()? {
                self.child = None;
                return Err(io::Error::other(format!(
                    "`{}` exited with {status} before accepting connections on port {}; its log:\n{}",
                    self.command.program_name(),
                    self.port,
                    self.log_tail()
                )));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.kill();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "`{}` did not accept connections on port {} within {:?}; its log:\n{}",
                        self.command.program_name(),
                        self.port,
                        self.command.ready_timeout,
                        self.log_tail()
                    ),
                ));
            }
            std::thread::sleep(PROBE_EVERY);
        }
    }

    fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_file(&self.log);
    }
}

/// What a [`TestServer`] talks to: the program it starts, and when a started server is ready.
pub trait ServerKind {
    /// The program started when no external server is named.
    const PROGRAM: &'static str;

    /// Waits until a server that accepts connections on `addr` also serves requests (it may
    /// still be loading its data). Ready at once unless the kind says otherwise.
    fn ready(addr: SocketAddr) -> io::Result<()> {
        let _ = addr;
        Ok(())
    }
}

/// A server a test talks to: one the test started on a loopback port, which it may kill and
/// restart, or an external one named by an environment variable, which it must leave alone.
/// An owned server is killed, and its data directory removed, when this is dropped.
#[derive(Debug)]
pub struct TestServer<K> {
    address: String,
    process: Option<ServerProcess>,
    data_dir: Option<PathBuf>,
    kind: PhantomData<K>,
}

impl<K: ServerKind> TestServer<K> {
    /// A server this test started, reached at `address`, keeping its files in `data_dir`.
    pub fn owned(address: String, process: ServerProcess, data_dir: Option<PathBuf>) -> Self {
        TestServer {
            address,
            process: Some(process),
            data_dir,
            kind: PhantomData,
        }
    }

    /// A server at `address` that this test did not start.
    pub fn external(address: String) -> Self {
        TestServer {
            address,
            process: None,
            data_dir: None,
            kind: PhantomData,
        }
    }

    /// The address clients connect to: a URL or an endpoint.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Whether this test started the server (and so may kill it).
    pub fn is_owned(&self) -> bool {
        self.process.is_some()
    }

    /// The server process, for fault tests. Panics for an external server.
    pub fn process(&mut self) -> &mut ServerProcess {
        self.process
            .as_mut()
            .expect("only a server started by the test can be killed or restarted")
    }

    /// Kills the server (SIGKILL). Panics for an external server.
    pub fn kill(&mut self) {
        self.process().kill();
    }

    /// Starts the server again on the same port, with what its data directory kept, and waits
    /// until it is [ready](ServerKind::ready). Panics for an external server, or if it does not
    /// come back.
    pub fn restart(&mut self) {
        let process = self.process();
        if let Err(error) = process.restart().and_then(|()| K::ready(process.addr())) {
            panic!("{} did not restart: {error}", K::PROGRAM);
        }
    }
}

impl<K> Drop for TestServer<K> {
    fn drop(&mut self) {
        drop(self.process.take());
        if let Some(dir) = self.data_dir.take() {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// Why `program` could not be started, with the install hint when it is not installed.
pub fn start_failure(program: &str, error: &io::Error) -> String {
    let hint = if error.kind() == io::ErrorKind::NotFound {
        " (install it with scripts/services.sh)"
    } else {
        ""
    };
    format!("cannot start {program}{hint}: {error}")
}

/// Checks that `host:port` accepts TCP connections within a second.
pub fn connectable(host_port: &str) -> io::Result<()> {
    let addr = host_port
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::other(format!("`{host_port}` resolves to no address")))?;
    TcpStream::connect_timeout(&addr, Duration::from_secs(1)).map(drop)
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// A fresh directory under the system's temporary directory, for a server's data files.
pub fn scratch_dir(label: &str) -> io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("idem-{label}-{}", unique_suffix()));
    fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn log_path(program: &str, port: u16) -> PathBuf {
    std::env::temp_dir().join(format!("idem-{program}-{port}-{}.log", unique_suffix()))
}

fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = DefaultHasher::new();
    Instant::now().hash(&mut hasher);
    format!(
        "{}-{}-{:x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        hasher.finish() & 0xffff
    )
}
