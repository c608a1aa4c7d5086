//! Records whose key, owner and step name hold what a terminal obeys (a screen clear, a
//! window title ended by BEL), as a writer of the store, or an application that builds keys
//! from user input, could leave them: `idem get`, `list` and `stats` print them escaped, and
//! `--json` stays valid JSON.

use std::sync::Arc;

use idem_test_servers::redis::target::RedisTarget;
use redis::AsyncCommands;

use crate::support::{self, records, Run, Subject};

/// A screen clear, then a window title ended by BEL.
const HOSTILE: &str = "\u{1b}[2J\u{1b}]0;pwned\u{7}";

/// `name` as the Redis layout writes a field: its length, a colon, then it.
fn field(name: &str) -> Vec<u8> {
    format!("{}:{name}", name.len()).into_bytes()
}

/// `haystack` with its one `from` replaced by `to`.
fn replaced(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let at = haystack
        .windows(from.len())
        .position(|window| window == from)
        .unwrap_or_else(|| panic!("{:?} holds {:?}", haystack, from));
    [&haystack[..at], to, &haystack[at + from.len()..]].concat()
}

/// Asserts that `run` put none of what a terminal obeys on its stdout or stderr.
#[track_caller]
fn harmless(run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            !text.contains(['\u{1b}', '\u{7}']),
            "raw control characters on {stream}: {run:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_key_owner_and_step_name_are_printed_escaped() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let store = Arc::new(target.redis_store().clone());
    let cli = support::idem().store(["--store", target.url(), "--prefix", target.prefix()]);
    let subject = Subject::new(store.clone(), cli, ());
    let held = records::hold(&subject.idem, "charge", &format!("order-{HOSTILE}")).await;

    // The owner and the step name, rewritten in place as a writer of the store could.
    let shown = subject.cli.run(&["get", "--json", held.key.as_str()]);
    let owner = shown.exits(0).json()["owner"]
        .as_str()
        .expect("a running record has an owner")
        .to_owned();
    let mut raw = target.raw().await;
    let redis_key = store.redis_key(&held.key);
    let value: Vec<u8> = raw.get(&redis_key).await.unwrap();
    let value = replaced(&value, &field(&owner), &field(&format!("{owner}{HOSTILE}")));
    let value = replaced(
        &value,
        &field("prepare"),
        &field(&format!("prepare{HOSTILE}")),
    );
    let _: () = raw.set(&redis_key, value).await.unwrap();

    let get = subject.cli.run(&["get", held.key.as_str()]);
    harmless(get.exits(0));
    get.prints(r"order-\x1b[2J\x1b]0;pwned\x07")
        .prints(&format!(r"{owner}\x1b[2J"))
        .prints(r"prepare\x1b[2J");

    let json = subject.cli.run(&["get", "--json", held.key.as_str()]);
    harmless(json.exits(0));
    assert_eq!(json.json()["owner"], format!("{owner}{HOSTILE}"));

    for args in [&["list"][..], &["list", "--json"], &["stats"]] {
        let run = subject.cli.run(args);
        harmless(run.exits(0));
    }
    let listed = subject.cli.run(&["list", "--json"]).json();
    assert_eq!(listed[0]["key"], held.key.as_str(), "{listed:#}");
    let lost = held.finish().await.unwrap_err();
    assert!(
        lost.ran_without_record(),
        "the rewritten owner is not its own: {lost:?}"
    );
}
