//! The fencing token a claim proposes.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Timestamp;

/// Tokens per millisecond of the clock.
const PER_MILLI: u64 = 1000;

/// The last token this process proposed.
static LAST: AtomicU64 = AtomicU64::new(0);

/// A token above every token this process proposed before, and above every token derived from
/// an earlier clock reading: `now` in thousandths of a millisecond. A key released or expired
/// and then reserved again therefore gets a larger token than before while the callers' clocks
/// agree; on a takeover the store also keeps it above the previous owner's.
pub fn propose(now: Timestamp) -> u64 {
    let floor = now.as_millis().saturating_mul(PER_MILLI);
    let previous = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(floor.max(last.saturating_add(1)))
        })
        .unwrap_or_else(|last| last);
    floor.max(previous.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_grow_even_within_one_millisecond() {
        let first = propose(Timestamp::from_millis(1_700_000_000_000));
        let second = propose(Timestamp::from_millis(1_700_000_000_000));
        assert!(first >= 1_700_000_000_000_000);
        assert!(second > first);
        assert!(propose(Timestamp::from_millis(1_700_000_000_001)) > second);
    }
}
