//! Server processes of a front-end run: started from this very binary, each tells where it
//! listens on its first line of output; killed, stopped and resumed.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::front::plan::ServerPlan;

/// One server process.
pub(crate) struct ServerProcess {
    /// Its name in the histories.
    pub(crate) name: String,
    /// Where it listens: `host:port`.
    pub(crate) address: String,
    child: Child,
}

impl ServerProcess {
    /// Starts a server on `plan`, its errors in `log`, and waits until it listens. Blocks.
    pub(crate) fn start(plan: &ServerPlan, log: &Path) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|error| format!("finding myself: {error}"))?;
        let errors = File::create(log).map_err(|error| format!("{}: {error}", log.display()))?;
        let plan_json = serde_json::to_string(plan).expect("plans serialise");
        let mut child = Command::new(exe)
            .args(["serve", "--plan", &plan_json])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(errors)
            .spawn()
            .map_err(|error| format!("starting server {}: {error}", plan.name))?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout is piped");
        let _ = BufReader::new(stdout).read_line(&mut line);
        let Some(address) = line.trim().strip_prefix("listening ") else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "server {} did not start: see {}",
                plan.name,
                log.display()
            ));
        };
        Ok(ServerProcess {
            name: plan.name.clone(),
            address: address.to_owned(),
            child,
        })
    }

    /// SIGKILL, and waits for it to die.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGSTOP: it stops where it is, its leases unrenewed.
    pub(crate) fn stop(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT.
    pub(crate) fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args([signal, &pid]).status();
    }

    /// How it failed, if it exited on its own: a server serves until it is killed.
    pub(crate) fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
