//! What the system tests share: the `idem` command run as a process, and clients with
//! idem-client's middleware. The proxy that loses answers on purpose is idem-test-servers'
//! (`idem_test_servers::proxy`).
//!
//! # How the tests get the `idem` binary
//!
//! A test of this package can name only this package's binaries (`CARGO_BIN_EXE_*`), and
//! building idem-cli from a test (`cargo build -p idem-cli`) would take the build lock of the
//! very `cargo test` that runs it, and test whatever features that build picked. So this
//! package depends on idem-cli (feature `system`) and has a one-line binary, `system-idem`
//! (`src/bin/system_idem.rs`), that calls idem-cli's public entry point `idem_cli::main`: the
//! same code as the installed `idem`, built by the same `cargo test`, run as a real process
//! with its own arguments, environment, stdout, stderr and exit code.

// Each test file uses a part of it.
#![allow(dead_code)]

pub mod command;

use std::time::Duration;

use idem_client::IdempotentRetry;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

/// How long a test waits for something that must happen before it calls it a hang.
pub const HANG: Duration = Duration::from_secs(30);

/// The principal every request of the tests carries: the layer refuses a keyed request
/// without one.
pub const AUTHORIZATION: &str = "Bearer merchant-42";

/// A client with idem-client's middleware (short backoffs), sending `Authorization`, that opens
/// a new connection for every attempt, so that the proxy's faults, one per connection, are
/// one per attempt.
pub fn client() -> ClientWithMiddleware {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        reqwest::header::HeaderValue::from_static(AUTHORIZATION),
    );
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let retry = IdempotentRetry::builder()
        .backoff(Duration::from_millis(5), Duration::from_millis(20))
        .build();
    ClientBuilder::new(http).with(retry).build()
}

/// Waits for `future`, failing the test if it takes longer than [`HANG`].
pub async fn within<F: std::future::Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(HANG, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {HANG:?}"))
}
