//! `idem-certify`: certifies an idem store the way Jepsen certifies databases. Worker
//! processes call idempotent functions on a real store while faults are injected: workers
//! killed (`SIGKILL`) and stopped past their lease (`SIGSTOP`), latency, stalls, reset and
//! refused connections and dropped answers between each worker and the store (through a TCP
//! proxy of its own that never loses bytes from a connection it leaves open), the store's
//! server restarted, a Redis Cluster resharded, failed over or robbed of a replica, and the
//! workers' clocks skewed. Every call, body, side effect and answer goes into a history; a
//! checker reads it, with the store's final records, and counts anomalies by class.
//!
//! With `--front tower|actix|poem|salvo|lambda` it certifies idem-http's layer as a service
//! runs it: server processes (this binary again) serve an endpoint of two steps behind the
//! tower layer on axum, actix-web's or poem's middleware, salvo's hoop, or idem-lambda's layer
//! as a `lambda_http` function polling cargo-lambda's emulator of the Lambda Runtime API
//! (reached through its function URL, each caller's token named in the request context as an
//! authorizer would name its principal), on the store; callers in this process send requests
//! through idem-client (its retries and timeouts) under three principals that reuse the same
//! keys; servers are killed (and started again) and stopped past the lease, the network
//! between callers and servers and between servers and the store faulted, the store's server
//! restarted. The checker reads what each principal was answered for each key (the status,
//! the body and the `Idempotent-Replayed` flag: no refusal the workload never provokes, a
//! replay flagged as one) and judges the handler's executions by the engine's rules, each in
//! its own request's call context. With `--downstream` the first step charges at a
//! downstream service behind its own layer, through idem-client with the keys it derives
//! from the call: every order is charged once, under one key, and every success names its
//! order's charge.
//!
//! ```console
//! $ cargo run --release -p idem-certify -- --store redis --seconds 60
//! $ cargo run --release -p idem-certify -- --store postgres --seconds 60 --faults kill,stop,net
//! $ cargo run --release -p idem-certify -- --store memory --broken OwnerIgnored --seconds 10
//! $ cargo run --release -p idem-certify -- --store redis --front actix --seconds 60
//! $ cargo run --release -p idem-certify -- --store postgres --front tower --downstream --seconds 60
//! $ cargo run --release -p idem-certify -- --store redis --front lambda --seconds 60
//! ```
//!
//! - `history`: the events a worker appends, one JSON line each, and the side effects the
//!   checker counts (the ledger is the history file, which shares nothing with the store).
//! - `workload`: what a worker calls: hot keys, retries, mismatches, slow and stalled bodies,
//!   bodies with two steps and without steps, completions racing a takeover, failures before
//!   and after a recorded step, a step tried again, abandoned calls, stored errors and waiters.
//! - `run`, `nemesis`, `processes`, `proxies`, `servers`, `cluster_faults`: the store started
//!   through the test harness, worker processes started from this binary, and the faults.
//! - `front`: the front-end runs: the servers, their endpoint and the downstream service, the
//!   callers, and the faults injected into the servers.
//! - `check`: the anomaly classes, from the history and the final records; `check::front`,
//!   those of a front-end run.
//! - `report`: `report.json`, `report.md`, `calls.svg`, `latency.svg`.
//!
//! The library is the binary's: [`main`] is its entry point. Not published. Only what the
//! tests drive directly is public besides: the checker on hand-written histories ([`check`],
//! [`history`]), the report of its findings ([`report`]), the network proxy ([`proxies`]),
//! and the server processes that say where they listen ([`listening`]), which the tests
//! crate's two-service test starts too.

mod args;
pub mod check;
mod clock;
mod cluster_faults;
mod connect;
mod front;
pub mod history;
pub mod listening;
mod nemesis;
mod out_dir;
mod plan;
mod processes;
pub mod proxies;
pub mod report;
mod run;
mod servers;
mod worker;
mod workload;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Mode};

/// The command line's entry point.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.mode {
        Some(Mode::Worker { plan }) => {
            return match worker::main(&plan) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("idem-certify worker: {error}");
                    ExitCode::from(2)
                }
            }
        }
        Some(Mode::Serve { plan }) => {
            return match front::serve::main(&plan) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("idem-certify server: {error}");
                    ExitCode::from(2)
                }
            }
        }
        None => {}
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime starts");
    match runtime.block_on(run::run(&cli.run)) {
        Ok(outcome) => {
            print!("{}", outcome.report.summary());
            eprintln!("report: {}", outcome.dir.join("report.md").display());
            if outcome.report.anomalies > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            eprintln!("idem-certify: {error}");
            ExitCode::from(2)
        }
    }
}
