//! When a record read earlier is still the one under its key: what a conditional delete
//! ([`Store::delete_if`](crate::store::Store::delete_if)) checks, so that an operator's delete
//! never takes a record written after the read.

use crate::store::Record;

/// Whether `stored` is the record `expected` was read as: the same state, and for a call in
/// progress the same owner and fencing token (a takeover changes both), for a completed one
/// the same fingerprint and expiry (a later completion of the key has a later expiry). What the
/// record holds besides (its lease, its steps, its outcome) does not tell records apart.
///
/// ```
/// use std::time::Duration;
/// use idem_core::store::{is_same_record, InProgress, OwnerToken, Record, Timestamp};
/// use idem_core::Fingerprint;
///
/// let fingerprint = Fingerprint::of("order-1").unwrap();
/// let held = InProgress::new(OwnerToken::generate(), fingerprint, Timestamp::from_millis(5_000));
/// let renewed = held.clone().with_lease_until(Timestamp::from_millis(9_000));
/// let taken = InProgress::new(OwnerToken::generate(), fingerprint, Timestamp::from_millis(9_000));
/// let read = Record::InProgress(held);
/// assert!(is_same_record(&Record::InProgress(renewed), &read));
/// assert!(!is_same_record(&Record::InProgress(taken), &read));
/// ```
pub fn is_same_record(stored: &Record, expected: &Record) -> bool {
    match (stored, expected) {
        (Record::InProgress(stored), Record::InProgress(expected)) => {
            stored.owner() == expected.owner() && stored.fencing_token() == expected.fencing_token()
        }
        (Record::Completed(stored), Record::Completed(expected)) => {
            stored.fingerprint() == expected.fingerprint()
                && stored.expires_at() == expected.expires_at()
        }
        _ => false,
    }
}
