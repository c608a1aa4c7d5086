//! A deferred call: known by the digest of its request, its fingerprint computed only when a
//! comparison needs it. A retry whose digest the stored outcome carries replays without it;
//! any other compares fingerprints, computed once; a call that claims its key computes it
//! before anything is reserved.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use idem_conformance::{Intercepted, Interceptor, ReferenceStore};
use idem_core::store::{Lookup, Outcome, Probe, Record, Store};
use idem_core::{
    BoxError, Call, Error, Fingerprint, Idempotency, Key, OutcomeCodec, ReleaseErrors, ReplayCache,
    StoreError,
};

/// Stores a value after a tag: `d` and the request digest for a call that has one, `n` for
/// one that has none.
struct Digested;

impl OutcomeCodec<String> for Digested {
    fn encode(&self, value: &String) -> Result<Bytes, BoxError> {
        Ok([b"n", value.as_bytes()].concat().into())
    }

    fn encode_for(&self, value: &String, request: &Fingerprint) -> Result<Bytes, BoxError> {
        Ok([b"d", &request.as_bytes()[..], value.as_bytes()]
            .concat()
            .into())
    }

    fn decode(&self, outcome: Bytes) -> Result<String, BoxError> {
        let value = match outcome.first() {
            Some(b'd') => outcome.get(33..).ok_or("a digest cut short")?,
            Some(b'n') => &outcome[1..],
            _ => return Err("untagged".into()),
        };
        Ok(String::from_utf8(value.to_vec())?)
    }

    fn request_digest(&self, outcome: &Bytes) -> Option<Fingerprint> {
        let digest = outcome.strip_prefix(b"d")?.first_chunk::<32>()?;
        Some(Fingerprint::from_bytes(*digest))
    }
}

/// The reference store, counting its lookups, which it passes on only when `looks_up`.
#[derive(Default)]
struct Looking {
    inner: ReferenceStore,
    looks_up: bool,
    lookups: AtomicUsize,
}

#[async_trait]
impl Interceptor for Looking {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    fn looks_up(&self) -> bool {
        self.looks_up
    }

    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        match self.looks_up {
            true => self.inner.lookup(key, probe),
            false => Ok(Lookup::Miss),
        }
    }
}

fn key(idem: &Idempotency) -> Key {
    idem.key("orders.create").part("order-42").finish().unwrap()
}

/// The request digest of a request sent as `raw`.
fn request(raw: &str) -> Fingerprint {
    Fingerprint::of(&("sent", raw)).unwrap()
}

/// The fingerprint of arguments that mean `canonical`.
fn canonical(canonical: &str) -> Fingerprint {
    Fingerprint::of(&("meant", canonical)).unwrap()
}

/// A deferred call for the request sent as `raw` that means `meant`, and how many times its
/// fingerprint was computed.
fn deferred(idem: &Idempotency, raw: &str, meant: &str) -> (Call, Arc<AtomicUsize>) {
    let computed = Arc::new(AtomicUsize::new(0));
    let counter = computed.clone();
    let fingerprint = canonical(meant);
    let call = Call::deferred(key(idem), request(raw), move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(fingerprint)
    });
    (call, computed)
}

/// What a call answered.
#[derive(Debug, PartialEq)]
enum Seen {
    Fresh(String),
    Replayed(String),
    Mismatch,
    Failed(String),
}

/// Runs `call` with a body that answers `value`.
async fn run(idem: &Idempotency, call: Call, value: &str) -> Seen {
    let value = value.to_owned();
    let body = async { Ok::<_, Error>(value) };
    match idem
        .run_with_codec(call, &ReleaseErrors, &Digested, body)
        .await
    {
        Ok(done) if done.replayed => Seen::Replayed(done.value),
        Ok(done) => Seen::Fresh(done.value),
        Err(Error::Mismatch { .. }) => Seen::Mismatch,
        Err(error) => Seen::Failed(error.to_string()),
    }
}

/// Runs the deferred call for `raw` meaning `meant`: what it answered, and how many times its
/// fingerprint was computed.
async fn run_deferred(idem: &Idempotency, raw: &str, meant: &str, value: &str) -> (Seen, usize) {
    let (call, computed) = deferred(idem, raw, meant);
    let answered = run(idem, call, value).await;
    (answered, computed.load(Ordering::SeqCst))
}

fn fresh(value: &str) -> Seen {
    Seen::Fresh(value.to_owned())
}

fn replayed(value: &str) -> Seen {
    Seen::Replayed(value.to_owned())
}

/// The record under the call's key, as the store keeps it.
async fn stored(store: &dyn Store, idem: &Idempotency) -> Option<Record> {
    store.get(&idem.stored_key(&key(idem))).await.unwrap()
}

#[test]
fn a_deferred_call_shows_its_request_digest_and_no_fingerprint_yet() {
    let idem = Idempotency::new(ReferenceStore::default());
    let (call, computed) = deferred(&idem, "{\"a\":1}", "a=1");
    assert_eq!(call.fingerprint(), None);
    assert_eq!(call.request_digest(), Some(&request("{\"a\":1}")));
    assert!(format!("{call:?}").contains("deferred"), "{call:?}");
    let known = Call::new(key(&idem), canonical("a=1"));
    assert_eq!(known.fingerprint(), Some(&canonical("a=1")));
    assert_eq!(known.request_digest(), None);
    assert_eq!(computed.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_miss_computes_the_fingerprint_once_and_stores_it_with_the_request_digest() {
    let raw = Arc::new(ReferenceStore::default());
    let idem = Idempotency::from_arc(raw.clone());
    let (answered, computed) = run_deferred(&idem, "{\"a\":1}", "a=1", "first").await;
    assert_eq!(answered, fresh("first"));
    assert_eq!(computed, 1, "computed once for the whole call");
    let Some(Record::Completed(record)) = stored(&*raw, &idem).await else {
        panic!("a completed record");
    };
    assert_eq!(record.fingerprint(), &canonical("a=1"));
    let Outcome::Ok(outcome) = record.outcome() else {
        panic!("an Ok outcome");
    };
    assert_eq!(
        Digested.request_digest(outcome),
        Some(request("{\"a\":1}")),
        "written with the call's request digest"
    );
}

#[tokio::test]
async fn retries_replay_by_their_request_digest_else_by_their_fingerprint() {
    let idem = Idempotency::new(ReferenceStore::default());
    let (first, _) = run_deferred(&idem, "{\"a\":1}", "a=1", "first").await;
    assert_eq!(first, fresh("first"));

    let (same_bytes, computed) = run_deferred(&idem, "{\"a\":1}", "a=1", "second").await;
    assert_eq!(same_bytes, replayed("first"));
    assert_eq!(
        computed, 0,
        "the same request replays without its fingerprint"
    );

    let (same_meaning, computed) = run_deferred(&idem, "{ \"a\": 1 }", "a=1", "third").await;
    assert_eq!(same_meaning, replayed("first"));
    assert_eq!(
        computed, 1,
        "other bytes compare fingerprints, computed once"
    );

    let (other, computed) = run_deferred(&idem, "{\"a\":2}", "a=2", "fourth").await;
    assert_eq!((other, computed), (Seen::Mismatch, 1));
}

#[tokio::test]
async fn a_fingerprint_that_cannot_be_computed_fails_the_call_before_anything_is_reserved() {
    let raw = Arc::new(ReferenceStore::default());
    let idem = Idempotency::from_arc(raw.clone());
    let ran = Arc::new(AtomicUsize::new(0));
    let call = Call::deferred(key(&idem), request("{"), || {
        Err(Error::Codec("the body cannot be read".into()))
    });
    let body_ran = ran.clone();
    let answered = idem
        .run_with_codec(call, &ReleaseErrors, &Digested, async move {
            body_ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>("never".to_owned())
        })
        .await;
    assert!(matches!(answered, Err(Error::Codec(_))), "{answered:?}");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert!(stored(&*raw, &idem).await.is_none(), "no record is left");
}

#[tokio::test]
async fn with_the_replay_cache_retries_replay_alike_without_asking_the_store() {
    let store = Arc::new(Intercepted(Looking {
        looks_up: true,
        ..Looking::default()
    }));
    let idem =
        Idempotency::from_arc(store.clone()).with_replay_cache(ReplayCache::new(100, 1 << 20));
    let (first, _) = run_deferred(&idem, "{\"a\":1}", "a=1", "first").await;
    assert_eq!(first, fresh("first"));
    let lookups = store.0.lookups.load(Ordering::SeqCst);

    let (same_bytes, computed) = run_deferred(&idem, "{\"a\":1}", "a=1", "second").await;
    assert_eq!((same_bytes, computed), (replayed("first"), 0));
    let (same_meaning, computed) = run_deferred(&idem, "{ \"a\": 1 }", "a=1", "third").await;
    assert_eq!((same_meaning, computed), (replayed("first"), 1));
    let (other, computed) = run_deferred(&idem, "{\"a\":2}", "a=2", "fourth").await;
    assert_eq!((other, computed), (Seen::Mismatch, 1));
    assert_eq!(
        store.0.lookups.load(Ordering::SeqCst),
        lookups,
        "every retry was answered by the cache"
    );
}

#[tokio::test]
async fn a_call_without_a_request_digest_compares_fingerprints() {
    let idem = Idempotency::new(ReferenceStore::default());
    let (first, _) = run_deferred(&idem, "{\"a\":1}", "a=1", "first").await;
    assert_eq!(first, fresh("first"));
    let same = Call::new(key(&idem), canonical("a=1"));
    assert_eq!(run(&idem, same, "second").await, replayed("first"));
    let other = Call::new(key(&idem), canonical("a=2"));
    assert_eq!(run(&idem, other, "third").await, Seen::Mismatch);
}

#[tokio::test]
async fn a_record_stored_without_a_request_digest_replays_by_fingerprint() {
    let idem = Idempotency::new(ReferenceStore::default());
    let first = Call::new(key(&idem), canonical("a=1"));
    assert_eq!(run(&idem, first, "first").await, fresh("first"));
    let (same, computed) = run_deferred(&idem, "{\"a\":1}", "a=1", "second").await;
    assert_eq!((same, computed), (replayed("first"), 1));
}

#[tokio::test]
async fn a_store_without_lookup_compares_fingerprints_at_the_reservation() {
    let store = Arc::new(Intercepted(Looking::default()));
    let idem = Idempotency::from_arc(store.clone());
    let (first, computed) = run_deferred(&idem, "{\"a\":1}", "a=1", "first").await;
    assert_eq!((first, computed), (fresh("first"), 1));
    let (same_bytes, computed) = run_deferred(&idem, "{\"a\":1}", "a=1", "second").await;
    assert_eq!((same_bytes, computed), (replayed("first"), 1));
    let (other, computed) = run_deferred(&idem, "{\"a\":2}", "a=2", "third").await;
    assert_eq!((other, computed), (Seen::Mismatch, 1));
}

#[cfg(feature = "seal")]
#[tokio::test]
async fn under_a_digest_secret_the_stored_request_digest_is_keyed() {
    let raw = Arc::new(ReferenceStore::default());
    let idem = Idempotency::from_arc(raw.clone()).with_key_digest([42; 32]);
    let (first, _) = run_deferred(&idem, "{\"a\":1}", "a=1", "first").await;
    assert_eq!(first, fresh("first"));
    let Some(Record::Completed(record)) = stored(&*raw, &idem).await else {
        panic!("a completed record");
    };
    assert_ne!(record.fingerprint(), &canonical("a=1"), "keyed too");
    let Outcome::Ok(outcome) = record.outcome() else {
        panic!("an Ok outcome");
    };
    let plain = request("{\"a\":1}");
    let kept = Digested.request_digest(outcome).expect("a digest is kept");
    assert_ne!(
        kept, plain,
        "a guess of the request cannot be tested against it"
    );
    let at_rest = outcome.windows(32).any(|bytes| bytes == plain.as_bytes());
    assert!(
        !at_rest,
        "the plain request digest is nowhere in the record"
    );

    let (same_bytes, computed) = run_deferred(&idem, "{\"a\":1}", "a=1", "second").await;
    assert_eq!((same_bytes, computed), (replayed("first"), 0));
    let (same_meaning, computed) = run_deferred(&idem, "{ \"a\": 1 }", "a=1", "third").await;
    assert_eq!((same_meaning, computed), (replayed("first"), 1));
}
