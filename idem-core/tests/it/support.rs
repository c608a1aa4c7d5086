//! What several of the test modules share: the lease they run calls with, how long a test
//! waits before failing by name, and a call whose body answers at once.

use std::time::Duration;

use idem_core::{Call, Error, Idempotency};

/// The lease of the tests' calls: long enough that it never passes unless a test moves a
/// manual clock past it.
pub const LEASE: Duration = Duration::from_secs(30);

/// How long a call may take before the test fails rather than wait on: an engine that loops
/// without ever running the body must fail it by name, not hang it.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Runs `call` with a body that answers 7 at once; its value, whether run or replayed.
pub async fn ok(idem: &Idempotency, call: Call) -> Result<u32, Error> {
    idem.run(call, async { Ok::<_, Error>(7) })
        .await
        .map(|executed| executed.value)
}
