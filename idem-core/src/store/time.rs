//! Points in time, as the engine and the stores count them.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time: whole milliseconds since the Unix epoch, as read from a
/// [`Clock`](crate::Clock). Lengths of time stay [`Duration`]s; adding one to a timestamp
/// saturates instead of overflowing.
///
/// ```
/// use std::time::Duration;
/// use idem_core::store::Timestamp;
/// let start = Timestamp::from_millis(1_700_000_000_000);
/// let lease_until = start + Duration::from_secs(30);
/// assert_eq!(lease_until.as_millis(), 1_700_000_030_000);
/// assert_eq!(lease_until.saturating_duration_since(start), Duration::from_secs(30));
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// The latest representable time.
    pub const MAX: Timestamp = Timestamp(u64::MAX);

    /// The time `millis` milliseconds after the Unix epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Timestamp(millis)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// The system's wall-clock time, or the epoch if the clock is set before it.
    pub fn from_system_time(time: SystemTime) -> Self {
        time.duration_since(UNIX_EPOCH)
            .map_or(Timestamp::EPOCH, |since| {
                Timestamp(saturating_millis(since))
            })
    }

    /// This time moved `by` later, or [`Timestamp::MAX`] on overflow.
    pub fn saturating_add(self, by: Duration) -> Self {
        Timestamp(self.0.saturating_add(saturating_millis(by)))
    }

    /// This time moved `by` earlier, or the epoch on underflow.
    pub fn saturating_sub(self, by: Duration) -> Self {
        Timestamp(self.0.saturating_sub(saturating_millis(by)))
    }

    /// How long after `earlier` this is; zero if it is not later.
    pub fn saturating_duration_since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

/// Whole milliseconds in `duration`, saturating at `u64::MAX`.
pub(crate) fn saturating_millis(duration: Duration) -> u64 {
    duration.as_millis().try_into().unwrap_or(u64::MAX)
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;

    /// Saturates, as [`Timestamp::saturating_add`].
    fn add(self, by: Duration) -> Timestamp {
        self.saturating_add(by)
    }
}

impl Sub<Duration> for Timestamp {
    type Output = Timestamp;

    /// Saturates, as [`Timestamp::saturating_sub`].
    fn sub(self, by: Duration) -> Timestamp {
        self.saturating_sub(by)
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({} ms)", self.0)
    }
}

impl fmt::Display for Timestamp {
    /// Milliseconds since the epoch, as stores write them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_at_both_ends() {
        let near_end = Timestamp::from_millis(u64::MAX - 1);
        assert_eq!(near_end + Duration::from_secs(1), Timestamp::MAX);
        assert_eq!(
            Timestamp::from_millis(5) - Duration::from_secs(1),
            Timestamp::EPOCH
        );
        assert_eq!(
            Timestamp::EPOCH.saturating_duration_since(near_end),
            Duration::ZERO
        );
    }

    #[test]
    fn system_time_before_the_epoch_is_the_epoch() {
        let before = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(Timestamp::from_system_time(before), Timestamp::EPOCH);
        let after = UNIX_EPOCH + Duration::from_millis(1_500);
        assert_eq!(Timestamp::from_system_time(after).as_millis(), 1_500);
    }
}
