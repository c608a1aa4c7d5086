//! The conformance suite of idem's [`Store`] contract: every semantic of idem checked against a
//! real store.
//!
//! Implement [`Target`] for your store and give the suite a test target of its own, without
//! libtest's harness, whose `main` [`conformance_tests!`](crate::conformance_tests) writes:
//!
//! ```toml
//! [dev-dependencies]
//! idem-conformance = "0.1"
//!
//! [[test]]
//! name = "conformance"
//! harness = false
//! ```
//!
//! ```ignore
//! // tests/conformance.rs
//! struct MyTarget { store: Arc<MyStore> }
//!
//! #[async_trait::async_trait]
//! impl idem_conformance::Target for MyTarget {
//!     fn store(&self) -> Arc<dyn idem_core::store::Store> { self.store.clone() }
//!     async fn corrupt(&self, key: &idem_core::Key) -> bool { /* write garbage */ true }
//! }
//!
//! // `None` means "no server here": every check is reported as ignored, or fails when
//! // IDEM_REQUIRE_BACKENDS=1.
//! async fn target() -> Option<MyTarget> { MyTarget::connect().await.ok() }
//!
//! idem_conformance::conformance_tests!(target);
//! ```
//!
//! Each check is a test named after it, so `cargo test --test conformance -- --exact NAME` runs
//! one, and a filter runs some. Each check uses keys in a namespace of its own, so one target
//! serves them all: it is built once, by the first check that runs, on a runtime they share.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod broken;
#[macro_use]
mod check;
mod checks;
mod intercept;
mod probes;
mod reference;
mod reserve_table;
#[cfg(feature = "seal")]
mod sealed;
mod suite;

pub use intercept::{Intercepted, Interceptor, Operation};
pub use reference::ReferenceStore;
pub use reserve_table::{check_reserve_cases, reserve_cases, ReserveCase};
#[cfg(feature = "seal")]
#[cfg_attr(docsrs, doc(cfg(feature = "seal")))]
pub use sealed::Sealed;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use check::{BoxFuture, Check};
pub use suite::{
    arguments, main, main_of, named_trials, run_suite, Arguments, Conclusion, Trial, CHECKS_AT_ONCE,
};

use idem_core::{store::Store, Clock, Idempotency, Key, ReplayCache, SystemClock};

/// A store under test.
#[async_trait]
pub trait Target: Send + Sync + 'static {
    /// The store. Called once per check.
    fn store(&self) -> Arc<dyn Store>;

    /// Writes a value under `key` that the store cannot decode, bypassing the store's API.
    /// Returns `false` if the backend cannot hold such a value (the check then passes vacuously,
    /// saying so on stderr).
    async fn corrupt(&self, key: &Key) -> bool;

    /// A replay cache to put in front of the store in every handle the checks build, so that
    /// the suite checks the store and the cache together. `None` (the default) checks the store
    /// alone.
    fn replay_cache(&self) -> Option<ReplayCache> {
        None
    }
}

/// What a check gets: the target, its store and a namespace of its own.
pub struct Context {
    target: Arc<dyn Target>,
    store: Arc<dyn Store>,
    namespace: String,
}

impl Context {
    /// A context on `target` with a fresh namespace.
    pub fn new(target: Arc<dyn Target>) -> Self {
        let store = target.store();
        Context {
            target,
            store,
            namespace: format!(
                "conformance-{}",
                idem_core::store::OwnerToken::generate().as_str()
            ),
        }
    }

    /// The store under test.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The target.
    pub fn target(&self) -> &Arc<dyn Target> {
        &self.target
    }

    /// A handle on the store in this check's namespace, on the system clock.
    pub fn handle(&self) -> Idempotency {
        self.handle_with(SystemClock, self.store.clone())
    }

    /// A handle on `store` (the store under test, or a probe wrapping it) in this check's
    /// namespace, on `clock`.
    pub fn handle_with(&self, clock: impl Clock, store: Arc<dyn Store>) -> Idempotency {
        let handle = Idempotency::from_arc(store)
            .with_namespace(self.namespace.clone())
            .with_clock(clock);
        match self.target.replay_cache() {
            Some(cache) => handle.with_replay_cache(cache),
            None => handle,
        }
    }

    /// A handle on the store under test, through a probe that adds a permit to the returned
    /// semaphore each time a caller starts waiting for a duplicate.
    pub(crate) fn observed_handle(&self) -> (Idempotency, Arc<tokio::sync::Semaphore>) {
        let parked = Arc::new(tokio::sync::Semaphore::new(0));
        let store = probes::Probe::observing(self.store.clone(), parked.clone());
        (self.handle_with(SystemClock, store), parked)
    }

    /// A key of this check's namespace.
    pub fn key(&self, name: &str) -> Key {
        self.handle()
            .key(name)
            .finish()
            .expect("short keys are valid")
    }
}

/// The payload of a panic a check raises on purpose, inside a body, to see what the engine
/// does with the key. [`conformance_tests!`](crate::conformance_tests) leaves these out of its
/// output; a harness of your own may do the same with a panic hook.
#[derive(Debug)]
pub struct IntendedPanic(pub &'static str);

/// Whether backend tests must fail instead of skipping when their server is missing
/// (`IDEM_REQUIRE_BACKENDS=1`).
pub fn backends_required() -> bool {
    std::env::var("IDEM_REQUIRE_BACKENDS").is_ok_and(|v| v == "1" || v == "true")
}

/// How long one check may take before it fails, naming itself: a broken store must fail the
/// suite, not hang it.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// Every check of the suite, in the order [`conformance_tests!`](crate::conformance_tests)
/// lists them.
pub fn all_checks() -> Vec<Check> {
    checks::all()
}

/// Runs `check` against `target` on the current runtime, failing with the check's name if it
/// takes longer than `timeout`.
pub async fn run_check(check: Check, target: Arc<dyn Target>, timeout: Duration) {
    let running = (check.run)(Context::new(target));
    if tokio::time::timeout(timeout, running).await.is_err() {
        panic!(
            "conformance check `{}` timed out after {timeout:?}: a store that breaks the contract \
             can leave it waiting forever; see which wait it reports above, if any",
            check.name
        );
    }
}

/// Waits for `future`, failing with `what` it was waiting for after `within`: the checks wrap
/// every wait that a broken store could make endless.
pub(crate) async fn waiting_for<F: Future>(what: &str, within: Duration, future: F) -> F::Output {
    match tokio::time::timeout(within, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {within:?} waiting for {what}"),
    }
}

/// Expands to the `main` of a test target with `harness = false` that runs every conformance
/// check, each as a test of its own, against the target built by `$factory`, an
/// `async fn() -> Option<impl Target>`. See the [module docs](crate).
///
/// More targets may follow, each as `name => factory`: their checks are named `name::check`,
/// so that one binary tests a store in several configurations.
#[macro_export]
macro_rules! conformance_tests {
    ($factory:path) => {
        fn main() -> ::std::process::ExitCode {
            $crate::main($factory)
        }
    };
    ($factory:path, $($name:ident => $more:path),+ $(,)?) => {
        fn main() -> ::std::process::ExitCode {
            $crate::main_of(|args| {
                let mut trials = $crate::named_trials("", args, $factory);
                $(
                    trials.extend($crate::named_trials(
                        concat!(stringify!($name), "::"),
                        args,
                        $more,
                    ));
                )+
                trials
            })
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    struct CachedReference;

    #[async_trait]
    impl Target for CachedReference {
        fn store(&self) -> Arc<dyn Store> {
            Arc::new(ReferenceStore::new())
        }

        async fn corrupt(&self, _: &Key) -> bool {
            false
        }

        fn replay_cache(&self) -> Option<ReplayCache> {
            Some(ReplayCache::new(10, 1 << 10))
        }
    }

    #[test]
    fn a_target_with_a_replay_cache_puts_one_in_every_handle() {
        let ctx = Context::new(Arc::new(CachedReference));
        let cache = ctx.handle().replay_cache().map(ReplayCache::max_entries);
        assert_eq!(cache, Some(10));
        let with_clock = ctx.handle_with(idem_core::ManualClock::new(), ctx.store().clone());
        assert!(with_clock.replay_cache().is_some());
    }
}
