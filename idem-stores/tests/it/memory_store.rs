//! Behaviour of the memory store beyond the shared conformance suite.
#![cfg(feature = "memory")]

use std::time::Duration;

use idem_core::{
    store::{Claim, Completed, InProgress, Outcome, OwnerToken, Reservation, Store, Timestamp},
    Call, Clock, Error, Fingerprint, Idempotency, ManualClock, RecordState,
};
use idem_stores::memory::MemoryStore;

#[tokio::test]
async fn expired_records_are_purged_so_memory_stays_bounded() {
    let store = MemoryStore::new();
    let clock = ManualClock::new();
    let idem = Idempotency::new(store.clone()).with_clock(clock.clone());
    let ttl = Duration::from_secs(1);
    for order in 0..100_000u32 {
        let key = idem.key("charge").part(&order).finish().unwrap();
        let call = Call::new(key, Fingerprint::of(&order).unwrap()).with_ttl(ttl);
        idem.run(call, async { Ok::<_, Error>(order) })
            .await
            .unwrap();
    }
    assert_eq!(store.len(), 100_000);
    assert!(!store.is_empty());

    clock.advance(ttl * 2);
    let key = idem.key("charge").part("after").finish().unwrap();
    idem.run(Call::new(key, Fingerprint::empty()), async {
        Ok::<_, Error>(0)
    })
    .await
    .unwrap();
    store.sweeps_finished().await;
    assert_eq!(
        store.len(),
        1,
        "the next reservation has every expired record swept"
    );

    clock.advance(Duration::from_secs(25 * 60 * 60));
    assert_eq!(store.purge_expired(clock.now()), 1);
    assert!(store.is_empty());
}

fn claim(now: Timestamp) -> Claim {
    let lease_until = now + Duration::from_secs(600);
    let record = InProgress::new(OwnerToken::generate(), Fingerprint::empty(), lease_until)
        .with_fencing_token(now.as_millis() * 1000);
    Claim::new(record, now)
}

/// Waiters are woken by the change itself: with Tokio's clock paused, half an hour passes
/// without the waiter returning (a polling store would have returned after one poll), and it
/// returns as soon as the record completes.
#[tokio::test(start_paused = true)]
async fn waiters_are_woken_by_completion_not_polling() {
    let store = MemoryStore::new();
    let idem = Idempotency::new(store.clone());
    let key = idem.key("wait").finish().unwrap();
    let now = idem_core::SystemClock.now();
    let claim = claim(now);
    assert_eq!(
        store.reserve(&key, &claim).await.unwrap(),
        Reservation::Reserved(claim.record().clone())
    );

    let waiter = {
        let (store, key) = (store.clone(), key.clone());
        tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            store
                .changed(&key, Duration::from_secs(3600))
                .await
                .unwrap();
            started.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_secs(30 * 60)).await;
    assert!(
        !waiter.is_finished(),
        "nothing changed, so the waiter must still wait"
    );

    let completed = Completed::new(
        Fingerprint::empty(),
        Outcome::ok(b"1".to_vec()),
        now + Duration::from_secs(600),
    );
    store
        .complete(&key, claim.record().owner(), &completed)
        .await
        .unwrap();
    let waited = waiter.await.unwrap();
    assert!(
        waited < Duration::from_secs(31 * 60),
        "woken at completion, after {waited:?}"
    );
}

/// A waiter on a key whose record is finished, or missing, returns at once instead of waiting
/// out its hour.
#[tokio::test]
async fn a_key_with_a_finished_record_does_not_block_waiters() {
    let store = MemoryStore::new();
    let idem = Idempotency::new(store.clone());
    let done = idem.key("done").finish().unwrap();
    idem.run(Call::new(done.clone(), Fingerprint::empty()), async {
        Ok::<_, Error>(1)
    })
    .await
    .unwrap();
    assert!(matches!(
        store.get(&done).await.unwrap(),
        Some(idem_core::store::Record::Completed(_))
    ));
    let none = idem.key("none").finish().unwrap();
    for key in [done, none] {
        tokio::time::timeout(
            Duration::from_secs(60),
            store.changed(&key, Duration::from_secs(3600)),
        )
        .await
        .expect("returns at once")
        .unwrap();
    }
}

/// A full store fails a new reservation closed, evicts no live record, and makes room from
/// expired records when there are some.
#[tokio::test]
async fn a_full_store_fails_closed_and_evicts_nothing_live() {
    let store = MemoryStore::builder().max_records(3).build();
    let clock = ManualClock::new();
    let idem = Idempotency::new(store.clone()).with_clock(clock.clone());
    let call = |order: u32, ttl: Duration| {
        let key = idem.key("charge").part(&order).finish().unwrap();
        Call::new(key, Fingerprint::of(&order).unwrap()).with_ttl(ttl)
    };
    let hour = Duration::from_secs(3600);
    for order in 0..3 {
        idem.run(call(order, hour), async { Ok::<_, Error>(order) })
            .await
            .unwrap();
    }
    let mut ran = false;
    let full = idem
        .run(call(3, hour), async {
            ran = true;
            Ok::<_, Error>(3)
        })
        .await
        .unwrap_err();
    assert!(!ran, "a full store must not run the function");
    assert!(matches!(full, Error::Store { .. }), "{full:?}");
    assert_eq!(full.http_status(), 503);
    let cause = std::error::Error::source(&full).expect("the store's error is the source");
    assert!(
        cause.to_string().contains("maximum of 3 live records"),
        "{cause}"
    );
    for order in 0..3 {
        let replay = idem
            .run(call(order, hour), async { Ok::<_, Error>(99) })
            .await
            .unwrap();
        assert_eq!(
            (replay.value, replay.replayed),
            (order, true),
            "live records stay"
        );
    }
    clock.advance(hour * 2);
    let fresh = idem
        .run(call(3, hour), async { Ok::<_, Error>(3) })
        .await
        .expect("expired records make room");
    assert!(!fresh.replayed);
    assert_eq!(store.len(), 1);
}

/// A full store refuses at once while no record can have expired, and makes room as soon as
/// one did: a record completed with a TTL shorter than its lease was, one held by a call that
/// crashed (a grace after its lease), and one released with steps (at their TTL).
#[tokio::test]
async fn a_full_store_makes_room_as_soon_as_the_earliest_record_stops_counting() {
    let store = MemoryStore::builder().max_records(3).no_sweeping().build();
    let clock = ManualClock::new();
    let idem = Idempotency::new(store.clone()).with_clock(clock.clone());
    let call = |order: u32, ttl: Duration| {
        let key = idem.key("charge").part(&order).finish().unwrap();
        Call::new(key, Fingerprint::of(&order).unwrap())
            .with_ttl(ttl)
            .with_lease(Duration::from_secs(30))
    };
    let minute = Duration::from_secs(60);
    let day = Duration::from_secs(24 * 3600);
    // Completed for a second, though its lease was 30 s.
    idem.run(call(0, Duration::from_secs(1)), async { Ok::<_, Error>(0) })
        .await
        .unwrap();
    // Released after a step kept for ten minutes.
    let failed = idem
        .run(call(1, minute * 10), async {
            idem_core::step("charge", async { Ok::<_, Error>(1) }).await?;
            Err::<u32, _>(Error::InvalidKey("declined".into()))
        })
        .await;
    assert!(failed.is_err());
    // Held by a call that never finishes (its future is dropped, as a crash would).
    let held = idem.run(call(2, day), std::future::pending::<Result<u32, Error>>());
    assert!(
        tokio::time::timeout(Duration::from_millis(50), held)
            .await
            .is_err(),
        "the held call never returns"
    );
    let fresh = |order: u32| idem.run(call(order, day), async move { Ok::<_, Error>(order) });
    assert!(matches!(fresh(10).await, Err(Error::Store { .. })), "full");
    clock.advance(Duration::from_secs(2));
    assert!(fresh(11).await.is_ok(), "the one-second record made room");
    assert!(
        matches!(fresh(12).await, Err(Error::Store { .. })),
        "full again"
    );
    clock.advance(idem_core::store::LEASE_GRACE + Duration::from_secs(30));
    assert!(
        fresh(13).await.is_ok(),
        "the crashed call's record made room"
    );
    assert!(
        matches!(fresh(14).await, Err(Error::Store { .. })),
        "full again"
    );
    clock.advance(minute * 10);
    assert!(fresh(15).await.is_ok(), "the released steps made room");
    assert!(
        matches!(fresh(16).await, Err(Error::Store { .. })),
        "full again"
    );
}

/// The sweep interval is honoured: no sweep before it passes, one as soon as it has.
#[tokio::test]
async fn sweeps_run_once_per_interval() {
    let store = MemoryStore::builder()
        .sweep_interval(Duration::from_secs(60))
        .build();
    let clock = ManualClock::new();
    let idem = Idempotency::new(store.clone()).with_clock(clock.clone());
    let run = |order: u32| {
        let key = idem.key("charge").part(&order).finish().unwrap();
        let call =
            Call::new(key, Fingerprint::of(&order).unwrap()).with_ttl(Duration::from_secs(1));
        idem.run(call, async move { Ok::<_, Error>(order) })
    };
    run(0).await.unwrap();
    store.sweeps_finished().await;
    run(1).await.unwrap();
    // A sweep that still ran would let the next one be skipped rather than shown.
    store.sweeps_finished().await;
    clock.advance(Duration::from_secs(30));
    run(2).await.unwrap();
    store.sweeps_finished().await;
    assert_eq!(store.len(), 3, "no sweep within the interval");
    clock.advance(Duration::from_secs(30));
    run(3).await.unwrap();
    store.sweeps_finished().await;
    assert_eq!(
        store.len(),
        1,
        "the sweep after the interval removed the expired records"
    );
}

/// Without sweeping, expired records stay until purged, and still count as expired.
#[tokio::test]
async fn without_sweeping_expired_records_stay_but_do_not_count() {
    let store = MemoryStore::builder().no_sweeping().build();
    let clock = ManualClock::new();
    let idem = Idempotency::new(store.clone()).with_clock(clock.clone());
    let key = idem.key("charge").finish().unwrap();
    let call = || Call::new(key.clone(), Fingerprint::empty()).with_ttl(Duration::from_secs(1));
    idem.run(call(), async { Ok::<_, Error>(1) }).await.unwrap();
    store.sweeps_finished().await;
    clock.advance(Duration::from_secs(2));
    let other = idem.key("other").finish().unwrap();
    idem.run(Call::new(other, Fingerprint::empty()), async {
        Ok::<_, Error>(2)
    })
    .await
    .unwrap();
    store.sweeps_finished().await;
    assert_eq!(store.len(), 2, "nothing swept");
    let again = idem.run(call(), async { Ok::<_, Error>(3) }).await.unwrap();
    assert_eq!((again.value, again.replayed), (3, false), "expired on read");
}

#[test]
fn the_builder_sets_the_shards() {
    let store = MemoryStore::builder().shards(3).build();
    assert!(format!("{store:?}").contains("shards: 3"), "{store:?}");
    assert!(format!("{:?}", MemoryStore::builder().shards(5).build()).contains("shards: 5"));
}

/// A completed record is purged at its expiry, not a millisecond later; one still live stays.
#[tokio::test]
async fn purging_removes_a_record_exactly_at_its_expiry() {
    let store = MemoryStore::builder().no_sweeping().build();
    let clock = ManualClock::new();
    let idem = Idempotency::new(store.clone()).with_clock(clock.clone());
    let key = idem.key("charge").finish().unwrap();
    let call = Call::new(key, Fingerprint::empty()).with_ttl(Duration::from_secs(1));
    idem.run(call, async { Ok::<_, Error>(1) }).await.unwrap();
    let expiry = clock.now() + Duration::from_secs(1);
    assert_eq!(
        store.purge_expired(expiry - Duration::from_millis(1)),
        0,
        "live a millisecond before"
    );
    assert_eq!(store.purge_expired(expiry), 1, "gone at its expiry");
    assert!(store.is_empty());
}

/// A clock that follows tokio's (paused) time, so that leases pass as timers fire.
struct TokioClock(tokio::time::Instant);

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(1_700_000_000_000) + self.0.elapsed()
    }
}

/// Without renewal, a call holds the key for the lease it was given and no longer, however
/// long its body runs; a renewed call beside it still holds its key.
#[tokio::test(start_paused = true)]
async fn a_call_without_renewal_holds_only_the_lease_it_was_given() {
    let idem =
        Idempotency::new(MemoryStore::new()).with_clock(TokioClock(tokio::time::Instant::now()));
    let lease = Duration::from_secs(30);
    let call = |name: &str| {
        let key = idem.key(name).finish().unwrap();
        Call::new(key, Fingerprint::empty()).with_lease(lease)
    };
    let fixed = call("fixed").without_renewal();
    assert!(!fixed.is_renewed() && call("renewed").is_renewed());
    let never_ends = std::future::pending::<Result<u32, Error>>;
    let renewed = tokio::spawn({
        let (idem, call) = (idem.clone(), call("renewed"));
        async move { idem.run(call, never_ends()).await }
    });
    let unrenewed = tokio::spawn({
        let (idem, call) = (idem.clone(), fixed.clone());
        async move { idem.run(call, never_ends()).await }
    });

    // Paused time moves only once every task waits: both bodies run, and every renewal
    // that falls due in these 40 seconds has landed.
    tokio::time::sleep(lease + Duration::from_secs(10)).await;
    let state = |call: Call| {
        let idem = idem.clone();
        async move { idem.inspect(call.key()).await.unwrap().unwrap().state() }
    };
    assert_eq!(state(call("renewed")).await, RecordState::Running);
    assert_eq!(state(fixed.clone()).await, RecordState::LeasePassed);

    let retry = idem.run(fixed, async { Ok::<_, Error>(7) }).await.unwrap();
    assert!(!retry.replayed, "the retry took the key over and ran");
    renewed.abort();
    unrenewed.abort();
}

/// The table of reserve cases, on a store that never sweeps: a sweep running beside a case
/// could remove the record the case planted.
#[tokio::test]
async fn the_memory_store_decides_every_reserve_case() {
    let store = MemoryStore::builder().no_sweeping().build();
    idem_conformance::check_reserve_cases(std::sync::Arc::new(store)).await;
}
