//! Behaviour of the memory store beyond the shared conformance suite.
#![cfg(feature = "memory")]

use std::time::Duration;

use idem_core::{
    Call, Claim, Clock, Completed, Error, Fingerprint, Idempotency, InProgress, ManualClock,
    Outcome, OwnerToken, Reservation, Store,
};
use idem_stores::memory::MemoryStore;

#[tokio::test]
async fn expired_records_are_purged_so_memory_stays_bounded() {
    let store = MemoryStore::new();
    let clock = ManualClock::new();
    let idem = Idempotency::new(store.clone()).clock(clock.clone());
    let ttl = Duration::from_secs(1);
    for order in 0..100_000u32 {
        let key = idem.key("charge").part(&order).finish().unwrap();
        let call = Call::new(key, Fingerprint::of(&order).unwrap()).ttl(ttl);
        idem.run(call, async { Ok::<_, Error>(order) })
            .await
            .unwrap();
    }
    assert_eq!(store.len(), 100_000);

    clock.advance(ttl * 2);
    let key = idem.key("charge").part("after").finish().unwrap();
    idem.run(Call::new(key, Fingerprint::empty()), async {
        Ok::<_, Error>(0)
    })
    .await
    .unwrap();
    assert_eq!(
        store.len(),
        1,
        "the next reservation sweeps every expired record"
    );

    clock.advance(Duration::from_secs(25 * 60 * 60));
    assert_eq!(store.purge_expired(clock.now()), 1);
    assert!(store.is_empty());
}

fn claim(now: u64) -> Claim {
    Claim {
        record: InProgress {
            owner: OwnerToken::generate(),
            fingerprint: Fingerprint::empty(),
            lease_until: now + 600_000,
        },
        now,
    }
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
        Reservation::Reserved
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

    let completed = Completed {
        fingerprint: Fingerprint::empty(),
        outcome: Outcome::Ok(b"1".to_vec()),
        expires_at: now + 600_000,
    };
    store
        .complete(&key, &claim.record.owner, &completed)
        .await
        .unwrap();
    let waited = waiter.await.unwrap();
    assert!(
        waited < Duration::from_secs(31 * 60),
        "woken at completion, after {waited:?}"
    );
}

#[tokio::test]
async fn a_key_with_a_finished_record_does_not_block_waiters() {
    let store = MemoryStore::new();
    let key = Idempotency::new(store.clone())
        .key("none")
        .finish()
        .unwrap();
    // No record at all: returns at once instead of waiting out the hour.
    tokio::time::timeout(
        Duration::from_secs(60),
        store.changed(&key, Duration::from_secs(3600)),
    )
    .await
    .expect("returns at once")
    .unwrap();
}
