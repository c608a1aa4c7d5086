//! The bound on how many records a memory store holds.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts the records held against a maximum.
#[derive(Debug)]
pub(crate) struct Capacity {
    max: usize,
    held: AtomicUsize,
}

impl Capacity {
    pub(crate) fn new(max: usize) -> Self {
        Capacity {
            max,
            held: AtomicUsize::new(0),
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
}
