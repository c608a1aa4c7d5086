//! The harness of the backend test files: each test runs as a libtest-mimic trial, so that a
//! test whose server cannot be had is reported as ignored, with the reason, instead of passing.
//!
//! A file lists its test functions, plain or `async`, in
//! [`backend_tests!`](crate::backend_tests), which writes the file's `main`; its `[[test]]` in
//! `Cargo.toml` has `harness = false`:
//!
//! ```ignore
//! fn owned_server_restarts() {
//!     let Some(mut redis) = TestRedis::start_owned() else { return };
//!     // ...
//! }
//!
//! async fn keys_expire() { /* ... */ }
//!
//! idem_tests::backend_tests! {
//!     fn owned_server_restarts,
//!     async keys_expire,
//! }
//! ```
//!
//! The server helpers ([`TestRedis`](crate::redis::server::TestRedis),
//! [`TestMoto`](crate::dynamodb::server::TestMoto) and those built on them) return `None` when their
//! server cannot be had, and the test returns early; they first tell the harness why
//! (`server_unavailable`), which then reports the test as ignored with that reason. With
//! `IDEM_REQUIRE_BACKENDS=1` they panic instead, failing the test. An `async` test runs on a
//! multi-threaded runtime of its own with two workers.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// One test of a backend file: its name, its function, and why it is ignored, if it is.
pub struct Test {
    name: &'static str,
    body: Body,
    ignored: Option<&'static str>,
}

enum Body {
    Plain(fn()),
    Async(fn() -> LocalFuture),
}

/// The future of a running `async` test.
pub type LocalFuture = Pin<Box<dyn Future<Output = ()>>>;

/// What is known on this thread about the server of the test it runs.
enum Server {
    /// No test runs on this thread.
    NoTest,
    /// A test runs, and no helper said its server is unavailable.
    Unknown,
    /// A test runs, and a helper said its server is unavailable, for this reason.
    Unavailable(String),
}

thread_local! {
    // The helpers are called from the test's own thread (its body, or the `block_on` of an
    // `async` one), so a thread-local finds the test they were called for.
    static SERVER: RefCell<Server> = const { RefCell::new(Server::NoTest) };
}

/// Whether this process runs its tests through [`main`].
static HARNESS: AtomicBool = AtomicBool::new(false);

impl Test {
    /// A plain test.
    pub fn plain(name: &'static str, body: fn()) -> Self {
        Test {
            name,
            body: Body::Plain(body),
            ignored: None,
        }
    }

    /// An `async` test, given as a function returning its boxed future.
    pub fn asynchronous(name: &'static str, body: fn() -> LocalFuture) -> Self {
        Test {
            name,
            body: Body::Async(body),
            ignored: None,
        }
    }

    /// The same test, ignored for `reason` (a known bug, say): run only with `--ignored` or
    /// `--include-ignored`.
    pub fn ignored(mut self, reason: &'static str) -> Self {
        self.ignored = Some(reason);
        self
    }

    fn run(self) -> Result<Completion, Failed> {
        SERVER.set(Server::Unknown);
        match self.body {
            Body::Plain(body) => body(),
            Body::Async(body) => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a Tokio runtime")
                .block_on(body()),
        }
        Ok(match SERVER.replace(Server::NoTest) {
            Server::Unavailable(reason) => Completion::ignored_with(reason),
            Server::NoTest | Server::Unknown => Completion::Completed,
        })
    }
}

/// Runs `tests` with the command line's options (`--exact NAME`, a filter...). What
/// [`backend_tests!`](crate::backend_tests) expands to.
pub fn main(tests: Vec<Test>) -> ExitCode {
    HARNESS.store(true, Ordering::SeqCst);
    let trials = tests
        .into_iter()
        .map(|test| {
            let ignored = test.ignored.is_some();
            Trial::ignorable_test(test.name, move || test.run()).with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

pub use idem_conformance::backends_required;

/// The environment variable that makes a missing server a failure, not an ignored test.
pub const REQUIRE_VAR: &str = "IDEM_REQUIRE_BACKENDS";

/// A server helper's answer when its server can't be had: a panic naming `backend` when
/// backends are required, else `None`, after telling the harness `reason` and what to do:
/// `missing` ("No Redis server") and `how_to_get_one`.
pub(crate) fn unavailable<T>(
    backend: &str,
    missing: &str,
    how_to_get_one: &str,
    reason: &str,
) -> Option<T> {
    if backends_required() {
        panic!("{backend} is required ({REQUIRE_VAR} is set) but unavailable: {reason}");
    }
    server_unavailable(
        reason,
        &format!("{missing}: {how_to_get_one}. Set {REQUIRE_VAR}=1 to make this a failure."),
    );
    None
}

/// Tells the harness that the running test's server cannot be had, for `reason`, so that the
/// test is reported as ignored with it; `help` (how to get a server) is printed once. Outside
/// the harness (a conformance suite, a benchmark), prints both.
pub(crate) fn server_unavailable(reason: &str, help: &str) {
    static HELP: Once = Once::new();
    let told = SERVER.with_borrow_mut(|server| match server {
        Server::NoTest => false,
        Server::Unknown | Server::Unavailable(_) => {
            *server = Server::Unavailable(reason.to_owned());
            true
        }
    });
    if told {
        HELP.call_once(|| eprintln!("{help}"));
        return;
    }
    assert!(
        !HARNESS.load(Ordering::SeqCst),
        "no server ({reason}), but the helper ran off the test's own thread, so the test \
         could not be reported as ignored: call it from the test function itself"
    );
    eprintln!("{reason}\n{help}");
}

/// Writes the `main` of a backend test file: every listed function is a test, `fn NAME` for a
/// plain one, `async NAME` for an `async` one, either followed by `= ignore("reason")` for one
/// that runs only when asked for (`--ignored`). See the [`harness`](crate::harness) module.
#[macro_export]
macro_rules! backend_tests {
    ($($kind:tt $name:ident $(= ignore($reason:literal))?),* $(,)?) => {
        fn main() -> ::std::process::ExitCode {
            $crate::harness::main(::std::vec![$(
                $crate::__backend_test!($kind $name)$(.ignored($reason))?
            ),*])
        }
    };
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
