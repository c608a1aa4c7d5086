//! The bound on how many records a memory store holds, and when room may free up next.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use idem_core::{Record, Timestamp, LEASE_GRACE};

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
}

impl Capacity {
    pub(crate) fn new(max: usize) -> Self {
        Capacity {
            max,
            held: AtomicUsize::new(0),
            earliest_expiry: AtomicU64::new(u64::MAX),
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
        self.earliest_expiry
            .fetch_min(at.as_millis(), Ordering::AcqRel);
    }

    /// Whether a record may have stopped counting by `now`, so that a purge may make room.
    pub(crate) fn may_free_up(&self, now: Timestamp) -> bool {
        now.as_millis() >= self.earliest_expiry.load(Ordering::Acquire)
    }

    /// Starts a purge: it will [`end_purge`](Capacity::end_purge) with the earliest expiry of
    /// the records it kept, and records written meanwhile note theirs as usual.
    pub(crate) fn start_purge(&self) {
        self.earliest_expiry.store(u64::MAX, Ordering::Release);
    }

    /// Ends a purge that kept records whose earliest expiry is `earliest`.
    pub(crate) fn end_purge(&self, earliest: Option<Timestamp>) {
        if let Some(at) = earliest {
            self.note_expiry(at);
        }
    }
}

/// When `record` stops counting, and a purge may remove it: a completed record at its expiry,
/// an in-progress one a [`LEASE_GRACE`] after its lease, or later while it holds steps
/// ([`InProgress::is_abandoned`](idem_core::InProgress::is_abandoned)).
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
