//! The bound on how many records a memory store holds, and when room may free up next.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use idem_core::store::{Record, Timestamp, LEASE_GRACE};

/// Counts the records held against a maximum, and keeps a lower bound on the earliest time a
/// held record stops counting, so that a full store refuses at once while nothing can have
/// expired, instead of scanning every record to find that out.
#[derive(Debug)]
pub(crate) struct Capacity {
    max: usize,
    held: AtomicUsize,
    /// No record stops counting before this (ms since the epoch): lowered by every record
    /// written, raised only by a purge, which sees every record.
    earliest_expiry: AtomicU64,
    /// The earliest expiry noted since the running purge started, which its scan may have
    /// missed (written into a shard it had already scanned).
    noted_while_purging: AtomicU64,
    /// One purge at a time, so that each one's result stands for every record.
    purging: Mutex<()>,
}

impl Capacity {
    pub(crate) fn new(max: usize) -> Self {
        Capacity {
            max,
            held: AtomicUsize::new(0),
            earliest_expiry: AtomicU64::new(u64::MAX),
            noted_while_purging: AtomicU64::new(u64::MAX),
            purging: Mutex::new(()),
        }
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Takes room for one more record; `false` when the store is full.
    pub(crate) fn take(&self) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.max).then_some(held + 1)
            })
            .is_ok()
    }

    /// Gives back the room of `records` removed records.
    pub(crate) fn give_back(&self, records: usize) {
        self.held.fetch_sub(records, Ordering::AcqRel);
    }

    /// Notes a record written to the store: room may free up when it stops counting.
    pub(crate) fn note(&self, record: &Record) {
        self.note_expiry(stops_counting_at(record));
    }

    fn note_expiry(&self, at: Timestamp) {
        let at = at.as_millis();
        for bound in [&self.earliest_expiry, &self.noted_while_purging] {
            // A load first: most writes expire after the bound, and a read is cheaper than
            // an atomic update on a line every shard shares.
            if at < bound.load(Ordering::Acquire) {
                bound.fetch_min(at, Ordering::AcqRel);
            }
        }
    }

    /// Whether a record may have stopped counting by `now`, so that a purge may make room.
    pub(crate) fn may_free_up(&self, now: Timestamp) -> bool {
        now.as_millis() >= self.earliest_expiry.load(Ordering::Acquire)
    }

    /// Runs `scan`, a purge that returns the earliest expiry of the records it kept, after
    /// any purge still running, and makes the bound exact with what it found. The bound is
    /// never raised while the scan runs, so a full store still purges meanwhile.
    pub(crate) fn purge(&self, scan: impl FnOnce() -> Option<Timestamp>) {
        let _one_at_a_time = self.purging.lock().unwrap_or_else(|e| e.into_inner());
        self.noted_while_purging.store(u64::MAX, Ordering::Release);
        let kept = scan().map_or(u64::MAX, Timestamp::as_millis);
        let noted = &self.noted_while_purging;
        self.earliest_expiry
            .store(kept.min(noted.load(Ordering::Acquire)), Ordering::Release);
        // A write noted between that read and the store.
        self.earliest_expiry
            .fetch_min(noted.load(Ordering::Acquire), Ordering::AcqRel);
    }
}

/// When `record` stops counting, and a purge may remove it: a completed record at its expiry,
/// an in-progress one a [`LEASE_GRACE`] after its lease, or later while it holds steps
/// ([`InProgress::is_abandoned`](idem_core::store::InProgress::is_abandoned)).
pub(crate) fn stops_counting_at(record: &Record) -> Timestamp {
    match record {
        Record::Completed(completed) => completed.expires_at(),
        Record::InProgress(held) => {
            let abandoned = held.lease_until() + LEASE_GRACE;
            if held.steps().is_empty() {
                abandoned
            } else {
                abandoned.max(held.steps().kept_until())
            }
        }
        // A kind of record this store does not know yet: worth a purge at any time.
        _ => Timestamp::EPOCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idem_core::{
        store::{Completed, Outcome},
        Fingerprint,
    };

    #[test]
    fn room_is_taken_up_to_the_maximum_and_given_back() {
        let capacity = Capacity::new(2);
        assert!(capacity.take() && capacity.take());
        assert!(!capacity.take(), "the third record finds the store full");
        capacity.give_back(1);
        assert!(capacity.take(), "a record removed makes room for one");
        assert!(!capacity.take());
    }

    #[test]
    fn room_may_free_up_once_the_earliest_record_noted_stops_counting() {
        let capacity = Capacity::new(2);
        let at = |millis| Timestamp::from_millis(millis);
        let expiring = |millis| {
            Record::Completed(Completed::new(
                Fingerprint::empty(),
                Outcome::ok(Vec::new()),
                at(millis),
            ))
        };
        assert!(!capacity.may_free_up(at(u64::MAX - 1)), "nothing noted yet");
        capacity.note(&expiring(2_000));
        capacity.note(&expiring(1_000));
        capacity.note(&expiring(3_000));
        assert!(!capacity.may_free_up(at(999)));
        assert!(capacity.may_free_up(at(1_000)));

        capacity.purge(|| Some(at(3_000)));
        assert!(
            !capacity.may_free_up(at(2_999)),
            "a purge sets the bound to what it kept"
        );
        assert!(capacity.may_free_up(at(3_000)));
    }

    #[test]
    fn an_in_progress_record_stops_counting_a_grace_after_its_lease() {
        let capacity = Capacity::new(1);
        let lease_until = Timestamp::from_millis(1_800_000_000_000);
        let held = idem_core::store::InProgress::new(
            idem_core::store::OwnerToken::generate(),
            Fingerprint::empty(),
            lease_until,
        );
        capacity.note(&Record::InProgress(held));
        let abandoned = lease_until + LEASE_GRACE;
        assert!(!capacity.may_free_up(abandoned - std::time::Duration::from_millis(1)));
        assert!(capacity.may_free_up(abandoned));
    }
}
