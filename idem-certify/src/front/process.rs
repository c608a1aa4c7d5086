//! Server processes of a front-end run, started from this very binary in server mode (a
//! Lambda function's with the environment `lambda_runtime` reads): each says where it listens
//! ([`Listening`]), within [`LISTEN_WITHIN`] or the run fails instead
//! of hanging; killed, stopped and resumed.

use std::fs::File;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use crate::front::plan::{ServerPlan, Serves};
use crate::listening::Listening;

/// How long a server may take to say where it listens: longer than a server's own limit on
/// reaching its store, whose error then comes first.
pub(crate) const LISTEN_WITHIN: Duration = Duration::from_secs(45);

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
        if let Serves::Endpoint {
            runtime_api: Some(runtime_api),
            ..
        } = &plan.serves
        {
            command.envs(crate::front::lambda::environment(runtime_api));
        }
        // Read in a thread of its own, which a server that never says it listens holds; one
        // that says so too late is killed when its `Listening` is dropped there.
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(Listening::spawn(command));
        });
        let server = match receiver.recv_timeout(LISTEN_WITHIN) {
            Ok(started) => started
                .map_err(|error| format!("server {}: {error}; see {}", plan.name, log.display()))?,
            Err(_) => {
                return Err(format!(
                    "server {} did not say where it listens within {LISTEN_WITHIN:?}; see {}",
                    plan.name,
                    log.display()
                ))
            }
        };
        Ok(ServerProcess {
            name: plan.name.clone(),
            server,
        })
    }
}
