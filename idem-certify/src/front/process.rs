//! Server processes of a front-end run, started from this very binary in server mode: each
//! says where it listens ([`Listening`]); killed, stopped and resumed.

use std::fs::File;
use std::path::Path;
use std::process::Command;

use crate::front::plan::ServerPlan;
use crate::listening::Listening;

/// One server process.
pub(crate) struct ServerProcess {
    /// Its name in the histories.
    pub(crate) name: String,
    /// The process, and where it listens.
    pub(crate) server: Listening,
}

impl ServerProcess {
    /// Starts a server on `plan`, its errors in `log`, and waits until it listens. Blocks.
    pub(crate) fn start(plan: &ServerPlan, log: &Path) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|error| format!("finding myself: {error}"))?;
        let errors = File::create(log).map_err(|error| format!("{}: {error}", log.display()))?;
        let plan_json = serde_json::to_string(plan).expect("plans serialise");
        let mut command = Command::new(exe);
        command.args(["serve", "--plan", &plan_json]).stderr(errors);
        let server = Listening::spawn(command)
            .map_err(|error| format!("server {}: {error}; see {}", plan.name, log.display()))?;
        Ok(ServerProcess {
            name: plan.name.clone(),
            server,
        })
    }
}
