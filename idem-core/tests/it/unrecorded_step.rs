//! A call told to release its key when aborted (`OnAbort::Release`) keeps it all the same when
//! it is cancelled while one of its steps is being recorded, or panics after a step whose
//! record failed: the step's effect happened, its record may be missing, and a retry must not
//! run it again before the lease passes. Cancelled before any step, it frees its key.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::{
    step, store::Store, Answered, Call, Error, Fingerprint, Idempotency, Key, OnAbort, StoreError,
};
use tokio::sync::{oneshot, Notify};

use crate::support::PATIENCE;

/// What a step's write does.
#[derive(Clone, Copy)]
enum StepWrites {
    /// Never answers.
    Stall,
    /// Fails.
    Fail,
}

/// A store whose step writes stall or fail, and which counts releases.
struct UnrecordedSteps {
    inner: ReferenceStore,
    step_writes: StepWrites,
    writing: Notify,
    releases: AtomicUsize,
}

impl UnrecordedSteps {
    fn new(step_writes: StepWrites) -> Arc<Intercepted<Self>> {
        Arc::new(Intercepted(UnrecordedSteps {
            inner: ReferenceStore::new(),
            step_writes,
            writing: Notify::new(),
            releases: AtomicUsize::new(0),
        }))
    }
}

#[async_trait]
impl Interceptor for UnrecordedSteps {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        match (operation, self.step_writes) {
            (Operation::RecordStep, StepWrites::Stall) => {
                self.writing.notify_one();
                std::future::pending().await
            }
            (Operation::RecordStep, StepWrites::Fail) => {
                Err(StoreError::backend("the step write failed"))
            }
            (Operation::Release, _) => {
                self.releases.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

fn order(idem: &Idempotency) -> Call {
    let key = idem.key("orders.checkout").part("o-1").finish().unwrap();
    Call::new(key, Fingerprint::of("o-1").unwrap()).with_on_abort(OnAbort::Release)
}

/// Returns once no task spawned on this runtime is left: a release spawned when the call was
/// dropped, or its lease renewal, has then run its course.
async fn every_task_ended() {
    let metrics = tokio::runtime::Handle::current().metrics();
    while metrics.num_alive_tasks() > 0 {
        tokio::task::yield_now().await;
    }
}

/// Runs a checkout whose `charge` step has run when its write stalls, cancels it there (or,
/// with `before_the_step`, while the body waits before its step), and returns how many
/// releases the store saw and what a retry of the same call got.
async fn cancelled(before_the_step: bool) -> (usize, Result<Answered<()>, Error>) {
    let store = UnrecordedSteps::new(StepWrites::Stall);
    let idem = Idempotency::from_arc(store.clone());
    let charges = Arc::new(AtomicUsize::new(0));
    let (started, body_started) = oneshot::channel();
    let running = tokio::spawn({
        let (idem, charges) = (idem.clone(), charges.clone());
        let call = order(&idem);
        async move {
            idem.run(call, async move {
                started.send(()).unwrap();
                if before_the_step {
                    std::future::pending::<()>().await;
                }
                step("charge", async {
                    Ok::<_, Error>(charges.fetch_add(1, Ordering::SeqCst))
                })
                .await?;
                Ok::<_, Error>(())
            })
            .await
        }
    });
    let reached = async {
        body_started.await.unwrap();
        if !before_the_step {
            store.writing.notified().await;
        }
    };
    tokio::time::timeout(PATIENCE, reached)
        .await
        .expect("the body reaches the point where it is cancelled");
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    tokio::time::timeout(PATIENCE, every_task_ended())
        .await
        .expect("what the cancelled call spawned ends");

    let releases = store.releases.load(Ordering::SeqCst);
    let retry = idem
        .run(order(&idem), async {
            charges.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(())
        })
        .await;
    let expected_charges = usize::from(!before_the_step) + usize::from(retry.is_ok());
    assert_eq!(charges.load(Ordering::SeqCst), expected_charges);
    (releases, retry)
}

#[tokio::test]
async fn a_call_cancelled_while_its_step_is_recorded_keeps_its_key() {
    let (releases, retry) = cancelled(false).await;
    assert_eq!(releases, 0, "the key is not released");
    assert!(
        matches!(retry, Err(Error::InProgress { .. })),
        "a retry waits for the lease instead of charging again: {retry:?}"
    );
}

#[tokio::test]
async fn a_call_cancelled_before_any_step_frees_its_key() {
    let (releases, retry) = cancelled(true).await;
    assert_eq!(releases, 1, "the key is released");
    assert!(retry.is_ok(), "a retry runs: {retry:?}");
}

#[tokio::test]
async fn a_call_that_panics_after_an_unrecorded_step_keeps_its_key() {
    let store = UnrecordedSteps::new(StepWrites::Fail);
    let idem = Idempotency::from_arc(store.clone());
    let running = tokio::spawn({
        let idem = idem.clone();
        async move {
            idem.run(order(&idem), async {
                let charged = step("charge", async { Ok::<_, Error>(1) }).await;
                assert!(charged.is_err_and(|error| error.ran_without_record()));
                panic!("the ledger is unreachable");
                #[allow(unreachable_code)]
                Ok::<_, Error>(())
            })
            .await
        }
    });
    let ended = tokio::time::timeout(PATIENCE, running)
        .await
        .expect("the call ends");
    assert!(ended.unwrap_err().is_panic(), "the panic goes on");
    tokio::time::timeout(PATIENCE, every_task_ended())
        .await
        .expect("what the call spawned ends");

    assert_eq!(
        store.releases.load(Ordering::SeqCst),
        0,
        "the key is not released"
    );
    let retry = idem.run(order(&idem), async { Ok::<_, Error>(()) }).await;
    assert!(
        matches!(retry, Err(Error::InProgress { .. })),
        "a retry waits for the lease instead of charging again: {retry:?}"
    );
}
