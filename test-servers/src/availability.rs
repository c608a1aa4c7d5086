//! What a server helper does when its server cannot be had: it panics when backends are
//! required (`IDEM_REQUIRE_BACKENDS=1`, set by CI), else tells the test harness why and returns
//! `None`, and the test returns early.
//!
//! A harness runs each test through [`run_test`], which returns the reason a helper gave, if
//! one did: the harness then reports the test as ignored with that reason instead of as passed
//! (idem-tests' `module_tests!` does). The helpers find the running test through the thread
//! they are called on, so they must be called from the test's own thread: its body, or the
//! `block_on` of an `async` one.

use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

pub use idem_conformance::backends_required;

/// The environment variable that makes a missing server a failure, not an ignored test.
pub const REQUIRE_VAR: &str = "IDEM_REQUIRE_BACKENDS";

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

/// Whether this process runs its tests through [`run_test`].
static HARNESS: AtomicBool = AtomicBool::new(false);

/// Runs `test` on this thread; returns why its server cannot be had if a helper said so while
/// it ran, `None` if none did.
pub fn run_test(test: impl FnOnce()) -> Option<String> {
    HARNESS.store(true, Ordering::SeqCst);
    SERVER.set(Server::Unknown);
    test();
    match SERVER.replace(Server::NoTest) {
        Server::Unavailable(reason) => Some(reason),
        Server::NoTest | Server::Unknown => None,
    }
}

/// Builds a target that several tests share (a conformance suite's store) with `building`,
/// polled on this thread as a test of its own: a helper that finds no server makes it `None`,
/// which the suite reports as ignored checks, where a helper called outside any test of a
/// harness would panic. With backends required, the helper panics as in a test.
pub async fn build_shared_target<T>(building: impl Future<Output = Option<T>>) -> Option<T> {
    let outer = SERVER.replace(Server::Unknown);
    let built = building.await;
    match SERVER.replace(outer) {
        Server::Unavailable(_) => None,
        Server::NoTest | Server::Unknown => built,
    }
}

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
fn server_unavailable(reason: &str, help: &str) {
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

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    use super::{build_shared_target, run_test, server_unavailable};

    /// The value of a future that is ready when first polled.
    fn ready<T>(future: impl Future<Output = T>) -> T {
        match std::pin::pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(value) => value,
            Poll::Pending => panic!("the future was not ready"),
        }
    }

    #[test]
    fn a_test_whose_server_is_unavailable_returns_the_reason() {
        let reason = run_test(|| server_unavailable("no redis-server", "install it"));
        assert_eq!(reason.as_deref(), Some("no redis-server"));
    }

    #[test]
    fn a_test_no_helper_spoke_for_returns_none_even_after_one_that_did() {
        assert!(run_test(|| server_unavailable("no moto_server", "install it")).is_some());
        assert_eq!(run_test(|| ()), None);
    }

    #[test]
    fn the_last_reason_a_test_was_given_is_the_one_returned() {
        let reason = run_test(|| {
            server_unavailable("no redis-server", "install it");
            server_unavailable("no redis-cli", "install it");
        });
        assert_eq!(reason.as_deref(), Some("no redis-cli"));
    }

    #[test]
    fn a_shared_target_without_its_server_is_none_even_in_a_harness() {
        run_test(|| ());
        let built = ready(build_shared_target(async {
            server_unavailable("no redis-server", "install it");
            Some(1)
        }));
        assert_eq!(built, None);
        let built = ready(build_shared_target(async { Some(2) }));
        assert_eq!(built, Some(2));
    }

    #[test]
    fn a_helper_off_the_tests_thread_panics_rather_than_let_the_test_pass() {
        let mut joined = None;
        let reason = run_test(|| {
            let helper = std::thread::spawn(|| server_unavailable("no postgres", "install it"));
            joined = Some(helper.join());
        });
        assert!(joined.expect("the test ran").is_err());
        assert_eq!(reason, None);
    }
}
