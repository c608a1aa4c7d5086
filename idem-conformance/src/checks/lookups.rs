//! `Store::lookup`, the read before any claim that answers a replay in process: it answers only
//! a completed record live at the probe's time, under the very key asked, exactly as stored,
//! and writes nothing. A store that does not look up (the default) misses every time and passes
//! these checks: a miss is never wrong, since the reservation then answers. One that says it
//! does not look up (`Store::looks_up`) must miss.

use std::time::Duration;

use super::Context;
use idem_core::store::{
    Claim, Completed, InProgress, Lookup, Outcome, OwnerToken, Probe, Record, Reservation,
    Timestamp, LEASE_GRACE,
};
use idem_core::{Call, Clock as _, Error, Fingerprint, Key, SystemClock};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(lookup_answers_only_a_live_completed_record),
    check!(lookup_writes_nothing),
    check!(lookup_never_serves_another_keys_record),
];

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

fn fingerprint(what: &str) -> Fingerprint {
    Fingerprint::of(what).expect("text fingerprints")
}

fn claim(what: &str, lease_until: Timestamp, now: Timestamp) -> Claim {
    let record = InProgress::new(OwnerToken::generate(), fingerprint(what), lease_until)
        .with_fencing_token(idem_core::store::propose_fencing_token(now));
    Claim::new(record, now)
}

/// Reserves `key`, a free key, for a fresh claim for `what`.
async fn reserved(ctx: &Context, key: &Key, what: &str, now: Timestamp) -> Claim {
    let first = claim(what, now + ms(60_000), now);
    assert_eq!(
        ctx.store().reserve(key, &first).await.unwrap(),
        Reservation::Reserved(first.record().clone()),
        "a free key is reserved as claimed"
    );
    first
}

/// Stores `outcome` of a call for `what` under `key`, a free key, replayed until `expires_at`.
async fn completed(
    ctx: &Context,
    key: &Key,
    what: &str,
    outcome: Outcome,
    expires_at: Timestamp,
    now: Timestamp,
) -> Completed {
    let first = reserved(ctx, key, what, now).await;
    let done = Completed::new(fingerprint(what), outcome, expires_at);
    ctx.store()
        .complete(key, first.record().owner(), &done)
        .await
        .unwrap();
    done
}

fn look_up(ctx: &Context, key: &Key, probe: Probe, when: &str) -> Lookup {
    ctx.store()
        .lookup(key, &probe)
        .unwrap_or_else(|error| panic!("a lookup {when} fails: {error}"))
}

/// Asserts that a lookup of `key` with `probe` misses.
fn assert_miss(ctx: &Context, key: &Key, probe: Probe, when: &str) {
    assert_eq!(
        look_up(ctx, key, probe, when),
        Lookup::Miss,
        "a lookup {when} misses"
    );
}

/// Asserts that a lookup of `key` with `probe` answers `stored` exactly, or misses; and misses
/// if the store says it does not look up (`Store::looks_up`), since its answers are then
/// ignored where its lookups are timed.
fn assert_stored_or_miss(ctx: &Context, key: &Key, probe: Probe, stored: &Completed, when: &str) {
    let looked = look_up(ctx, key, probe, when);
    assert!(
        looked == Lookup::Miss || looked == Lookup::Completed(stored.clone()),
        "a lookup {when} answers the record stored, or misses: {looked:?}"
    );
    assert!(
        ctx.store().looks_up() || looked == Lookup::Miss,
        "a store whose looks_up() is false answered a lookup {when}: {looked:?}"
    );
}

/// Only a completed record is answered, from its completion up to the millisecond before its
/// expiry: not an absent key, an in-progress record, a record released with its steps, a
/// record at or past its expiry, one over the caller's longest outcome, or one deleted.
async fn lookup_answers_only_a_live_completed_record(ctx: Context) {
    let store = ctx.store();
    let now = SystemClock.now();
    let at = |millis| Probe::new(now + ms(millis));

    let key = ctx.key("lookup-states");
    assert_miss(&ctx, &key, at(0), "of a key without a record");
    let first = reserved(&ctx, &key, "a", now).await;
    assert_miss(&ctx, &key, at(0), "of a key held in progress");

    let released = ctx.key("lookup-released");
    let holder = reserved(&ctx, &released, "a", now).await;
    let owner = holder.record().owner();
    store
        .record_step(&released, owner, "charge", b"\"ch_1\"", now + ms(600_000))
        .await
        .unwrap();
    store.release(&released, owner).await.unwrap();
    assert!(
        matches!(store.get(&released).await.unwrap(), Some(Record::InProgress(held)) if held.is_released()),
        "a release keeps a record with steps"
    );
    assert_miss(
        &ctx,
        &released,
        at(0),
        "of a record released with its steps",
    );

    // A minute, so that a backend's own expiry timer (clean-up only) can't interfere.
    let done = Completed::new(
        fingerprint("a"),
        Outcome::ok(b"\"done\"".to_vec()),
        now + ms(60_000),
    );
    store
        .complete(&key, first.record().owner(), &done)
        .await
        .unwrap();
    for millis in [0, 59_999] {
        assert_stored_or_miss(&ctx, &key, at(millis), &done, "of a live completed record");
    }
    assert_miss(&ctx, &key, at(60_000), "at the record's expiry");
    assert_miss(&ctx, &key, at(60_001), "past the record's expiry");
    let within = |max| at(0).with_max_outcome(Some(max));
    assert_stored_or_miss(&ctx, &key, within(6), &done, "within the longest outcome");
    assert_miss(&ctx, &key, within(5), "over the caller's longest outcome");

    let error = ctx.key("lookup-stored-error");
    let failed = Outcome::err(b"{\"declined\":true}".to_vec());
    let stored = completed(&ctx, &error, "b", failed, now + ms(60_000), now).await;
    assert_stored_or_miss(&ctx, &error, at(0), &stored, "of a stored error");

    store.delete(&key).await.unwrap();
    assert_miss(&ctx, &key, at(0), "after a delete");
    let forgotten = ctx.key("lookup-forgotten");
    let outcome = Outcome::ok(b"1".to_vec());
    completed(&ctx, &forgotten, "c", outcome, now + ms(60_000), now).await;
    ctx.handle().forget(&forgotten).await.unwrap();
    assert_miss(&ctx, &forgotten, at(0), "after `forget`");
}

/// Lookups, answered or not, change nothing: an in-progress record looked up around its lease
/// is taken over at its deadline as it would have been (same attempt, fencing token above the
/// first), and a completed record looked up before and past its expiry is still there as
/// stored.
async fn lookup_writes_nothing(ctx: Context) {
    let store = ctx.store();
    let key = ctx.key("lookup-writes-nothing");
    let now = SystemClock.now();
    let first = claim("a", now + ms(1_000), now);
    assert_eq!(
        store.reserve(&key, &first).await.unwrap(),
        Reservation::Reserved(first.record().clone())
    );
    for at in [
        now,
        now + ms(999),
        now + ms(1_000),
        now + ms(1_000) + LEASE_GRACE,
    ] {
        assert_miss(&ctx, &key, Probe::new(at), "of an in-progress record");
    }
    assert_eq!(
        store.get(&key).await.unwrap(),
        Some(Record::InProgress(first.record().clone())),
        "the reservation is as written"
    );
    let taker = claim("a", now + ms(5_000), now + ms(1_000));
    let written = taker.record().taking_over(first.record());
    assert_eq!(
        store.reserve(&key, &taker).await.unwrap(),
        Reservation::TookOver {
            previous: first.record().owner().clone(),
            record: written,
        },
        "at its deadline the lease is taken over, its fencing token above the first's alone"
    );

    let done = Completed::new(
        fingerprint("a"),
        Outcome::ok(b"\"done\"".to_vec()),
        now + ms(60_000),
    );
    store
        .complete(&key, taker.record().owner(), &done)
        .await
        .unwrap();
    for millis in [1_000, 59_999, 60_000, 120_000] {
        let _ = look_up(
            &ctx,
            &key,
            Probe::new(now + ms(millis)),
            "of a completed record",
        );
    }
    assert_eq!(
        store.get(&key).await.unwrap(),
        Some(Record::Completed(done)),
        "the completed record is as stored"
    );
}

/// A lookup answers the record of the key it is asked and no other: two keys that differ only
/// in their scope (two tenants, or a scope and none) never see each other's record, at the
/// store nor through a call with the same arguments.
async fn lookup_never_serves_another_keys_record(ctx: Context) {
    let now = SystemClock.now();
    let key = |scope: Option<&str>| {
        ctx.handle()
            .key("lookup-scoped")
            .scope(scope)
            .part("o-1")
            .finish()
            .expect("short keys are valid")
    };
    let (alice, bob, unscoped) = (key(Some("alice")), key(Some("bob")), key(None));
    let expires_at = now + ms(600_000);
    let outcome = Outcome::ok(b"\"alice's receipt\"".to_vec());
    let alices = completed(&ctx, &alice, "same", outcome, expires_at, now).await;
    let probe = Probe::new(now);
    assert_stored_or_miss(&ctx, &alice, probe, &alices, "of its own key");
    assert_miss(&ctx, &bob, probe, "of the key in another scope");
    assert_miss(&ctx, &unscoped, probe, "of the key without its scope");

    let outcome = Outcome::ok(b"\"nobody's receipt\"".to_vec());
    completed(&ctx, &unscoped, "same", outcome, expires_at, now).await;
    assert_miss(&ctx, &bob, probe, "of a scoped key beside the unscoped one");
    assert_stored_or_miss(
        &ctx,
        &alice,
        probe,
        &alices,
        "of its own key, beside another",
    );

    let ran = ctx
        .handle()
        .run(Call::new(bob, fingerprint("same")), async {
            Ok::<_, Error>("bob's receipt".to_owned())
        })
        .await
        .unwrap();
    assert_eq!(
        (ran.value.as_str(), ran.replayed),
        ("bob's receipt", false),
        "a call under its own scope runs, whatever the other scopes hold"
    );
}
