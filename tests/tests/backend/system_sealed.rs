//! Seam: sealing (idem-core's `seal`: a keyring and a key digest) ↔ the attribute and the HTTP
//! layer ↔ the Redis store ↔ the `idem` command.
//!
//! A sealed handle stores an `#[idempotent]` call's outcome; `idem`, which has no keyring and no
//! digest secret, reads the record as stored: `list`, `get` and `stats` show it completed under
//! its digested key (the one the library computes for the clear key), without the function's
//! name, the key's parts or the outcome's text; the clear key names no record to it. `forget`
//! on the digested key frees the key for the sealed handle, whose next call runs again. The HTTP
//! layer on a sealed handle replays as on any other, and `idem` sees its record the same way. A
//! sealed call held after a recorded step is released by `idem` on its digest, and the next call
//! resumes after the step, opening its sealed value instead of running it again.

use crate::system;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::system::command::Idem;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use idem_client::was_replayed;
use idem_core::{idempotent, step, Call, Fingerprint, Idempotency};
use idem_http::IdempotencyLayer;
use idem_test_servers::redis::target::RedisTarget;
use idem_tests::sealed::{keyring, KEY_DIGEST_SECRET};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// What must never leave the sealed store in clear: the keys' parts, the function's name and
/// the outcomes' and steps' text.
const SECRETS: [&str; 6] = [
    "alice@example.com",
    "bob@example.com",
    "accounts.close",
    "Alice Liddell",
    "card 4242",
    "re_secret_77",
];

struct Accounts {
    idem: Idempotency,
    closed: AtomicUsize,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Closing {
    holder: String,
    refund: String,
    run: usize,
}

#[idempotent(store = "accounts.idem", key = "email", name = "accounts.close")]
async fn close(accounts: &Accounts, email: &str) -> Result<Closing, idem_core::Error> {
    let run = accounts.closed.fetch_add(1, Ordering::SeqCst) + 1;
    let _ = email;
    Ok(Closing {
        holder: "Alice Liddell".to_owned(),
        refund: "card 4242".to_owned(),
        run,
    })
}

#[track_caller]
fn assert_no_secret(what: &str, printed: &str) {
    for secret in SECRETS {
        assert!(
            !printed.contains(secret),
            "{what} prints {secret:?}: {printed}"
        );
    }
}

async fn idem_reads_a_sealed_record_by_its_digest_without_clear_text() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let sealed = Idempotency::new(target.redis_store().clone())
        .with_sealing(keyring())
        .with_key_digest(KEY_DIGEST_SECRET);
    let accounts = Accounts {
        idem: sealed.clone(),
        closed: AtomicUsize::new(0),
    };
    let first = close(&accounts, "alice@example.com").await.unwrap();
    assert_eq!(close(&accounts, "alice@example.com").await.unwrap(), first);
    assert_eq!(accounts.closed.load(Ordering::SeqCst), 1);

    let clear = sealed
        .key("accounts.close")
        .part("alice@example.com")
        .finish()
        .unwrap();
    let digested = sealed.stored_key(&clear);
    assert!(digested.as_str().starts_with("idem|#"), "{digested:?}");

    let idem = Idem::redis(target.url(), target.prefix());
    let listed = idem.run(&["list", "--all", "--json"]).await;
    listed.exits(0);
    assert_no_secret("`idem list --json`", &listed.printed());
    let records = listed.json();
    let records = records.as_array().unwrap();
    assert_eq!(records.len(), 1, "{records:#?}");
    let record = &records[0];
    assert_eq!(
        record["key"],
        digested.as_str(),
        "the library's digest: {record:#}"
    );
    assert_eq!(record["function"], Value::Null, "{record:#}");
    assert_eq!(
        (&record["state"], &record["outcome"]),
        (&json!("completed"), &json!("ok")),
        "{record:#}"
    );
    let table = idem.run(&["list", "--all"]).await;
    table.exits(0);
    assert!(table.stdout.contains(digested.as_str()), "{table:#?}");
    assert_no_secret("`idem list`", &table.printed());

    let got = idem.run(&["get", digested.as_str(), "--json"]).await;
    got.exits(0);
    assert_no_secret("`idem get`", &got.printed());
    let got = got.json();
    assert_eq!(got["state"], "completed", "{got:#}");
    assert!(got["stored_bytes"].as_u64().unwrap() > 0, "{got:#}");
    let shown = idem.run(&["get", digested.as_str()]).await;
    shown.exits(0);
    assert_no_secret("`idem get`", &shown.printed());

    let stats = idem.json(&["stats"]).await;
    assert_eq!(stats["total"], 1, "{stats:#}");
    assert_eq!(stats["functions"][0]["function"], Value::Null, "{stats:#}");

    // Without the digest secret, the clear key names nothing the command can find.
    let by_clear_key = idem.run(&["get", clear.as_str()]).await;
    by_clear_key.exits(3);
    assert!(
        by_clear_key.stderr.contains("no record"),
        "{by_clear_key:#?}"
    );

    // Forgotten by its digest, the key is free again for the sealed handle.
    idem.run(&["forget", digested.as_str(), "--yes"])
        .await
        .exits(0);
    let again = close(&accounts, "alice@example.com").await.unwrap();
    assert_eq!((again.run, accounts.closed.load(Ordering::SeqCst)), (2, 2));
    assert_eq!(idem.list().await.len(), 1);
}

async fn receipt(State(runs): State<Arc<AtomicUsize>>, body: String) -> (StatusCode, String) {
    let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
    let order: Value = serde_json::from_str(&body).unwrap();
    let receipt = json!({"holder": "Alice Liddell", "refund": order["refund"], "run": run});
    (StatusCode::CREATED, receipt.to_string())
}

async fn the_layer_on_a_sealed_handle_replays_and_idem_sees_no_clear_text() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let sealed = Idempotency::new(target.redis_store().clone())
        .with_sealing(keyring())
        .with_key_digest(KEY_DIGEST_SECRET);
    let runs = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route("/refunds", post(receipt))
        .with_state(runs.clone())
        .layer(IdempotencyLayer::new(sealed));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/refunds", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = system::client();
    let send = || {
        let request = client
            .post(&url)
            .header("idempotency-key", "alice@example.com")
            .header("content-type", "application/json")
            .body(json!({"refund": "card 4242"}).to_string())
            .send();
        system::within("the answer", request)
    };

    let first = send().await.unwrap();
    assert_eq!(
        (first.status().as_u16(), was_replayed(&first)),
        (201, false)
    );
    let first = first.text().await.unwrap();
    let retry = send().await.unwrap();
    assert!(was_replayed(&retry));
    assert_eq!(retry.text().await.unwrap(), first);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let idem = Idem::redis(target.url(), target.prefix());
    for args in [&["list", "--all", "--json"][..], &["list", "--all"]] {
        let listed = idem.run(args).await;
        listed.exits(0);
        assert_no_secret(&format!("`idem {}`", args.join(" ")), &listed.printed());
    }
    let records = idem.list().await;
    assert_eq!(records.len(), 1, "{records:#?}");
    let key = records[0]["key"].as_str().unwrap();
    assert!(key.starts_with("idem|#"), "{records:#?}");
    assert_eq!(records[0]["function"], Value::Null, "{records:#?}");
    let got = idem.run(&["get", key, "--json"]).await;
    got.exits(0);
    assert_no_secret("`idem get`", &got.printed());
    assert_eq!(got.json()["state"], "completed", "{got:#?}");
}

/// Closes bob's account on `idem`: refunds him in a step, then waits for `finish` (if given)
/// before answering. Counts refunds and bodies run.
async fn close_bob(
    idem: &Idempotency,
    counts: &Arc<[AtomicUsize; 2]>,
    refunded: Option<oneshot::Sender<()>>,
    finish: Option<oneshot::Receiver<()>>,
) -> Result<String, idem_core::Error> {
    let key = idem
        .key("accounts.close")
        .part("bob@example.com")
        .finish()?;
    let call = Call::new(key, Fingerprint::of(&"bob@example.com")?);
    let executed = idem
        .run(call, async {
            let run = counts[0].fetch_add(1, Ordering::SeqCst) + 1;
            let refund = step("refund", async {
                counts[1].fetch_add(1, Ordering::SeqCst);
                Ok::<_, idem_core::Error>("re_secret_77 to card 4242".to_owned())
            })
            .await?;
            if let (Some(refunded), Some(finish)) = (refunded, finish) {
                refunded.send(()).unwrap();
                let _ = finish.await;
            }
            Ok(format!("run {run}: {refund}"))
        })
        .await?;
    Ok(executed.value)
}

async fn a_sealed_call_released_by_idem_after_a_step_resumes_after_it() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let sealed = Idempotency::new(target.redis_store().clone())
        .with_sealing(keyring())
        .with_key_digest(KEY_DIGEST_SECRET);
    let counts = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let (refunded, stepped) = oneshot::channel();
    let (finish, finished) = oneshot::channel();
    let held = tokio::spawn({
        let (sealed, counts) = (sealed.clone(), counts.clone());
        async move { close_bob(&sealed, &counts, Some(refunded), Some(finished)).await }
    });
    system::within("the refund step", stepped).await.unwrap();

    let idem = Idem::redis(target.url(), target.prefix());
    let running = idem
        .run(&["list", "--state", "in-progress", "--json"])
        .await;
    running.exits(0);
    assert_no_secret("`idem list --state in-progress`", &running.printed());
    let records = running.json();
    let record = &records.as_array().unwrap()[0];
    assert_eq!(record["state"], "running", "{records:#}");
    assert_eq!(record["steps"].as_array().unwrap().len(), 1, "{records:#}");
    // A fingerprint anyone can compute from a guess of the arguments would give them away.
    let guessable = Fingerprint::of(&"bob@example.com").unwrap().to_hex();
    assert!(!running.printed().contains(&guessable), "{records:#}");
    let key = record["key"].as_str().unwrap().to_owned();

    let released = idem.run(&["release", &key, "--yes"]).await;
    released.exits(0);
    assert_no_secret("`idem release`", &released.printed());

    // The next call takes the key over and resumes after the step, opening its sealed value.
    let resumed = close_bob(&sealed, &counts, None, None).await.unwrap();
    assert_eq!(resumed, "run 2: re_secret_77 to card 4242");
    assert_eq!(counts[1].load(Ordering::SeqCst), 1, "bob was refunded once");

    finish.send(()).unwrap();
    let late = system::within("the held call", held).await.unwrap();
    assert!(late.is_err(), "its answer was not kept: {late:?}");
    assert_eq!(
        close_bob(&sealed, &counts, None, None).await.unwrap(),
        resumed
    );
    let got = idem.json(&["get", &key]).await;
    assert_eq!(got["state"], "completed", "{got:#}");
}

idem_tests::module_tests! {
    async a_sealed_call_released_by_idem_after_a_step_resumes_after_it,
    async idem_reads_a_sealed_record_by_its_digest_without_clear_text,
    async the_layer_on_a_sealed_handle_replays_and_idem_sees_no_clear_text,
}
