//! The scenarios of what a store holds that is no readable record: a corrupt record, and
//! entries under the prefix whose stored keys are no idempotency keys.

use serde_json::json;

use super::keys;
use crate::support::records::completed;
use crate::support::Subject;

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
