//! A crowd of callers on one key, spread over two handles (two service instances on one
//! backend): the body must run exactly once, every other caller is told it is in progress, and
//! every later call replays it. Each backend's concurrency test drives the same crowd.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_core::{Answered, Call, Error, Fingerprint, Idempotency};
use tokio::sync::{mpsc, Notify};

type Answer = Result<Answered<String>, Error>;

/// The call every member of the crowd makes.
fn call(idem: &Idempotency) -> Call {
    let key = idem
        .key("payments.charge")
        .part("order-42")
        .finish()
        .unwrap();
    Call::new(key, Fingerprint::of(&("order-42", 1_000)).unwrap())
}

/// A crowd whose one running body is held in flight, every other caller already answered.
pub struct InFlight {
    instances: [Idempotency; 2],
    callers: usize,
    runs: Arc<AtomicUsize>,
    release: Arc<Notify>,
    received: mpsc::UnboundedReceiver<Answer>,
}

/// Sends `callers` calls of one key through `instances` in turn, and returns once all but the
/// one running its body have been told `InProgress`, asserting so.
pub async fn in_flight(instances: [Idempotency; 2], callers: usize) -> InFlight {
    let runs = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(Notify::new());
    let (results, mut received) = mpsc::unbounded_channel();
    for caller in 0..callers {
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
    for _ in 0..callers - 1 {
        match next(&mut received).await {
            Err(Error::InProgress { .. }) => in_progress += 1,
            other => panic!("a duplicate got {other:?}"),
        }
    }
    assert_eq!(in_progress, callers - 1);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    InFlight {
        instances,
        callers,
        runs,
        release,
        received,
    }
}

impl InFlight {
    /// Lets the body finish, then asserts that it was recorded and that as many calls again,
    /// through either instance, replay it without running the body.
    pub async fn finish(mut self) {
        self.release.notify_one();
        let done = next(&mut self.received).await.unwrap();
        assert!(!done.replayed);
        assert_eq!(done.value, "charged");

        let mut replays = Vec::new();
        for caller in 0..self.callers {
            let idem = self.instances[caller % 2].clone();
            let runs = self.runs.clone();
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
        assert_eq!(self.runs.load(Ordering::SeqCst), 1);
    }
}

async fn next(received: &mut mpsc::UnboundedReceiver<Answer>) -> Answer {
    tokio::time::timeout(Duration::from_secs(60), received.recv())
        .await
        .expect("every caller answers (a second run of the body would hang here)")
        .expect("a result")
}
