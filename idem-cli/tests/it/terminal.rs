//! What reaches a terminal: `idem get --raw` run on a pseudo-terminal (through util-linux's
//! `script`) writes a planted outcome's escape sequences escaped, and the same command into a
//! pipe writes its bytes exactly; the Arabic letter mark in a key prints escaped like the
//! other bidirectional controls.

use std::process::{Command, Stdio};

use idem_core::{Call, Error, Fingerprint, Idempotency};
use idem_test_servers::redis::target::RedisTarget;
use redis::AsyncCommands;

use crate::support::{self, records};

/// A screen clear, then a window title ended by BEL.
const HOSTILE: &str = "\u{1b}[2J\u{1b}]0;pwned\u{7}";

/// `haystack` with its one `from` replaced by `to`.
fn replaced(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let at = haystack
        .windows(from.len())
        .position(|window| window == from)
        .unwrap_or_else(|| panic!("{haystack:?} holds {from:?}"));
    [&haystack[..at], to, &haystack[at + from.len()..]].concat()
}

/// Runs `idem --store URL --prefix P get --raw KEY` on a pseudo-terminal and returns its exit
/// code and what the terminal received.
fn raw_on_a_terminal(target: &RedisTarget, key: &str) -> (i32, String) {
    let output = Command::new("script")
        .args([
            "--quiet",
            "--return",
            "--command",
            r#""$IDEM" --store "$IDEM_TEST_URL" --prefix "$IDEM_TEST_PREFIX" get --raw "$IDEM_TEST_KEY""#,
            "/dev/null",
        ])
        .env("IDEM", env!("CARGO_BIN_EXE_idem"))
        .env("IDEM_TEST_URL", target.url())
        .env("IDEM_TEST_PREFIX", target.prefix())
        .env("IDEM_TEST_KEY", key)
        .env_remove("IDEM_STORE")
        .env_remove("IDEM_KEYRING")
        .stdin(Stdio::null())
        .output()
        .expect("util-linux's `script` runs (it gives the command a pseudo-terminal)");
    (
        output.status.code().expect("script exits with a code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_output_to_a_terminal_is_escaped_and_to_a_pipe_is_exact() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(std::sync::Arc::new(target.redis_store().clone()));
    let cli = support::idem().store(["--store", target.url(), "--prefix", target.prefix()]);
    let key = records::key(&idem, "shop::payments::charge", "order-9");
    // JSON escapes an ESC itself: the record is planted with the raw bytes afterwards, in
    // place, as a writer of the store could.
    let placeholder = "note~[2J~]0;pwned^";
    let planted = format!("note{HOSTILE}");
    assert_eq!(placeholder.len(), planted.len());
    idem.run(
        Call::new(key.clone(), Fingerprint::of("order-9").unwrap()),
        async { Ok::<_, Error>(placeholder.to_owned()) },
    )
    .await
    .unwrap();
    let mut raw = target.raw().await;
    let redis_key = target.redis_store().redis_key(&key);
    let value: Vec<u8> = raw.get(&redis_key).await.unwrap();
    let value = replaced(&value, placeholder.as_bytes(), planted.as_bytes());
    let _: () = raw.set(&redis_key, value).await.unwrap();

    let (code, piped, stderr) = cli.run_bytes(&["get", "--raw", key.as_str()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        piped,
        format!("\"{planted}\"").into_bytes(),
        "a pipe gets the bytes"
    );
    assert!(!stderr.contains("terminal"), "{stderr}");

    let (code, seen) = raw_on_a_terminal(&target, key.as_str());
    assert_eq!(code, 0, "{seen:?}");
    assert!(
        !seen.contains(['\u{1b}', '\u{7}']),
        "the terminal got the planted escapes: {seen:?}"
    );
    assert!(seen.contains(r"note\x1b[2J\x1b]0;pwned\x07"), "{seen:?}");
    assert!(seen.contains("stdout is a terminal"), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_arabic_letter_mark_in_a_key_prints_escaped() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(std::sync::Arc::new(target.redis_store().clone()));
    let cli = support::idem().store(["--store", target.url(), "--prefix", target.prefix()]);
    let key = records::completed(&idem, "charge", "order-\u{61c}71").await;

    for args in [&["get", key.as_str()][..], &["list"]] {
        let run = cli.run(args);
        run.exits(0);
        assert!(!run.stdout.contains('\u{61c}'), "{run:#?}");
        assert!(run.stdout.contains(r"order-\u{61c}71"), "{run:#?}");
    }
}
