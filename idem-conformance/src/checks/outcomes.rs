//! A stored outcome comes back byte for byte, whatever its bytes: empty, NUL bytes, bytes
//! that are no UTF-8, a value that starts as a sealed one does, 300 kB, a mebibyte; `Ok` and `Err`
//! alike; replayed through `lookup` (when the store answers one) and `reserve`, and read
//! through `get`.

use std::time::Duration;

use super::{in_progress, Context};
use idem_core::store::{Completed, Lookup, Outcome, Probe, Record, Reservation};
use idem_core::{Clock as _, Fingerprint, StoreError, SystemClock};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[check!(a_replayed_outcome_is_the_stored_bytes)];

/// The longest body below: a store whose records are capped lower (DynamoDB's items) may
/// refuse it, as [`StoreError::Rejected`], but never store it changed.
const MEBIBYTE: usize = 1 << 20;

/// The bodies stored, each with what it is.
fn bodies() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("an empty body", Vec::new()),
        ("NUL bytes", vec![0, 0, b'x', 0]),
        (
            "bytes that are no UTF-8",
            vec![0xff, 0xfe, b'{', 0x80, 0xc3],
        ),
        // `\0iS` and a format version: what a sealed value starts with.
        (
            "a body that starts as a sealed value",
            b"\0iS\x02 and not sealed".to_vec(),
        ),
        // Within a DynamoDB item, which cannot hold the mebibyte.
        ("300 kB", (0..300_000).map(|at| (at % 253) as u8).collect()),
        (
            "a mebibyte",
            (0..MEBIBYTE).map(|at| (at % 251) as u8).collect(),
        ),
    ]
}

/// What `complete` stored is what a replay finds, byte for byte, through `lookup` and
/// `reserve` (a duplicate's reads) and through `get` (the engine's read back, an operator's).
async fn a_replayed_outcome_is_the_stored_bytes(ctx: Context) {
    let store = ctx.store();
    for (index, (what, body)) in bodies().into_iter().enumerate() {
        for outcome in [Outcome::ok(body.clone()), Outcome::err(body)] {
            let kind = if outcome.is_ok() { "ok" } else { "err" };
            let key = ctx.key(&format!("outcome-{index}-{kind}"));
            let now = SystemClock.now();
            let fingerprint = Fingerprint::of(&(index, kind)).expect("plain values fingerprint");
            let claim = in_progress(fingerprint, now + Duration::from_secs(60), now);
            let reserved = store.reserve(&key, &claim).await.unwrap();
            assert_eq!(reserved, Reservation::Reserved(claim.record().clone()));
            let done = Completed::new(fingerprint, outcome, now + Duration::from_secs(3_600));
            match store.complete(&key, claim.record().owner(), &done).await {
                Ok(()) => {}
                Err(StoreError::Rejected(why)) if done.outcome().body().len() == MEBIBYTE => {
                    eprintln!("the store refuses {what} ({kind}): {why}");
                    let kept = store.get(&key).await.unwrap();
                    assert!(
                        matches!(kept, Some(Record::InProgress(_))),
                        "a refused completion leaves the reservation as it was: {kept:?}"
                    );
                    continue;
                }
                Err(error) => panic!("{what} ({kind}) is stored: {error}"),
            }

            match store.lookup(&key, &Probe::new(now)).unwrap() {
                Lookup::Completed(found) => {
                    assert_same(&found, &done, &format!("{what} ({kind}) looked up"));
                }
                Lookup::Miss => {}
                other => panic!("{what} ({kind}): a lookup answers {other:?}"),
            }
            let duplicate = in_progress(fingerprint, now + Duration::from_secs(60), now);
            match store.reserve(&key, &duplicate).await.unwrap() {
                Reservation::Existing(Record::Completed(found)) => {
                    assert_same(
                        &found,
                        &done,
                        &format!("{what} ({kind}) replayed by reserve"),
                    );
                }
                other => {
                    panic!("{what} ({kind}): a duplicate finds the completed record, not {other:?}")
                }
            }
            match store.get(&key).await.unwrap() {
                Some(Record::Completed(found)) => {
                    assert_same(&found, &done, &format!("{what} ({kind}) read by get"));
                }
                other => panic!("{what} ({kind}): get finds the completed record, not {other:?}"),
            }
        }
    }
}

/// Asserts that `found` holds `stored`'s outcome, of the same kind and byte for byte; a
/// difference is named by where it starts, not by printing a mebibyte.
fn assert_same(found: &Completed, stored: &Completed, how: &str) {
    assert_eq!(
        found.fingerprint(),
        stored.fingerprint(),
        "{how}: its fingerprint"
    );
    let (found, stored) = (found.outcome(), stored.outcome());
    assert_eq!(found.is_ok(), stored.is_ok(), "{how}: the outcome's kind");
    assert!(
        !matches!(found, Outcome::Aborted),
        "{how}: a stored value, not aborted"
    );
    let (found, stored) = (found.body(), stored.body());
    if found != stored {
        let differs_at = found
            .iter()
            .zip(stored)
            .position(|(a, b)| a != b)
            .unwrap_or(found.len().min(stored.len()));
        panic!(
            "{how}: {} bytes came back for the {} stored, the first difference at byte {differs_at}",
            found.len(),
            stored.len()
        );
    }
}
