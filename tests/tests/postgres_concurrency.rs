//! Many callers of one key, through two independent stores (two service instances, each with a pool of its own): the body
//! runs exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_core::{Call, Error, Fingerprint, Idempotency};
use idem_tests::postgres::TestPg;
use tokio::sync::{mpsc, Notify};

const CALLERS: usize = 1_000;

fn call(idem: &Idempotency) -> Call {
    let key = idem
        .key("payments.charge")
        .part("order-42")
        .finish()
        .unwrap();
    Call::new(key, Fingerprint::of(&("order-42", 1_000)).unwrap())
}

/// A second store on the same table, through a pool of its own.
async fn another_store(target: &TestPg) -> idem_stores::postgres::PostgresStore {
    let pool = TestPg::pool_options().connect(&target.url).await.unwrap();
    idem_stores::postgres::PostgresStore::new(pool)
}

type Answer = Result<idem_core::Executed<String>, Error>;

async fn next(received: &mut mpsc::UnboundedReceiver<Answer>) -> Answer {
    tokio::time::timeout(Duration::from_secs(60), received.recv())
        .await
        .expect("every caller answers (a second run of the body would hang here)")
        .expect("a result")
}

async fn a_thousand_callers_on_two_stores_run_the_body_once() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let instances = [
        Idempotency::new(target.store.clone()),
        Idempotency::new(another_store(&target).await),
    ];
    let runs = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(Notify::new());
    let (results, mut received) = mpsc::unbounded_channel();

    for caller in 0..CALLERS {
        let idem = instances[caller % 2].clone();
        let (runs, release, results) = (runs.clone(), release.clone(), results.clone());
        tokio::spawn(async move {
            let result = idem
                .run(call(&idem), async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    // Stay in flight until every other caller has had its answer.
                    release.notified().await;
                    Ok::<_, Error>("charged".to_owned())
                })
                .await;
            results.send(result).unwrap();
        });
    }
    drop(results);

    let mut in_progress = 0;
    for _ in 0..CALLERS - 1 {
        match next(&mut received).await {
            Err(Error::InProgress { .. }) => in_progress += 1,
            other => panic!("a duplicate got {other:?}"),
        }
    }
    assert_eq!(in_progress, CALLERS - 1);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    release.notify_one();
    let done = next(&mut received).await.unwrap();
    assert!(!done.replayed);
    assert_eq!(done.value, "charged");

    // Every retry, through either instance, replays it.
    let mut replays = Vec::new();
    for caller in 0..CALLERS {
        let idem = instances[caller % 2].clone();
        let runs = runs.clone();
        replays.push(tokio::spawn(async move {
            idem.run(call(&idem), async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Error>("charged again".to_owned())
            })
            .await
        }));
    }
    for replay in replays {
        let done = replay.await.unwrap().unwrap();
        assert!(done.replayed);
        assert_eq!(done.value, "charged");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

idem_tests::backend_tests! {
    async a_thousand_callers_on_two_stores_run_the_body_once,
}
