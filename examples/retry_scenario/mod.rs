//! The retry story the framework examples tell over real HTTP, whatever framework serves
//! `POST /payments`: a first attempt, a retry of it, and the key reused for another payment.

use std::sync::atomic::{AtomicUsize, Ordering};

use reqwest::StatusCode;

/// The client's credentials: keys are scoped by `Authorization`, and a keyed request without
/// one is refused.
pub const MERCHANT: &str = "Bearer merchant-42";

/// What the server answered.
struct Exchange {
    status: StatusCode,
    replayed: bool,
    location: Option<String>,
    body: String,
}

/// Sends one keyed POST and prints the exchange.
async fn pay(client: &reqwest::Client, url: &str, key: &str, body: &str) -> Exchange {
    println!("-> POST /payments  Idempotency-Key: {key}  {body}");
    let response = client
        .post(url)
        .header("authorization", MERCHANT)
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("the server answers");
    let replayed = response
        .headers()
        .get("idempotent-replayed")
        .is_some_and(|value| value == "true");
    let location = response
        .headers()
        .get("location")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let status = response.status();
    let body = response.text().await.expect("a body");
    let shown = if replayed {
        "  Idempotent-Replayed: true"
    } else {
        ""
    };
    println!("<- {status}{shown}  {body}\n");
    Exchange {
        status,
        replayed,
        location,
        body,
    }
}

/// Plays the story against the server at `url`, whose handler counts its runs in `runs`, and
/// asserts every answer.
pub async fn play(url: &str, runs: &AtomicUsize) {
    let client = reqwest::Client::new();
    let order = r#"{"amount":1000,"currency":"eur"}"#;

    println!("1. The first attempt charges the card.");
    let first = pay(&client, url, "order-42", order).await;
    assert_eq!((first.status, first.replayed), (StatusCode::CREATED, false));
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    println!("2. The answer was lost on the way: the client retries with the same key.");
    let retry = pay(&client, url, "order-42", order).await;
    assert_eq!((retry.status, retry.replayed), (StatusCode::CREATED, true));
    assert_eq!(retry.body, first.body, "the replay is the first answer");
    assert_eq!(retry.location.as_deref(), Some("/payments/ch_1"));
    assert_eq!(retry.location, first.location, "with its `Location`");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler ran once");

    println!("3. A bug reuses the key for another payment: refused.");
    let reused = pay(
        &client,
        url,
        "order-42",
        r#"{"amount":5000,"currency":"eur"}"#,
    )
    .await;
    assert_eq!(reused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    println!("One order, one charge.");
}
