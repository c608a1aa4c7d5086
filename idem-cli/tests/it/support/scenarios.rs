//! What every store's tests check, each on a store of its own: records written through a
//! handle, then read and changed with the `idem` binary.

use serde_json::{json, Value};

use super::records::{call_again, completed, completed_in_scope, hold, key, stored_error};
use super::Subject;

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

/// `get` shows a completed record, a stored error and a held call, as a table and as JSON.
pub async fn get_shows_each_kind_of_record(s: &Subject) {
    let done = completed(&s.idem, "charge", "order-1").await;
    let failed = stored_error(&s.idem, "charge", "order-2").await;
    let held = hold(&s.idem, "refund", "order-3").await;

    let shown = s.cli.run(&["get", done.as_str()]);
    shown
        .exits(0)
        .prints("completed")
        .prints("outcome")
        .prints("(in 23h)");
    assert!(shown.stdout.contains(done.as_str()), "{shown:#?}");
    let doc = s.cli.run(&["--json", "get", done.as_str()]).exits(0).json();
    assert_eq!(doc["key"], done.as_str());
    assert_eq!(doc["function"], "charge");
    assert_eq!(doc["state"], "completed");
    assert_eq!(doc["outcome"], "ok");
    assert_eq!(doc["owner"], Value::Null);
    assert_eq!(doc["steps"], json!([]));
    assert_eq!(doc["stored_bytes"], "\"receipt-order-1\"".len());
    assert_rfc3339(&doc["expires_at"]);

    let doc = s
        .cli
        .run(&["get", failed.as_str(), "--json"])
        .exits(0)
        .json();
    assert_eq!(doc["state"], "stored-error");
    assert_eq!(doc["outcome"], "err");

    s.cli
        .run(&["get", held.key.as_str()])
        .exits(0)
        .prints("running")
        .prints("lease until")
        .prints("prepare");
    let doc = s
        .cli
        .run(&["--json", "get", held.key.as_str()])
        .exits(0)
        .json();
    assert_eq!(doc["state"], "running");
    assert_eq!(doc["function"], "refund");
    assert_eq!(doc["attempt"], 1);
    assert!(
        doc["owner"].as_str().is_some_and(|owner| !owner.is_empty()),
        "{doc}"
    );
    assert!(
        doc["fencing_token"].as_u64().is_some_and(|token| token > 0),
        "{doc}"
    );
    assert_eq!(doc["steps"], json!(["prepare"]));
    assert_eq!(doc["outcome"], Value::Null);
    assert_rfc3339(&doc["lease_until"]);
    held.finish().await.expect("the held call completes");
}

/// A key with no record exits 3, plainly; text that is not a key is a usage error.
pub async fn unknown_and_malformed_keys(s: &Subject) {
    let missing = key(&s.idem, "charge", "nope");
    let run = s.cli.run(&["get", missing.as_str()]);
    run.exits(3).says(&format!("no record under {missing}"));
    assert!(run.stdout.is_empty(), "{run:#?}");
    s.cli.run(&["forget", missing.as_str()]).exits(3);
    s.cli.run(&["release", missing.as_str(), "--yes"]).exits(3);
    s.cli
        .run(&["get", "not-a-key"])
        .exits(2)
        .says("not an idempotency key");
}

/// `release` without `--yes` shows the held call and refuses; with it, frees the key, and the
/// next call runs its body.
pub async fn release_needs_yes_and_frees_the_key(s: &Subject) {
    let held = hold(&s.idem, "refund", "order-3").await;
    let key = held.key.to_string();
    let key = key.as_str();

    let refused = s.cli.run(&["release", key]);
    refused
        .exits(2)
        .says("--yes")
        .says("runs the function again")
        .prints("running");
    // Still held: a duplicate is told so.
    let fingerprint = idem_core::Fingerprint::of("order-3").unwrap();
    let duplicate = s
        .idem
        .run(idem_core::Call::new(held.key.clone(), fingerprint), async {
            Ok::<_, idem_core::Error>(0u8)
        })
        .await;
    assert!(
        matches!(duplicate, Err(idem_core::Error::InProgress { .. })),
        "{duplicate:?}"
    );

    let released = s.cli.run(&["--json", "release", key, "--yes"]);
    released.exits(0).says("released");
    assert_eq!(released.json()["state"], "running");
    let (runs, value) = call_again(&s.idem, "refund", "order-3").await;
    assert_eq!(
        (runs, value.as_str()),
        (1, "again-order-3"),
        "the body runs after a release"
    );
    let stale = held.finish().await;
    assert!(
        stale
            .as_ref()
            .is_err_and(idem_core::Error::ran_without_record),
        "the released owner's outcome is not recorded: {stale:?}"
    );
    s.cli.run(&["get", key, "--json"]).exits(0).json()["state"]
        .as_str()
        .filter(|state| *state == "completed")
        .expect("the new call completed the key");
}

/// `release` of a finished key exits 4 and prints what the record is.
pub async fn release_refuses_a_finished_key(s: &Subject) {
    let done = completed(&s.idem, "charge", "order-1").await;
    s.cli
        .run(&["release", done.as_str(), "--yes"])
        .exits(4)
        .says("not in progress")
        .prints("completed");
    let run = s.cli.run(&["--json", "release", done.as_str()]);
    assert_eq!(run.exits(4).json()["state"], "completed");
    let (runs, _) = call_again(&s.idem, "charge", "order-1").await;
    assert_eq!(runs, 0, "the record is untouched: a retry replays");
}

/// `forget` deletes the record; `get` then exits 3 and the next call runs again.
pub async fn forget_deletes_the_record(s: &Subject) {
    let done = completed(&s.idem, "charge", "order-1").await;
    let failed = stored_error(&s.idem, "charge", "order-2").await;
    s.cli
        .run(&["forget", done.as_str(), "--yes"])
        .exits(0)
        .says("forgot")
        .prints("completed");
    s.cli.run(&["get", done.as_str()]).exits(3);
    let doc = s
        .cli
        .run(&["forget", "--json", failed.as_str(), "--yes"])
        .exits(0)
        .json();
    assert_eq!(doc["state"], "stored-error");
    s.cli.run(&["get", failed.as_str()]).exits(3);
    let (runs, _) = call_again(&s.idem, "charge", "order-1").await;
    assert_eq!(runs, 1, "the body runs after a forget");
}

/// `forget` without `--yes` shows the record, says what it would do and deletes nothing
/// (exit 2); a key held by a call is refused (exit 4) unless `--running` is given too.
pub async fn forget_needs_yes_and_running_for_a_held_key(s: &Subject) {
    let done = completed(&s.idem, "charge", "order-1").await;
    s.cli
        .run(&["forget", done.as_str()])
        .exits(2)
        .says("--yes")
        .says("would delete")
        .prints("completed");
    let doc = s
        .cli
        .run(&["--json", "forget", done.as_str()])
        .exits(2)
        .json();
    assert_eq!(doc["state"], "completed");
    s.cli.run(&["get", done.as_str()]).exits(0);
    let (runs, _) = call_again(&s.idem, "charge", "order-1").await;
    assert_eq!(runs, 0, "the record is untouched: a retry replays");

    let held = hold(&s.idem, "refund", "order-3").await;
    let key = held.key.to_string();
    let key = key.as_str();
    s.cli
        .run(&["forget", key])
        .exits(2)
        .says("--yes")
        .says("--running")
        .prints("running");
    s.cli
        .run(&["forget", key, "--yes"])
        .exits(4)
        .says("--running")
        .says("idem release")
        .prints("running");
    s.cli.run(&["get", key]).exits(0).prints("running");
    s.cli
        .run(&["forget", key, "--yes", "--running"])
        .exits(0)
        .says("forgot");
    s.cli.run(&["get", key]).exits(3);
    let stale = held.finish().await;
    assert!(
        stale.is_err(),
        "the forgotten call's outcome is not recorded: {stale:?}"
    );
}

/// `purge-expired` under one prefix deletes its own expired records and none of another
/// prefix's on the same table or server, even under the same key; `list` and `stats` stay
/// inside their prefix too.
pub async fn purge_stays_inside_its_prefix(a: &Subject, b: &Subject) {
    let mine = completed(&a.past, "charge", "order-1").await;
    let theirs = completed(&b.past, "charge", "order-1").await;
    let live = completed(&b.idem, "charge", "order-2").await;
    a.cli
        .run(&["purge-expired"])
        .exits(0)
        .prints("purged 1 expired record\n");
    a.cli.run(&["get", mine.as_str()]).exits(3);
    let doc = b
        .cli
        .run(&["get", theirs.as_str(), "--json"])
        .exits(0)
        .json();
    assert_eq!(doc["state"], "expired", "{doc}");
    assert_eq!(a.cli.run(&["list", "--json"]).exits(0).json(), json!([]));
    assert_eq!(a.cli.run(&["stats", "--json"]).exits(0).json()["total"], 0);
    assert_eq!(b.cli.run(&["stats", "--json"]).exits(0).json()["total"], 2);
    b.cli
        .run(&["purge-expired"])
        .exits(0)
        .prints("purged 1 expired record\n");
    b.cli.run(&["get", live.as_str()]).exits(0);
}

/// Four records: `charge` completed, stored error and expired; `refund` held.
async fn four_records(s: &Subject) -> super::records::Held {
    completed(&s.idem, "charge", "order-1").await;
    stored_error(&s.idem, "charge", "order-2").await;
    completed(&s.past, "charge", "order-0").await;
    hold(&s.idem, "refund", "order-3").await
}

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

/// `list` follows the listing, filters by function and state, and stops at the limit.
pub async fn list_filters_by_function_state_and_limit(s: &Subject) {
    let held = four_records(s).await;
    let all = s.cli.run(&["list", "--json"]).exits(0).json();
    assert_eq!(all.as_array().map(Vec::len), Some(4), "{all}");
    let states: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    for state in ["completed", "stored-error", "expired", "running"] {
        assert!(states.contains(&state), "{state} in {states:?}");
    }

    let charge = s
        .cli
        .run(&["list", "--function", "charge", "--json"])
        .exits(0)
        .json();
    assert_eq!(keys(&charge).len(), 3, "{charge}");
    assert!(
        charge
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["function"] == "charge"),
        "{charge}"
    );

    let running = s
        .cli
        .run(&["list", "--state", "in-progress", "--json"])
        .exits(0)
        .json();
    assert_eq!(keys(&running), vec![held.key.to_string()]);
    let finished = s
        .cli
        .run(&["list", "--state", "completed", "--json"])
        .exits(0)
        .json();
    assert_eq!(keys(&finished).len(), 3, "{finished}");
    let refunds = s.cli.run(&[
        "list",
        "--function",
        "refund",
        "--state",
        "completed",
        "--json",
    ]);
    assert_eq!(refunds.exits(0).json(), json!([]));

    let two = s
        .cli
        .run(&["list", "--limit", "2", "--json"])
        .exits(0)
        .json();
    assert_eq!(keys(&two).len(), 2, "{two}");
    s.cli
        .run(&["list", "--limit", "2"])
        .exits(0)
        .prints("FENCING TOKEN")
        .says("more match");
    s.cli
        .run(&["list", "--state", "in-progress"])
        .exits(0)
        .prints(held.key.as_str())
        .prints("running")
        .prints("Z (in ");
    held.finish().await.expect("the held call completes");
}

/// `list --json` cut off by `--limit` says so: on stderr beside the bare array, and in the
/// document with `--envelope`; `--all` lists every record.
pub async fn list_json_says_when_it_stopped_early(s: &Subject) {
    completed(&s.idem, "charge", "order-1").await;
    completed(&s.idem, "charge", "order-2").await;
    let cut = s.cli.run(&["list", "--json", "--limit", "1"]);
    assert_eq!(keys(&cut.exits(0).json()).len(), 1, "{cut:#?}");
    cut.says("more match");
    let doc = s
        .cli
        .run(&["list", "--json", "--envelope", "--limit", "1"])
        .exits(0)
        .json();
    assert_eq!(doc["truncated"], true, "{doc}");
    assert_eq!(doc["limit"], 1, "{doc}");
    assert_eq!(keys(&doc["records"]).len(), 1, "{doc}");
    let exact = s
        .cli
        .run(&["list", "--json", "--envelope", "--limit", "2"])
        .exits(0)
        .json();
    assert_eq!(exact["truncated"], false, "{exact}");
    let all = s.cli.run(&["list", "--json", "--envelope", "--all"]);
    let doc = all.exits(0).json();
    assert_eq!(doc["truncated"], false, "{doc}");
    assert_eq!(doc["limit"], Value::Null, "{doc}");
    assert_eq!(keys(&doc["records"]).len(), 2, "{doc}");
    assert!(all.stderr.is_empty(), "{all:#?}");
    let bare = s.cli.run(&["list", "--json", "--all"]).exits(0).json();
    assert_eq!(keys(&bare).len(), 2, "{bare}");
    s.cli
        .run(&["list", "--envelope"])
        .exits(2)
        .says("with --json");
}

/// `list --scope` with what `idem scope` prints for a credential lists that credential's
/// records only, with `--function` or without; an unscoped key is in no scope.
pub async fn list_by_the_scope_idem_scope_prints(s: &Subject) {
    let alice = super::scope_of("Bearer alice");
    let bob = super::scope_of("Bearer bob");
    let alice_charge = completed_in_scope(&s.idem, "charge", &alice, "order-1").await;
    let alice_refund = completed_in_scope(&s.idem, "refund", &alice, "order-2").await;
    completed_in_scope(&s.idem, "charge", &bob, "order-1").await;
    completed(&s.idem, "charge", "order-1").await;

    let mine = s
        .cli
        .run(&["list", "--scope", &alice, "--json"])
        .exits(0)
        .json();
    let mut expected = vec![alice_charge.to_string(), alice_refund.to_string()];
    expected.sort();
    assert_eq!(keys(&mine), expected, "{mine}");
    assert!(
        mine.as_array()
            .unwrap()
            .iter()
            .all(|r| r["scope"] == alice.as_str()),
        "{mine}"
    );
    let charges = s
        .cli
        .run(&["list", "--scope", &alice, "--function", "charge", "--json"])
        .exits(0)
        .json();
    assert_eq!(keys(&charges), vec![alice_charge.to_string()], "{charges}");
    let none = s
        .cli
        .run(&[
            "list",
            "--scope",
            &super::scope_of("Bearer carol"),
            "--json",
        ])
        .exits(0)
        .json();
    assert_eq!(none, json!([]));
}

/// `functions` lists the function names present, as `#[idempotent]` makes them (module path
/// and name) and as `--function` takes them back.
pub async fn functions_lists_names_as_the_attribute_makes_them(s: &Subject) {
    let charge = "shop::payments::charge";
    let done = completed(&s.idem, charge, "order-1").await;
    stored_error(&s.idem, charge, "order-2").await;
    completed(&s.idem, "shop::payments::refund", "order-1").await;
    completed(&s.idem, "http", "k-1").await;

    s.cli
        .run(&["functions"])
        .exits(0)
        .prints("http\nshop::payments::charge\nshop::payments::refund\n");
    let doc = s.cli.run(&["functions", "--json"]).exits(0).json();
    assert_eq!(
        doc,
        json!([
            {"function": "http", "records": 1},
            {"function": charge, "records": 2},
            {"function": "shop::payments::refund", "records": 1},
        ])
    );
    let listed = s
        .cli
        .run(&["list", "--function", charge, "--json"])
        .exits(0)
        .json();
    assert_eq!(keys(&listed).len(), 2, "{listed}");
    assert!(keys(&listed).contains(&done.to_string()), "{listed}");
    let stats = s
        .cli
        .run(&["stats", "--function", charge, "--json"])
        .exits(0)
        .json();
    assert_eq!(stats["total"], 2, "{stats}");
}

/// `stats` counts every record by function and state.
pub async fn stats_count_by_function_and_state(s: &Subject) {
    let held = four_records(s).await;
    let stats = s.cli.run(&["stats", "--json"]).exits(0).json();
    assert_eq!(stats["total"], 4, "{stats}");
    assert_eq!(
        stats["by_state"],
        json!({"completed": 1, "expired": 1, "running": 1, "stored-error": 1})
    );
    assert_eq!(
        stats["functions"],
        json!([
            {"function": "charge", "total": 3, "by_state": {"completed": 1, "expired": 1, "stored-error": 1}},
            {"function": "refund", "total": 1, "by_state": {"running": 1}},
        ])
    );
    let charge = s
        .cli
        .run(&["stats", "--function", "refund", "--json"])
        .exits(0)
        .json();
    assert_eq!(charge["total"], 1, "{charge}");
    s.cli
        .run(&["stats"])
        .exits(0)
        .prints("total")
        .prints("stored-error");
    held.finish().await.expect("the held call completes");
}

/// `purge-expired` deletes the expired record and keeps the live ones.
pub async fn purge_expired_keeps_live_records(s: &Subject) {
    let live = completed(&s.idem, "charge", "order-1").await;
    let expired = completed(&s.past, "charge", "order-0").await;
    let held = hold(&s.idem, "refund", "order-3").await;
    s.cli
        .run(&["get", expired.as_str(), "--json"])
        .exits(0)
        .json()["state"]
        .as_str()
        .filter(|state| *state == "expired")
        .expect("the record from the past is expired");

    s.cli
        .run(&["purge-expired", "--batch", "1"])
        .exits(0)
        .prints("purged 1 expired record");
    s.cli.run(&["get", expired.as_str()]).exits(3);
    s.cli.run(&["get", live.as_str()]).exits(0);
    s.cli
        .run(&["get", held.key.as_str()])
        .exits(0)
        .prints("running");
    let again = s.cli.run(&["purge-expired", "--json"]).exits(0).json();
    assert_eq!(again, json!({"purged": 0}));
    held.finish().await.expect("the held call completes");
}

/// A record the store can't read: `get` and `release` fail (exit 1) saying what to do,
/// `list` and `stats` show it as `corrupt`, `forget` deletes it. `key` holds the corrupt record.
pub async fn corrupt_record_is_reported_and_forgotten(s: &Subject, key: &idem_core::Key) {
    let done = completed(&s.idem, "charge", "order-1").await;
    let key = key.as_str();
    s.cli
        .run(&["get", key])
        .exits(1)
        .says("is corrupt")
        .says(&format!("idem forget '{key}'"));
    s.cli
        .run(&["release", key, "--yes"])
        .exits(1)
        .says("is corrupt");

    let listed = s.cli.run(&["list", "--json"]).exits(0).json();
    let corrupt = listed
        .as_array()
        .and_then(|records| records.iter().find(|record| record["key"] == key))
        .unwrap_or_else(|| panic!("{key} is listed: {listed}"));
    assert_eq!(corrupt["state"], "corrupt", "{corrupt}");
    assert!(
        corrupt["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{corrupt}"
    );
    let finished = s.cli.run(&["list", "--state", "completed", "--json"]);
    assert_eq!(keys(&finished.exits(0).json()), vec![done.to_string()]);
    s.cli
        .run(&["list"])
        .exits(0)
        .prints("corrupt")
        .prints("unreadable");
    let stats = s.cli.run(&["stats", "--json"]).exits(0).json();
    assert_eq!(
        stats["by_state"],
        json!({"completed": 1, "corrupt": 1}),
        "{stats}"
    );

    s.cli.run(&["forget", key]).exits(2).says("--yes");
    s.cli.run(&["get", key]).exits(1).says("is corrupt");
    s.cli
        .run(&["forget", key, "--yes"])
        .exits(0)
        .says("corrupt");
    s.cli.run(&["get", key]).exits(3);
    s.cli.run(&["get", done.as_str()]).exits(0);
}

/// Entries planted under the store's prefix with stored keys that are no idempotency keys
/// (`planted`: each key after the prefix, and how `idem` prints it, escaped) are listed, as
/// `corrupt` under their escaped key, in the table and in `--json` (which stays JSON), and
/// counted by `stats`, beside a record of the same function.
pub async fn unkeyed_entries_are_listed_and_counted(s: &Subject, planted: &[(Vec<u8>, String)]) {
    let done = completed(&s.idem, "charge", "order-1").await;
    for args in [
        &["list", "--json"][..],
        &["list", "--function", "charge", "--json"],
    ] {
        let listed = s.cli.run(args).exits(0).json();
        let entries = listed
            .as_array()
            .unwrap_or_else(|| panic!("an array: {listed}"));
        assert_eq!(entries.len(), planted.len() + 1, "{listed}");
        assert!(entries.iter().any(|entry| entry["key"] == done.as_str()));
        for (_, shown) in planted {
            let entry = entries
                .iter()
                .find(|entry| entry["key"] == shown.as_str())
                .unwrap_or_else(|| panic!("{shown:.60} is listed: {listed:.2000}"));
            assert_eq!(entry["state"], "corrupt", "{entry:.300}");
            assert_eq!(entry["function"], "charge", "{entry:.300}");
            assert!(
                entry["error"]
                    .as_str()
                    .is_some_and(|error| error.contains("no idempotency key")),
                "{entry:.300}"
            );
        }
    }
    let table = s.cli.run(&["list"]);
    table
        .exits(0)
        .prints("unreadable")
        .says(&format!("{} records", planted.len() + 1));
    for (_, shown) in planted {
        table.prints(shown);
    }
    let stats = s.cli.run(&["stats", "--json"]).exits(0).json();
    assert_eq!(stats["total"], planted.len() + 1, "{stats}");
    assert_eq!(
        stats["by_state"],
        json!({"completed": 1, "corrupt": planted.len()}),
        "{stats}"
    );
    s.cli
        .run(&["stats"])
        .exits(0)
        .prints("corrupt")
        .prints(&format!("{}", planted.len() + 1));
}

/// `value` is an RFC 3339 UTC timestamp to the millisecond.
#[track_caller]
fn assert_rfc3339(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("a string: {value}"));
    let bytes = text.as_bytes();
    assert!(
        text.len() == 24 && bytes[4] == b'-' && bytes[10] == b'T' && text.ends_with('Z'),
        "RFC 3339: {text}"
    );
}
