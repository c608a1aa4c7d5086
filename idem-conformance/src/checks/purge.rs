//! The operators' purge ([`Inventory::purge_expired`]): what stopped counting goes, the rest
//! stays as it was.
//!
//! Purges run as of the system clock's `now`. The store is shared with the other checks, whose
//! records all count at the real time (their manual clocks run ahead of it, never behind), so
//! a purge never takes one of theirs; but they purge too, as of their own, later `now`, so
//! every record a check expects kept counts for a while yet.

use std::time::Duration;

use super::inventory::{claim, complete, inventory, key_in, reserve, with_step};
use super::inventory::{HOUR, MAX_PAGES, MINUTE};
use super::Context;
use idem_core::store::Inventory;
use idem_core::Clock as _;
use idem_core::{
    store::{Outcome, Record, Reservation, Timestamp, LEASE_GRACE},
    SystemClock,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(a_purge_deletes_only_what_stopped_counting),
    check!(a_purge_keeps_a_key_reserved_again),
    check!(a_purge_from_a_cursor_keeps_a_key_reserved_again),
];

/// Purges until a purge deletes fewer than its batch, as of `now`. A purge may delete more
/// than its batch (the memory store purges everything at once): what counts is that fewer
/// means none is left.
async fn purge_all(inventory: &dyn Inventory, now: Timestamp) {
    const BATCH: u32 = 2;
    for _ in 0..MAX_PAGES {
        let purged = inventory
            .purge_expired(now, BATCH)
            .await
            .unwrap_or_else(|error| panic!("purging failed: {error}"));
        if purged < u64::from(BATCH) {
            return;
        }
    }
    panic!("purging did not end after {MAX_PAGES} batches");
}

/// Purges from a cursor ([`Inventory::purge_expired_from`]) until the cursor is `None`, as
/// of `now`, a small batch at a time.
async fn purge_all_from(inventory: &dyn Inventory, now: Timestamp) {
    const BATCH: u32 = 2;
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let progress = inventory
            .purge_expired_from(now, BATCH, cursor.as_deref())
            .await
            .unwrap_or_else(|error| panic!("purging from {cursor:?} failed: {error}"));
        match progress.cursor {
            Some(next) => cursor = Some(next),
            None => return,
        }
    }
    panic!("purging from a cursor did not end after {MAX_PAGES} batches");
}

/// A purge deletes the completed records at or past their expiry and the in-progress ones
/// abandoned (lease passed `LEASE_GRACE` ago or more, steps not holding the key), and keeps
/// the rest as they were: live, within the grace, or held by their steps, released or not.
async fn a_purge_deletes_only_what_stopped_counting(ctx: Context) {
    let Some(inventory) = inventory(&ctx) else {
        return;
    };
    let now = SystemClock.now();
    let long_ago = now - 2 * HOUR;
    let ns = ctx.handle().namespace().to_owned();
    let key = |name: &str| key_in(&ns, name);
    let ok = || Outcome::ok(b"\"receipt\"".to_vec());

    complete(&ctx, &key("expired"), ok(), long_ago, now - HOUR).await;
    complete(&ctx, &key("expiring-now"), ok(), long_ago, now).await;
    reserve(&ctx, &key("abandoned"), "a", long_ago + MINUTE, long_ago).await;
    reserve(
        &ctx,
        &key("abandoned-now"),
        "a",
        now - LEASE_GRACE,
        long_ago,
    )
    .await;
    let stale_steps = (long_ago, long_ago + MINUTE);
    with_step(&ctx, &key("steps-expired"), stale_steps, now - HOUR).await;
    let gone = [
        "expired",
        "expiring-now",
        "abandoned",
        "abandoned-now",
        "steps-expired",
    ];

    // What is kept must still count a while after `now`: other checks purge meanwhile, as of
    // their own, later `now`.
    complete(&ctx, &key("live"), ok(), now, now + HOUR).await;
    complete(
        &ctx,
        &key("live-since-long-ago"),
        ok(),
        long_ago,
        now + HOUR,
    )
    .await;
    reserve(&ctx, &key("running"), "a", now + HOUR, now).await;
    let in_grace = now - Duration::from_secs(1);
    reserve(&ctx, &key("in-grace"), "a", in_grace, long_ago).await;
    with_step(&ctx, &key("steps-held"), stale_steps, now + HOUR).await;
    let released = key("released-steps-held");
    with_step(&ctx, &released, (now, now + HOUR), now + HOUR).await;
    let Some(Record::InProgress(held)) = ctx.store().get(&released).await.unwrap() else {
        panic!("a record with steps is in progress");
    };
    ctx.store().release(&released, held.owner()).await.unwrap();
    let kept = [
        "live",
        "live-since-long-ago",
        "running",
        "in-grace",
        "steps-held",
        "released-steps-held",
    ];
    let mut before = Vec::new();
    for name in kept {
        before.push(ctx.store().get(&key(name)).await.unwrap());
    }

    purge_all(inventory, now).await;
    for name in gone {
        let left = ctx.store().get(&key(name)).await.unwrap();
        assert_eq!(left, None, "`{name}` stopped counting and must be purged");
    }
    for (name, before) in kept.into_iter().zip(before) {
        let after = ctx.store().get(&key(name)).await.unwrap();
        assert!(after.is_some(), "`{name}` still counts and must be kept");
        assert_eq!(after, before, "a purge must not change `{name}`");
    }
}

/// A key whose record expired and that a new call reserved again (a fresh reservation over an
/// expired outcome, a takeover of an abandoned one) is kept by a purge as of that call's time.
async fn a_purge_keeps_a_key_reserved_again(ctx: Context) {
    keeps_a_key_reserved_again(ctx, false).await;
}

/// The same, purging from a cursor until it is `None`.
async fn a_purge_from_a_cursor_keeps_a_key_reserved_again(ctx: Context) {
    keeps_a_key_reserved_again(ctx, true).await;
}

/// A key reserved again over an expired outcome, and one taken over, are kept by a purge, from
/// a cursor or not.
async fn keeps_a_key_reserved_again(ctx: Context, from_a_cursor: bool) {
    let Some(inventory) = inventory(&ctx) else {
        return;
    };
    let now = SystemClock.now();
    let long_ago = now - 2 * HOUR;
    let store = ctx.store();
    let ns = ctx.handle().namespace().to_owned();

    let expired = key_in(&ns, "expired-then-reserved");
    let ok = Outcome::ok(b"\"old\"".to_vec());
    complete(&ctx, &expired, ok, long_ago, now - HOUR).await;
    let fresh = claim("new", now + HOUR, now);
    assert_eq!(
        store.reserve(&expired, &fresh).await.unwrap(),
        Reservation::Reserved(fresh.record().clone()),
        "an expired key is free"
    );

    let abandoned = key_in(&ns, "abandoned-then-taken-over");
    reserve(&ctx, &abandoned, "old", long_ago + MINUTE, long_ago).await;
    let taker = claim("new", now + HOUR, now);
    let taken = match store.reserve(&abandoned, &taker).await.unwrap() {
        Reservation::TookOver { record, .. } => record,
        // Another check's purge deleted the abandoned record first: the key was free.
        Reservation::Reserved(record) => record,
        other => panic!("an abandoned reservation is taken over, got {other:?}"),
    };

    if from_a_cursor {
        purge_all_from(inventory, now).await;
    } else {
        purge_all(inventory, now).await;
    }
    assert_eq!(
        store.get(&expired).await.unwrap(),
        Some(Record::InProgress(fresh.record().clone())),
        "a purge must keep the reservation that reused an expired key"
    );
    assert_eq!(
        store.get(&abandoned).await.unwrap(),
        Some(Record::InProgress(taken)),
        "a purge must keep the takeover of an abandoned key"
    );
}
