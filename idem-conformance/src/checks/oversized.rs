//! A completed record over a call's longest outcome (`Claim::max_outcome`) is judged before its
//! outcome is read: refused as corrupt only when it would be replayed. Another call's record is
//! a mismatch, and an expired one is taken as any expired record.

use std::time::Duration;

use super::Context;
use idem_core::store::{Claim, Completed, InProgress, Outcome, OwnerToken, Record, Reservation};
use idem_core::{Clock as _, Fingerprint, Key, StoreError, SystemClock};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(an_oversized_record_of_the_same_call_is_refused),
    check!(an_oversized_record_of_another_call_is_a_mismatch),
    check!(an_expired_oversized_record_is_taken),
];

/// The longest outcome the claims below replay.
const MAX_OUTCOME: usize = 100;
/// The stored outcome: far over [`MAX_OUTCOME`] and the room a whole record is given.
const OUTCOME: usize = 4 << 10;

fn claim(what: &str, now: idem_core::store::Timestamp) -> Claim {
    let fingerprint = Fingerprint::of(what).expect("text fingerprints");
    let record = InProgress::new(
        OwnerToken::generate(),
        fingerprint,
        now + Duration::from_secs(60),
    )
    .with_fencing_token(idem_core::store::propose_fencing_token(now));
    Claim::new(record, now).with_max_outcome(Some(MAX_OUTCOME))
}

/// Stores under `key` a completed record of `what` with an outcome of [`OUTCOME`] bytes,
/// expiring after `ttl`, and returns it.
async fn stored(ctx: &Context, key: &Key, what: &str, ttl: Duration) -> Completed {
    let now = SystemClock.now();
    let held = claim(what, now).with_max_outcome(None);
    ctx.store().reserve(key, &held).await.unwrap();
    let body = format!("\"{}\"", "x".repeat(OUTCOME - 2)).into_bytes();
    let done = Completed::new(*held.record().fingerprint(), Outcome::ok(body), now + ttl);
    ctx.store()
        .complete(key, held.record().owner(), &done)
        .await
        .unwrap();
    done
}

/// The same call's oversized record, live: refused as corrupt, never replayed.
async fn an_oversized_record_of_the_same_call_is_refused(ctx: Context) {
    let key = ctx.key("oversized-same");
    stored(&ctx, &key, "a", Duration::from_secs(600)).await;
    let refused = ctx
        .store()
        .reserve(&key, &claim("a", SystemClock.now()))
        .await;
    assert!(
        matches!(refused, Err(StoreError::Corrupt(_))),
        "an outcome over the call's limit is refused as corrupt: {refused:?}"
    );
}

/// Another call's oversized record, live: answered as it stands (so that the caller gets a
/// mismatch, not a corrupt record), with its fingerprint, and never its outcome over the limit.
async fn an_oversized_record_of_another_call_is_a_mismatch(ctx: Context) {
    let key = ctx.key("oversized-other");
    let done = stored(&ctx, &key, "a", Duration::from_secs(600)).await;
    let found = ctx
        .store()
        .reserve(&key, &claim("b", SystemClock.now()))
        .await;
    match found {
        Ok(Reservation::Existing(Record::Completed(found))) => {
            assert_eq!(found.fingerprint(), done.fingerprint(), "its fingerprint");
            assert!(
                found.outcome().body().len() <= MAX_OUTCOME,
                "the outcome over the limit was read: {} bytes",
                found.outcome().body().len()
            );
        }
        other => panic!("another call's oversized record is a mismatch, not {other:?}"),
    }
    let again = ctx.store().get(&key).await.unwrap();
    assert_eq!(again, Some(Record::Completed(done)), "and is left as it is");
}

/// An oversized record past its expiry: the key is free, as after any expired record.
async fn an_expired_oversized_record_is_taken(ctx: Context) {
    let key = ctx.key("oversized-expired");
    let done = stored(&ctx, &key, "a", Duration::from_secs(30)).await;
    let after = claim("a", done.expires_at() + Duration::from_millis(1));
    let reserved = ctx.store().reserve(&key, &after).await;
    assert_eq!(
        reserved.unwrap(),
        Reservation::Reserved(after.record().clone()),
        "an expired record is taken over whatever its length"
    );
}
