//! Servers the tests of one test binary share. Starting a PostgreSQL cluster (`initdb`, then
//! the server) costs more than most tests that use it, and those tests already keep to a
//! database of their own, as they must on a server named by `IDEM_POSTGRES_URL`. A binary that
//! runs its tests inside [`share_servers_while`] starts one cluster on first use and stops it
//! when its tests are done; elsewhere (a binary on the standard test harness, which has no hook
//! at its end) every test starts its own, as before.
//!
//! Only a server a test merely uses is shared: one a test may kill or restart
//! (`start_owned`) is always its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::process::{ServerKind, TestServer};

/// Whether the running binary shares servers: set for the span of [`share_servers_while`].
static SHARING: AtomicBool = AtomicBool::new(false);

/// Runs `tests` with one PostgreSQL cluster and one moto_server shared among those that merely
/// use one, then stops those servers and removes their files.
pub fn share_servers_while<T>(tests: impl FnOnce() -> T) -> T {
    SHARING.store(true, Ordering::SeqCst);
    let outcome = tests();
    SHARING.store(false, Ordering::SeqCst);
    crate::postgres::server::stop_shared();
    crate::dynamodb::server::stop_shared();
    outcome
}

/// One kind's shared server: empty until a test first asks for it while servers are shared.
pub(crate) struct SharedServer<K>(Mutex<Option<TestServer<K>>>);

impl<K: ServerKind> SharedServer<K> {
    /// No server yet.
    pub(crate) const fn new() -> Self {
        SharedServer(Mutex::new(None))
    }

    /// `None` when servers are not shared; else a handle on the shared server (which the test
    /// must leave running), started by `start` on the asking test's thread if there is none
    /// yet, or `Some(None)` if it cannot be started (`start` has told the harness why, for
    /// this test; the next test to ask tries again). Tests asking meanwhile wait for the first
    /// start rather than start servers of their own.
    pub(crate) fn handle(
        &self,
        start: impl FnOnce() -> Option<TestServer<K>>,
    ) -> Option<Option<TestServer<K>>> {
        if !SHARING.load(Ordering::SeqCst) {
            return None;
        }
        let mut shared = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if shared.is_none() {
            *shared = start();
        }
        Some(
            shared
                .as_ref()
                .map(|server| TestServer::external(server.address().to_owned())),
        )
    }

    /// Stops the shared server, if one was started, and removes its files.
    pub(crate) fn stop(&self) {
        let server = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        drop(server);
    }
}
