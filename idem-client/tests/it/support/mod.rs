//! A real idem-http server on loopback (the proxy in front of it that loses answers on purpose
//! is idem-test-servers'), and clients with the middleware.

#![allow(dead_code)] // each test file uses part of it

pub mod events;
pub mod server;

use std::time::Duration;

use idem_client::IdempotentRetry;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

/// How long a test waits for something that must happen before it calls it a hang.
pub const HANG: Duration = Duration::from_secs(60);

/// A client with `retry` that opens a new connection for every attempt, so that the proxy's
/// plan of faults, one per connection, is one per attempt.
pub fn client(retry: IdempotentRetry) -> ClientWithMiddleware {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    ClientBuilder::new(http).with(retry).build()
}

/// The defaults, with backoff short enough that no test waits long for it.
pub fn quick() -> idem_client::IdempotentRetryBuilder {
    IdempotentRetry::builder().backoff(Duration::from_millis(5), Duration::from_millis(20))
}
