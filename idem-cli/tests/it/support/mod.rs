//! Test support: the `idem` binary run as a process, records written through a handle, a
//! handler for a layer under test, and the scenarios every store runs.
#![allow(dead_code)]

pub mod answer;
pub mod records;
pub mod scenarios;

use idem_core::Idempotency;
#[allow(unused_imports)] // `it_cli_backends` names no `Run`.
pub use idem_test_servers::command::{Idem, Run};

/// `idem`, this package's binary, with no store options yet.
pub fn idem() -> Idem {
    Idem::new(env!("CARGO_BIN_EXE_idem"))
}

/// What `idem scope` prints for the `Authorization` value `credential`, without its line feed.
pub fn scope_of(credential: &str) -> String {
    let output = idem().run_with_stdin(&["scope"], credential.as_bytes());
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .trim_end()
        .to_owned()
}

/// A store under test: a handle on it, one on it whose clock runs two days behind, and the
/// `idem` command that reads it. Holds the server (or table, or database) as long as it lives.
pub struct Subject {
    /// A handle on the store, on the system clock.
    pub idem: Idempotency,
    /// A handle on the same store whose clock is two days behind: what it completes with a
    /// one-day TTL expired a day ago.
    pub past: Idempotency,
    /// `idem` with the options that name the store.
    pub cli: Idem,
    /// The server, table or database, kept alive.
    pub _keep: Box<dyn std::any::Any + Send>,
}

impl Subject {
    /// A subject on `store`, read with `cli`, keeping `keep` alive.
    pub fn new(
        store: std::sync::Arc<dyn idem_core::store::Store>,
        cli: Idem,
        keep: impl std::any::Any + Send,
    ) -> Self {
        Subject {
            idem: Idempotency::from_arc(store.clone()),
            past: Idempotency::from_arc(store).with_clock(records::PastClock),
            cli,
            _keep: Box::new(keep),
        }
    }
}
