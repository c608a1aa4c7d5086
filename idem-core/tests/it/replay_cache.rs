//! The replay cache: cached replays make no store call, and stay exact.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::{
    store::Store, Call, Error, Fingerprint, Idempotency, Key, ManualClock, ReplayCache, StoreError,
};

/// A [`ReferenceStore`] that counts the calls made to it.
#[derive(Default)]
struct Counting {
    inner: ReferenceStore,
    calls: AtomicUsize,
}

impl Counting {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Interceptor for Counting {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    async fn before(&self, _: Operation, _: &Key) -> Result<(), StoreError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

const TTL: Duration = Duration::from_secs(60);

struct Setup {
    store: Arc<Intercepted<Counting>>,
    clock: ManualClock,
    idem: Idempotency,
}

fn setup(cache: Option<ReplayCache>) -> Setup {
    let store = Arc::new(Intercepted(Counting::default()));
    let clock = ManualClock::new();
    let idem = Idempotency::from_arc(store.clone()).with_clock(clock.clone());
    let idem = match cache {
        Some(cache) => idem.with_replay_cache(cache),
        None => idem,
    };
    Setup { store, clock, idem }
}

fn call(idem: &Idempotency, order: &str, quantity: u32) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&(order, quantity)).unwrap()).with_ttl(TTL)
}

/// Runs `call` with a body that returns `value`; the value returned and whether it was replayed.
async fn run(idem: &Idempotency, call: Call, value: &str) -> Result<(String, bool), Error> {
    let value = value.to_owned();
    let done = idem.run(call, async { Ok::<_, Error>(value) }).await?;
    Ok((done.value, done.replayed))
}

fn big_cache() -> ReplayCache {
    ReplayCache::new(1_000, 1 << 20)
}

#[tokio::test]
async fn the_cache_is_off_by_default() {
    let s = setup(None);
    assert!(s.idem.replay_cache().is_none());
    run(&s.idem, call(&s.idem, "o1", 1), "first").await.unwrap();
    let before = s.store.calls();
    let replayed = run(&s.idem, call(&s.idem, "o1", 1), "second")
        .await
        .unwrap();
    assert_eq!(replayed, ("first".to_owned(), true));
    assert_eq!(
        s.store.calls() - before,
        1,
        "a replay reserves in the store"
    );
}

#[tokio::test]
async fn a_cached_replay_makes_no_store_call() {
    let s = setup(Some(big_cache()));
    run(&s.idem, call(&s.idem, "o1", 1), "first").await.unwrap();
    let before = s.store.calls();
    for _ in 0..3 {
        let replayed = run(&s.idem, call(&s.idem, "o1", 1), "again").await.unwrap();
        assert_eq!(replayed, ("first".to_owned(), true));
    }
    assert_eq!(s.store.calls(), before);
}

#[tokio::test]
async fn a_replay_read_from_the_store_fills_the_cache() {
    let s = setup(None);
    run(&s.idem, call(&s.idem, "o1", 1), "first").await.unwrap();
    let cached = Idempotency::from_arc(s.store.clone())
        .with_clock(s.clock.clone())
        .with_replay_cache(big_cache());
    let before = s.store.calls();
    assert_eq!(
        run(&cached, call(&cached, "o1", 1), "again").await.unwrap(),
        ("first".to_owned(), true)
    );
    assert_eq!(s.store.calls() - before, 1);
    assert_eq!(
        run(&cached, call(&cached, "o1", 1), "again").await.unwrap(),
        ("first".to_owned(), true)
    );
    assert_eq!(s.store.calls() - before, 1);
}

#[tokio::test]
async fn other_arguments_are_a_mismatch_without_a_store_call() {
    let s = setup(Some(big_cache()));
    run(&s.idem, call(&s.idem, "o1", 1), "first").await.unwrap();
    let before = s.store.calls();
    let error = run(&s.idem, call(&s.idem, "o1", 2), "other")
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Mismatch { .. }), "{error:?}");
    assert_eq!(s.store.calls(), before);
}

#[tokio::test]
async fn an_expired_record_is_not_replayed_from_the_cache() {
    let s = setup(Some(big_cache().with_max_age(TTL * 10)));
    run(&s.idem, call(&s.idem, "o1", 1), "first").await.unwrap();
    s.clock.advance(TTL);
    let fresh = run(&s.idem, call(&s.idem, "o1", 1), "second")
        .await
        .unwrap();
    assert_eq!(fresh, ("second".to_owned(), false));
}

#[tokio::test]
async fn an_entry_older_than_the_cap_is_read_again_from_the_store() {
    let s = setup(Some(big_cache().with_max_age(Duration::from_secs(5))));
    run(&s.idem, call(&s.idem, "o1", 1), "first").await.unwrap();
    s.clock.advance(Duration::from_secs(4));
    let before = s.store.calls();
    run(&s.idem, call(&s.idem, "o1", 1), "again").await.unwrap();
    assert_eq!(s.store.calls(), before, "within the cap");
    s.clock.advance(Duration::from_secs(1));
    let replayed = run(&s.idem, call(&s.idem, "o1", 1), "again").await.unwrap();
    assert_eq!(replayed, ("first".to_owned(), true));
    assert_eq!(s.store.calls() - before, 1, "past the cap");
}

#[tokio::test]
async fn the_least_recently_used_entry_goes_past_the_entry_bound() {
    let s = setup(Some(ReplayCache::new(2, 1 << 20)));
    for order in ["o1", "o2"] {
        run(&s.idem, call(&s.idem, order, 1), order).await.unwrap();
    }
    run(&s.idem, call(&s.idem, "o1", 1), "again").await.unwrap();
    run(&s.idem, call(&s.idem, "o3", 1), "o3").await.unwrap();
    let cache = s.idem.replay_cache().unwrap();
    assert_eq!(cache.len(), 2);
    let before = s.store.calls();
    for order in ["o1", "o3"] {
        run(&s.idem, call(&s.idem, order, 1), "again")
            .await
            .unwrap();
    }
    assert_eq!(s.store.calls(), before, "o1 was used last, o3 is new");
    let replayed = run(&s.idem, call(&s.idem, "o2", 1), "again").await.unwrap();
    assert_eq!(replayed, ("o2".to_owned(), true));
    assert_eq!(s.store.calls() - before, 1, "o2 was evicted");
}

#[tokio::test]
async fn entries_go_past_the_byte_bound() {
    let value = "x".repeat(1_000);
    let s = setup(Some(ReplayCache::new(1_000, 1_500)));
    run(&s.idem, call(&s.idem, "o1", 1), &value).await.unwrap();
    let cache = s.idem.replay_cache().unwrap();
    assert_eq!(cache.len(), 1);
    run(&s.idem, call(&s.idem, "o2", 1), &value).await.unwrap();
    assert_eq!(cache.len(), 1, "two values do not fit in 1 500 bytes");
    assert!(cache.bytes() <= cache.max_bytes());
    let before = s.store.calls();
    run(&s.idem, call(&s.idem, "o2", 1), "again").await.unwrap();
    assert_eq!(s.store.calls(), before);
    run(&s.idem, call(&s.idem, "o1", 1), "again").await.unwrap();
    assert_eq!(s.store.calls() - before, 1);
}

#[tokio::test]
async fn a_value_larger_than_the_byte_bound_is_not_cached() {
    let s = setup(Some(ReplayCache::new(1_000, 500)));
    run(&s.idem, call(&s.idem, "o1", 1), &"x".repeat(1_000))
        .await
        .unwrap();
    assert!(s.idem.replay_cache().unwrap().is_empty());
}

/// A value that could never fit is turned away at the door: it does not push out the entries
/// that fit, on its way in and out again.
#[tokio::test]
async fn a_value_too_large_to_cache_evicts_nothing() {
    let s = setup(Some(ReplayCache::new(1_000, 1_000)));
    run(&s.idem, call(&s.idem, "small", 1), "small")
        .await
        .unwrap();
    let cache = s.idem.replay_cache().unwrap();
    assert!(!cache.is_empty());
    let small = cache.bytes();
    run(&s.idem, call(&s.idem, "large", 1), &"x".repeat(2_000))
        .await
        .unwrap();
    assert_eq!(
        (cache.len(), cache.bytes()),
        (1, small),
        "the small entry stays cached, alone"
    );
    let before = s.store.calls();
    run(&s.idem, call(&s.idem, "small", 1), "again")
        .await
        .unwrap();
    assert_eq!(
        s.store.calls(),
        before,
        "the small entry still replays from the cache"
    );
}

#[tokio::test]
async fn forget_through_the_handle_evicts_the_entry() {
    let s = setup(Some(big_cache()));
    let key = call(&s.idem, "o1", 1).key().clone();
    run(&s.idem, call(&s.idem, "o1", 1), "first").await.unwrap();
    s.idem.forget(&key).await.unwrap();
    assert!(s.idem.replay_cache().unwrap().is_empty());
    let fresh = run(&s.idem, call(&s.idem, "o1", 1), "second")
        .await
        .unwrap();
    assert_eq!(fresh, ("second".to_owned(), false));
}

#[tokio::test]
async fn clones_of_the_handle_share_the_cache() {
    let s = setup(Some(big_cache()));
    run(&s.idem, call(&s.idem, "o1", 1), "first").await.unwrap();
    let clone = s.idem.clone();
    let before = s.store.calls();
    run(&clone, call(&clone, "o1", 1), "again").await.unwrap();
    assert_eq!(s.store.calls(), before);
}

/// The byte count is what the entries take, each at least its key and stored value: it
/// grows with each entry and returns to zero as they go, by eviction or by `forget`.
#[tokio::test]
async fn the_byte_count_follows_the_entries() {
    let s = setup(Some(ReplayCache::new(2, 1 << 20)));
    let cache = s.idem.replay_cache().unwrap();
    assert_eq!((cache.len(), cache.bytes()), (0, 0));
    let value = "x".repeat(1_000);
    run(&s.idem, call(&s.idem, "o1", 1), &value).await.unwrap();
    let one = cache.bytes();
    let key = call(&s.idem, "o1", 1).key().clone();
    assert!(one > key.as_str().len() + value.len(), "{one} bytes");
    run(&s.idem, call(&s.idem, "o2", 1), &value).await.unwrap();
    assert_eq!(cache.bytes(), one * 2, "two entries of one size");
    run(&s.idem, call(&s.idem, "o3", 1), &value).await.unwrap();
    assert_eq!((cache.len(), cache.bytes()), (2, one * 2), "o1 evicted");
    for (order, left) in [("o2", one), ("o3", 0)] {
        let key = call(&s.idem, order, 1).key().clone();
        s.idem.forget(&key).await.unwrap();
        assert_eq!(cache.bytes(), left, "after forgetting {order}");
    }
    assert_eq!((cache.len(), cache.bytes()), (0, 0));
}

/// Under a byte budget that holds one value, a stream of new keys keeps the cache at one
/// entry and within its budget: eviction never stalls and never lets the cache grow.
#[tokio::test]
async fn eviction_keeps_the_cache_within_its_budget_however_many_keys_pass() {
    let value = "x".repeat(1_000);
    let s = setup(Some(ReplayCache::new(1_000, 1_500)));
    let cache = s.idem.replay_cache().unwrap();
    for order in 0..50 {
        let order = format!("o{order}");
        run(&s.idem, call(&s.idem, &order, 1), &value)
            .await
            .unwrap();
        assert_eq!(cache.len(), 1);
        assert!(cache.bytes() <= cache.max_bytes(), "{}", cache.bytes());
    }
}

/// An entry that is expired when it would be cached (a cap of zero) is not kept.
#[tokio::test]
async fn a_cap_of_zero_caches_nothing() {
    let s = setup(Some(big_cache().with_max_age(Duration::ZERO)));
    let cache = s.idem.replay_cache().unwrap();
    assert_eq!(cache.max_age(), Duration::ZERO);
    run(&s.idem, call(&s.idem, "o1", 1), "first").await.unwrap();
    assert_eq!((cache.len(), cache.bytes()), (0, 0));
}

/// The configured bounds read back as set.
#[test]
fn the_bounds_read_back_as_set() {
    let cache = ReplayCache::new(7, 4_096).with_max_age(Duration::from_secs(90));
    assert_eq!(
        (cache.max_entries(), cache.max_bytes(), cache.max_age()),
        (7, 4_096, Duration::from_secs(90))
    );
    let default = ReplayCache::new(1, 1);
    assert_eq!(default.max_age(), idem_core::DEFAULT_REPLAY_CACHE_MAX_AGE);
}

/// Its debug form shows the bounds and how full it is, for a person reading a log.
#[tokio::test]
async fn the_debug_form_shows_bounds_and_fill() {
    let cache = ReplayCache::new(7, 4_096).with_max_age(Duration::from_secs(90));
    let s = setup(Some(cache));
    run(&s.idem, call(&s.idem, "o1", 1), "first").await.unwrap();
    let shown = format!("{:?}", s.idem.replay_cache().expect("a cache"));
    for part in [
        "max_entries: 7",
        "max_bytes: 4096",
        "max_age: 90s",
        "len: 1",
    ] {
        assert!(shown.contains(part), "{part} in {shown}");
    }
}

/// An entry that takes exactly the byte budget fits, and stays.
#[tokio::test]
async fn an_entry_of_exactly_the_byte_budget_is_cached() {
    let probe = setup(Some(big_cache()));
    run(&probe.idem, call(&probe.idem, "o1", 1), "value")
        .await
        .unwrap();
    let exact = probe.idem.replay_cache().unwrap().bytes();

    let s = setup(Some(ReplayCache::new(10, exact)));
    run(&s.idem, call(&s.idem, "o1", 1), "value").await.unwrap();
    let cache = s.idem.replay_cache().unwrap();
    assert_eq!((cache.len(), cache.bytes()), (1, exact));
    let before = s.store.calls();
    run(&s.idem, call(&s.idem, "o1", 1), "again").await.unwrap();
    assert_eq!(s.store.calls(), before, "replayed from the cache");
}

/// In front of a store that finds records in the process, a full cache evicts nothing to make
/// room: the lookup a miss falls back to costs less than the eviction. The entries it holds
/// still replay from it, and a key it could not take still replays from the store.
#[tokio::test(flavor = "current_thread")]
async fn in_front_of_an_in_process_store_a_full_cache_keeps_what_it_holds() {
    let idem =
        Idempotency::new(ReferenceStore::new()).with_replay_cache(ReplayCache::new(1, 1 << 20));
    run(&idem, call(&idem, "o1", 1), "one").await.unwrap();
    run(&idem, call(&idem, "o2", 1), "two").await.unwrap();
    let cache = idem.replay_cache().expect("a cache");
    assert_eq!(cache.len(), 1);
    assert_eq!(
        run(&idem, call(&idem, "o2", 1), "x").await.unwrap(),
        ("two".to_owned(), true)
    );
    assert_eq!(
        run(&idem, call(&idem, "o1", 1), "x").await.unwrap(),
        ("one".to_owned(), true)
    );
    assert_eq!(cache.len(), 1, "the full cache took nothing in");
    // The entry it holds is the first one's: forgetting o1 empties it.
    let o1 = idem.key("orders.create").part("o1").finish().unwrap();
    idem.forget(&o1).await.unwrap();
    assert!(cache.is_empty(), "o1's was the entry held");
}
