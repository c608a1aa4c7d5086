//! `idem scope`: from a credential, or a principal, to the scope its keys are stored under, as
//! idem-http computes it. Guards the seam between the command and the layer: both call
//! `idem_protocol::scope`, so what the command prints is what a request with that
//! `Authorization`, or from that principal, is stored under.

use std::future::poll_fn;
use std::process::Output;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_test_servers::redis::target::RedisTarget;
use tower_layer::Layer;
use tower_service::Service;

use crate::support;
use crate::support::answer::Answer;

/// `idem scope ARGS` with `input` on standard input and `env` set.
fn scope(args: &[&str], input: &str, env: &[(&str, &str)]) -> Output {
    let idem = env
        .iter()
        .fold(support::idem(), |idem, (name, value)| idem.env(name, value));
    idem.run_with_stdin(&[&["scope"], args].concat(), input.as_bytes())
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

/// The principal an authentication middleware puts in a request's extensions.
#[derive(Clone, Debug)]
struct Principal(&'static str);

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_scoped_by_extension_and_secret_is_found_with_what_scope_prints() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let secret = "the service's scope secret, 32 bytes or more";
    let idem = Idempotency::from_arc(Arc::new(target.redis_store().clone()));
    let layer = IdempotencyLayer::builder(idem)
        .scope_from_extension::<Principal>()
        .scope_secret(secret)
        .build();
    let mut service = layer.layer(Answer {
        status: StatusCode::CREATED,
        headers: Vec::new(),
        body: Bytes::from_static(b"created"),
    });
    for (principal, key) in [("user:alice", "order-7"), ("user:bob", "order-8")] {
        poll_fn(|cx| Service::<Request<Full<Bytes>>>::poll_ready(&mut service, cx))
            .await
            .unwrap();
        let mut request = Request::post("/orders")
            .header("idempotency-key", key)
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        request.extensions_mut().insert(Principal(principal));
        let response = service.call(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        response.into_body().collect().await.unwrap();
    }

    let printed = printed(&scope(
        &["--principal", "--secret-env", "SCOPE_SECRET"],
        "user:alice\n",
        &[("SCOPE_SECRET", secret)],
    ));
    let alice = printed.trim_end();
    assert_eq!(
        alice.len(),
        64,
        "a keyed scope is a hex HMAC-SHA256: {alice}"
    );
    let cli = support::idem().store(["--store", target.url(), "--prefix", target.prefix()]);
    let listed = cli
        .run(&["list", "--scope", alice, "--json"])
        .exits(0)
        .json();
    let keys: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|record| record["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 1, "alice's record alone: {listed:#}");
    assert!(keys[0].contains(&format!("|={alice}|")), "{keys:?}");
    assert!(keys[0].ends_with("order-7"), "{keys:?}");
}

#[test]
fn a_principal_without_a_secret_is_its_own_scope_and_a_blank_one_is_none() {
    assert_eq!(
        printed(&scope(&["--principal"], "tenant-7\n", &[])),
        "tenant-7\n"
    );
    let json: serde_json::Value = serde_json::from_str(&printed(&scope(
        &["--principal", "--json"],
        "tenant-7",
        &[],
    )))
    .unwrap();
    assert_eq!(json["scope"], "tenant-7");
    let blank = scope(&["--principal"], " \n", &[]);
    assert_eq!(blank.status.code(), Some(2), "{blank:?}");
    assert!(String::from_utf8_lossy(&blank.stderr).contains("no principal"));
}
