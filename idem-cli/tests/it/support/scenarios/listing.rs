//! The scenarios that survey a store: `list` and its filters, limits and scopes, `functions`,
//! and `stats`.

use serde_json::{json, Value};

use super::keys;
use crate::support::records::{completed, completed_in_scope, hold, stored_error, Held};
use crate::support::Subject;

/// Four records: `charge` completed, stored error and expired; `refund` held.
async fn four_records(s: &Subject) -> Held {
    completed(&s.idem, "charge", "order-1").await;
    stored_error(&s.idem, "charge", "order-2").await;
    completed(&s.past, "charge", "order-0").await;
    hold(&s.idem, "refund", "order-3").await
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
    let alice = crate::support::scope_of("Bearer alice");
    let bob = crate::support::scope_of("Bearer bob");
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
            &crate::support::scope_of("Bearer carol"),
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
