//! Answers lost between a real idem-http server and the client, on purpose, by a proxy: the
//! middleware's retries with the same key get the stored answer, and the handler runs once.

#[path = "it/support/mod.rs"]
mod support;

use idem_client::{key_of, was_replayed, IdempotentRetry, SendError};
use idem_test_servers::proxy::{Fault, Proxy};
use support::server::Shop;
use support::{client, quick, HANG};

const ORDER: &str = r#"{"order":"o_42","amount":1250}"#;

async fn pay(
    client: &reqwest_middleware::ClientWithMiddleware,
    proxy: &Proxy,
    body: &str,
) -> reqwest_middleware::Result<reqwest::Response> {
    client
        .post(format!("{}/payments", proxy.url))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
}

fn payment(body: &str) -> String {
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    json["payment"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_lost_answer_is_replayed_and_the_handler_runs_once() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    proxy.plan([Fault::LoseAnswer]);

    let response = pay(&client(quick().build()), &proxy, ORDER).await.unwrap();

    assert_eq!(response.status(), 201);
    assert!(was_replayed(&response));
    let key = key_of(&response).unwrap().to_owned();
    assert_eq!(payment(&response.text().await.unwrap()), "pay_1");
    assert_eq!(shop.runs(), 1);
    assert_eq!(shop.keys(), vec![Some(key.clone()), Some(key)]);
}

#[tokio::test]
async fn a_connection_cut_after_the_request_ends_in_the_replay() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    proxy.plan([Fault::CutOnceRunning]);

    let response = pay(&client(quick().build()), &proxy, ORDER).await.unwrap();

    assert_eq!(response.status(), 201);
    assert!(was_replayed(&response));
    assert_eq!(shop.runs(), 1);
    let key = key_of(&response).unwrap();
    let seen = shop.seen();
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(
        seen.iter().all(|seen| seen.key.as_deref() == Some(key)),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_request_in_progress_is_waited_out_to_the_replay() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    shop.hold();
    proxy.plan([Fault::CutOnceRunning]);

    let client = client(quick().build());
    let url = proxy.url.clone();
    let send = tokio::spawn(async move {
        let response = client
            .post(format!("{url}/payments"))
            .body(ORDER)
            .send()
            .await
            .unwrap();
        let replayed = was_replayed(&response);
        let key = key_of(&response).unwrap().to_owned();
        (
            response.status(),
            replayed,
            key,
            response.text().await.unwrap(),
        )
    });
    tokio::time::timeout(HANG, shop.answered(409))
        .await
        .unwrap();
    shop.release();
    let (status, replayed, key, body) = send.await.unwrap();

    assert_eq!(status, 201);
    assert!(replayed);
    assert_eq!(payment(&body), "pay_1");
    assert_eq!(shop.runs(), 1);
    let mut statuses: Vec<u16> = shop.seen().iter().map(|seen| seen.status).collect();
    statuses.sort();
    statuses.dedup();
    assert_eq!(
        statuses,
        vec![201, 409],
        "the run, the replay and the 409s in between"
    );
    assert!(shop
        .keys()
        .iter()
        .all(|seen| seen.as_deref() == Some(key.as_str())));
}

#[tokio::test]
async fn a_key_reused_with_another_body_gets_422_after_one_request() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    let client = client(quick().build());
    let send = |body: &'static str| {
        client
            .post(format!("{}/payments", proxy.url))
            .header("idempotency-key", "order-42-charge")
            .header("content-type", "application/json")
            .body(body)
            .send()
    };

    assert_eq!(send(ORDER).await.unwrap().status(), 201);
    let refused = send(r#"{"order":"o_42","amount":9999}"#).await.unwrap();

    assert_eq!(refused.status(), 422);
    assert_eq!(key_of(&refused), Some("order-42-charge"));
    assert_eq!(shop.seen().len(), 2, "one request for each send");
    assert_eq!(shop.runs(), 1);
}

#[tokio::test]
async fn the_callers_own_key_is_sent_as_it_is_on_every_attempt() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    proxy.plan([Fault::LoseAnswer]);

    let response = client(quick().build())
        .post(format!("{}/payments", proxy.url))
        .header("idempotency-key", "order-42-charge")
        .body(ORDER)
        .send()
        .await
        .unwrap();

    assert!(was_replayed(&response));
    assert_eq!(key_of(&response), Some("order-42-charge"));
    let own = Some("order-42-charge".to_owned());
    assert_eq!(shop.keys(), vec![own.clone(), own]);
}

#[tokio::test]
async fn two_sends_of_one_body_are_two_operations_with_two_keys() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    let client = client(quick().build());

    let first = pay(&client, &proxy, ORDER).await.unwrap();
    let second = pay(&client, &proxy, ORDER).await.unwrap();

    assert!(!was_replayed(&first) && !was_replayed(&second));
    assert_ne!(key_of(&first), key_of(&second));
    assert_eq!(shop.runs(), 2);
    let keys = shop.keys();
    assert_eq!(keys[0].as_deref(), key_of(&first));
    assert_eq!(keys[1].as_deref(), key_of(&second));
}

#[tokio::test]
async fn a_get_carries_no_key_and_is_sent_once() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    let client = client(quick().build());

    let listed = client
        .get(format!("{}/orders", proxy.url))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    assert_eq!(key_of(&listed), None);

    proxy.plan([Fault::LoseAnswer]);
    let lost = client
        .get(format!("{}/orders", proxy.url))
        .send()
        .await
        .unwrap_err();
    assert!(SendError::of(&lost).is_none(), "left alone: {lost}");

    assert_eq!(shop.keys(), vec![None, None]);
}

#[tokio::test]
async fn answers_lost_every_time_end_in_an_error_that_names_the_key() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    proxy.plan([Fault::LoseAnswer; 3]);

    let error = pay(&client(quick().max_attempts(3).build()), &proxy, ORDER)
        .await
        .unwrap_err();

    let failed = SendError::of(&error).expect("a keyed send's error");
    assert_eq!(failed.attempts(), 3);
    assert!(failed.may_have_been_processed());
    assert!(
        failed.last_error().is_request(),
        "{:?}",
        failed.last_error()
    );
    let key = Some(failed.key().to_owned());
    assert_eq!(shop.keys(), vec![key.clone(), key.clone(), key]);
    assert!(error.to_string().contains(failed.key()), "{error}");
    assert_eq!(
        shop.runs(),
        1,
        "the first attempt ran it; the others got the replay"
    );
    // Later, the same key gets the answer the server kept.
    let later = client(IdempotentRetry::default())
        .post(format!("{}/payments", proxy.url))
        .header("idempotency-key", failed.key())
        .header("content-type", "application/json")
        .body(ORDER)
        .send()
        .await
        .unwrap();
    assert!(was_replayed(&later));
}

#[tokio::test]
async fn a_streamed_body_is_sent_once_with_its_key() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    proxy.plan([Fault::LoseAnswer]);
    let chunks: Vec<Result<&'static str, std::io::Error>> =
        vec![Ok(r#"{"order":"#), Ok(r#""o_42"}"#)];
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));

    let error = client(quick().build())
        .post(format!("{}/payments", proxy.url))
        .body(body)
        .send()
        .await
        .unwrap_err();

    let failed = SendError::of(&error).expect("a keyed send's error");
    assert_eq!(failed.attempts(), 1);
    assert!(failed.may_have_been_processed());
    assert_eq!(shop.keys(), vec![Some(failed.key().to_owned())]);
    assert_eq!(shop.runs(), 1);
}

#[tokio::test]
async fn a_response_not_recorded_is_returned_with_its_key_and_not_retried() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    shop.faults()
        .completion_fails
        .store(true, std::sync::atomic::Ordering::SeqCst);

    let response = pay(&client(quick().build()), &proxy, ORDER).await.unwrap();

    assert_eq!(response.status(), 500);
    let key = key_of(&response).unwrap().to_owned();
    let problem: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(problem["type"], idem_http::problem::NOT_RECORDED);
    assert_eq!(shop.keys(), vec![Some(key)], "sent once");
    assert_eq!(shop.runs(), 1);
}

#[tokio::test]
async fn a_store_outage_is_retried_to_the_first_run() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    shop.faults()
        .reservations_refused
        .store(2, std::sync::atomic::Ordering::SeqCst);

    let response = pay(&client(quick().build()), &proxy, ORDER).await.unwrap();

    assert_eq!(response.status(), 201);
    assert!(!was_replayed(&response));
    let statuses: Vec<u16> = shop.seen().iter().map(|seen| seen.status).collect();
    assert_eq!(statuses, vec![503, 503, 201]);
    assert_eq!(shop.runs(), 1);
}

#[test]
fn the_not_recorded_type_is_idem_https() {
    assert_eq!(
        idem_client::IDEM_HTTP_NOT_RECORDED,
        idem_http::problem::NOT_RECORDED
    );
}

#[tokio::test]
async fn each_retry_is_told_with_its_key_attempt_reason_and_wait() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    proxy.plan([Fault::LoseAnswer]);
    let events = support::events::Events::default();
    let _default = tracing::subscriber::set_default(events.clone());

    let response = pay(&client(quick().build()), &proxy, ORDER).await.unwrap();

    let key = key_of(&response).unwrap();
    let retries: Vec<String> = events
        .all()
        .into_iter()
        .filter(|event| event.contains("retrying with the same key"))
        .collect();
    assert_eq!(retries.len(), 1, "{retries:?}");
    let retry = &retries[0];
    assert!(retry.starts_with("INFO idem::client: "), "{retry}");
    for field in [
        format!("key={key}"),
        "attempt=1".to_owned(),
        "reason=no answer".to_owned(),
    ] {
        assert!(retry.contains(&field), "{field} in {retry}");
    }
    assert!(retry.contains(" wait_ms="), "{retry}");
}
