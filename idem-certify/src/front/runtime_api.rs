//! The Lambda Runtime API of a `--front lambda` run: cargo-lambda's emulator, one per run,
//! started by the coordinator as the store's server is. Every function process polls it (it
//! hands each invocation to one of the polls waiting on the function's queue, whichever
//! process made it), and callers invoke the function through its function URL, as Lambda's
//! own URL reaches whichever instance is free (with network faults, each slot's callers
//! through a proxy of their own in front of it).
//!
//! An invocation whose function process was killed is never answered by the emulator (it has
//! no timeout of its own): the caller's timeout ends it, and later invocations go to the
//! processes still polling. A stopped process's polls may take invocations, which wait until
//! it resumes, as a stopped server's accepted connections do.

use idem_test_servers::availability::run_test;
use idem_test_servers::lambda::{TestRuntimeApi, PROGRAM};

/// How many lines of the emulator's log an error quotes.
const LOG_TAIL: usize = 20;

/// The emulator, stopped when dropped.
pub(crate) struct Emulator {
    api: TestRuntimeApi,
}

impl Emulator {
    /// Starts the emulator on a free loopback port. Blocks until it accepts connections. An
    /// error says why it could not start (the program missing, with where to get it, or its
    /// log's tail).
    pub(crate) fn start() -> Result<Emulator, String> {
        // The test servers' helper tells a harness why its server cannot be had: run as one,
        // so that the reason is this error's rather than only a line on stderr.
        let mut started = None;
        let unavailable = run_test(|| started = TestRuntimeApi::start());
        match (started, unavailable) {
            (Some(api), _) => Ok(Emulator { api }),
            (None, reason) => Err(format!(
                "--front lambda needs the Lambda Runtime API, which could not be started: {}",
                reason.unwrap_or_else(|| "no reason given".to_owned())
            )),
        }
    }

    /// Why the emulator is gone, with its log's tail, once it exited on its own.
    pub(crate) fn exited(&mut self) -> Option<String> {
        let process = self.api.process();
        if process.is_running() {
            return None;
        }
        let log = std::fs::read_to_string(process.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n");
        Some(format!(
            "the Lambda Runtime API ({PROGRAM}) exited; its log's tail:\n{tail}"
        ))
    }

    /// Where it listens: `host:port`.
    pub(crate) fn host_port(&self) -> &str {
        self.api.address().trim_start_matches("http://")
    }

    /// The Runtime API as a function process is given it (`AWS_LAMBDA_RUNTIME_API`).
    pub(crate) fn runtime_api(&self) -> String {
        self.api.runtime_api()
    }

    /// The function URL callers send their requests to (a path appended), reached at
    /// `through` (`host:port`, a proxy in front of the emulator) or at the emulator itself.
    pub(crate) fn function_url(&self, through: Option<&str>) -> String {
        let url = self.api.function_url("");
        match through {
            Some(proxy) => url.replacen(self.host_port(), proxy, 1),
            None => url,
        }
    }
}
