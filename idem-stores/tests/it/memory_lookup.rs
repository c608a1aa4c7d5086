//! The memory store looks records up: a replay is answered in process, before any claim, and
//! the lookup and the reservation read a key's record by one rule.
#![cfg(feature = "memory")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idem_conformance::{Intercepted, Interceptor, Operation};
use idem_core::store::{Lookup, Probe, Store};
use idem_core::{Call, Error, Fingerprint, Idempotency, Key, StoreError};
use idem_stores::memory::MemoryStore;

/// Where the shared check lets a store miss, the memory store answers: every case of the
/// reserve table is looked up exactly as its lookup column says.
#[tokio::test]
async fn the_memory_store_answers_every_lookup_of_the_reserve_table() {
    let store = MemoryStore::builder().no_sweeping().build();
    let handle = Idempotency::new(store.clone()).with_namespace("lookup-column");
    for case in idem_conformance::reserve_cases() {
        let key = handle.key(case.name()).finish().unwrap();
        case.plant(&store, &key).await;
        assert_eq!(
            store.lookup(&key, &case.probe()).unwrap(),
            case.expected_lookup(),
            "case `{}`",
            case.name()
        );
    }
}

/// The memory store, its lookups passed on, counting the reservations it is asked for.
#[derive(Default)]
struct Reserves {
    inner: MemoryStore,
    reserved: AtomicUsize,
}

#[async_trait::async_trait]
impl Interceptor for Reserves {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        self.inner.lookup(key, probe)
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        if operation == Operation::Reserve {
            self.reserved.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// A replay on the memory store reserves nothing: its lookup answers it, while a new key is
/// still reserved and run.
#[tokio::test]
async fn a_replay_on_the_memory_store_is_answered_by_its_lookup() {
    let store = Arc::new(Intercepted(Reserves::default()));
    let idem = Idempotency::from_arc(store.clone());
    let call = |order: &str| {
        let key = idem.key("orders.create").part(order).finish().unwrap();
        Call::new(key, Fingerprint::of(&order).unwrap())
    };
    let reserved = || store.reserved.load(Ordering::SeqCst);
    let first = idem
        .run(call("o-1"), async { Ok::<_, Error>(1) })
        .await
        .unwrap();
    assert_eq!((first.value, first.replayed, reserved()), (1, false, 1));
    let again = idem
        .run(call("o-1"), async { Ok::<_, Error>(2) })
        .await
        .unwrap();
    assert_eq!((again.value, again.replayed, reserved()), (1, true, 1));
    let other = idem
        .run(call("o-2"), async { Ok::<_, Error>(3) })
        .await
        .unwrap();
    assert_eq!((other.value, other.replayed, reserved()), (3, false, 2));
}
