//! The scenarios that free keys: `release` of a held call and of a finished one, and `forget`,
//! with and without `--yes` and `--running`.

use crate::support::records::{call_again, completed, hold, stored_error};
use crate::support::Subject;

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
