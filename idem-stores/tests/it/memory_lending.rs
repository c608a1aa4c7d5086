//! The memory store lends what it keeps: every replay of a completed record, through
//! `lookup`, `reserve` or `get`, is the outcome's one buffer, and so is every read of a step's
//! value.
#![cfg(feature = "memory")]

use std::time::Duration;

use idem_core::{
    store::{
        Claim, Completed, InProgress, Lookup, Outcome, OwnerToken, Probe, Record, Reservation,
        Store,
    },
    Clock, Fingerprint, Idempotency, SystemClock,
};
use idem_stores::memory::MemoryStore;

fn claim(fingerprint: Fingerprint) -> Claim {
    let now = SystemClock.now();
    let record = InProgress::new(
        OwnerToken::generate(),
        fingerprint,
        now + Duration::from_secs(60),
    )
    .with_fencing_token(idem_core::store::propose_fencing_token(now));
    Claim::new(record, now)
}

#[tokio::test]
async fn every_replay_of_a_record_is_the_stored_buffer() {
    let store = MemoryStore::new();
    let key = Idempotency::new(store.clone())
        .key("lent")
        .finish()
        .unwrap();
    let fingerprint = Fingerprint::of("o-1").unwrap();
    let first = claim(fingerprint);
    store.reserve(&key, &first).await.unwrap();
    let body = vec![b'7'; 64 << 10];
    let stored_at = body.as_ptr();
    let done = Completed::new(
        fingerprint,
        Outcome::ok(body),
        SystemClock.now() + Duration::from_secs(600),
    );
    store
        .complete(&key, first.record().owner(), &done)
        .await
        .unwrap();

    let mut replays = Vec::new();
    for _ in 0..2 {
        match store.lookup(&key, &Probe::new(SystemClock.now())).unwrap() {
            Lookup::Completed(found) => replays.push(found),
            other => panic!("a replay, not {other:?}"),
        }
        match store.reserve(&key, &claim(fingerprint)).await.unwrap() {
            Reservation::Existing(Record::Completed(found)) => replays.push(found),
            other => panic!("a replay, not {other:?}"),
        }
        match store.get(&key).await.unwrap() {
            Some(Record::Completed(found)) => replays.push(found),
            other => panic!("the completed record, not {other:?}"),
        }
    }
    for replay in &replays {
        assert_eq!(replay, &done);
        let lent = replay.outcome().bytes().expect("an ok outcome");
        assert_eq!(lent.as_ptr(), stored_at, "a replay lends the stored bytes");
    }
}

#[tokio::test]
async fn every_read_of_a_step_is_the_recorded_buffer() {
    let store = MemoryStore::new();
    let key = Idempotency::new(store.clone())
        .key("stepped")
        .finish()
        .unwrap();
    let held = claim(Fingerprint::of("o-2").unwrap());
    store.reserve(&key, &held).await.unwrap();
    let kept_until = SystemClock.now() + Duration::from_secs(600);
    store
        .record_step(
            &key,
            held.record().owner(),
            "charge",
            b"\"ch_1\"",
            kept_until,
        )
        .await
        .unwrap();

    let mut read_at = Vec::new();
    for _ in 0..2 {
        let Some(Record::InProgress(found)) = store.get(&key).await.unwrap() else {
            panic!("the in-progress record");
        };
        let value = found.steps().get("charge").expect("the recorded step");
        assert_eq!(value, b"\"ch_1\"");
        read_at.push(value.as_ptr());
    }
    assert_eq!(read_at[0], read_at[1], "two reads lend one buffer");
}
