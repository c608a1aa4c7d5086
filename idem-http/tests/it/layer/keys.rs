//! Which requests the layer handles, and how it reads their key.

use crate::support;

use idem_http::{problem, IdempotencyLayer};
use support::{app, memory, send, serve, Payments};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_methods_and_requests_without_a_key_pass_through() {
    let payments = Payments::default().into();
    let server = serve(app(
        IdempotencyLayer::new(memory()),
        std::sync::Arc::clone(&payments),
    ))
    .await;

    let get = || {
        server
            .client
            .get(format!("{}/payments", server.url))
            .header("idempotency-key", "k1")
    };
    assert_eq!(send(get()).await.body, "listed 1");
    assert_eq!(send(get()).await.body, "listed 2");

    let put = || {
        server
            .client
            .put(format!("{}/payments", server.url))
            .header("idempotency-key", "k1")
            .body("{}")
    };
    assert!(!send(put()).await.replayed());
    assert!(!send(put()).await.replayed());

    for _ in 0..2 {
        let answer = send(server.post("/payments", None, "{}")).await;
        assert_eq!(answer.status, 201);
        assert!(!answer.replayed());
    }
    assert_eq!(payments.runs(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_key_that_is_missing_gets_a_400() {
    let payments = std::sync::Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .require_key(true)
        .build();
    let server = serve(app(layer, payments.clone())).await;

    send(server.post("/payments", None, "{}"))
        .await
        .assert_problem(400, problem::KEY_MISSING, None);
    let get = send(server.client.get(format!("{}/payments", server.url))).await;
    assert_eq!(get.status, 200);
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_keys_and_two_keys_get_a_400() {
    let payments = std::sync::Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;

    let too_long = "k".repeat(256);
    for bad in ["\"\"", "\"unterminated", "two words"] {
        send(server.post("/payments", Some(bad), "{}"))
            .await
            .assert_problem(400, problem::KEY_INVALID, Some(bad));
    }
    send(server.post("/payments", Some(&too_long), "{}"))
        .await
        .assert_problem(400, problem::KEY_INVALID, Some(&too_long));
    let twice = server
        .post("/payments", Some("k1"), "{}")
        .header("idempotency-key", "k2");
    send(twice)
        .await
        .assert_problem(400, problem::KEY_INVALID, Some("k1, k2"));
    assert_eq!(payments.runs(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sf_string_and_a_bare_token_are_the_same_key() {
    let payments = std::sync::Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;
    let uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324";

    let first = send(server.post("/payments", Some(&format!("\"{uuid}\"")), "{}")).await;
    let second = send(server.post("/payments", Some(uuid), "{}")).await;
    let with_parameters = format!("\"{uuid}\";p=1;q=\"x\"");
    let third = send(server.post("/payments", Some(&with_parameters), "{}")).await;
    assert_eq!(first.status, 201);
    assert!(second.replayed());
    assert_eq!(second.body, first.body);
    assert!(third.replayed(), "sf-string parameters are ignored");
    let patch = |key: &str| {
        server
            .client
            .patch(format!("{}/payments", server.url))
            .header("idempotency-key", key)
            .body("{}")
    };
    assert!(!send(patch("patch-1")).await.replayed());
    assert!(
        send(patch("patch-1")).await.replayed(),
        "PATCH is handled too"
    );
    send(patch(uuid))
        .await
        .assert_problem(422, problem::KEY_REUSED, Some(uuid));
    let longest = "k".repeat(255);
    assert_eq!(
        send(server.post("/payments", Some(&longest), "{}"))
            .await
            .status,
        201
    );
    assert_eq!(payments.runs(), 3);
}
