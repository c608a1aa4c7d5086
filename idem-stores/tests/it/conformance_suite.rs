//! The conformance suite's harness, on the memory store: every listed check runs as a test of
//! its own, on one target, and a missing target is reported as ignored, never as passed.
#![cfg(feature = "memory")]

use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idem_conformance::{all_checks, backends_required, run_suite, Arguments, Conclusion, Target};
use idem_core::{store::Store, Key};
use idem_stores::memory::MemoryStore;

/// A memory store that counts the contexts built on it: each check's context asks for the
/// store once.
struct Counted {
    store: MemoryStore,
    contexts: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Target for Counted {
    fn store(&self) -> Arc<dyn Store> {
        self.contexts.fetch_add(1, Ordering::SeqCst);
        Arc::new(self.store.clone())
    }

    async fn corrupt(&self, _: &Key) -> bool {
        false
    }
}

/// How often the suite built its target, and the contexts built on it.
#[derive(Clone, Default)]
struct Counts {
    targets: Arc<AtomicUsize>,
    contexts: Arc<AtomicUsize>,
}

impl Counts {
    fn factory(&self) -> impl FnOnce() -> std::future::Ready<Option<Counted>> + Send + 'static {
        let counts = self.clone();
        move || {
            counts.targets.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Some(Counted {
                store: MemoryStore::builder().no_sweeping().build(),
                contexts: counts.contexts,
            }))
        }
    }

    fn targets(&self) -> usize {
        self.targets.load(Ordering::SeqCst)
    }

    fn contexts(&self) -> usize {
        self.contexts.load(Ordering::SeqCst)
    }
}

/// Runs the suite with `args`, its report written to a scratch file: this test's own output
/// should not show the counts of a run whose failures are expected.
fn run_quietly<T, F, Fut>(mut args: Arguments, factory: F) -> Conclusion
where
    T: Target,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Option<T>> + 'static,
{
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let log = std::env::temp_dir().join(format!(
        "idem-conformance-suite-{}-{}.log",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::SeqCst)
    ));
    args.logfile = Some(log.to_string_lossy().into_owned());
    let conclusion = run_suite(&args, factory);
    let _ = std::fs::remove_file(&log);
    conclusion
}

#[test]
fn every_check_has_a_name_of_its_own() {
    let checks = all_checks();
    let names: HashSet<&str> = checks.iter().map(|check| check.name).collect();
    assert_eq!(names.len(), checks.len(), "two checks share a name");
    assert!(!names.contains(""));
}

#[test]
fn every_check_runs_and_passes_on_one_target() {
    let counts = Counts::default();
    let conclusion = run_quietly(Arguments::default(), counts.factory());
    let checks = all_checks().len() as u64;
    assert_eq!(conclusion.num_passed, checks, "{conclusion:?}");
    assert_eq!(conclusion.num_failed + conclusion.num_ignored, 0);
    assert_eq!(counts.targets(), 1, "the target is built once");
    assert_eq!(
        counts.contexts() as u64,
        checks,
        "every check ran, on a context of its own"
    );
}

#[test]
fn an_exact_name_runs_that_check_alone() {
    let name = all_checks()[0].name;
    let counts = Counts::default();
    let args = Arguments {
        filter: Some(name.to_owned()),
        exact: true,
        ..Arguments::default()
    };
    let conclusion = run_quietly(args, counts.factory());
    assert_eq!(conclusion.num_passed, 1);
    assert_eq!(conclusion.num_filtered_out, all_checks().len() as u64 - 1);
    assert_eq!((counts.targets(), counts.contexts()), (1, 1));
}

#[test]
fn listing_the_checks_builds_no_target() {
    let counts = Counts::default();
    let args = Arguments {
        list: true,
        ..Arguments::default()
    };
    let conclusion = run_quietly(args, counts.factory());
    assert_eq!(conclusion.num_passed + conclusion.num_ignored, 0);
    assert_eq!(counts.targets(), 0);
}

#[test]
fn without_a_target_no_check_passes() {
    let conclusion = run_quietly(Arguments::default(), || async { None::<Counted> });
    let checks = all_checks().len() as u64;
    assert_eq!(conclusion.num_passed, 0);
    if backends_required() {
        assert_eq!(conclusion.num_failed, checks);
    } else {
        assert_eq!(conclusion.num_ignored, checks);
    }
}
