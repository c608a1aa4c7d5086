//! A server process that says where it listens: it prints `listening ADDRESS` as its first
//! line once it serves, and serves until it is killed. The front-end runs start their servers
//! this way, and so does the two-service system test of the tests crate; both sides of the
//! line are here, once.

use std::fmt::Display;
use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

/// The first line's prefix.
const LISTENING: &str = "listening ";

/// Tells the process that started this one where it listens: `listening ADDRESS` on standard
/// output, flushed.
pub fn announce(address: impl Display) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{LISTENING}{address}")?;
    stdout.flush()
}

/// A server process started by [`Listening::spawn`], serving at [`address`](Self::address).
/// Killed when dropped.
#[derive(Debug)]
pub struct Listening {
    /// Where it listens: `host:port`.
    pub address: String,
    child: Child,
}

impl Listening {
    /// Starts `command` (its standard input closed, its output read here; its errors where
    /// `command` sends them) and waits until it says where it listens. Blocks.
    pub fn spawn(mut command: Command) -> Result<Listening, String> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|error| format!("starting {command:?}: {error}"))?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout is piped");
        let _ = BufReader::new(stdout).read_line(&mut line);
        match line.trim().strip_prefix(LISTENING) {
            Some(address) => Ok(Listening {
                address: address.to_owned(),
                child,
            }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!("the server did not start: {line:?}"))
            }
        }
    }

    /// SIGKILL, and waits for it to die.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGSTOP: it stops where it is, its leases unrenewed.
    pub fn stop(&self) -> Result<(), String> {
        self.signal("-STOP")
    }

    /// SIGCONT.
    pub fn resume(&self) -> Result<(), String> {
        self.signal("-CONT")
    }

    fn signal(&self, signal: &str) -> Result<(), String> {
        let pid = self.child.id().to_string();
        match Command::new("kill").args([signal, &pid]).status() {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!("kill {signal} {pid}: {status}")),
            Err(error) => Err(format!("kill {signal} {pid}: {error}")),
        }
    }

    /// How it ended, if it exited: a server serves until it is killed.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.kill();
    }
}
