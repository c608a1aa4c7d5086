//! `idem scope`: from a credential to the scope its keys are stored under, as idem-http
//! computes it. Guards the seam between the command and the layer: both call
//! `idem_protocol::scope`, so what the command prints is what a request with that
//! `Authorization` is stored under.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `idem scope ARGS` with `input` on standard input and `env` set.
fn scope(args: &[&str], input: &str, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_idem"))
        .arg("scope")
        .args(args)
        .envs(env.iter().copied())
        .env_remove("IDEM_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn printed(output: &Output) -> String {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn prints_the_scope_the_layer_stores_a_credential_under() {
    let expected = idem_protocol::scope::authorization_scope([&b"Bearer abc"[..]]).unwrap();
    assert_eq!(
        printed(&scope(&[], "Bearer abc", &[])),
        format!("{expected}\n")
    );
    // A line feed at the end, as `echo` leaves it, is not part of the value.
    assert_eq!(
        printed(&scope(&[], "Bearer abc\n", &[])),
        format!("{expected}\n")
    );
    let json: serde_json::Value =
        serde_json::from_str(&printed(&scope(&["--json"], "bearer  abc", &[]))).unwrap();
    assert_eq!(json["scope"], expected.as_str());
}

#[test]
fn a_secret_from_the_environment_keys_it_as_scope_secret_does() {
    let secret = "a scope secret of the service, 32+ bytes";
    let digest = idem_protocol::scope::authorization_scope([&b"Bearer abc"[..]]).unwrap();
    let expected = idem_protocol::scope::keyed_scope(secret.as_bytes(), &digest);
    let output = scope(
        &["--secret-env", "SCOPE_SECRET"],
        "Bearer abc",
        &[("SCOPE_SECRET", secret)],
    );
    assert_eq!(printed(&output), format!("{expected}\n"));
}

#[test]
fn nothing_to_digest_or_a_short_secret_is_a_usage_error() {
    let empty = scope(&[], "\n", &[]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("standard input"));
    let short = scope(&["--secret-env", "S"], "Bearer abc", &[("S", "short")]);
    assert_eq!(short.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&short.stderr).contains("at least 32"));
    let unset = scope(&["--secret-env", "IDEM_UNSET_VARIABLE"], "Bearer abc", &[]);
    assert_eq!(unset.status.code(), Some(2));
}
