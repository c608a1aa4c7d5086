//! The store conformance suite: every semantic of idem checked against a real store.
//!
//! Implement [`Target`] for your store and generate one `#[test]` per check with
//! [`conformance_tests!`](crate::conformance_tests):
//!
//! ```ignore
//! struct MyTarget { store: Arc<MyStore> }
//!
//! #[async_trait::async_trait]
//! impl idem_core::testing::Target for MyTarget {
//!     fn store(&self) -> Arc<dyn idem_core::Store> { self.store.clone() }
//!     async fn corrupt(&self, key: &idem_core::Key) -> bool { /* write garbage */ true }
//! }
//!
//! // `None` means "no server here": the tests skip, or fail when IDEM_REQUIRE_BACKENDS=1.
//! async fn target() -> Option<MyTarget> { Some(MyTarget::connect().await) }
//!
//! idem_core::conformance_tests!(target);
//! ```
//!
//! Each check uses keys in a namespace of its own, so one store may serve every check.

pub mod broken;
pub mod checks;
mod probes;
mod reference;

pub use reference::ReferenceStore;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::{Clock, Idempotency, Key, Store, SystemClock};

/// A store under test.
#[async_trait]
pub trait Target: Send + Sync + 'static {
    /// The store. Called once per check.
    fn store(&self) -> Arc<dyn Store>;

    /// Writes a value under `key` that the store cannot decode, bypassing the store's API.
    /// Returns `false` if the backend cannot hold such a value (the check then passes vacuously,
    /// saying so on stderr).
    async fn corrupt(&self, key: &Key) -> bool;
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
            namespace: format!("conformance-{}", crate::OwnerToken::generate().as_str()),
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
        Idempotency::from_arc(store)
            .with_namespace(self.namespace.clone())
            .with_clock(clock)
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

/// Whether backend tests must fail instead of skipping when their server is missing
/// (`IDEM_REQUIRE_BACKENDS=1`).
pub fn backends_required() -> bool {
    std::env::var("IDEM_REQUIRE_BACKENDS").is_ok_and(|v| v == "1" || v == "true")
}

/// How long one check may take before it fails, naming itself: a broken store must fail the
/// suite, not hang it.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// One conformance check: its name and its function.
#[derive(Clone, Copy)]
pub struct Check {
    /// The check's name, as its `#[test]` is named.
    pub name: &'static str,
    /// Runs the check; panics when the store breaks the contract.
    pub run: fn(Context) -> BoxFuture,
}

/// The future of a running check.
pub type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every check of the suite, in the order [`conformance_tests!`](crate::conformance_tests)
/// generates them.
pub fn all_checks() -> Vec<Check> {
    crate::__with_checks!(list)
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

/// Runs the check called `name` on a multi-threaded runtime: builds the target with `factory`,
/// skipping (or failing, see [`backends_required`]) when it returns `None`. Fails after
/// [`CHECK_TIMEOUT`].
pub fn run<T, F, Fut>(name: &str, factory: F)
where
    T: Target,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let check = all_checks()
        .into_iter()
        .find(|check| check.name == name)
        .unwrap_or_else(|| panic!("no conformance check named `{name}`"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    runtime.block_on(async {
        let Some(target) = factory().await else {
            assert!(
                !backends_required(),
                "conformance check `{name}`: no store to test and IDEM_REQUIRE_BACKENDS=1"
            );
            eprintln!("SKIPPED conformance check `{name}`: no store to test (set IDEM_REQUIRE_BACKENDS=1 to fail instead)");
            return;
        };
        run_check(check, Arc::new(target), CHECK_TIMEOUT).await;
    });
}

/// Waits for `future`, failing with `what` it was waiting for after `within`: the checks wrap
/// every wait that a broken store could make endless.
pub(crate) async fn waiting_for<F: Future>(what: &str, within: Duration, future: F) -> F::Output {
    match tokio::time::timeout(within, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {within:?} waiting for {what}"),
    }
}

/// Generates one `#[test]` per conformance check for the target built by `$factory`, an
/// `async fn() -> Option<impl Target>`.
#[macro_export]
macro_rules! conformance_tests {
    ($factory:path) => {
        $crate::__with_checks!(tests $factory);
    };
}

/// Expands `$mode` (`tests FACTORY` or `list`) of [`__checks`](crate::__checks) with the name of
/// every check: the one list of checks, which the generated tests and [`all_checks`] share.
#[doc(hidden)]
#[macro_export]
macro_rules! __with_checks {
    ($mode:ident $($factory:path)?) => {
        $crate::__checks! {
            $mode [$($factory)?]
            fresh_call_runs_then_replays,
            concurrent_reservations_admit_exactly_one,
            concurrent_callers_run_once,
            concurrent_waiters_all_get_the_one_result,
            duplicate_in_flight_is_in_progress,
            waiting_duplicate_gets_the_result,
            mismatch_on_completed_record,
            mismatch_on_in_progress_record,
            mismatch_on_lease_passed_record,
            mismatch_while_waiting,
            error_releases_the_key,
            stored_error_is_replayed,
            drop_after_start_holds_the_key,
            panic_after_start_holds_the_key,
            on_abort_release_frees_the_key,
            on_abort_fail_records_the_abort,
            lease_is_renewed_while_running,
            lease_takeover_fences_the_stale_owner,
            only_the_owner_completes_releases_or_renews,
            ttl_expiry_makes_the_key_new,
            store_failure_fails_closed,
            undecodable_result_is_a_codec_error,
            corrupt_record_is_an_error_not_a_panic,
            forget_unblocks_a_key,
            lost_completion_answer_is_retried,
            cancellation_during_reserve_releases_the_key,
            cancellation_during_completion_still_records,
            unserialisable_outcome_keeps_the_key,
            abandoned_reservation_is_free_for_anyone,
            lease_is_renewed_while_the_body_blocks_its_thread,
            context_is_set_only_inside_a_body,
            attempt_and_fencing_token_grow_across_a_takeover,
            lease_lost_fires_when_another_owner_took_over,
            renewal_continues_through_a_slow_completion,
            completion_retries_stop_before_the_lease_passes,
            lease_passes_exactly_at_its_deadline,
            ttl_passes_exactly_at_expiry,
            abandonment_starts_exactly_a_grace_after_the_lease,
            fenced_writes_never_recreate_a_record,
            a_completed_record_is_not_renewed,
            ttl_is_counted_from_completion,
            a_wait_that_ends_is_in_progress,
            completion_is_tried_three_times,
            a_lost_completion_is_not_mistaken_for_another_owners,
            on_abort_release_after_a_wait_frees_the_key,
            renewal_failures_are_retried_while_the_lease_holds,
            lease_lost_fires_when_renewals_fail_until_the_lease_passes,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __checks {
    (tests [$factory:path] $($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            $crate::testing::run(stringify!($check), $factory);
        }
    )*};
    (list [] $($check:ident),* $(,)?) => {
        vec![$($crate::testing::Check {
            name: stringify!($check),
            run: |ctx| ::std::boxed::Box::pin($crate::testing::checks::$check(ctx)),
        }),*]
    };
}
