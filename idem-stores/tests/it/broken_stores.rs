//! The conformance suite fails every broken store, by name and within seconds: each
//! [`Fault`] wraps a correct memory store, and every check listed as catching it must fail.
#![cfg(feature = "memory")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem_conformance::broken::{Broken, Fault};
use idem_conformance::{all_checks, run_check, Target};
use idem_core::{store::Store, Key};
use idem_stores::memory::MemoryStore;

/// Past this a failing check fails by timing out, naming itself.
const WITHIN: Duration = Duration::from_secs(20);

struct BrokenMemory(Fault);

#[async_trait::async_trait]
impl Target for BrokenMemory {
    fn store(&self) -> Arc<dyn Store> {
        let memory = Arc::new(MemoryStore::builder().no_sweeping().build());
        Arc::new(Broken::new(memory, self.0))
    }

    async fn corrupt(&self, _: &Key) -> bool {
        false
    }
}

/// Runs the check called `name` against a store with `fault`; `Err` with the panic message when
/// it fails.
async fn outcome(fault: Fault, name: &str) -> Result<(), String> {
    let check = all_checks()
        .into_iter()
        .find(|check| check.name == name)
        .unwrap_or_else(|| panic!("{fault:?} lists `{name}`, which is no conformance check"));
    let target: Arc<dyn Target> = Arc::new(BrokenMemory(fault));
    let run = tokio::spawn(run_check(check, target, WITHIN));
    match run.await {
        Ok(()) => Ok(()),
        Err(failed) => {
            let payload = failed.into_panic();
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(message)
        }
    }
}

/// Every (fault, check) pair, each run as a task of its own: a check that catches its fault
/// by timing out then costs its own time, not everyone's.
fn pairs() -> impl Iterator<Item = (Fault, &'static str)> {
    Fault::ALL
        .into_iter()
        .flat_map(|fault| fault.caught_by().iter().map(move |name| (fault, *name)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_suite_fails_every_broken_store_by_name() {
    let mut runs = tokio::task::JoinSet::new();
    for (fault, name) in pairs() {
        runs.spawn(async move {
            let started = Instant::now();
            let outcome = outcome(fault, name).await;
            (fault, name, started.elapsed(), outcome)
        });
    }
    let mut escaped = Vec::new();
    while let Some(run) = runs.join_next().await {
        let (fault, name, took, outcome) = run.expect("a check's task is not cancelled");
        match outcome {
            Ok(()) => escaped.push(format!("{fault:?} passed `{name}`")),
            Err(message) => eprintln!(
                "{fault:?}: `{name}` failed in {took:.1?}: {}",
                message.lines().next().unwrap_or_default()
            ),
        }
    }
    assert!(escaped.is_empty(), "broken stores passed: {escaped:#?}");
}

/// The same checks pass on the store without a fault, so they fail for the fault alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_catching_checks_pass_on_a_correct_store() {
    let mut runs = tokio::task::JoinSet::new();
    for (fault, name) in pairs() {
        let check = all_checks()
            .into_iter()
            .find(|check| check.name == name)
            .unwrap();
        let memory = MemoryStore::builder().no_sweeping().build();
        let target: Arc<dyn Target> = Arc::new(Correct(memory));
        runs.spawn(async move {
            let ran = tokio::spawn(run_check(check, target, WITHIN)).await;
            (fault, name, ran)
        });
    }
    let mut failed = Vec::new();
    while let Some(run) = runs.join_next().await {
        let (fault, name, ran) = run.expect("a check's task is not cancelled");
        if let Err(panicked) = ran {
            failed.push(format!(
                "{fault:?}'s `{name}` on a correct store: {panicked}"
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "checks failed on a correct store: {failed:#?}"
    );
}

struct Correct(MemoryStore);

#[async_trait::async_trait]
impl Target for Correct {
    fn store(&self) -> Arc<dyn Store> {
        Arc::new(self.0.clone())
    }

    async fn corrupt(&self, _: &Key) -> bool {
        false
    }
}
