//! What every store's tests check, each on a store of its own: records written through a
//! handle, then read and changed with the `idem` binary.

mod damaged;
mod listing;
mod purging;
mod reading;
mod release_forget;

use serde_json::Value;

// `it_cli` includes the support without running the scenarios.
#[allow(unused_imports)]
pub use self::damaged::{
    corrupt_record_is_reported_and_forgotten, unkeyed_entries_are_listed_and_counted,
};
#[allow(unused_imports)]
pub use self::listing::{
    functions_lists_names_as_the_attribute_makes_them, list_by_the_scope_idem_scope_prints,
    list_filters_by_function_state_and_limit, list_json_says_when_it_stopped_early,
    stats_count_by_function_and_state,
};
#[allow(unused_imports)]
pub use self::purging::{purge_expired_keeps_live_records, purge_stays_inside_its_prefix};
#[allow(unused_imports)]
pub use self::reading::{get_shows_each_kind_of_record, unknown_and_malformed_keys};
#[allow(unused_imports)]
pub use self::release_forget::{
    forget_deletes_the_record, forget_needs_yes_and_running_for_a_held_key,
    release_needs_yes_and_frees_the_key, release_refuses_a_finished_key,
};

/// Writes one test function per scenario, each on a fresh store from `$start` (an `async fn()
/// -> Option<Subject>`, `None` when there is no server), and the module's `tests()`, which
/// lists them and the module's own `async` tests `$extra`, each named `$module::NAME`, for the
/// backend binary's `main` to run.
#[allow(unused_macros)] // `it_cli` includes the support without using it.
macro_rules! store_tests {
    ($module:ident: $start:ident $(, $extra:ident)* $(,)?) => {
        $crate::support::scenarios::store_tests!(@each $module $start [$($extra),*],
            get_shows_each_kind_of_record,
            unknown_and_malformed_keys,
            release_needs_yes_and_frees_the_key,
            release_refuses_a_finished_key,
            forget_deletes_the_record,
            forget_needs_yes_and_running_for_a_held_key,
            list_filters_by_function_state_and_limit,
            list_json_says_when_it_stopped_early,
            list_by_the_scope_idem_scope_prints,
            functions_lists_names_as_the_attribute_makes_them,
            stats_count_by_function_and_state,
            purge_expired_keeps_live_records,
        );
    };
    (@each $module:ident $start:ident [$($extra:ident),*], $($scenario:ident),* $(,)?) => {
        $(
            async fn $scenario() {
                let Some(subject) = $start().await else { return };
                $crate::support::scenarios::$scenario(&subject).await;
            }
        )*
        /// This store's tests, each named `MODULE::NAME`.
        pub(crate) fn tests() -> ::std::vec::Vec<idem_tests::harness::Test> {
            ::std::vec![$(
                idem_tests::harness::Test::asynchronous(
                    ::core::concat!(::core::stringify!($module), "::", ::core::stringify!($scenario)),
                    || ::std::boxed::Box::pin($scenario()),
                ),
            )* $(
                idem_tests::harness::Test::asynchronous(
                    ::core::concat!(::core::stringify!($module), "::", ::core::stringify!($extra)),
                    || ::std::boxed::Box::pin($extra()),
                ),
            )*]
        }
    };
}
#[allow(unused_imports)]
pub(crate) use store_tests;

/// The keys of a `list --json` run, sorted.
fn keys(listed: &Value) -> Vec<String> {
    let mut keys: Vec<String> = listed
        .as_array()
        .unwrap_or_else(|| panic!("an array: {listed}"))
        .iter()
        .map(|record| record["key"].as_str().expect("a key").to_owned())
        .collect();
    keys.sort();
    keys
}
