//! The scenarios of `purge-expired`: it deletes expired records only, and only under its own
//! prefix.

use serde_json::json;

use crate::support::records::{completed, hold};
use crate::support::Subject;

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
