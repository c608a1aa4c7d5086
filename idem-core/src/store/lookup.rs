//! What a call asks a store before it claims a key ([`Probe`]), and the answer ([`Lookup`]):
//! the completed record to replay, when the store holds it in process.

#[cfg(doc)]
use crate::store::{Claim, Store};
use crate::store::{Completed, Timestamp};

/// What [`Store::lookup`] is asked: the time a record's expiry is judged at, and the longest
/// outcome the caller replays. A lookup's counterpart of a [`Claim`], which claims nothing.
///
/// ```
/// use idem_core::store::{Probe, Timestamp};
/// let now = Timestamp::from_millis(1_800_000_000_000);
/// let probe = Probe::new(now).with_max_outcome(Some(64 * 1024));
/// assert_eq!((probe.now(), probe.max_outcome()), (now, Some(65_536)));
/// assert_eq!(Probe::new(now).max_outcome(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Probe {
    now: Timestamp,
    max_outcome: Option<usize>,
}

impl Probe {
    /// A lookup at `now`, taking an outcome of any length.
    pub fn new(now: Timestamp) -> Self {
        Probe {
            now,
            max_outcome: None,
        }
    }

    /// The same lookup from a call that replays no outcome longer than `bytes` (see
    /// [`Call::with_max_outcome`](crate::Call::with_max_outcome)): a completed record with a
    /// longer one is a [`Lookup::Miss`], for the reservation to refuse or answer as it does.
    pub fn with_max_outcome(mut self, bytes: Option<usize>) -> Self {
        self.max_outcome = bytes;
        self
    }

    /// The current time: a completed record is served while `now < expires_at`.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The longest outcome the caller replays, if it set one.
    pub fn max_outcome(&self) -> Option<usize> {
        self.max_outcome
    }
}

/// The answer of [`Store::lookup`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lookup {
    /// The key holds this completed record, live at the probe's time and within its
    /// [`max_outcome`](Probe::max_outcome): the caller replays it (or, for other arguments,
    /// is refused as a mismatch) without reserving. Its outcome is the store's buffer, lent.
    Completed(Completed),
    /// Nothing a lookup answers: no record, an in-progress or expired one, one over the
    /// limit, or a store that does not look up. The caller reserves, and the reservation
    /// answers.
    Miss,
}
