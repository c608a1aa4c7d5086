//! A replay the store's lookup answers claims nothing: no quota admission, no read of the key
//! for the quota, no reservation; a mismatch found by a lookup is refused as one found by a
//! reservation, and so is a sealed record that does not open.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::store::{Lookup, Probe, Store, Timestamp};
use idem_core::{Call, Error, Fingerprint, Idempotency, Key, ReplayCache, StoreError};
use idem_core::{Quota, QuotaExceeded, QuotaPermit};

/// The reference store, counting what the engine asks of it; its lookups are passed on only
/// when `looks_up`, so that the same calls can go through the reservation instead.
#[derive(Default)]
struct Counted {
    inner: ReferenceStore,
    looks_up: bool,
    lookups: AtomicUsize,
    reserves: AtomicUsize,
    reads: AtomicUsize,
}

impl Counted {
    fn looking_up() -> Self {
        Counted {
            looks_up: true,
            ..Counted::default()
        }
    }

    /// Lookups, reservations, and reads of the key (`get` and `contains`) so far.
    fn counts(&self) -> (usize, usize, usize) {
        let count = |counter: &AtomicUsize| counter.load(Ordering::SeqCst);
        (
            count(&self.lookups),
            count(&self.reserves),
            count(&self.reads),
        )
    }
}

#[async_trait]
impl Interceptor for Counted {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    fn looks_up(&self) -> bool {
        self.looks_up
    }

    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        if !self.looks_up {
            return Ok(Lookup::Miss);
        }
        self.inner.lookup(key, probe)
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        match operation {
            Operation::Reserve => self.reserves.fetch_add(1, Ordering::SeqCst),
            Operation::Get => self.reads.fetch_add(1, Ordering::SeqCst),
            _ => 0,
        };
        Ok(())
    }
}

/// Admits the first call and refuses every later one, counting the admissions asked for.
#[derive(Default)]
struct FirstOnly {
    asked: Arc<AtomicUsize>,
}

#[async_trait]
impl Quota for FirstOnly {
    async fn admit(
        &self,
        _: Option<&str>,
        _: &Key,
        _: Timestamp,
    ) -> Result<QuotaPermit, QuotaExceeded> {
        match self.asked.fetch_add(1, Ordering::SeqCst) {
            0 => Ok(QuotaPermit::free()),
            _ => Err(QuotaExceeded::new(Duration::from_secs(5), "1 record")),
        }
    }

    fn stored(&self, _: Option<&str>, _: &Key, _: usize, _: Timestamp) {}
}

fn call(idem: &Idempotency, order: &str, amount: u32) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&(order, amount)).unwrap())
}

async fn create(idem: &Idempotency, call: Call, value: u32) -> Result<(u32, bool), Error> {
    let answered = idem.run(call, async { Ok::<_, Error>(value) }).await?;
    Ok((answered.value, answered.replayed))
}

#[tokio::test]
async fn a_replay_through_a_lookup_asks_no_quota_and_reserves_nothing() {
    let store = Arc::new(Intercepted(Counted::looking_up()));
    let quota = FirstOnly::default();
    let admissions = quota.asked.clone();
    let idem = Idempotency::from_arc(store.clone()).with_quota(quota);
    let asked = || admissions.load(Ordering::SeqCst);

    let first = create(&idem, call(&idem, "o-1", 5), 1).await.unwrap();
    assert_eq!(first, (1, false));
    assert_eq!((store.counts(), asked()), ((1, 1, 0), 1));

    for _ in 0..2 {
        let replay = create(&idem, call(&idem, "o-1", 5), 2).await.unwrap();
        assert_eq!(replay, (1, true));
    }
    assert_eq!(
        (store.counts(), asked()),
        ((3, 1, 0), 1),
        "two lookups more, and nothing else"
    );

    // The quota refuses now, and a call it is asked for is seen asking it.
    let refused = create(&idem, call(&idem, "o-2", 5), 3).await.unwrap_err();
    assert!(
        matches!(refused, Error::QuotaExceeded { .. }),
        "{refused:?}"
    );
    assert_eq!((store.counts(), asked()), ((4, 1, 1), 2));
}

#[tokio::test]
async fn a_mismatch_found_by_a_lookup_is_refused_as_one_found_by_a_reservation() {
    let mut refusals = Vec::new();
    for looks_up in [true, false] {
        let store = Arc::new(Intercepted(Counted {
            looks_up,
            ..Counted::default()
        }));
        let idem = Idempotency::from_arc(store.clone());
        create(&idem, call(&idem, "o-1", 5), 1).await.unwrap();
        let runs = AtomicUsize::new(0);
        let refused = idem
            .run(call(&idem, "o-1", 6), async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Error>(2)
            })
            .await
            .unwrap_err();
        assert!(matches!(refused, Error::Mismatch { .. }), "{refused:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        let reserves = if looks_up { 1 } else { 2 };
        assert_eq!(store.counts(), (2, reserves, 0), "looks up: {looks_up}");
        refusals.push((refused.to_string(), refused.http_status()));
    }
    assert_eq!(refusals[0], refusals[1]);
}

#[tokio::test]
async fn a_replay_through_a_lookup_is_kept_in_the_replay_cache() {
    let store = Arc::new(Intercepted(Counted::looking_up()));
    let idem =
        Idempotency::from_arc(store.clone()).with_replay_cache(ReplayCache::new(16, 1 << 16));
    create(&idem, call(&idem, "o-1", 5), 1).await.unwrap();
    // The completion filled the cache: forget it, and keep the record.
    let replays =
        Idempotency::from_arc(store.clone()).with_replay_cache(ReplayCache::new(16, 1 << 16));
    for _ in 0..3 {
        let replay = create(&replays, call(&replays, "o-1", 5), 2).await.unwrap();
        assert_eq!(replay, (1, true));
    }
    assert_eq!(
        store.counts(),
        (2, 1, 0),
        "one lookup for the first call, one for the first replay, then the cache"
    );
    let mismatch = create(&replays, call(&replays, "o-1", 6), 3)
        .await
        .unwrap_err();
    assert!(matches!(mismatch, Error::Mismatch { .. }), "{mismatch:?}");
}

/// A record whose lookup fails is refused with the store's error, nothing reserved.
#[tokio::test]
async fn a_lookup_that_fails_fails_the_call_before_any_reservation() {
    #[derive(Default)]
    struct Unreadable(Counted);

    #[async_trait]
    impl Interceptor for Unreadable {
        fn inner(&self) -> &dyn Store {
            &self.0.inner
        }

        fn lookup(&self, _: &Key, _: &Probe) -> Result<Lookup, StoreError> {
            Err(StoreError::Corrupt("the record does not decode".into()))
        }

        async fn before(&self, operation: Operation, key: &Key) -> Result<(), StoreError> {
            self.0.before(operation, key).await
        }
    }

    let store = Arc::new(Intercepted(Unreadable::default()));
    let idem = Idempotency::from_arc(store.clone());
    let failed = create(&idem, call(&idem, "o-1", 5), 1).await.unwrap_err();
    assert!(matches!(failed, Error::CorruptRecord { .. }), "{failed:?}");
    assert_eq!(store.0 .0.counts(), (0, 0, 0));
}

#[cfg(feature = "seal")]
#[tokio::test]
async fn a_sealed_record_that_does_not_open_is_refused_by_a_lookup_as_by_a_reservation() {
    use idem_core::seal::Keyring;

    let mut refusals = Vec::new();
    for looks_up in [true, false] {
        let store = Arc::new(Intercepted(Counted {
            looks_up,
            ..Counted::default()
        }));
        let sealing =
            Idempotency::from_arc(store.clone()).with_sealing(Keyring::new("2026-11", [1; 32]));
        create(&sealing, call(&sealing, "o-1", 5), 1).await.unwrap();
        // The same key's name under another secret: what it sealed does not open.
        let other =
            Idempotency::from_arc(store.clone()).with_sealing(Keyring::new("2026-11", [2; 32]));
        let refused = create(&other, call(&other, "o-1", 5), 2).await.unwrap_err();
        assert!(
            matches!(refused, Error::CorruptRecord { .. }),
            "{refused:?}"
        );
        // A sealed store over one that does not look up does not ask it (nor digest the key).
        let (lookups, reserves) = if looks_up { (2, 1) } else { (0, 2) };
        assert_eq!(
            store.counts(),
            (lookups, reserves, 0),
            "looks up: {looks_up}"
        );
        refusals.push(refused.to_string());
    }
    assert_eq!(refusals[0], refusals[1]);
}
