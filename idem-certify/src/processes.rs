//! Worker processes: started from this very binary, killed, stopped and resumed.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::plan::WorkerPlan;

/// One worker process.
pub(crate) struct WorkerProcess {
    /// Its name in the history.
    pub(crate) name: String,
    /// How far its clock is off, in milliseconds.
    pub(crate) clock_offset_ms: i64,
    child: Child,
}

impl WorkerProcess {
    /// Starts a worker on `plan`, its output in `log`.
    pub(crate) fn start(plan: &WorkerPlan, log: &Path) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|error| format!("finding myself: {error}"))?;
        let output = File::create(log).map_err(|error| format!("{}: {error}", log.display()))?;
        let errors = output
            .try_clone()
            .map_err(|error| format!("{}: {error}", log.display()))?;
        let plan_json = serde_json::to_string(plan).expect("plans serialise");
        let child = Command::new(exe)
            .args(["worker", "--plan", &plan_json])
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors)
            .spawn()
            .map_err(|error| format!("starting worker {}: {error}", plan.name))?;
        Ok(WorkerProcess {
            name: plan.name.clone(),
            clock_offset_ms: plan.clock_offset_ms,
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

    /// Whether it exited.
    pub(crate) fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// How it failed, if it exited unsuccessfully on its own.
    pub(crate) fn failure(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) if !status.success() => Some(status.to_string()),
            _ => None,
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if !self.exited() {
            self.kill();
        }
    }
}
