//! A quota on the engine: a scope over it runs no new key, and is still answered for the keys
//! it used; other scopes are not touched.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem_conformance::ReferenceStore;
use idem_core::{Call, Error, Fingerprint, Idempotency, ManualClock, ScopeQuota};

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
    let idem = Idempotency::new(ReferenceStore::default())
        .with_clock(clock.clone())
        .with_quota(ScopeQuota::new().max_records(2));
    let runs = AtomicUsize::new(0);

    for order in ["o-1", "o-2"] {
        create(&idem, &runs, call(&idem, "mallory", order, 5))
            .await
            .unwrap();
    }
    clock.advance(Duration::from_secs(10));
    let refused = create(&idem, &runs, call(&idem, "mallory", "o-3", 5))
        .await
        .unwrap_err();
    match &refused {
        Error::QuotaExceeded {
            reason,
            retry_after,
            ..
        } => {
            assert_eq!(reason, "2 records kept");
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
async fn a_scope_over_its_quota_is_told_its_running_key_is_in_progress() {
    let idem =
        Idempotency::new(ReferenceStore::default()).with_quota(ScopeQuota::new().max_records(1));
    let (started, running) = tokio::sync::oneshot::channel();
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    let first = tokio::spawn({
        let idem = idem.clone();
        let call = call(&idem, "mallory", "o-1", 5);
        async move {
            idem.run(call, async {
                started.send(()).unwrap();
                finished.await.unwrap();
                Ok::<_, Error>(1)
            })
            .await
        }
    });
    running.await.unwrap();
    let runs = AtomicUsize::new(0);
    let duplicate = create(&idem, &runs, call(&idem, "mallory", "o-1", 5))
        .await
        .unwrap_err();
    assert!(
        matches!(duplicate, Error::InProgress { .. }),
        "{duplicate:?}"
    );
    let new_key = create(&idem, &runs, call(&idem, "mallory", "o-2", 5))
        .await
        .unwrap_err();
    assert!(
        matches!(new_key, Error::QuotaExceeded { .. }),
        "{new_key:?}"
    );
    finish.send(()).unwrap();
    assert_eq!(first.await.unwrap().unwrap().value, 1);
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
        Error::QuotaExceeded { reason, .. } => assert_eq!(reason, "1000 bytes of answers kept"),
        other => panic!("expected QuotaExceeded, got {other:?}"),
    }
}
