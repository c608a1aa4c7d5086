//! The conformance suite as a test binary's harness: one libtest-mimic trial per check, all on
//! one target and one runtime; a binary that tests several targets runs one such suite per
//! target, its trials named after it.
//!
//! The target is built on the first trial that runs, so listing or filtering the checks out
//! starts no server. When the factory returns `None`, every trial is reported as ignored, with
//! the reason, or fails when [`backends_required`].

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, OnceLock};

pub use libtest_mimic::{Arguments, Conclusion, Trial};
use libtest_mimic::{Completion, Failed};

use super::{
    all_checks, backends_required, run_check, Check, IntendedPanic, Target, CHECK_TIMEOUT,
};

/// Runs every check as a test of this binary, against the target `factory` builds, with the
/// command line's options (`--exact NAME`, `--list`, a filter...). What
/// [`conformance_tests!`](crate::conformance_tests) expands to.
pub fn main<T, F, Fut>(factory: F) -> ExitCode
where
    T: Target,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Option<T>> + 'static,
{
    main_of(|args| named_trials("", args, factory))
}

/// Runs the trials `trials` builds for the command line's options (the checks against one
/// target or several, from [`named_trials`]) as the tests of this binary. What
/// [`conformance_tests!`](crate::conformance_tests) expands to when given several targets.
pub fn main_of(trials: impl FnOnce(&Arguments) -> Vec<Trial>) -> ExitCode {
    quiet_intended_panics();
    let args = arguments();
    let trials = trials(&args);
    libtest_mimic::run(&args, trials).exit_code()
}

/// How many checks run at once unless `--test-threads` or `RUST_TEST_THREADS` says otherwise.
/// Most checks wait (a lease to pass, a timer, a waiter to be woken) rather than compute, so
/// this many take a third of the time one per CPU takes on two CPUs.
pub const CHECKS_AT_ONCE: usize = 8;

/// The command line's options, running [`CHECKS_AT_ONCE`] tests at once unless
/// `--test-threads` or `RUST_TEST_THREADS` says otherwise.
pub fn arguments() -> Arguments {
    let mut args = Arguments::from_args();
    args.test_threads = args
        .test_threads
        .or_else(threads_from_env)
        .or(Some(CHECKS_AT_ONCE));
    args
}

fn threads_from_env() -> Option<usize> {
    std::env::var("RUST_TEST_THREADS").ok()?.parse().ok()
}

/// Leaves out of the output the panics the checks raise on purpose (a body that panics, to
/// see what the engine does with the key); every other panic is reported as before.
fn quiet_intended_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<IntendedPanic>().is_none() {
            report(info);
        }
    }));
}

/// Runs every check with `args` against the target `factory` builds, once, on the first check
/// that runs. Prints like `cargo test` and returns the counts.
pub fn run_suite<T, F, Fut>(args: &Arguments, factory: F) -> Conclusion
where
    T: Target,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Option<T>> + 'static,
{
    libtest_mimic::run(args, named_trials("", args, factory))
}

/// Every check as a trial named `{prefix}{check}`, against the target `factory` builds, once, on
/// the first of these trials that runs; for a binary that runs the suite against several
/// targets, each under a prefix of its own (`"sealed::"`), with [`main_of`].
pub fn named_trials<T, F, Fut>(prefix: &str, args: &Arguments, factory: F) -> Vec<Trial>
where
    T: Target,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Option<T>> + 'static,
{
    let suite = Arc::new(Suite::new(args, factory));
    all_checks()
        .into_iter()
        .map(|check| {
            let suite = suite.clone();
            Trial::ignorable_test(format!("{prefix}{}", check.name), move || suite.run(check))
        })
        .collect()
}

/// Why the checks did not run when the factory returned `None`.
const NO_STORE: &str = "no store to test: the factory returned `None`";

/// What every trial of one target shares: the runtime, and the target once built. Dropped with
/// the last trial, once the run is over.
struct Suite {
    /// Built by the first trial that runs, so a binary that lists or filters out these checks
    /// starts no worker thread for them.
    runtime: OnceLock<tokio::runtime::Runtime>,
    /// Checks that run at once: the command line's `--test-threads`, or one per CPU.
    parallel: usize,
    factory: Mutex<Option<Factory>>,
    target: OnceLock<Built>,
}

type Factory = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = Option<Arc<dyn Target>>>>> + Send>;

/// What the factory gave.
enum Built {
    Target(Arc<dyn Target>),
    Nothing,
    Panicked(String),
}

impl Suite {
    fn new<T, F, Fut>(args: &Arguments, factory: F) -> Self
    where
        T: Target,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Option<T>> + 'static,
    {
        let parallel = args
            .test_threads
            .or_else(|| std::thread::available_parallelism().ok().map(Into::into))
            .unwrap_or(1);
        let factory: Factory = Box::new(move || {
            let building = factory();
            Box::pin(async move { Some(Arc::new(building.await?) as Arc<dyn Target>) })
        });
        Suite {
            runtime: OnceLock::new(),
            parallel,
            factory: Mutex::new(Some(factory)),
            target: OnceLock::new(),
        }
    }

    fn run(&self, check: Check) -> Result<Completion, Failed> {
        match self.target() {
            Built::Target(target) => {
                self.runtime()
                    .block_on(run_check(check, target.clone(), CHECK_TIMEOUT));
                Ok(Completion::Completed)
            }
            Built::Nothing if backends_required() => {
                Err(format!("{NO_STORE}, and IDEM_REQUIRE_BACKENDS=1 requires one").into())
            }
            Built::Nothing => Ok(Completion::ignored_with(NO_STORE)),
            Built::Panicked(message) => {
                Err(format!("building the store to test panicked: {message}").into())
            }
        }
    }

    /// The target, built by the first caller; the others wait for it.
    fn target(&self) -> &Built {
        self.target.get_or_init(|| {
            let factory = self
                .factory
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take()
                .expect("the target is built once");
            let built =
                panic::catch_unwind(AssertUnwindSafe(|| self.runtime().block_on(factory())));
            match built {
                Ok(Some(target)) => Built::Target(target),
                Ok(None) => Built::Nothing,
                Err(payload) => Built::Panicked(panic_message(payload.as_ref())),
            }
        })
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.get_or_init(|| {
            // Four workers per check running at once: some checks hold a worker on purpose (a
            // blocking body) or race hundreds of callers, and the others' leases must still be
            // renewed meanwhile.
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(4 * self.parallel)
                .enable_all()
                .build()
                .expect("a Tokio runtime")
        })
    }
}

impl Drop for Suite {
    /// Drops the target (stopping any server it owns), then the runtime without waiting for
    /// tasks a failed check left behind.
    fn drop(&mut self) {
        drop(self.target.take());
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
