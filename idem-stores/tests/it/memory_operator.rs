//! What an operator does through the handle, on the memory store: inspect a key, release one
//! a dead call holds, list a function's records, purge the expired ones.

#![cfg(feature = "memory")]

use std::time::Duration;

use idem_core::store::ListQuery;
use idem_core::{
    store::Record, Call, Error, Fingerprint, Idempotency, Key, ManualClock, RecordState,
    ReleaseReport,
};
use idem_stores::memory::MemoryStore;
use tokio::sync::oneshot;

fn call(idem: &Idempotency, function: &str, order: &str) -> Call {
    let key = idem.key(function).part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&order).unwrap()).with_ttl(Duration::from_secs(60))
}

async fn charge(idem: &Idempotency, call: Call) -> Result<(u32, bool), Error> {
    let executed = idem.run(call, async { Ok::<_, Error>(7) }).await?;
    Ok((executed.value, executed.replayed))
}

#[tokio::test]
async fn inspect_tells_a_completed_record_from_an_unknown_key() {
    let idem = Idempotency::new(MemoryStore::new());
    let done = call(&idem, "charge", "o-1");
    charge(&idem, done.clone()).await.unwrap();

    let seen = idem.inspect(done.key()).await.unwrap().unwrap();
    assert_eq!(seen.state(), RecordState::Completed);
    assert_eq!(seen.function(), Some("charge"));
    assert_eq!(seen.stored_bytes(), b"7".len());
    let printed = Key::parse(done.key().as_str()).unwrap();
    assert_eq!(idem.inspect(&printed).await.unwrap(), Some(seen));

    let unknown = call(&idem, "charge", "o-404");
    assert_eq!(idem.inspect(unknown.key()).await.unwrap(), None);
}

#[tokio::test]
async fn a_released_key_runs_again_and_a_completed_one_is_not_released() {
    let idem = Idempotency::new(MemoryStore::new());
    let held = call(&idem, "charge", "o-2");
    let (started, body_started) = oneshot::channel();
    let (_never, forever) = oneshot::channel::<()>();
    let stuck = tokio::spawn({
        let (idem, held) = (idem.clone(), held.clone());
        async move {
            idem.run(held, async move {
                started.send(()).unwrap();
                let _ = forever.await;
                Ok::<_, Error>(1u32)
            })
            .await
        }
    });
    body_started.await.unwrap();
    assert!(matches!(
        charge(&idem, held.clone()).await,
        Err(Error::InProgress { .. })
    ));

    let released = idem.release_held(held.key()).await.unwrap();
    let ReleaseReport::Released(before) = released else {
        panic!("{released:?}")
    };
    assert_eq!(before.state(), RecordState::Running);
    assert_eq!(charge(&idem, held.clone()).await.unwrap(), (7, false));
    let again = idem.release_held(held.key()).await.unwrap();
    assert!(
        matches!(again, ReleaseReport::NotHeld(Some(ref seen)) if seen.state() == RecordState::Completed)
    );
    let none = idem.release_held(call(&idem, "charge", "o-0").key()).await;
    assert_eq!(none.unwrap(), ReleaseReport::NotHeld(None));
    stuck.abort();
}

#[tokio::test]
async fn listing_pages_through_one_functions_records() {
    for page_size in [5, 6] {
        pages_through_one_functions_records(MemoryStore::new(), page_size).await;
    }
}

/// One shard holds every record: its own share of a page must tell whether more remain.
#[tokio::test]
async fn listing_pages_through_the_records_of_one_shard() {
    for page_size in [5, 6] {
        let store = MemoryStore::builder().shards(1).build();
        pages_through_one_functions_records(store, page_size).await;
    }
}

/// Lists 24 records of one function, `page_size` at a time: every page has some, the last
/// one says no more remain (also when it is full), and none is missing.
async fn pages_through_one_functions_records(store: MemoryStore, page_size: u32) {
    let idem = Idempotency::new(store);
    // Enough records that a page taken in the map's order instead of the keys' would miss
    // some.
    let orders: Vec<String> = (0..24).map(|order| format!("o-{order:02}")).collect();
    for order in &orders {
        charge(&idem, call(&idem, "charge", order)).await.unwrap();
    }
    charge(&idem, call(&idem, "charges", "z")).await.unwrap();

    let mut query = ListQuery::new(Key::function_prefix(idem.namespace(), "charge"), page_size);
    let mut listed = Vec::new();
    loop {
        let page = idem.list(&query).await.unwrap();
        assert!((1..=page_size as usize).contains(&page.records.len()));
        for (key, record) in page.records {
            assert!(matches!(record, Ok(Record::Completed(_))));
            listed.push(key.as_str().to_owned());
        }
        let Some(cursor) = page.cursor else { break };
        query = query.after(Some(cursor));
    }
    let expected: Vec<_> = orders
        .iter()
        .map(|order| call(&idem, "charge", order).key().as_str().to_owned())
        .collect();
    assert_eq!(listed, expected);
}

#[tokio::test]
async fn purging_removes_expired_records_only() {
    let clock = ManualClock::new();
    let idem =
        Idempotency::new(MemoryStore::builder().no_sweeping().build()).with_clock(clock.clone());
    charge(&idem, call(&idem, "charge", "old")).await.unwrap();
    clock.advance(Duration::from_secs(61));
    charge(&idem, call(&idem, "charge", "new")).await.unwrap();

    assert_eq!(idem.purge_expired(100).await.unwrap(), 1);
    assert_eq!(
        idem.inspect(call(&idem, "charge", "old").key())
            .await
            .unwrap(),
        None
    );
    assert!(idem
        .inspect(call(&idem, "charge", "new").key())
        .await
        .unwrap()
        .is_some());
}
