//! Time as the engine sees it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::store::time::saturating_millis;
use crate::store::Timestamp;

/// The source of "now" for leases and expiry. Stores never read a clock of their own: every
/// expiry check uses the `now` the engine passes, so a [`ManualClock`] can drive expiry in tests.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_system_time(SystemTime::now())
    }
}

/// A clock that moves only when told to, for tests of TTL and lease expiry.
///
/// ```
/// use std::time::Duration;
/// use idem_core::{Clock, ManualClock};
/// let clock = ManualClock::new();
/// let before = clock.now();
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(clock.now(), before + Duration::from_secs(60));
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock that starts at the current wall-clock time.
    pub fn new() -> Self {
        ManualClock(Arc::new(AtomicU64::new(SystemClock.now().as_millis())))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(saturating_millis(by), Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(self.0.load(Ordering::SeqCst))
    }
}
