//! A quota on the engine: a scope over it runs no new key and writes nothing for it, while a
//! key that still has a record goes on as without a quota; other scopes are not touched.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::{
    store::{Store, Timestamp},
    Call, Error, Fingerprint, Idempotency, Key, ManualClock, Quota, QuotaExceeded, QuotaPermit,
    ScopeQuota, StoreError,
};
use tokio::sync::Notify;

const TTL: Duration = Duration::from_secs(600);

fn call(idem: &Idempotency, scope: &str, order: &str, amount: u32) -> Call {
    let key = idem
        .key("orders.create")
        .scope(Some(scope))
        .part(order)
        .finish()
        .unwrap();
    Call::new(key, Fingerprint::of(&(order, amount)).unwrap()).with_ttl(TTL)
}

async fn create(
    idem: &Idempotency,
    runs: &AtomicUsize,
    call: Call,
) -> Result<(String, bool), Error> {
    let executed = idem
        .run(call, async {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            Ok::<_, Error>(format!("order #{n}"))
        })
        .await?;
    Ok((executed.value, executed.replayed))
}

#[tokio::test]
async fn a_scope_over_its_quota_replays_its_keys_and_runs_no_new_one() {
    let clock = ManualClock::new();
    let store = Arc::new(ReferenceStore::default());
    let idem = Idempotency::from_arc(store.clone())
        .with_clock(clock.clone())
        .with_quota(ScopeQuota::new().max_records(2));
    let runs = AtomicUsize::new(0);

    for order in ["o-1", "o-2"] {
        create(&idem, &runs, call(&idem, "mallory", order, 5))
            .await
            .unwrap();
    }
    clock.advance(Duration::from_secs(10));
    let new_key = call(&idem, "mallory", "o-3", 5);
    let refused = create(&idem, &runs, new_key.clone()).await.unwrap_err();
    match &refused {
        Error::QuotaExceeded {
            reason,
            retry_after,
            ..
        } => {
            assert_eq!(reason, "2 records");
            assert_eq!(*retry_after, TTL - Duration::from_secs(10));
        }
        other => panic!("expected QuotaExceeded, got {other:?}"),
    }
    assert_eq!(refused.http_status(), 429);
    assert!(refused.is_retryable());
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the refused call did not run"
    );
    assert_eq!(
        store.get(new_key.key()).await.unwrap(),
        None,
        "nothing written"
    );

    let replay = create(&idem, &runs, call(&idem, "mallory", "o-1", 5))
        .await
        .unwrap();
    assert_eq!(replay, ("order #1".to_owned(), true));
    let reused = create(&idem, &runs, call(&idem, "mallory", "o-2", 6))
        .await
        .unwrap_err();
    assert!(matches!(reused, Error::Mismatch { .. }), "{reused:?}");

    let alice = create(&idem, &runs, call(&idem, "alice", "o-3", 5))
        .await
        .unwrap();
    assert_eq!(alice, ("order #3".to_owned(), false));

    clock.advance(TTL);
    let later = create(&idem, &runs, call(&idem, "mallory", "o-3", 5))
        .await
        .unwrap();
    assert_eq!(
        later,
        ("order #4".to_owned(), false),
        "room again once the records expired"
    );
}

#[tokio::test]
async fn a_call_that_ends_in_an_error_gives_its_room_back() {
    let idem =
        Idempotency::new(ReferenceStore::default()).with_quota(ScopeQuota::new().max_records(1));
    let failed = idem
        .run(call(&idem, "s", "o-1", 5), async {
            Err::<u32, _>(Error::InvalidKey("declined".into()))
        })
        .await;
    assert!(failed.is_err());
    let next = idem
        .run(call(&idem, "s", "o-2", 5), async { Ok::<_, Error>(2) })
        .await
        .unwrap();
    assert_eq!(next.value, 2);
}

/// Starts `call` on `idem` with a body that answers `answer` once the returned sender is
/// told to go on; returns once the body runs.
async fn held<T>(
    idem: &Idempotency,
    call: Call,
    answer: Result<T, Error>,
) -> (
    tokio::task::JoinHandle<Result<idem_core::Answered<T>, Error>>,
    tokio::sync::oneshot::Sender<()>,
)
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
{
    let (started, running) = tokio::sync::oneshot::channel();
    let (go_on, going_on) = tokio::sync::oneshot::channel::<()>();
    let idem = idem.clone();
    let first = tokio::spawn(async move {
        idem.run(call, async {
            started.send(()).unwrap();
            going_on.await.unwrap();
            answer
        })
        .await
    });
    running.await.unwrap();
    (first, go_on)
}

/// A quota that refuses every call: whatever the engine does then is the over-quota path.
struct Refusing;

#[async_trait]
impl Quota for Refusing {
    async fn admit(
        &self,
        _: Option<&str>,
        _: &Key,
        _: Timestamp,
    ) -> Result<QuotaPermit, QuotaExceeded> {
        Err(QuotaExceeded::new(Duration::from_secs(5), "0 records"))
    }

    fn stored(&self, _: Option<&str>, _: &Key, _: usize, _: Timestamp) {}
}

/// A reference store that says when a caller starts waiting for a key to change.
#[derive(Default)]
struct Watched {
    inner: ReferenceStore,
    waiting: Notify,
}

#[async_trait]
impl Interceptor for Watched {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        if operation == Operation::Changed {
            self.waiting.notify_one();
        }
        Ok(())
    }
}

#[tokio::test]
async fn over_the_quota_a_running_key_is_in_progress_and_a_waiter_gets_its_outcome() {
    let store = Arc::new(Intercepted(Watched::default()));
    let unbounded = Idempotency::from_arc(store.clone());
    let refusing = Idempotency::from_arc(store.clone()).with_quota(Refusing);
    let (first, finish) = held(
        &unbounded,
        call(&unbounded, "mallory", "o-1", 5),
        Ok("order #1".to_owned()),
    )
    .await;
    let runs = AtomicUsize::new(0);
    let duplicate = create(&refusing, &runs, call(&refusing, "mallory", "o-1", 5))
        .await
        .unwrap_err();
    assert!(
        matches!(duplicate, Error::InProgress { .. }),
        "{duplicate:?}"
    );
    let new_key = create(&refusing, &runs, call(&refusing, "mallory", "o-2", 5))
        .await
        .unwrap_err();
    assert!(
        matches!(new_key, Error::QuotaExceeded { .. }),
        "{new_key:?}"
    );

    let waiter = {
        let call = call(&refusing, "mallory", "o-1", 5).with_wait(Duration::from_secs(60));
        let refusing = refusing.clone();
        tokio::spawn(async move {
            refusing
                .run(call, async { Ok::<_, Error>("ran again".to_owned()) })
                .await
        })
    };
    tokio::time::timeout(Duration::from_secs(60), store.0.waiting.notified())
        .await
        .expect("the waiter waits for the running call");
    finish.send(()).unwrap();
    assert_eq!(first.await.unwrap().unwrap().value, "order #1");
    let waited = waiter.await.unwrap().unwrap();
    assert_eq!(waited.value, "order #1");
    assert!(waited.replayed);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn bytes_are_counted_from_the_stored_outcome() {
    let idem =
        Idempotency::new(ReferenceStore::default()).with_quota(ScopeQuota::new().max_bytes(1_000));
    let big = |order: &str| call(&idem, "mallory", order, 0);
    idem.run(big("o-1"), async { Ok::<_, Error>("x".repeat(999)) })
        .await
        .unwrap();
    let refused = idem
        .run(big("o-2"), async { Ok::<_, Error>(String::new()) })
        .await
        .unwrap_err();
    match refused {
        Error::QuotaExceeded { reason, .. } => assert_eq!(reason, "1000 bytes of answers"),
        other => panic!("expected QuotaExceeded, got {other:?}"),
    }
}

#[tokio::test]
async fn a_waiter_over_the_quota_that_ends_up_holding_the_key_does_not_run() {
    let store = Arc::new(Intercepted(Watched::default()));
    let unbounded = Idempotency::from_arc(store.clone());
    let refusing = Idempotency::from_arc(store.clone()).with_quota(Refusing);
    let (first, fail) = held::<String>(
        &unbounded,
        call(&unbounded, "mallory", "o-1", 5),
        Err(Error::InvalidKey("declined".into())),
    )
    .await;
    let waiter_call = call(&refusing, "mallory", "o-1", 5).with_wait(Duration::from_secs(60));
    let key = waiter_call.key().clone();
    let runs = Arc::new(AtomicUsize::new(0));
    let waiter = tokio::spawn({
        let runs = runs.clone();
        async move {
            refusing
                .run(waiter_call, async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Error>("ran over the quota".to_owned())
                })
                .await
        }
    });
    tokio::time::timeout(Duration::from_secs(60), store.0.waiting.notified())
        .await
        .expect("the waiter waits for the running call");
    fail.send(()).unwrap();
    assert!(first.await.unwrap().is_err());

    let refused = waiter.await.unwrap().unwrap_err();
    assert!(
        matches!(refused, Error::QuotaExceeded { .. }),
        "{refused:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the body did not run");
    assert_eq!(store.get(&key).await.unwrap(), None, "the key was released");
}
