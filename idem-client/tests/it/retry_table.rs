//! The retry table, row by row, against a real HTTP server that answers what the test scripts.

use crate::support;

use std::time::Duration;

use idem_client::key_of;
use support::client;
use support::quick;
use support::server::{Scripted, Shop};

async fn send(shop: &Shop, retry: idem_client::IdempotentRetry) -> reqwest::Response {
    client(retry)
        .post(shop.url("/scripted"))
        .body("{}")
        .send()
        .await
        .unwrap()
}

/// The statuses the server answered, in order.
fn answered(shop: &Shop) -> Vec<u16> {
    shop.seen().iter().map(|seen| seen.status).collect()
}

/// A backoff so long that an attempt that waited for it would never start: whatever is
/// retried in a test with it was retried after the server's `Retry-After`.
fn backoff_never() -> idem_client::IdempotentRetryBuilder {
    idem_client::IdempotentRetry::builder()
        .backoff(Duration::from_secs(3600), Duration::from_secs(3600))
        .max_elapsed(Duration::from_secs(60))
}

#[tokio::test]
async fn retry_after_is_honoured_for_409_429_and_503() {
    let shop = Shop::open().await;
    shop.script([
        Scripted::status(409).header("retry-after", "0"),
        Scripted::status(429).header("retry-after", "0"),
        Scripted::status(503).header("retry-after", "0"),
    ]);

    let response = send(&shop, backoff_never().build()).await;

    assert_eq!(response.status(), 200);
    assert_eq!(answered(&shop), vec![409, 429, 503, 200]);
    let key = key_of(&response).map(str::to_owned);
    assert!(
        shop.keys().iter().all(|seen| *seen == key),
        "one key throughout"
    );
}

#[tokio::test]
async fn gateway_and_server_errors_are_retried_with_backoff() {
    let shop = Shop::open().await;
    shop.script([500, 502, 504].map(Scripted::status));

    let response = send(&shop, quick().build()).await;

    assert_eq!(response.status(), 200);
    assert_eq!(answered(&shop), vec![500, 502, 504, 200]);
}

#[tokio::test]
async fn a_wait_past_max_elapsed_is_not_begun() {
    let shop = Shop::open().await;
    shop.script([Scripted::status(503).header("retry-after", "5")]);

    let retry = quick().max_elapsed(Duration::from_secs(1)).build();
    let response = send(&shop, retry).await;

    assert_eq!(response.status(), 503);
    assert_eq!(answered(&shop), vec![503]);
}

#[tokio::test]
async fn the_last_answer_is_returned_when_attempts_run_out() {
    let shop = Shop::open().await;
    shop.script([503, 503, 503, 503].map(Scripted::status));

    let response = send(&shop, quick().max_attempts(3).build()).await;

    assert_eq!(response.status(), 503);
    assert!(key_of(&response).is_some());
    assert_eq!(answered(&shop), vec![503, 503, 503]);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    for status in [400, 401, 403, 404, 408, 410, 413, 422] {
        let shop = Shop::open().await;
        shop.script([Scripted::status(status).header("retry-after", "0")]);

        let response = send(&shop, quick().build()).await;

        assert_eq!(response.status(), status);
        assert_eq!(answered(&shop), vec![status], "{status} is sent once");
    }
}

#[tokio::test]
async fn server_errors_that_cannot_change_are_not_retried() {
    for status in [501, 505] {
        let shop = Shop::open().await;
        shop.script([Scripted::status(status)]);

        let response = send(&shop, quick().build()).await;

        assert_eq!(response.status(), status);
        assert_eq!(answered(&shop), vec![status]);
    }
}

#[tokio::test]
async fn a_500_of_another_problem_type_is_retried() {
    let shop = Shop::open().await;
    shop.script([Scripted::status(500).problem("https://example.com/problems/oops")]);

    let response = send(&shop, quick().build()).await;

    assert_eq!(response.status(), 200);
    assert_eq!(answered(&shop), vec![500, 200]);
}

#[tokio::test]
async fn a_not_recorded_type_the_caller_names_is_returned_whole() {
    let unknown = "https://api.example.com/problems/outcome-unknown";
    let shop = Shop::open().await;
    shop.script([Scripted::status(502).problem(unknown)]);

    let retry = quick().not_recorded_problem_type(unknown).build();
    let response = send(&shop, retry).await;

    assert_eq!(response.status(), 502);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let problem: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(problem["type"], unknown);
    assert_eq!(problem["title"], "scripted");
    assert_eq!(answered(&shop), vec![502]);
}

#[tokio::test]
async fn one_attempt_keeps_the_key_and_retries_nothing() {
    let shop = Shop::open().await;
    shop.script([Scripted::status(503)]);

    let response = send(&shop, quick().max_attempts(1).build()).await;

    assert_eq!(response.status(), 503);
    assert!(key_of(&response).is_some());
    assert_eq!(answered(&shop), vec![503]);
}

#[tokio::test]
async fn a_problem_too_long_to_read_is_not_retried_and_reaches_the_caller_whole() {
    let detail = "x".repeat(200 * 1024);
    let document = serde_json::json!({ "type": "https://example.com/oops", "detail": detail });
    let shop = Shop::open().await;
    shop.script([Scripted::status(500)
        .header("content-type", "application/problem+json")
        .body(document.to_string())]);

    let response = send(&shop, quick().build()).await;

    assert_eq!(response.status(), 500);
    assert_eq!(response.text().await.unwrap(), document.to_string());
    assert_eq!(answered(&shop), vec![500], "it might say 'not recorded'");
}

#[tokio::test]
async fn a_409_that_says_the_key_was_reused_is_not_waited_for() {
    let shop = Shop::open().await;
    shop.script([Scripted::status(409).problem(idem_http::problem::KEY_REUSED)]);

    let response = send(&shop, quick().build()).await;

    assert_eq!(response.status(), 409);
    assert_eq!(answered(&shop), vec![409]);
}

#[tokio::test]
async fn a_long_retry_after_is_cut_to_max_retry_after() {
    let shop = Shop::open().await;
    shop.script([Scripted::status(503).header("retry-after", "3600")]);

    let retry = backoff_never().max_retry_after(Duration::ZERO).build();
    let response = send(&shop, retry).await;

    assert_eq!(response.status(), 200);
    assert_eq!(answered(&shop), vec![503, 200]);
}

#[tokio::test]
async fn keys_can_be_sent_as_sf_strings() {
    let shop = Shop::open().await;

    let response = send(&shop, quick().sf_string_keys(true).build()).await;

    let key = key_of(&response).unwrap().to_owned();
    assert_eq!(shop.keys(), vec![Some(format!("\"{key}\""))]);
}

#[tokio::test]
async fn a_problem_that_is_not_json_is_not_retried() {
    let shop = Shop::open().await;
    shop.script([Scripted::status(503)
        .header("content-type", "application/problem+json")
        .body("upstream said no".to_owned())]);

    let response = send(&shop, quick().build()).await;

    assert_eq!(response.status(), 503);
    assert_eq!(response.text().await.unwrap(), "upstream said no");
    assert_eq!(answered(&shop), vec![503]);
}

#[tokio::test]
async fn a_problem_type_that_is_not_a_string_is_no_type() {
    let shop = Shop::open().await;
    shop.script([Scripted::status(503)
        .header("content-type", "application/problem+json")
        .body(r#"{"type":5,"title":"t"}"#.to_owned())]);

    let response = send(&shop, quick().build()).await;

    assert_eq!(response.status(), 200);
    assert_eq!(answered(&shop), vec![503, 200]);
}
