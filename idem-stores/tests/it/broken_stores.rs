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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_suite_fails_every_broken_store_by_name() {
    let mut escaped = Vec::new();
    for fault in Fault::ALL {
        for name in fault.caught_by() {
            let started = Instant::now();
            match outcome(fault, name).await {
                Ok(()) => escaped.push(format!("{fault:?} passed `{name}`")),
                Err(message) => eprintln!(
                    "{fault:?}: `{name}` failed in {:.1?}: {}",
                    started.elapsed(),
                    message.lines().next().unwrap_or_default()
                ),
            }
        }
    }
    assert!(escaped.is_empty(), "broken stores passed: {escaped:#?}");
}

/// The same checks pass on the store without a fault, so they fail for the fault alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_catching_checks_pass_on_a_correct_store() {
    for fault in Fault::ALL {
        for name in fault.caught_by() {
            let check = all_checks()
                .into_iter()
                .find(|check| check.name == *name)
                .unwrap();
            let memory = MemoryStore::builder().no_sweeping().build();
            let target: Arc<dyn Target> = Arc::new(Correct(memory));
            run_check(check, target, WITHIN).await;
        }
    }
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
