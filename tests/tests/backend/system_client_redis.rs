//! Seam: idem-client ↔ idem-http ↔ the Redis store ↔ the `idem` command.
//!
//! A client with idem-client's middleware pays through a proxy that loses answers, to an axum
//! server with the HTTP layer on a real Redis; the retries with the same key get the stored
//! answer and the charge runs once per operation. Then the `idem` command, as a process, reads
//! the records the layer left, refuses to release a completed one, forgets one (the next request
//! with its key charges again), and releases one held by a call in flight (the next request
//! charges again, and the stale call's answer does not replace the new record). An answer too
//! large to keep, and lost, comes back to the client as the layer's 410, final, charged once.

use crate::system;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::system::command::Idem;
use crate::system::within;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use idem_client::{key_of, was_replayed};
use idem_core::Idempotency;
use idem_http::{IdempotencyLayer, IdempotencyLayerBuilder};
use idem_test_servers::proxy::{Fault, Proxy};
use idem_test_servers::redis::target::RedisTarget;
use reqwest_middleware::ClientWithMiddleware;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Mutex, Semaphore};

/// The payment provider behind the server: counts its charges; while `hold` is set, its first
/// charge waits for a permit of `gate`.
struct Provider {
    charges: AtomicUsize,
    hold: AtomicBool,
    gate: Semaphore,
    started: mpsc::UnboundedSender<usize>,
}

impl Provider {
    fn charges(&self) -> usize {
        self.charges.load(Ordering::SeqCst)
    }
}

async fn charge(State(provider): State<Arc<Provider>>, body: String) -> (StatusCode, String) {
    let charge = provider.charges.fetch_add(1, Ordering::SeqCst) + 1;
    let _ = provider.started.send(charge);
    if charge == 1 && provider.hold.load(Ordering::SeqCst) {
        provider.gate.acquire().await.unwrap().forget();
    }
    let order: Value = serde_json::from_str(&body).unwrap();
    let answer = json!({"charge": format!("ch_{charge}"), "order": order["order"]});
    (StatusCode::CREATED, answer.to_string())
}

/// A server with the layer on `target`'s store, and what it started.
struct Shop {
    provider: Arc<Provider>,
    started: Mutex<mpsc::UnboundedReceiver<usize>>,
    addr: SocketAddr,
    idem: Idem,
    _target: RedisTarget,
}

impl Shop {
    async fn open() -> Option<Shop> {
        Shop::open_with(|layer| layer).await
    }

    /// A shop whose layer is configured by `configure`.
    async fn open_with(
        configure: impl FnOnce(IdempotencyLayerBuilder) -> IdempotencyLayerBuilder,
    ) -> Option<Shop> {
        let target = RedisTarget::start().await?;
        let (sender, started) = mpsc::unbounded_channel();
        let provider = Arc::new(Provider {
            charges: AtomicUsize::new(0),
            hold: AtomicBool::new(false),
            gate: Semaphore::new(0),
            started: sender,
        });
        let app = Router::new()
            .route("/charges", post(charge))
            .with_state(provider.clone())
            .layer(
                configure(IdempotencyLayer::builder(Idempotency::new(
                    target.redis_store().clone(),
                )))
                .build(),
            );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Some(Shop {
            provider,
            started: Mutex::new(started),
            addr,
            idem: Idem::redis(target.url(), target.prefix()),
            _target: target,
        })
    }

    /// Waits until the provider has started charge number `charge`.
    async fn started(&self, charge: usize) {
        let mut started = self.started.lock().await;
        within("the charge", async {
            while started.recv().await.unwrap() < charge {}
        })
        .await;
    }
}

/// What the client finally got.
#[derive(Debug)]
struct Answer {
    status: u16,
    replayed: bool,
    key: String,
    body: Value,
}

async fn pay(client: &ClientWithMiddleware, url: &str, key: Option<&str>, order: &str) -> Answer {
    let mut request = client
        .post(format!("{url}/charges"))
        .header("content-type", "application/json")
        .body(json!({"order": order, "amount": 1250}).to_string());
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let response = within("the answer", request.send()).await.unwrap();
    Answer {
        status: response.status().as_u16(),
        replayed: was_replayed(&response),
        key: key_of(&response).expect("a keyed request").to_owned(),
        body: serde_json::from_str(&response.text().await.unwrap()).unwrap(),
    }
}

/// The stored key of the record whose key holds the client's `key`, from `idem list`.
fn stored_key<'a>(records: &'a [Value], key: &str) -> &'a str {
    let found: Vec<&str> = records
        .iter()
        .filter_map(|record| record["key"].as_str())
        .filter(|stored| stored.contains(key))
        .collect();
    assert_eq!(found.len(), 1, "one record holds {key}: {records:#?}");
    found[0]
}

async fn lost_answers_are_replayed_once_per_operation_and_idem_forgets_one() {
    let Some(shop) = Shop::open().await else {
        return;
    };
    let proxy = Proxy::start(shop.addr).await;
    let client = system::client();

    proxy.plan([Fault::LoseAnswer]);
    let first = pay(&client, &proxy.url, None, "o-1").await;
    proxy.plan([Fault::LoseAnswer]);
    let second = pay(&client, &proxy.url, None, "o-2").await;

    assert_eq!(proxy.lost(), 2, "each operation lost its first answer");
    for (answer, charge) in [(&first, "ch_1"), (&second, "ch_2")] {
        assert_eq!((answer.status, answer.replayed), (201, true), "{answer:?}");
        assert_eq!(answer.body["charge"], charge, "{answer:?}");
    }
    assert_ne!(first.key, second.key, "one key per operation");
    assert_eq!(shop.provider.charges(), 2, "one charge per operation");

    // The command sees what the layer stored: one completed record per operation, scoped.
    let records = shop.idem.list().await;
    assert_eq!(records.len(), 2, "{records:#?}");
    for record in &records {
        assert_eq!(record["function"], "http", "{record:#}");
        assert_eq!(record["state"], "completed", "{record:#}");
        assert_eq!(record["outcome"], "ok", "{record:#}");
        assert!(
            record["scope"].is_string(),
            "scoped by Authorization: {record:#}"
        );
    }
    let stored = stored_key(&records, &first.key).to_owned();
    let got = shop.idem.json(&["get", &stored]).await;
    assert_eq!(
        (&got["key"], &got["state"]),
        (&json!(stored), &json!("completed"))
    );

    // A completed record is not the operator's to release: refused, nothing changed.
    let refused = shop.idem.run(&["release", &stored, "--yes"]).await;
    refused.exits(4);
    assert!(refused.stderr.contains("not in progress"), "{refused:#?}");
    let retry = pay(&client, &shop_url(&shop), Some(&first.key), "o-1").await;
    assert_eq!((retry.replayed, &retry.body), (true, &first.body));
    assert_eq!(shop.provider.charges(), 2);

    // Forgotten, the key is new again: the next request with it charges.
    shop.idem.run(&["forget", &stored, "--yes"]).await.exits(0);
    shop.idem.run(&["get", &stored]).await.exits(3);
    let again = pay(&client, &shop_url(&shop), Some(&first.key), "o-1").await;
    assert_eq!((again.status, again.replayed), (201, false), "{again:?}");
    assert_eq!(again.body["charge"], "ch_3");
    assert_eq!(shop.provider.charges(), 3);
    let records = shop.idem.list().await;
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!(stored_key(&records, &first.key), stored);
}

async fn a_held_key_released_by_idem_charges_again_and_keeps_the_new_answer() {
    let Some(shop) = Shop::open().await else {
        return;
    };
    shop.provider.hold.store(true, Ordering::SeqCst);
    let url = shop_url(&shop);
    let client = system::client();
    let held = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move { pay(&client, &url, Some("order-7-charge"), "o-7").await }
    });
    shop.started(1).await;

    let running = shop.idem.json(&["list", "--state", "in-progress"]).await;
    let records = running.as_array().unwrap();
    assert_eq!(records.len(), 1, "{running:#}");
    assert_eq!(records[0]["state"], "running", "{running:#}");
    let stored = stored_key(records, "order-7-charge").to_owned();

    shop.idem.run(&["release", &stored, "--yes"]).await.exits(0);
    let second = pay(&client, &url, Some("order-7-charge"), "o-7").await;
    assert_eq!((second.status, second.replayed), (201, false), "{second:?}");
    assert_eq!(second.body["charge"], "ch_2");

    // The released call finishes late: its answer must not replace the record of the new one.
    shop.provider.gate.add_permits(1);
    let late = within("the held call", held).await.unwrap();
    // It charged, and its answer could not be kept: the client is told so, and not retried.
    assert_eq!((late.status, late.replayed), (500, false), "{late:?}");
    assert_eq!(
        late.body["type"],
        idem_http::problem::NOT_RECORDED,
        "{late:?}"
    );
    assert_eq!(late.key, "order-7-charge");
    let third = pay(&client, &url, Some("order-7-charge"), "o-7").await;
    assert_eq!(
        (third.replayed, &third.body),
        (true, &second.body),
        "{late:?}"
    );
    assert_eq!(shop.provider.charges(), 2);
    let got = shop.idem.json(&["get", &stored]).await;
    assert_eq!(got["state"], "completed", "{got:#}");
}

async fn an_answer_too_large_to_keep_and_lost_is_told_gone_and_charged_once() {
    // The charge's answer (some 30 bytes) is handled and sent, but not kept.
    let Some(shop) = Shop::open_with(|layer| layer.max_response_body(16)).await else {
        return;
    };
    let proxy = Proxy::start(shop.addr).await;
    proxy.plan([Fault::LoseAnswer]);

    let gone = pay(&system::client(), &proxy.url, None, "o-9").await;

    assert_eq!(proxy.lost(), 1);
    // Told from the record: the operation ran earlier, as `was_replayed` means.
    assert_eq!((gone.status, gone.replayed), (410, true), "{gone:?}");
    assert_eq!(
        gone.body["type"],
        idem_http::problem::RESPONSE_NOT_KEPT,
        "{gone:?}"
    );
    assert_eq!(gone.body["handled_status"], 201, "{gone:?}");
    assert_eq!(shop.provider.charges(), 1, "the retry did not charge again");
    let records = shop.idem.list().await;
    assert_eq!(records.len(), 1, "{records:#?}");
    let record = &records[0];
    assert_eq!(record["key"], stored_key(&records, &gone.key), "{record:#}");
    assert_eq!(record["state"], "completed", "handled for good: {record:#}");
}

fn shop_url(shop: &Shop) -> String {
    format!("http://{}", shop.addr)
}

idem_tests::module_tests! {
    async lost_answers_are_replayed_once_per_operation_and_idem_forgets_one,
    async a_held_key_released_by_idem_charges_again_and_keeps_the_new_answer,
    async an_answer_too_large_to_keep_and_lost_is_told_gone_and_charged_once,
}
