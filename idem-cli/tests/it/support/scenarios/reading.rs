//! The scenarios that read records: `get` on each kind of record, as a table and as JSON, and
//! on keys with no record or that are no keys.

use serde_json::{json, Value};

use crate::support::records::{completed, hold, key, stored_error};
use crate::support::Subject;

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
