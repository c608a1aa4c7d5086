//! Failures below HTTP: a timeout, a server that is not there, and a retry middleware stacked
//! outside this one.

use crate::support;

use std::time::Duration;

use http::Extensions;
use idem_client::{key_of, was_replayed, SendError};
use idem_test_servers::proxy::{Fault, Proxy};
use reqwest_middleware::{ClientBuilder, Middleware, Next};
use support::server::Shop;
use support::{quick, HANG};

#[tokio::test]
async fn a_timed_out_attempt_is_retried_with_its_key_to_the_replay() {
    let shop = Shop::open().await;
    shop.hold();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let client = ClientBuilder::new(http).with(quick().build()).build();
    let url = shop.url("/payments");
    let send = tokio::spawn(async move { client.post(url).body("{}").send().await });

    tokio::time::timeout(HANG, shop.answered(409))
        .await
        .unwrap();
    shop.release();
    let response = send.await.unwrap().unwrap();

    assert_eq!(response.status(), 201);
    assert!(was_replayed(&response));
    assert_eq!(shop.runs(), 1);
    let key = key_of(&response).map(str::to_owned);
    assert!(shop.keys().iter().all(|seen| *seen == key));
}

#[tokio::test]
async fn a_server_never_reached_is_reported_as_not_processed() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/payments", closed.local_addr().unwrap());
    drop(closed);

    let client = support::client(quick().max_attempts(3).build());
    let error = client.post(url).body("{}").send().await.unwrap_err();

    let failed = SendError::of(&error).expect("a keyed send's error");
    assert_eq!(failed.attempts(), 3);
    assert!(!failed.may_have_been_processed());
    assert!(failed.last_error().is_connect());
    assert!(error.to_string().contains("was not sent"), "{error}");
}

/// Sends the request once more, as it was given, when the first try fails: what a generic
/// retry middleware does.
struct RetryOnceOutside;

#[async_trait::async_trait]
impl Middleware for RetryOnceOutside {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let again = request.try_clone().unwrap();
        match next.clone().run(request, extensions).await {
            Err(_) => next.run(again, extensions).await,
            answered => answered,
        }
    }
}

#[tokio::test]
async fn a_retry_middleware_outside_resends_with_the_same_key() {
    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    proxy.plan([Fault::LoseAnswer]);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let client = ClientBuilder::new(http)
        .with(RetryOnceOutside)
        .with(quick().max_attempts(1).build())
        .build();

    let response = client
        .post(format!("{}/payments", proxy.url))
        .body("{}")
        .send()
        .await
        .unwrap();

    assert!(was_replayed(&response));
    assert_eq!(shop.runs(), 1);
    let key = key_of(&response).map(str::to_owned);
    assert_eq!(shop.keys(), vec![key.clone(), key]);
}

/// Sends a request of its own through the rest of the chain, with the same extensions, before
/// the caller's: a token fetch, say.
struct AnotherPostFirst;

#[async_trait::async_trait]
impl Middleware for AnotherPostFirst {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let mut own = request.try_clone().unwrap();
        *own.body_mut() = Some(reqwest::Body::from("{\"token\":true}"));
        next.clone().run(own, extensions).await?;
        next.run(request, extensions).await
    }
}

#[tokio::test]
async fn another_request_through_the_same_extensions_gets_a_key_of_its_own() {
    let shop = Shop::open().await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(AnotherPostFirst)
        .with(quick().build())
        .build();

    let response = client
        .post(shop.url("/payments"))
        .body("{}")
        .send()
        .await
        .unwrap();

    assert_eq!(response.status(), 201);
    assert!(!was_replayed(&response));
    assert_eq!(shop.runs(), 2);
    let keys = shop.keys();
    assert_ne!(keys[0], keys[1]);
    assert_eq!(keys[1].as_deref(), key_of(&response));
}

#[tokio::test]
async fn one_extensions_for_two_operations_gives_two_keys() {
    let shop = Shop::open().await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(quick().build())
        .build();
    let mut extensions = Extensions::new();
    let mut keys = Vec::new();
    for _ in 0..2 {
        let request = client
            .post(shop.url("/payments"))
            .body("{}")
            .build()
            .unwrap();
        let response = client
            .execute_with_extensions(request, &mut extensions)
            .await
            .unwrap();
        assert!(!was_replayed(&response));
        keys.push(key_of(&response).unwrap().to_owned());
    }
    assert_ne!(keys[0], keys[1]);
    assert_eq!(shop.runs(), 2, "two operations, two runs");
}
