//! How long a stored outcome a read may take: the rule every store applies to a completed
//! record before it reads the record's value, so that a record written by someone else cannot
//! make a replay allocate without bound.
//!
//! A call sets the limit ([`Call::with_max_outcome`](crate::Call::with_max_outcome)); the
//! engine hands it to the store in the [`Claim`](crate::store::Claim)
//! ([`Claim::max_outcome`](crate::store::Claim::max_outcome)). A store that can measure a record's
//! outcome before it reads it (PostgreSQL's `octet_length`, the length of a value in memory)
//! calls [`check_outcome_len`]; one that keeps a record as one value and can measure only the
//! whole of it (Redis's `STRLEN`) calls [`check_record_len`], which leaves
//! [`RECORD_HEAD_ROOM`] for the rest of the record. Server-side copies of the comparison (the
//! Redis scripts, the PostgreSQL statement) say so where they stand.

use crate::{
    error::StoreError,
    store::{Claim, Record},
};

/// The room a store that measures a whole record leaves for what the record holds besides its
/// outcome: the fingerprint (64 hex digits), the owner token (32), the outcome's tag, the
/// expiry, and the lengths and markers between them take about 130 bytes.
pub const RECORD_HEAD_ROOM: usize = 1024;

/// Refuses a completed record whose outcome is `len` bytes long when that is over `max` (a
/// call's [`max_outcome`](crate::store::Claim::max_outcome); `None` takes any length), as a record
/// that cannot be read: [`StoreError::Corrupt`], naming both.
///
/// ```
/// use idem_core::store::check_outcome_len;
/// assert!(check_outcome_len(1_000, Some(1_000)).is_ok());
/// assert!(check_outcome_len(1_001, None).is_ok());
/// let refused = check_outcome_len(1_001, Some(1_000)).unwrap_err();
/// assert_eq!(
///     refused.to_string(),
///     "corrupt record: the stored outcome is 1001 bytes long, over the 1000 bytes this call replays"
/// );
/// ```
pub fn check_outcome_len(len: u64, max: Option<usize>) -> Result<(), StoreError> {
    match max {
        Some(max) if len > max as u64 => Err(StoreError::Corrupt(format!(
            "the stored outcome is {len} bytes long, over the {max} bytes this call replays"
        ))),
        _ => Ok(()),
    }
}

/// The longest whole record a store reads for an outcome of at most `max_outcome` bytes: the
/// outcome and [`RECORD_HEAD_ROOM`].
pub fn max_record_len(max_outcome: usize) -> usize {
    max_outcome.saturating_add(RECORD_HEAD_ROOM)
}

/// Refuses a completed record that is `len` bytes long as a whole when that is over
/// [`max_record_len`] of `max_outcome` (`None` takes any length): [`StoreError::Corrupt`],
/// naming the sizes. For a store that can measure only the whole record.
///
/// ```
/// use idem_core::store::{check_record_len, max_record_len};
/// assert!(check_record_len(max_record_len(1_000) as u64, Some(1_000)).is_ok());
/// let refused = check_record_len(5_000, Some(1_000)).unwrap_err();
/// assert_eq!(
///     refused.to_string(),
///     "corrupt record: the stored record is 5000 bytes long, over the 2024 bytes of a record \
///      whose outcome is at most the 1000 bytes this call replays"
/// );
/// ```
pub fn check_record_len(len: u64, max_outcome: Option<usize>) -> Result<(), StoreError> {
    match max_outcome {
        Some(max) if len > max_record_len(max) as u64 => Err(StoreError::Corrupt(format!(
            "the stored record is {len} bytes long, over the {} bytes of a record whose \
             outcome is at most the {max} bytes this call replays",
            max_record_len(max)
        ))),
        _ => Ok(()),
    }
}

/// Refuses `found`, the record a reservation finds under its key, when it is a completed
/// record live at the claim's time whose outcome is over the claim's limit
/// ([`check_outcome_len`]): for a store that holds its records as values, before it copies
/// one out. An expired record is taken over, not read, whatever its length.
pub fn check_found(found: &Record, claim: &Claim) -> Result<(), StoreError> {
    match found {
        Record::Completed(completed) if found.is_live(claim.now()) => {
            check_outcome_len(completed.outcome().body().len() as u64, claim.max_outcome())
        }
        _ => Ok(()),
    }
}

/// What a reservation answers for a completed record it found over the claim's limit, whose
/// `fingerprint` and expiry (`expires_at`) it read but not its outcome, which it refused as
/// `refusal` ([`check_outcome_len`], [`check_record_len`]):
///
/// - `Ok(None)`: the record expired at the claim's time: the key is free, and the store takes
///   it as it takes any expired record, without reading it;
/// - `Ok(Some(record))`: a live record of other arguments: answered as it stands, its outcome
///   left out ([`Outcome::Aborted`](crate::store::Outcome::Aborted)), so that the caller is
///   told of the mismatch, which the fingerprint alone decides;
/// - `Err(refusal)`: a live record of the claim's arguments, whose outcome would be replayed.
///
/// ```
/// use std::time::Duration;
/// use idem_core::store::{judge_oversized, Claim, InProgress, OwnerToken, Record, Timestamp};
/// use idem_core::{Fingerprint, StoreError};
///
/// let now = Timestamp::from_millis(10_000);
/// let mine = Fingerprint::of("order-1").unwrap();
/// let claim = Claim::new(InProgress::new(OwnerToken::generate(), mine, now + Duration::from_secs(30)), now);
/// let refused = || StoreError::Corrupt("too long".into());
/// let other = Fingerprint::of("order-2").unwrap();
/// assert!(judge_oversized(&mine, now, refused(), &claim).unwrap().is_none(), "expired");
/// let answered = judge_oversized(&other, now + Duration::from_secs(1), refused(), &claim).unwrap();
/// assert!(matches!(answered, Some(Record::Completed(c)) if c.fingerprint() == &other));
/// assert!(judge_oversized(&mine, now + Duration::from_secs(1), refused(), &claim).is_err());
/// ```
pub fn judge_oversized(
    fingerprint: &crate::fingerprint::Fingerprint,
    expires_at: crate::store::Timestamp,
    refusal: StoreError,
    claim: &Claim,
) -> Result<Option<Record>, StoreError> {
    if claim.now() >= expires_at {
        return Ok(None);
    }
    if fingerprint != claim.record().fingerprint() {
        return Ok(Some(Record::Completed(crate::store::Completed::new(
            *fingerprint,
            crate::store::Outcome::Aborted,
            expires_at,
        ))));
    }
    Err(refusal)
}

/// [`check_found`] with [`judge_oversized`]'s answers, for a store that holds its records as
/// values: `Ok(None)` to go on with `found` as it is (within the limit, or expired),
/// `Ok(Some(record))` to answer a record of other arguments with its outcome left out, or the
/// refusal of a live record of the claim's arguments over the limit.
pub fn judge_found(found: &Record, claim: &Claim) -> Result<Option<Record>, StoreError> {
    match (found, check_found(found, claim)) {
        (_, Ok(())) => Ok(None),
        (Record::Completed(completed), Err(refusal)) => judge_oversized(
            completed.fingerprint(),
            completed.expires_at(),
            refusal,
            claim,
        ),
        (_, Err(refusal)) => Err(refusal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_inclusive_and_saturates() {
        assert!(check_outcome_len(0, Some(0)).is_ok());
        assert!(check_outcome_len(1, Some(0)).is_err());
        assert!(check_outcome_len(u64::MAX, None).is_ok());
        assert_eq!(max_record_len(usize::MAX), usize::MAX);
        assert!(check_record_len(usize::MAX as u64, Some(usize::MAX)).is_ok());
        assert!(check_record_len(1_024, Some(0)).is_ok());
        assert!(check_record_len(1_025, Some(0)).is_err());
    }
}
