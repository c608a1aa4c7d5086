//! What the stores' inventory tests share: records written straight through the store, a
//! listing followed to its end, a purge followed to its end, and the operator's calls on a
//! handle.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_core::store::{Inventory, ListQuery};
use idem_core::{
    store::{
        Claim, Completed, InProgress, Outcome, OwnerToken, Record, Reservation, Store, Timestamp,
    },
    Call, Error, Fingerprint, Idempotency, Key, KeyBuilder, ManualClock, RecordState,
    ReleaseReport, StoreError,
};

/// The time the tests write records at, unless they say otherwise.
pub const NOW: u64 = 1_800_000_000_000;
/// An hour.
pub const HOUR: Duration = Duration::from_secs(3600);
/// A second.
pub const SECOND: Duration = Duration::from_secs(1);

/// [`NOW`] as a timestamp.
pub fn now() -> Timestamp {
    Timestamp::from_millis(NOW)
}

/// The key of `function` with `parts`, in namespace `idem`, without a scope.
pub fn key(function: &str, parts: &[&str]) -> Key {
    parts
        .iter()
        .fold(KeyBuilder::new("idem", function), |key, part| {
            key.part(*part)
        })
        .finish()
        .unwrap()
}

/// Reserves the free `key` at `at`, leased until `lease_until`; returns its owner.
pub async fn reserve(
    store: &dyn Store,
    key: &Key,
    lease_until: Timestamp,
    at: Timestamp,
) -> OwnerToken {
    let record = InProgress::new(OwnerToken::generate(), Fingerprint::empty(), lease_until);
    let claim = Claim::new(record, at);
    let reserved = store.reserve(key, &claim).await.unwrap();
    assert!(matches!(reserved, Reservation::Reserved(_)), "{reserved:?}");
    claim.record().owner().clone()
}

/// Writes a completed record under `key`, reserved at `at`, expiring at `expires`.
pub async fn complete(store: &dyn Store, key: &Key, at: Timestamp, expires: Timestamp) {
    let owner = reserve(store, key, at + HOUR, at).await;
    let done = Completed::new(Fingerprint::empty(), Outcome::ok(b"1".to_vec()), expires);
    store.complete(key, &owner, &done).await.unwrap();
}

/// An entry of a listing: a key, and its record or why it could not be read.
pub type Entry = (Key, Result<Record, StoreError>);

/// Every entry of the listing of `prefix`, `limit` records a page, in the order listed, and
/// how many pages it took.
pub async fn entries(inventory: &dyn Inventory, prefix: &str, limit: u32) -> (Vec<Entry>, usize) {
    let mut entries = Vec::new();
    let mut query = ListQuery::new(prefix, limit);
    for pages in 1..=1000 {
        let page = inventory.list(&query).await.unwrap();
        assert!(page.records.len() <= limit as usize, "{page:?}");
        entries.extend(page.records);
        match page.cursor {
            Some(cursor) => query = query.after(Some(cursor)),
            None => return (entries, pages),
        }
    }
    panic!("the listing of `{prefix}` did not end");
}

/// The inventory of `store`, which must list.
pub fn of(store: &dyn Store) -> &dyn Inventory {
    store.inventory().expect("the store lists")
}

/// The keys listed under `prefix`, `limit` records a page, in the order listed, each listed
/// once and without an error.
pub async fn listed(inventory: &dyn Inventory, prefix: &str, limit: u32) -> Vec<Key> {
    let (entries, _) = entries(inventory, prefix, limit).await;
    let mut keys = Vec::new();
    for (key, record) in entries {
        assert!(record.is_ok(), "`{key}`: {record:?}");
        assert!(!keys.contains(&key), "`{key}` is listed twice");
        keys.push(key);
    }
    keys
}

/// Purges what expired at [`NOW`] from a cursor, `batch` at a time, until the cursor is
/// `None`; returns how many calls it took and how many records went.
pub async fn purge_to_the_end(inventory: &dyn Inventory, batch: u32) -> (usize, u64) {
    let mut cursor = None;
    let mut deleted = 0;
    for calls in 1..=10_000 {
        let progress = inventory
            .purge_expired_from(now(), batch, cursor.as_deref())
            .await
            .unwrap();
        assert!(progress.deleted <= u64::from(batch), "{progress:?}");
        deleted += progress.deleted;
        match progress.cursor {
            Some(next) => cursor = Some(next),
            None => return (calls, deleted),
        }
    }
    panic!("the purge did not end");
}

/// `keys` as a set.
pub fn set(keys: &[Key]) -> BTreeSet<Key> {
    keys.iter().cloned().collect()
}

/// A completed, a held and an expired record of function `op`, through a handle on `store`:
/// the handle lists them, inspects each, releases the held one (which then runs again) and
/// not the completed one, and purges the expired one. Returns the keys of the listing's one
/// page, in the order listed, for the caller to check that order.
pub async fn the_handle_lists_inspects_releases_and_purges(store: Arc<dyn Store>) -> Vec<Key> {
    let clock = ManualClock::new();
    let idem = Idempotency::from_arc(store.clone()).with_clock(clock.clone());
    let now = idem.clock().now();
    let op = |part: &str| key("op", &[part]);

    let call = Call::new(op("done"), Fingerprint::of("a").unwrap());
    let done = idem
        .run(call, async { Ok::<_, Error>(1u64) })
        .await
        .unwrap();
    assert!(!done.replayed);
    reserve(&*store, &op("held"), now + HOUR, now).await;
    complete(&*store, &op("old"), now - HOUR, now - SECOND).await;

    let query = ListQuery::new(Key::function_prefix(idem.namespace(), "op"), 10);
    let page = idem.list(&query).await.unwrap();
    let keys: Vec<Key> = page.records.iter().map(|(key, _)| key.clone()).collect();
    assert_eq!(set(&keys), set(&[op("done"), op("held"), op("old")]));
    assert_eq!(page.cursor, None, "three records, a page of ten");

    let states = [
        ("done", Some(RecordState::Completed)),
        ("held", Some(RecordState::Running)),
        ("old", Some(RecordState::Expired)),
        ("none", None),
    ];
    for (name, state) in states {
        let inspected = idem.inspect(&op(name)).await.unwrap();
        assert_eq!(inspected.map(|i| i.state()), state, "`{name}`");
    }

    let ran = &AtomicBool::new(false);
    let body = move || async move {
        ran.store(true, Ordering::SeqCst);
        Ok::<_, Error>(2u64)
    };
    let held = Fingerprint::empty();
    let refused = idem.run(Call::new(op("held"), held), body()).await;
    assert!(
        matches!(refused, Err(Error::InProgress { .. })),
        "{refused:?}"
    );
    assert!(!ran.load(Ordering::SeqCst));
    match idem.release_held(&op("held")).await.unwrap() {
        ReleaseReport::Released(was) => assert_eq!(was.key(), &op("held")),
        other => panic!("the held key is released, got {other:?}"),
    }
    let again = idem.run(Call::new(op("held"), held), body()).await.unwrap();
    assert!(ran.load(Ordering::SeqCst) && !again.replayed && again.value == 2);
    assert!(matches!(
        idem.release_held(&op("done")).await.unwrap(),
        ReleaseReport::NotHeld(Some(_))
    ));

    assert_eq!(idem.purge_expired(100).await.unwrap(), 1);
    assert_eq!(idem.inspect(&op("old")).await.unwrap(), None);
    assert!(idem.inspect(&op("done")).await.unwrap().is_some());
    keys
}
