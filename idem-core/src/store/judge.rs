//! The reserve judgement: what [`Store::reserve`](crate::store::Store::reserve) does about the record
//! it finds under the key, written once for every store.

use crate::store::{Claim, Completed, InProgress, Record, Reservation};

/// What reserving a key for a claim does, given the record found under it: the verdict of
/// [`judge_reserve`].
///
/// A store acts on it in its own atomic way: it writes the claim's record for
/// [`Vacant`](ReserveJudgement::Vacant) and [`Expired`](ReserveJudgement::Expired), writes
/// its takeover of the previous record for [`TakeOver`](ReserveJudgement::TakeOver), and
/// writes nothing otherwise ([`record_to_write`](ReserveJudgement::record_to_write));
/// [`into_reservation`](ReserveJudgement::into_reservation) is then its answer. Every variant
/// calls for a different action, so the enum is exhaustive: a store must handle each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReserveJudgement {
    /// The key holds no record: write the claim's record.
    Vacant,
    /// The key holds a completed record past its expiry, whatever its fingerprint: it counts
    /// as new, so write the claim's record over it.
    Expired(Completed),
    /// The key holds the claimant's own reservation (same owner token): the claim sent again
    /// after its answer was lost. Write nothing; the reservation found is the claimant's,
    /// whether or not its lease passed.
    Held(InProgress),
    /// The key holds another owner's in-progress record whose lease passed, with the claim's
    /// fingerprint (at once, steps and all: the same call resumes) or abandoned
    /// ([`InProgress::is_abandoned`]: a [`LEASE_GRACE`](crate::store::LEASE_GRACE) past its lease,
    /// with no step still holding the key). Write the claim's record
    /// [`taking_over`](InProgress::taking_over) this one, on the condition that the key still
    /// holds it.
    TakeOver(InProgress),
    /// The key holds a record that stands: a live completed record (a replay for the claim's
    /// fingerprint, a mismatch for another), another owner's in-progress record whose lease
    /// still runs (in progress), or one whose lease passed that carries another fingerprint
    /// and is not abandoned. Write nothing; answer with it.
    Existing(Record),
}

impl ReserveJudgement {
    /// The record the store writes under the key for `claim`: the claim's record on a
    /// [`Vacant`](ReserveJudgement::Vacant) or [`Expired`](ReserveJudgement::Expired) key, the
    /// claim's record [`taking_over`](InProgress::taking_over) the previous one on a
    /// [`TakeOver`](ReserveJudgement::TakeOver); `None` when it writes nothing.
    pub fn record_to_write(&self, claim: &Claim) -> Option<InProgress> {
        match self {
            ReserveJudgement::Vacant | ReserveJudgement::Expired(_) => Some(claim.record().clone()),
            ReserveJudgement::TakeOver(previous) => Some(claim.record().taking_over(previous)),
            ReserveJudgement::Held(_) | ReserveJudgement::Existing(_) => None,
        }
    }

    /// The answer of [`Store::reserve`](crate::store::Store::reserve) once the store did what the
    /// judgement says: the claim's record reserved, the claimant's own reservation, the
    /// takeover, or the record that stands.
    pub fn into_reservation(self, claim: &Claim) -> Reservation {
        match self {
            ReserveJudgement::Vacant | ReserveJudgement::Expired(_) => {
                Reservation::Reserved(claim.record().clone())
            }
            ReserveJudgement::Held(held) => Reservation::Reserved(held),
            ReserveJudgement::TakeOver(previous) => Reservation::TookOver {
                record: claim.record().taking_over(&previous),
                previous: previous.owner().clone(),
            },
            ReserveJudgement::Existing(record) => Reservation::Existing(record),
        }
    }

    /// The record the judgement was made on; `None` for [`Vacant`](ReserveJudgement::Vacant).
    pub fn into_found(self) -> Option<Record> {
        match self {
            ReserveJudgement::Vacant => None,
            ReserveJudgement::Expired(completed) => Some(Record::Completed(completed)),
            ReserveJudgement::Held(held) | ReserveJudgement::TakeOver(held) => {
                Some(Record::InProgress(held))
            }
            ReserveJudgement::Existing(record) => Some(record),
        }
    }
}

/// Judges a reservation: what [`Store::reserve`](crate::store::Store::reserve) does when the key
/// holds `found` and `claim` asks for it, at the claim's [`now`](Claim::now). Pure: it reads
/// no clock and no store.
///
/// This is the rule of the store contract, for every store written in Rust to call rather
/// than spell out again. A store whose backend decides on its own side (a script, a
/// statement, a condition) must decide exactly the same; the `idem-conformance` crate's table
/// of reserve cases checks both.
///
/// In order:
///
/// 1. no record: [`Vacant`](ReserveJudgement::Vacant);
/// 2. the claimant's own in-progress record (same owner token), live or not:
///    [`Held`](ReserveJudgement::Held);
/// 3. a live record (`now < live_until`): [`Existing`](ReserveJudgement::Existing);
/// 4. a completed record past its expiry: [`Expired`](ReserveJudgement::Expired);
/// 5. an in-progress record whose lease passed, with the claim's fingerprint or abandoned:
///    [`TakeOver`](ReserveJudgement::TakeOver);
/// 6. any other in-progress record: [`Existing`](ReserveJudgement::Existing).
///
/// ```
/// use std::time::Duration;
/// use idem_core::store::{judge_reserve, ReserveJudgement};
/// use idem_core::{Fingerprint, store::{Claim, InProgress, OwnerToken, Record, Timestamp}};
///
/// let now = Timestamp::from_millis(1_800_000_000_000);
/// let lease = Duration::from_secs(30);
/// let crashed = InProgress::new(OwnerToken::generate(), Fingerprint::empty(), now + lease);
/// let retry = Claim::new(
///     InProgress::new(OwnerToken::generate(), Fingerprint::empty(), now + lease * 3),
///     now + lease * 2,
/// );
/// // The same call, after the first owner's lease passed: a takeover.
/// let judged = judge_reserve(Some(Record::InProgress(crashed.clone())), &retry);
/// assert_eq!(judged, ReserveJudgement::TakeOver(crashed));
/// assert_eq!(judge_reserve(None, &retry), ReserveJudgement::Vacant);
/// ```
pub fn judge_reserve(found: Option<Record>, claim: &Claim) -> ReserveJudgement {
    let now = claim.now();
    let Some(found) = found else {
        return ReserveJudgement::Vacant;
    };
    match found {
        Record::InProgress(held) if held.owner() == claim.record().owner() => {
            ReserveJudgement::Held(held)
        }
        live if live.is_live(now) => ReserveJudgement::Existing(live),
        Record::Completed(expired) => ReserveJudgement::Expired(expired),
        Record::InProgress(stale)
            if stale.fingerprint() == claim.record().fingerprint() || stale.is_abandoned(now) =>
        {
            ReserveJudgement::TakeOver(stale)
        }
        standing => ReserveJudgement::Existing(standing),
    }
}
