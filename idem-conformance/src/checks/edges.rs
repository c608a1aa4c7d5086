//! The store contract to the millisecond, at the store's own interface: when a lease and a TTL
//! pass, when a reservation is abandoned, what a takeover reports, and what fenced writes do to
//! a record that is gone or finished. Checks through the engine need whole seconds of margin;
//! these do not.

use std::time::Duration;

use super::{call, charge, Charge, Context};
use idem_core::Clock as _;
use idem_core::{
    store::{
        Claim, Completed, InProgress, Outcome, OwnerToken, Record, Reservation, Timestamp,
        LEASE_GRACE,
    },
    Answered, Fingerprint, Key, ManualClock, StoreError, SystemClock,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(lease_passes_exactly_at_its_deadline),
    check!(ttl_passes_exactly_at_expiry),
    check!(abandonment_starts_exactly_a_grace_after_the_lease),
    check!(fenced_writes_never_recreate_a_record),
    check!(a_completed_record_is_not_renewed),
    check!(ttl_is_counted_from_completion),
];

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

fn claim(what: &str, lease_until: Timestamp, now: Timestamp) -> Claim {
    let fingerprint = Fingerprint::of(what).expect("text fingerprints");
    let record = InProgress::new(OwnerToken::generate(), fingerprint, lease_until)
        .with_fencing_token(idem_core::store::propose_fencing_token(now));
    Claim::new(record, now)
}

fn completed(what: &str, expires_at: Timestamp) -> Completed {
    let fingerprint = Fingerprint::of(what).expect("text fingerprints");
    Completed::new(fingerprint, Outcome::ok(b"\"done\"".to_vec()), expires_at)
}

/// Reserves `key` with a fresh claim for `what`, asserting it is free.
async fn reserved(
    ctx: &Context,
    key: &Key,
    what: &str,
    lease_until: Timestamp,
    now: Timestamp,
) -> Claim {
    let first = claim(what, lease_until, now);
    assert_eq!(
        ctx.store().reserve(key, &first).await.unwrap(),
        Reservation::Reserved(first.record().clone()),
        "a free key is reserved as claimed"
    );
    first
}

/// Semantic 7 at the store: a lease holds through its last millisecond and has passed at its
/// deadline; the same call then takes over, reported as `TookOver` with the record written.
async fn lease_passes_exactly_at_its_deadline(ctx: Context) {
    let store = ctx.store();
    let key = ctx.key("edge-lease");
    let now = SystemClock.now();
    let first = reserved(&ctx, &key, "a", now + ms(1_000), now).await;
    let early = claim("a", now + ms(5_000), now + ms(999));
    assert_eq!(
        store.reserve(&key, &early).await.unwrap(),
        Reservation::Existing(Record::InProgress(first.record().clone())),
        "one millisecond before its deadline the lease holds"
    );
    let taker = claim("a", now + ms(5_000), now + ms(1_000));
    let written = taker.record().taking_over(first.record());
    assert_eq!(
        store.reserve(&key, &taker).await.unwrap(),
        Reservation::TookOver {
            previous: first.record().owner().clone(),
            record: written.clone(),
        },
        "at its deadline the lease has passed: a takeover, reported as one"
    );
    assert_eq!(written.attempt(), 2);
    assert_eq!(
        store.get(&key).await.unwrap(),
        Some(Record::InProgress(written)),
        "the store holds what the takeover reported"
    );
}

/// Semantic 8 at the store: a completed record replays through its last millisecond and is
/// gone at its expiry.
async fn ttl_passes_exactly_at_expiry(ctx: Context) {
    let store = ctx.store();
    let key = ctx.key("edge-ttl");
    let now = SystemClock.now();
    let first = reserved(&ctx, &key, "a", now + ms(1_000), now).await;
    // A minute, so that a backend's own expiry timer (clean-up only) can't interfere.
    let done = completed("a", now + ms(60_000));
    store
        .complete(&key, first.record().owner(), &done)
        .await
        .unwrap();
    let early = claim("a", now + ms(90_000), now + ms(59_999));
    assert_eq!(
        store.reserve(&key, &early).await.unwrap(),
        Reservation::Existing(Record::Completed(done)),
        "one millisecond before its expiry the record replays"
    );
    let after = claim("a", now + ms(90_000), now + ms(60_000));
    assert_eq!(
        store.reserve(&key, &after).await.unwrap(),
        Reservation::Reserved(after.record().clone()),
        "at its expiry the key is free"
    );
}

/// At the store: another call may take a reservation over exactly `LEASE_GRACE` after its
/// lease passed, not a millisecond before, and starts at attempt 1.
async fn abandonment_starts_exactly_a_grace_after_the_lease(ctx: Context) {
    let store = ctx.store();
    let key = ctx.key("edge-abandoned");
    let now = SystemClock.now();
    let first = reserved(&ctx, &key, "a", now + ms(1_000), now).await;
    let abandoned_at = now + ms(1_000) + LEASE_GRACE;
    let early = claim("b", abandoned_at + ms(5_000), abandoned_at - ms(1));
    assert_eq!(
        store.reserve(&key, &early).await.unwrap(),
        Reservation::Existing(Record::InProgress(first.record().clone())),
        "within the grace another call is refused"
    );
    let other = claim("b", abandoned_at + ms(5_000), abandoned_at);
    let written = other.record().taking_over(first.record());
    assert_eq!(written.attempt(), 1, "another call starts at attempt 1");
    assert_eq!(
        store.reserve(&key, &other).await.unwrap(),
        Reservation::TookOver {
            previous: first.record().owner().clone(),
            record: written,
        }
    );
}

/// Fencing at the store: once a record was released or deleted, its former owner's complete,
/// renew and release are refused and recreate nothing.
async fn fenced_writes_never_recreate_a_record(ctx: Context) {
    let store = ctx.store();
    let now = SystemClock.now();
    for (name, released) in [("edge-released", true), ("edge-deleted", false)] {
        let key = ctx.key(name);
        let first = reserved(&ctx, &key, "a", now + ms(60_000), now).await;
        let owner = first.record().owner();
        if released {
            store.release(&key, owner).await.unwrap();
        } else {
            store.delete(&key).await.unwrap();
        }
        assert!(matches!(
            store
                .complete(&key, owner, &completed("a", now + ms(60_000)))
                .await,
            Err(StoreError::LeaseLost)
        ));
        assert!(matches!(
            store.renew(&key, owner, now + ms(120_000)).await,
            Err(StoreError::LeaseLost)
        ));
        assert!(matches!(
            store.release(&key, owner).await,
            Err(StoreError::LeaseLost)
        ));
        assert_eq!(
            store.get(&key).await.unwrap(),
            None,
            "a fenced write must not recreate the record ({name})"
        );
    }
}

/// Fencing at the store: a completed record is not renewed, not even by the owner that
/// completed it, and keeps its expiry.
async fn a_completed_record_is_not_renewed(ctx: Context) {
    let store = ctx.store();
    let key = ctx.key("edge-completed");
    let now = SystemClock.now();
    let first = reserved(&ctx, &key, "a", now + ms(60_000), now).await;
    let done = completed("a", now + ms(60_000));
    store
        .complete(&key, first.record().owner(), &done)
        .await
        .unwrap();
    assert!(matches!(
        store
            .renew(&key, first.record().owner(), now + ms(3_600_000))
            .await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(
        store.get(&key).await.unwrap(),
        Some(Record::Completed(done)),
        "renewing a completed record must change nothing"
    );
}

/// Semantic 8: the TTL is counted from completion, so a body that runs long still has its
/// outcome replayed for the whole TTL.
async fn ttl_is_counted_from_completion(ctx: Context) {
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let hour = Duration::from_secs(3600);
    let long_call = || {
        call(&ctx, "o-edge-1", 1)
            .with_ttl(hour)
            .with_lease(hour * 3)
    };
    let first = idem
        .run(long_call(), async {
            // The body runs for two hours of the clock.
            clock.advance(hour * 2);
            Ok::<_, idem_core::Error>("charged".to_string())
        })
        .await
        .unwrap();
    assert!(!first.replayed);
    clock.advance(hour - Duration::from_secs(1));
    let side_effect = Charge::instant();
    let replay = charge(&idem, long_call(), 1, &side_effect).await.unwrap();
    assert_eq!(
        replay,
        Answered {
            value: "charged".into(),
            replayed: true
        },
        "an hour's TTL counted from completion still holds"
    );
    clock.advance(Duration::from_secs(2));
    let again = charge(&idem, long_call(), 1, &side_effect).await.unwrap();
    assert!(!again.replayed, "and it ends an hour after completion");
}
