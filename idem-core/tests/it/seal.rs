//! Sealed records on the reference store: nothing in clear at rest, keys named by their
//! digest, and a sealed store that forwards every operation under the stored key; the keyring
//! and the calls that `seal_refusals` shares.
#![cfg(feature = "seal")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::seal::Keyring;
use idem_core::{
    step,
    store::{Claim, InProgress, Lookup, OwnerToken, Probe, Record, Steps, Store, Timestamp},
    Call, Error, Fingerprint, Idempotency, Key, StoreError,
};

const SECRET: [u8; 32] = [42; 32];

pub(crate) fn ring() -> Keyring {
    Keyring::new("2026-11", [1; 32])
}

pub(crate) fn call(idem: &Idempotency, email: &str) -> Call {
    let key = idem.key("accounts.close").part(email).finish().unwrap();
    Call::new(key, Fingerprint::of(&email).unwrap())
}

/// Every byte of a record as it is stored.
fn stored_bytes(record: &Record) -> Vec<u8> {
    let mut bytes = format!("{record:?}").into_bytes();
    match record {
        Record::Completed(completed) => bytes.extend_from_slice(completed.outcome().body()),
        Record::InProgress(running) => {
            for (name, value) in running.steps().iter() {
                bytes.extend_from_slice(name.as_bytes());
                bytes.extend_from_slice(value);
            }
        }
        _ => {}
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn outcomes_and_keys_are_not_stored_in_clear() {
    let raw = Arc::new(ReferenceStore::default());
    let idem = Idempotency::from_arc(raw.clone())
        .with_sealing(ring())
        .with_key_digest(SECRET);
    let runs = AtomicUsize::new(0);
    let close = |idem: &Idempotency| {
        let call = call(idem, "alice@example.com");
        let runs = &runs;
        let idem = idem.clone();
        async move {
            idem.run(call, async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Error>("closed account of Alice Liddell, card ending 4242".to_owned())
            })
            .await
        }
    };
    assert!(!close(&idem).await.unwrap().replayed);
    let replay = close(&idem).await.unwrap();
    assert!(replay.replayed);
    assert!(replay.value.contains("4242"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let key = call(&idem, "alice@example.com").key().clone();
    assert_eq!(
        raw.get(&key).await.unwrap(),
        None,
        "nothing under the clear key"
    );
    let stored_key = idem.stored_key(&key);
    assert!(!contains(stored_key.as_str().as_bytes(), "alice"));
    let record = raw.get(&stored_key).await.unwrap().expect("the record");
    let bytes = stored_bytes(&record);
    for clear in ["alice", "Alice", "4242", "closed", "accounts.close"] {
        assert!(!contains(&bytes, clear), "{clear:?} is stored in clear");
    }
}

#[tokio::test]
async fn step_values_are_sealed_too() {
    let raw = Arc::new(ReferenceStore::default());
    let idem = Idempotency::from_arc(raw.clone()).with_sealing(ring());
    let call = call(&idem, "bob@example.com");
    let key = call.key().clone();
    let (recorded, stop) = tokio::sync::oneshot::channel::<()>();
    let (hold, held) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn({
        let idem = idem.clone();
        async move {
            idem.run(call, async {
                step("refund", async {
                    Ok::<_, Error>("refund re_secret_77".to_owned())
                })
                .await?;
                recorded.send(()).unwrap();
                held.await.unwrap();
                Ok::<_, Error>(1)
            })
            .await
        }
    });
    stop.await.unwrap();
    let record = raw.get(&key).await.unwrap().expect("the running record");
    assert!(matches!(record, Record::InProgress(_)));
    assert_eq!(record_step_count(&record), 1);
    assert!(!contains(&stored_bytes(&record), "re_secret_77"));
    let opened = idem.store().get(&key).await.unwrap().expect("the record");
    assert!(
        contains(&stored_bytes(&opened), "re_secret_77"),
        "opened through the handle"
    );
    hold.send(()).unwrap();
    running.await.unwrap().unwrap();
}

fn record_step_count(record: &Record) -> usize {
    match record {
        Record::InProgress(running) => running.steps().len(),
        _ => 0,
    }
}

#[tokio::test]
async fn with_a_digest_secret_the_stored_fingerprint_is_keyed() {
    let raw = Arc::new(ReferenceStore::default());
    let idem = Idempotency::from_arc(raw.clone()).with_key_digest(SECRET);
    let call = call(&idem, "ivy@example.com");
    let bare = *call.fingerprint().unwrap();
    let key = call.key().clone();
    idem.run(call, async { Ok::<_, Error>(1) }).await.unwrap();
    let record = raw.get(&idem.stored_key(&key)).await.unwrap().unwrap();
    assert_ne!(
        *record.fingerprint(),
        bare,
        "a guess of the arguments cannot be tested against the store"
    );
    let replay = idem
        .run(self::call(&idem, "ivy@example.com"), async {
            Ok::<_, Error>(2)
        })
        .await
        .unwrap();
    assert_eq!((replay.value, replay.replayed), (1, true));
}

#[tokio::test]
async fn hidden_clear_keys_are_named_by_their_digest_everywhere() {
    let idem = Idempotency::new(ReferenceStore::default())
        .with_key_digest(SECRET)
        .name_keys_by_digest()
        .with_quota(idem_core::ScopeQuota::new().max_records(1));
    let scoped = |tenant: &str, email: &str, amount: u32| {
        let key = idem
            .key("accounts.close")
            .scope(Some(tenant))
            .part(email)
            .finish()
            .unwrap();
        Call::new(key, Fingerprint::of(&(email, amount)).unwrap())
    };
    let first = scoped("tenant-1", "jo@example.com", 1);
    let stored = idem.stored_key(first.key());
    let seen = idem
        .run(first, async {
            Ok::<_, Error>(idem_core::context().unwrap().key().to_string())
        })
        .await
        .unwrap();
    assert_eq!(seen.value, stored.as_str(), "the body sees the digest");

    let reused = idem
        .run(scoped("tenant-1", "jo@example.com", 2), async {
            Ok::<_, Error>(String::new())
        })
        .await
        .unwrap_err();
    let message = reused.to_string();
    assert!(!message.contains("jo@example.com"), "{message}");
    assert!(message.contains(stored.as_str()), "{message}");

    let over = idem
        .run(scoped("tenant-1", "kim@example.com", 1), async {
            Ok::<_, Error>(String::new())
        })
        .await
        .unwrap_err();
    assert!(matches!(over, Error::QuotaExceeded { .. }), "{over:?}");
    let other_tenant = idem
        .run(scoped("tenant-2", "kim@example.com", 1), async {
            Ok::<_, Error>("ran".to_owned())
        })
        .await
        .unwrap();
    assert_eq!(
        other_tenant.value, "ran",
        "quotas still count by the key's scope"
    );

    let replay = idem
        .run(scoped("tenant-1", "jo@example.com", 1), async {
            Ok::<_, Error>(String::new())
        })
        .await
        .unwrap();
    assert!(replay.replayed);
}

#[tokio::test]
async fn forget_by_the_digest_drops_the_cached_replay_too() {
    let idem = Idempotency::new(ReferenceStore::default())
        .with_key_digest(SECRET)
        .with_replay_cache(idem_core::ReplayCache::new(100, 1 << 20));
    let runs = AtomicUsize::new(0);
    let replayed = || async {
        let once = async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(1)
        };
        let call = call(&idem, "lee@example.com");
        idem.run(call, once).await.unwrap().replayed
    };
    assert!(!replayed().await);
    assert!(replayed().await);
    let key = call(&idem, "lee@example.com").key().clone();
    idem.forget(&idem.stored_key(&key)).await.unwrap();
    assert!(
        !replayed().await,
        "forgotten by the stored key, cache and all"
    );
    idem.forget(&key).await.unwrap();
    assert!(!replayed().await, "forgotten by the key");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn equal_arguments_under_two_keys_store_two_fingerprints() {
    let raw = Arc::new(ReferenceStore::default());
    let idem = Idempotency::from_arc(raw.clone()).with_key_digest(SECRET);
    let mut stored = Vec::new();
    for part in ["a", "b"] {
        let key = idem.key("f").part(part).finish().unwrap();
        let call = Call::new(key.clone(), Fingerprint::of(&"same arguments").unwrap());
        idem.run(call, async { Ok::<_, Error>(1) }).await.unwrap();
        let record = raw.get(&idem.stored_key(&key)).await.unwrap().unwrap();
        stored.push(*record.fingerprint());
    }
    assert_ne!(stored[0], stored[1]);
}

#[tokio::test]
async fn a_key_whose_part_starts_like_a_digest_is_digested_all_the_same() {
    let idem = Idempotency::new(ReferenceStore::default()).with_key_digest(SECRET);
    for part in ["#alice@example.com", "#", "a|#b"] {
        let key = idem.key("accounts.close").part(part).finish().unwrap();
        let stored = idem.stored_key(&key);
        assert_ne!(stored, key, "{part:?} is stored in clear");
        assert_eq!(stored.as_str().matches('|').count(), 1, "{stored}");
        assert_eq!(
            idem.stored_key(&stored),
            stored,
            "a digest is kept as it is"
        );
    }
}

/// A reference store that notes every operation asked of it, with its key.
#[derive(Default)]
struct Noted {
    inner: ReferenceStore,
    seen: Mutex<Vec<(Operation, Key)>>,
}

#[async_trait]
impl Interceptor for Noted {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    fn looks_up(&self) -> bool {
        true
    }

    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        self.seen
            .lock()
            .unwrap()
            .push((Operation::Lookup, key.clone()));
        self.inner.lookup(key, probe)
    }

    async fn before(&self, operation: Operation, key: &Key) -> Result<(), StoreError> {
        self.seen.lock().unwrap().push((operation, key.clone()));
        Ok(())
    }
}

#[tokio::test]
async fn a_sealed_store_forwards_every_operation_under_the_stored_key() {
    let noted = Arc::new(Intercepted(Noted::default()));
    let idem = Idempotency::from_arc(noted.clone())
        .with_sealing(ring())
        .with_key_digest(SECRET);
    let sealed = idem.store().clone();
    let call = call(&idem, "max@example.com");
    let key = call.key().clone();
    let stored = idem.stored_key(&key);
    let owner = OwnerToken::generate();
    let now = Timestamp::from_millis(u64::MAX / 4);
    let lease = |secs| now + Duration::from_secs(secs);

    // A claim that carries a step keeps it, sealed.
    let mut steps = Steps::new();
    steps.insert("charge", b"ch_secret_1".to_vec());
    let claim = Claim::new(
        InProgress::new(owner.clone(), *call.fingerprint().unwrap(), lease(30)).with_steps(steps),
        now,
    );
    sealed.reserve(&key, &claim).await.unwrap();
    let looked = sealed.lookup(&key, &Probe::new(now)).unwrap();
    assert_eq!(looked, Lookup::Miss, "a running record is no replay");
    let kept = noted.inner.get(&stored).await.unwrap().expect("the record");
    assert_eq!(record_step_count(&kept), 1, "the claim's step is kept");
    assert!(!contains(&stored_bytes(&kept), "ch_secret_1"));
    let opened = sealed.get(&key).await.unwrap().expect("the record");
    assert!(contains(&stored_bytes(&opened), "ch_secret_1"));

    sealed.renew(&key, &owner, lease(60)).await.unwrap();
    let Some(Record::InProgress(renewed)) = noted.inner.get(&stored).await.unwrap() else {
        panic!("a running record");
    };
    assert_eq!(
        renewed.lease_until(),
        lease(60),
        "the renewal reached the store"
    );

    sealed
        .changed(&key, Duration::from_millis(1))
        .await
        .unwrap();
    sealed.release(&key, &owner).await.unwrap();
    let Some(Record::InProgress(released)) = noted.inner.get(&stored).await.unwrap() else {
        panic!("a released record, kept for its step");
    };
    assert!(released.is_released(), "the release reached the store");

    assert_eq!(
        sealed.name(),
        noted.inner.name(),
        "named as the store under it"
    );

    let seen = noted.seen.lock().unwrap().clone();
    let operations: Vec<Operation> = seen.iter().map(|(operation, _)| *operation).collect();
    assert_eq!(
        operations,
        [
            Operation::Reserve,
            Operation::Lookup,
            Operation::Get,
            Operation::Renew,
            Operation::Changed,
            Operation::Release
        ]
    );
    assert!(seen.iter().all(|(_, asked)| *asked == stored), "{seen:?}");
}
