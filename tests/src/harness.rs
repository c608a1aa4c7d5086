//! The harness of the backend tests: each test runs as a libtest-mimic trial, so that a test
//! whose server cannot be had is reported as ignored, with the reason, instead of passing.
//!
//! A module of a test binary lists its test functions, plain or `async`, in
//! [`module_tests!`](crate::module_tests) (see [`binary`](crate::binary)); a binary that gathers
//! its own list of [`Test`]s runs it with [`main`].
//!
//! ```ignore
//! fn owned_server_restarts() {
//!     let Some(mut redis) = TestRedis::start_owned() else { return };
//!     // ...
//! }
//!
//! async fn keys_expire() { /* ... */ }
//!
//! idem_tests::module_tests! {
//!     fn owned_server_restarts,
//!     async keys_expire,
//! }
//! ```
//!
//! The server helpers of idem-test-servers
//! ([`TestRedis`](idem_test_servers::redis::server::TestRedis),
//! [`TestMoto`](idem_test_servers::dynamodb::server::TestMoto) and those built on them) return
//! `None` when their server cannot be had, and the test returns early; they first tell the
//! harness why ([`availability`]), which then reports the test as ignored with that reason.
//! With `IDEM_REQUIRE_BACKENDS=1` they panic instead, failing the test. An `async` test runs on
//! a multi-threaded runtime of its own with two workers.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::{PoisonError, RwLock};

use idem_test_servers::availability;
use idem_test_servers::shared::share_servers_while;
use libtest_mimic::{Completion, Failed, Trial};

/// One test of a backend file: its name, its function, why it is ignored, if it is, whether
/// it must run alone, and whether it is long.
pub struct Test {
    name: &'static str,
    body: Body,
    ignored: Option<&'static str>,
    alone: bool,
    long: bool,
}

/// The kind (`test [long] name`) of a trial started before the others.
pub const LONG: &str = "long";

/// Held for reading by every test while it runs, for writing by a test that runs alone.
static TURN: RwLock<()> = RwLock::new(());

enum Body {
    Plain(fn()),
    Async(fn() -> LocalFuture),
}

/// The future of a running `async` test.
pub type LocalFuture = Pin<Box<dyn Future<Output = ()>>>;

impl Test {
    /// A plain test.
    pub fn plain(name: &'static str, body: fn()) -> Self {
        Test {
            name,
            body: Body::Plain(body),
            ignored: None,
            alone: false,
            long: false,
        }
    }

    /// An `async` test, given as a function returning its boxed future.
    pub fn asynchronous(name: &'static str, body: fn() -> LocalFuture) -> Self {
        Test {
            name,
            body: Body::Async(body),
            ignored: None,
            alone: false,
            long: false,
        }
    }

    /// The same test, ignored for `reason` (a known bug, say): run only with `--ignored` or
    /// `--include-ignored`.
    pub fn ignored(mut self, reason: &'static str) -> Self {
        self.ignored = Some(reason);
        self
    }

    /// The same test, run while no other test of the binary runs (one that measures the
    /// process's allocations, say); the others wait for it. Conformance checks, which are
    /// not [`Test`]s, do not: a binary with such a test runs none.
    pub fn alone(mut self) -> Self {
        self.alone = true;
        self
    }

    /// The same test, started before the others (see [`long_first`]): one that takes many
    /// times as long as most, so that it does not end the run alone.
    pub fn long(mut self) -> Self {
        self.long = true;
        self
    }

    /// This test as a libtest-mimic trial named `{prefix}{name}`, of kind [`LONG`] if it is.
    pub fn into_trial(self, prefix: &str) -> Trial {
        let ignored = self.ignored.is_some();
        let kind = if self.long { LONG } else { "" };
        Trial::ignorable_test(format!("{prefix}{}", self.name), move || self.run())
            .with_ignored_flag(ignored)
            .with_kind(kind)
    }

    fn run(self) -> Result<Completion, Failed> {
        // A test that panics poisons the lock, which guards nothing but the turn.
        let _turn = if self.alone {
            (
                None,
                Some(TURN.write().unwrap_or_else(PoisonError::into_inner)),
            )
        } else {
            (
                Some(TURN.read().unwrap_or_else(PoisonError::into_inner)),
                None,
            )
        };
        let unavailable = availability::run_test(|| match self.body {
            Body::Plain(body) => body(),
            Body::Async(body) => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a Tokio runtime")
                .block_on(body()),
        });
        Ok(match unavailable {
            Some(reason) => Completion::ignored_with(reason),
            None => Completion::Completed,
        })
    }
}

/// Runs `tests` with the command line's options (`--exact NAME`, a filter...),
/// [`CHECKS_AT_ONCE`](idem_conformance::CHECKS_AT_ONCE) at once unless they say otherwise,
/// sharing the servers tests merely use ([`idem_test_servers::shared`]): the `main` of a
/// binary that gathers its own list of [`Test`]s.
pub fn main(tests: Vec<Test>) -> ExitCode {
    let mut trials: Vec<Trial> = tests.into_iter().map(|test| test.into_trial("")).collect();
    long_first(&mut trials);
    let args = idem_conformance::arguments();
    share_servers_while(|| libtest_mimic::run(&args, trials)).exit_code()
}

/// Puts the [long](Test::long) trials first, in their order, then the others in theirs:
/// libtest-mimic starts trials in the order given, and a long test started last would run
/// alone at the end while the other threads have nothing left to do.
pub fn long_first(trials: &mut [Trial]) {
    trials.sort_by_key(|trial| trial.kind() != LONG);
}

#[doc(hidden)]
#[macro_export]
macro_rules! __backend_test {
    (fn $name:ident) => {
        $crate::harness::Test::plain(::core::stringify!($name), $name)
    };
    (async $name:ident) => {
        $crate::harness::Test::asynchronous(::core::stringify!($name), || {
            ::std::boxed::Box::pin($name())
        })
    };
}
