//! `idem get` shows what a completed record answers: a response stored by a real idem-http
//! layer (as its binary frame), a JSON value stored by the engine, a sealed outcome opened with the service's
//! keyring (from `IDEM_KEYRING` or `--keyring-file`, never the command line); `--raw` writes
//! the outcome's bytes as they are. Records are hostile input: what a terminal obeys in them
//! is printed escaped.

use std::future::poll_fn;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use idem_core::seal::Keyring;
use idem_core::{store::Record, Call, Error, Fingerprint, Idempotency, Key};
use idem_http::{IdempotencyLayer, RecordedResponse};
use idem_test_servers::redis::target::RedisTarget;
use tower_layer::Layer;
use tower_service::Service;

use crate::support::answer::Answer;
use crate::support::{self, records, Idem, Run};

/// A screen clear, then a window title ended by BEL.
const HOSTILE: &str = "\u{1b}[2J\u{1b}]0;pwned\u{7}";

/// The service's keyring: `k2` seals, `k1` only opens.
const KEYRING: &str = "k2=AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=\n\
                       k1=AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n";

/// Asserts that `run` put none of what a terminal obeys on its stdout or stderr.
#[track_caller]
fn harmless(run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            !text.contains(['\u{1b}', '\u{7}', '\u{9b}']),
            "raw control characters on {stream}: {run:#?}"
        );
    }
}

/// Sends a POST with `Idempotency-Key: key` through a layer on `idem` to `answer`, reads
/// the answer whole, and returns the key of the record it stored (found with `idem list`).
async fn through_layer(idem: &Idempotency, cli: &Idem, answer: Answer, key: &str) -> String {
    let mut service = IdempotencyLayer::new(idem.clone()).layer(answer);
    poll_fn(|cx| Service::<Request<Full<Bytes>>>::poll_ready(&mut service, cx))
        .await
        .unwrap();
    let request = Request::post("/orders")
        .header("authorization", "Bearer t0ken")
        .header("idempotency-key", key)
        .body(Full::new(Bytes::from_static(b"{\"order\":42}")))
        .unwrap();
    let response = service.call(request).await.unwrap();
    assert!(response.status().is_success(), "{:?}", response.status());
    response.into_body().collect().await.unwrap();
    let listed = cli.run(&["list", "--json"]).exits(0).json();
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|record| record["key"].as_str().unwrap().to_owned())
        .find(|stored| stored.ends_with(key))
        .unwrap_or_else(|| panic!("no record of {key}: {listed:#}"))
}

/// The outcome's bytes as the store holds them, read through `idem`'s handle.
async fn stored_outcome(idem: &Idempotency, key: &str) -> Vec<u8> {
    let inspection = idem
        .inspect(&Key::parse(key).unwrap())
        .await
        .unwrap()
        .expect("a record");
    match inspection.record() {
        Record::Completed(completed) => completed.outcome().body().to_vec(),
        other => panic!("not completed: {other:?}"),
    }
}

async fn start() -> Option<(RedisTarget, Idempotency, Idem)> {
    let target = RedisTarget::start().await?;
    let idem = Idempotency::from_arc(Arc::new(target.redis_store().clone()));
    let cli = support::idem().store(["--store", target.url(), "--prefix", target.prefix()]);
    Some((target, idem, cli))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_stored_by_the_layer_shows_its_status_headers_and_body() {
    let Some((_target, idem, cli)) = start().await else {
        return;
    };
    let long = "x".repeat(5000);
    let body = format!("charged 42\n{HOSTILE}done\n{long}");
    let answer = Answer {
        status: StatusCode::CREATED,
        headers: vec![("content-type", "text/plain"), ("location", "/orders/42")],
        body: Bytes::from(body.clone()),
    };
    let key = through_layer(&idem, &cli, answer, "order-42").await;

    let get = cli.run(&["get", &key]);
    harmless(get.exits(0));
    get.prints("response (stored by idem-http):")
        .prints("  status  201\n")
        .prints("  header  content-type: text/plain\n")
        .prints("  header  location: /orders/42\n")
        .prints(&format!("  body    {} bytes\n", body.len()))
        .prints("  charged 42\n")
        .prints("  \\x1b[2J\\x1b]0;pwned\\x07done\n");
    let shown = 4096 - "charged 42\n".len() - HOSTILE.len() - "done\n".len();
    get.prints(&format!("  {}\n", "x".repeat(shown)))
        .prints(&format!(
            "  ... {} more bytes not shown: `idem get --raw '",
            body.len() - 4096
        ));

    let json = cli.run(&["get", "--json", &key]);
    harmless(json.exits(0));
    let doc = json.json();
    assert_eq!(doc["outcome"], "ok");
    assert_eq!(doc["outcome_format"], "http", "{doc:#}");
    let value = &doc["outcome_value"];
    assert_eq!(value["status"], 201);
    assert_eq!(
        value["headers"][1],
        serde_json::json!(["location", "/orders/42"])
    );
    assert_eq!(value["body_form"], "text");
    assert_eq!(value["body_bytes"], body.len());
    assert_eq!(value["body_truncated"], true);
    assert_eq!(value["body"], body[..4096]);

    let (code, raw, stderr) = cli.run_bytes(&["get", "--raw", &key]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(raw, stored_outcome(&idem, &key).await, "byte for byte");
    assert!(
        raw.starts_with(b"\0iH\x01"),
        "the layer stored its binary frame, which `get` shows as a response"
    );
    let decoded = RecordedResponse::decode(&raw).unwrap();
    assert_eq!(
        decoded.body,
        idem_http::RecordedBody::Kept(body.into_bytes())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_or_binary_body_is_never_printed_as_it_is() {
    let Some((_target, idem, cli)) = start().await else {
        return;
    };
    let gzip = Answer {
        status: StatusCode::OK,
        headers: vec![("content-type", "text/plain"), ("content-encoding", "gzip")],
        body: Bytes::from_static(b"\x1f\x8b\x08\x00\x1b[2J\x9b\x07"),
    };
    let key = through_layer(&idem, &cli, gzip, "order-gzip").await;
    let get = cli.run(&["get", &key]);
    harmless(get.exits(0));
    get.prints("  body    10 bytes, gzip-coded: not shown");
    let doc = cli.run(&["get", "--json", &key]).exits(0).json();
    assert_eq!(
        doc["outcome_value"]["content_codings"],
        serde_json::json!(["gzip"])
    );
    assert_eq!(doc["outcome_value"]["body_form"], "base64");
    assert_eq!(doc["outcome_value"]["body"], "H4sIABtbMkqbBw==");

    let binary = Answer {
        status: StatusCode::OK,
        headers: vec![("content-type", "application/octet-stream")],
        body: Bytes::from_static(b"\xff\xfe\x1b[2J\xc2\x9b ok"),
    };
    let key = through_layer(&idem, &cli, binary, "order-binary").await;
    let get = cli.run(&["get", &key]);
    harmless(get.exits(0));
    get.prints("  \\xff\\xfe\\x1b[2J\\x9b ok\n");
    let (code, raw, _) = cli.run_bytes(&["get", "--raw", &key]);
    assert_eq!(code, 0);
    assert_eq!(raw, stored_outcome(&idem, &key).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_outcome_is_pretty_printed_and_raw_is_byte_for_byte() {
    let Some((_target, idem, cli)) = start().await else {
        return;
    };
    let key = records::key(&idem, "shop::payments::charge", "order-7");
    let value =
        serde_json::json!({"order": 7, "total": "12.50", "note": format!("a{HOSTILE}\u{202e}b")});
    let returned = value.clone();
    idem.run(
        Call::new(key.clone(), Fingerprint::of("order-7").unwrap()),
        async { Ok::<_, Error>(returned) },
    )
    .await
    .unwrap();

    let get = cli.run(&["get", key.as_str()]);
    harmless(get.exits(0));
    get.prints("\noutcome value (JSON):\n  {\n")
        .prints("    \"order\": 7,\n")
        .prints("    \"total\": \"12.50\"\n")
        .prints(r#"    "note": "a\u001b[2J\u001b]0;pwned\u0007\u202eb""#);
    assert!(!get.stdout.contains('\u{202e}'), "{get:#?}");

    let json = cli.run(&["get", "--json", key.as_str()]);
    // The document escapes what a terminal would obey, and still reads as the value.
    assert!(!json.stdout.contains('\u{202e}'), "{json:#?}");
    assert!(json.stdout.contains(r"\u202e"), "{json:#?}");
    let doc = json.exits(0).json();
    assert_eq!(doc["outcome_format"], "json");
    assert_eq!(doc["outcome_value"], value);

    let (code, raw, _) = cli.run_bytes(&["get", "--raw", key.as_str()]);
    assert_eq!(code, 0);
    assert_eq!(raw, serde_json::to_vec(&value).unwrap());
    assert_eq!(raw, stored_outcome(&idem, key.as_str()).await);

    let declined = records::stored_error(&idem, "charge", "order-8").await;
    cli.run(&["get", declined.as_str()])
        .exits(0)
        .prints("outcome value (JSON):\n  {\n    \"Declined\": \"card declined\"\n  }\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_without_an_outcome_has_nothing_to_write_raw() {
    let Some((_target, idem, cli)) = start().await else {
        return;
    };
    let held = records::hold(&idem, "charge", "order-9").await;
    let (code, raw, stderr) = cli.run_bytes(&["get", "--raw", held.key.as_str()]);
    assert_eq!(code, 4, "{stderr}");
    assert!(raw.is_empty());
    assert!(
        stderr.contains("has no outcome to write: it is running"),
        "{stderr}"
    );
    cli.run(&["get", "--raw", "--json", held.key.as_str()])
        .exits(2)
        .says("pass one of them");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_outcome_opens_with_the_keyring_from_the_environment_or_a_file() {
    let Some((target, _, cli)) = start().await else {
        return;
    };
    let sealed = Idempotency::from_arc(Arc::new(target.redis_store().clone()))
        .with_sealing(Keyring::from_text(KEYRING).unwrap());
    let key = records::key(&sealed, "charge", "order-5");
    let value = serde_json::json!({"receipt": "r-5"});
    let returned = value.clone();
    sealed
        .run(
            Call::new(key.clone(), Fingerprint::of("order-5").unwrap()),
            async { Ok::<_, Error>(returned) },
        )
        .await
        .unwrap();
    let key = key.as_str();

    // Without a keyring: what to do, not an error.
    let get = cli.run(&["get", key]);
    get.exits(0).prints(
        "outcome value  sealed with key `k2`: pass IDEM_KEYRING or --keyring-file to read it\n",
    );
    assert!(!get.stdout.contains("receipt"), "{get:#?}");
    let doc = cli.run(&["get", "--json", key]).exits(0).json();
    assert_eq!(doc["outcome_format"], "sealed");
    assert_eq!(doc["outcome_value"]["key_id"], "k2");
    let (code, raw, stderr) = cli.run_bytes(&["get", "--raw", key]);
    assert_eq!((code, raw.is_empty()), (2, true), "{stderr}");
    assert!(stderr.contains("is sealed: pass IDEM_KEYRING"), "{stderr}");

    // A keyring file that is no regular file is refused, not read for ever.
    cli.run(&["get", key, "--keyring-file", "/dev/zero"])
        .exits(2)
        .says("not a regular file");

    // With the service's keyring, in the environment or in a file.
    let file = std::env::temp_dir().join(format!("idem-get-keyring-{}", std::process::id()));
    std::fs::write(&file, KEYRING).unwrap();
    let file_arg = file.to_str().unwrap();
    let with_env = cli.clone().env("IDEM_KEYRING", KEYRING);
    for (cli, extra) in [
        (&with_env, &[][..]),
        (&cli, &["--keyring-file", file_arg][..]),
    ] {
        let args = |first: &[&'static str]| -> Vec<String> {
            first
                .iter()
                .map(|arg| (*arg).to_owned())
                .chain([key.to_owned()])
                .chain(extra.iter().map(|arg| (*arg).to_owned()))
                .collect()
        };
        let get_args = args(&["get"]);
        let get = cli.run(&get_args.iter().map(String::as_str).collect::<Vec<_>>());
        get.exits(0)
            .prints("outcome value (JSON):\n  {\n    \"receipt\": \"r-5\"\n  }\n");
        let json_args = args(&["get", "--json"]);
        let doc = cli
            .run(&json_args.iter().map(String::as_str).collect::<Vec<_>>())
            .exits(0)
            .json();
        assert_eq!(doc["outcome_value"], value);
        let raw_args = args(&["get", "--raw"]);
        let (code, raw, stderr) =
            cli.run_bytes(&raw_args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(raw, serde_json::to_vec(&value).unwrap(), "opened");
    }
    std::fs::remove_file(&file).unwrap();

    // A keyring without the key, or with another key under its id: said, exit 1.
    let other = "k2=AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=";
    let wrong = cli.clone().env("IDEM_KEYRING", other).run(&["get", key]);
    wrong
        .exits(1)
        .prints("state ")
        .says("does not open with the keyring given: sealed with key `k2` but does not open");
    let lacking = "k3=AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=";
    let get = cli
        .clone()
        .env("IDEM_KEYRING", lacking)
        .run(&["get", "--json", key]);
    get.exits(1).says("which the keyring lacks");
    assert_eq!(get.json()["outcome_format"], "unopened");

    // A keyring that can't be read: a usage error that never shows its keys.
    let broken = cli
        .clone()
        .env("IDEM_KEYRING", "k2=AgICAgICAgICAgICAgICAgICAgICAgIC")
        .run(&["get", key]);
    broken
        .exits(2)
        .says("IDEM_KEYRING: keyring entry 1 (line 1): the key is 24 bytes, not 32");
    assert!(!broken.stderr.contains("AgICAgIC"), "{broken:#?}");
    assert!(broken.stdout.is_empty());
}
