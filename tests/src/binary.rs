//! One test binary made of many modules, each the tests of one topic (a backend file of old):
//! [`binary_main!`](crate::binary_main) writes the binary's `mod` lines, each under the
//! features its module needs, and a `main` that runs every module's tests as libtest-mimic
//! trials; a module lists its tests in [`module_tests!`](crate::module_tests), or runs the
//! conformance suite with [`conformance_module!`](crate::conformance_module).
//!
//! ```ignore
//! // tests/backend/main.rs
//! idem_tests::binary_main! {
//!     #[cfg(feature = "redis")] redis_steps,
//!     #[cfg(feature = "redis")] redis_conformance,
//! }
//!
//! // tests/backend/redis_steps.rs
//! async fn steps_stay_for_the_same_call_only() { /* ... */ }
//!
//! idem_tests::module_tests! {
//!     async steps_stay_for_the_same_call_only,
//! }
//! ```
//!
//! Each test is named after its module, `redis_steps::steps_stay_for_the_same_call_only`, so
//! `--exact` names one test and a module's name as a filter runs the module.
//!
//! Most backend tests spend their time waiting (a server's start, a lease, a timer), so unless
//! the command line (`--test-threads`) or `RUST_TEST_THREADS` says otherwise, the tests run
//! [`CHECKS_AT_ONCE`](idem_conformance::CHECKS_AT_ONCE) at once, as the conformance suite's
//! checks do, not one per CPU: on two CPUs the backend suite takes about half as long as on
//! two threads; on sixteen, no less than on eight, and its servers start less surely.

use std::process::ExitCode;

use idem_conformance::{IntendedPanic, Target};
use idem_test_servers::availability;
use idem_test_servers::shared::share_servers_while;
pub use libtest_mimic::{Arguments, Trial};

use crate::harness::{long_first, Test};

/// Runs the trials `gather` makes for the command line's options,
/// [`CHECKS_AT_ONCE`](idem_conformance::CHECKS_AT_ONCE) at once unless it says otherwise,
/// sharing the servers tests merely use ([`idem_test_servers::shared`]). What
/// [`binary_main!`](crate::binary_main) expands to.
pub fn main(gather: impl FnOnce(&Arguments) -> Vec<Trial>) -> ExitCode {
    quiet_intended_panics();
    let args = idem_conformance::arguments();
    let mut trials = gather(&args);
    long_first(&mut trials);
    share_servers_while(|| libtest_mimic::run(&args, trials)).exit_code()
}

/// Leaves out of the output the panics the conformance checks raise on purpose; every other
/// panic is reported as before.
fn quiet_intended_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<IntendedPanic>().is_none() {
            report(info);
        }
    }));
}

/// The module's name in a `module_path!()`: what follows the crate's name.
fn module_name(module_path: &str) -> &str {
    module_path
        .split_once("::")
        .map_or(module_path, |(_, module)| module)
}

/// `tests` as trials named `module::test`, for the module whose `module_path!()` is
/// `module_path`. What [`module_tests!`](crate::module_tests) expands to.
pub fn module_trials(module_path: &str, tests: Vec<Test>) -> Vec<Trial> {
    let module = module_name(module_path);
    tests
        .into_iter()
        .map(|test| test.into_trial(&format!("{module}::")))
        .collect()
}

/// Every conformance check as a trial named `module::check`, against the target `factory`
/// builds. What [`conformance_module!`](crate::conformance_module) expands to.
pub fn conformance_trials<T, F, Fut>(module_path: &str, args: &Arguments, factory: F) -> Vec<Trial>
where
    T: Target,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Option<T>> + 'static,
{
    let prefix = format!("{}::", module_name(module_path));
    // Built inside a trial but for all of them: a missing server makes the checks ignored, as
    // the module's own tests are, and not failures.
    idem_conformance::named_trials(&prefix, args, move || {
        availability::build_shared_target(factory())
    })
}

/// Writes a test binary's modules and its `main`: each entry is a module's name, after the
/// attributes its `mod` line takes (`#[cfg(feature = "redis")]`); every module defines
/// `tests`, with [`module_tests!`](crate::module_tests) or
/// [`conformance_module!`](crate::conformance_module). See the [`binary`](crate::binary)
/// module.
#[macro_export]
macro_rules! binary_main {
    ($($(#[$attr:meta])* $module:ident),* $(,)?) => {
        $($(#[$attr])* mod $module;)*

        fn main() -> ::std::process::ExitCode {
            $crate::binary::main(|args| {
                let mut trials = ::std::vec::Vec::new();
                $(
                    $(#[$attr])*
                    trials.extend($module::tests(args));
                )*
                trials
            })
        }
    };
}

/// Writes the `tests` of a module of a [`binary_main!`](crate::binary_main) binary: every
/// listed function is a test, `fn NAME` for a plain one, `async NAME` for an `async` one,
/// either followed by `= ignore("reason")` for one that runs only when asked for, `= alone`
/// for one that runs while no other test of the binary does, or `= long` for one that takes
/// many times as long as most, started before the others
/// ([`Test::long`](crate::harness::Test::long)).
#[macro_export]
macro_rules! module_tests {
    ($($kind:tt $name:ident $(= $how:ident $(($reason:literal))?)?),* $(,)?) => {
        pub(crate) fn tests(
            _: &$crate::binary::Arguments,
        ) -> ::std::vec::Vec<$crate::binary::Trial> {
            $crate::binary::module_trials(::core::module_path!(), ::std::vec![$(
                $crate::__how!(
                    $crate::__backend_test!($kind $name) $(, $how $(($reason))?)?
                )
            ),*])
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __how {
    ($test:expr) => {
        $test
    };
    ($test:expr, ignore($reason:literal)) => {
        $test.ignored($reason)
    };
    ($test:expr, alone) => {
        $test.alone()
    };
    ($test:expr, long) => {
        $test.long()
    };
}

/// Writes the `tests` of a module of a [`binary_main!`](crate::binary_main) binary that runs
/// the conformance suite against the target `$factory` builds (an
/// `async fn() -> Option<impl Target>`), once, on the first check that runs.
#[macro_export]
macro_rules! conformance_module {
    ($factory:path) => {
        pub(crate) fn tests(
            args: &$crate::binary::Arguments,
        ) -> ::std::vec::Vec<$crate::binary::Trial> {
            $crate::binary::conformance_trials(::core::module_path!(), args, $factory)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::module_name;

    #[test]
    fn a_modules_name_leaves_out_the_crate() {
        assert_eq!(module_name("it_backend::redis_steps"), "redis_steps");
        assert_eq!(module_name("redis_steps"), "redis_steps");
    }
}
