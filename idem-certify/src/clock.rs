//! A worker's clock, off the system's by a fixed offset: the clock skew between hosts that
//! leases assume small.

use std::time::Duration;

use idem_core::{store::Timestamp, Clock, SystemClock};

/// The system clock, `offset_ms` milliseconds ahead (behind when negative).
#[derive(Clone, Copy, Debug)]
pub(crate) struct OffsetClock {
    /// The offset.
    pub(crate) offset_ms: i64,
}

impl Clock for OffsetClock {
    fn now(&self) -> Timestamp {
        let now = SystemClock.now();
        let by = Duration::from_millis(self.offset_ms.unsigned_abs());
        if self.offset_ms >= 0 {
            now + by
        } else {
            now - by
        }
    }
}
