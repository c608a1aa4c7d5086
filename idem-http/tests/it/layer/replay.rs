//! What a retry gets back, and which retries count as the same request.

use crate::support;

use std::sync::Arc;

use idem_http::{problem, IdempotencyLayer, MismatchStatus};
use support::{app, memory, send, serve, Payments};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_gets_the_stored_status_body_and_allowed_headers() {
    let payments = Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;

    let first = send(server.post("/payments", Some("pay-1"), r#"{"amount":1000}"#)).await;
    assert_eq!(first.status, 201);
    assert!(!first.replayed());
    assert_eq!(first.header("set-cookie"), Some("session=secret"));

    let retry = send(server.post("/payments", Some("pay-1"), r#"{"amount":1000}"#)).await;
    assert_eq!(payments.runs(), 1);
    assert_eq!(retry.status, 201);
    assert!(retry.replayed());
    assert_eq!(retry.body, first.body, "the body, byte for byte");
    assert_eq!(retry.header("content-type"), Some("application/json"));
    assert_eq!(retry.header("location"), Some("/payments/1"));
    assert_eq!(retry.header("set-cookie"), None);
    assert_eq!(retry.header("x-request-id"), None, "not on the allow-list");
    assert_ne!(
        retry.header("date"),
        Some("Mon, 01 Jan 2001 00:00:00 GMT"),
        "the stored Date is never replayed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_added_to_the_allow_list_are_replayed() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .replay_headers([http::HeaderName::from_static("x-request-id")])
        .build();
    let server = serve(app(layer, payments.clone())).await;

    send(server.post("/payments", Some("pay-1"), "{}")).await;
    let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert!(retry.replayed());
    assert_eq!(retry.header("x-request-id"), Some("1"));
    assert_eq!(retry.header("location"), Some("/payments/1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_body_with_its_keys_reordered_replays_and_a_changed_one_gets_422() {
    let payments = Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;

    let first = send(server.post(
        "/payments",
        Some("pay-1"),
        r#"{"amount":1000,"currency":"eur"}"#,
    ))
    .await;
    let reordered = send(server.post(
        "/payments",
        Some("pay-1"),
        r#"{ "currency": "eur", "amount": 1000 }"#,
    ))
    .await;
    assert!(reordered.replayed());
    assert_eq!(reordered.body, first.body);

    let changed = send(server.post(
        "/payments",
        Some("pay-1"),
        r#"{"amount":2000,"currency":"eur"}"#,
    ))
    .await;
    changed.assert_problem(422, problem::KEY_REUSED, Some("pay-1"));
    let other_path = send(server.post(
        "/refunds",
        Some("pay-1"),
        r#"{"amount":1000,"currency":"eur"}"#,
    ))
    .await;
    other_path.assert_problem(422, problem::KEY_REUSED, Some("pay-1"));
    assert_eq!(payments.runs(), 1);

    let again = send(server.post(
        "/payments",
        Some("pay-1"),
        r#"{"amount":1000,"currency":"eur"}"#,
    ))
    .await;
    assert!(
        again.replayed(),
        "a refused mismatch leaves the record as it was"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mismatch_status_can_be_400_or_409() {
    for (choice, status) in [
        (MismatchStatus::BadRequest, 400),
        (MismatchStatus::Conflict, 409),
    ] {
        let payments = Arc::new(Payments::default());
        let layer = IdempotencyLayer::builder(memory())
            .mismatch_status(choice)
            .build();
        let server = serve(app(layer, payments.clone())).await;
        send(server.post("/payments", Some("pay-1"), r#"{"amount":1}"#)).await;
        send(server.post("/payments", Some("pay-1"), r#"{"amount":2}"#))
            .await
            .assert_problem(status, problem::KEY_REUSED, Some("pay-1"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_principals_with_the_same_key_both_run() {
    let payments = Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;
    let as_principal = |token: &str| {
        server
            .post("/payments", Some("pay-1"), "{}")
            .header("authorization", format!("Bearer {token}"))
    };

    let alice = send(as_principal("alice")).await;
    let bob = send(as_principal("bob")).await;
    assert!(!alice.replayed() && !bob.replayed());
    assert_eq!(alice.json()["principal"], "Bearer alice");
    assert_eq!(bob.json()["principal"], "Bearer bob");
    assert_eq!(payments.runs(), 2);

    let alice_again = send(as_principal("alice")).await;
    assert!(alice_again.replayed());
    assert_eq!(alice_again.body, alice.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_scope_replaces_the_authorization_digest() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .scope(|parts| Some(parts.headers.get("x-tenant")?.to_str().ok()?.to_owned()))
        .build();
    let server = serve(app(layer, payments.clone())).await;
    let as_tenant = |tenant: &str, token: &str| {
        server
            .post("/payments", Some("pay-1"), "{}")
            .header("x-tenant", tenant)
            .header("authorization", token)
    };

    assert!(!send(as_tenant("acme", "alice")).await.replayed());
    assert!(
        send(as_tenant("acme", "bob")).await.replayed(),
        "one tenant, one key space"
    );
    assert!(!send(as_tenant("globex", "alice")).await.replayed());
    assert_eq!(payments.runs(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_headers_are_part_of_the_fingerprint() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .fingerprint_headers([http::HeaderName::from_static("x-account")])
        .build();
    let server = serve(app(layer, payments.clone())).await;
    let for_account = |account: &str| {
        server
            .post("/payments", Some("pay-1"), "{}")
            .header("x-account", account)
    };

    send(for_account("acct-1")).await;
    assert!(send(for_account("acct-1")).await.replayed());
    send(for_account("acct-2"))
        .await
        .assert_problem(422, problem::KEY_REUSED, Some("pay-1"));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_numbers_that_differ_in_value_never_match() {
    let payments = Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;
    let pairs = [
        (
            r#"{"amount":12345678901234567890123}"#,
            r#"{"amount":12345678901234567890124}"#,
        ),
        (r#"{"amount":1.00000000000000001}"#, r#"{"amount":1.0}"#),
        (
            r#"{"amount":-9223372036854775809}"#,
            r#"{"amount":-9223372036854775810}"#,
        ),
    ];
    for (i, (first, other)) in pairs.into_iter().enumerate() {
        let key = format!("pay-{i}");
        assert_eq!(
            send(server.post("/payments", Some(&key), first))
                .await
                .status,
            201
        );
        send(server.post("/payments", Some(&key), other))
            .await
            .assert_problem(422, problem::KEY_REUSED, Some(&key));
    }
    let same_value = send(server.post(
        "/payments",
        Some("pay-1"),
        r#"{"amount":1.00000000000000001000}"#,
    ))
    .await;
    assert!(same_value.replayed(), "the same value, spelled otherwise");
    assert_eq!(payments.runs(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_numbers_equal_in_value_match_however_spelled() {
    let payments = Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;
    send(server.post("/payments", Some("pay-1"), r#"{"amount":1}"#)).await;
    for spelling in [
        r#"{"amount":1.0}"#,
        r#"{"amount":1.00}"#,
        r#"{"amount":10e-1}"#,
    ] {
        assert!(
            send(server.post("/payments", Some("pay-1"), spelling))
                .await
                .replayed(),
            "{spelling}"
        );
    }
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_names_may_move_but_the_values_of_one_name_keep_their_order() {
    let payments = Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;
    let pay = |query: &str| send(server.post(&format!("/payments?{query}"), Some("pay-1"), "{}"));

    let first = pay("to=alice&memo=rent&to=mallory").await;
    assert_eq!(first.status, 201);
    assert!(pay("memo=rent&to=alice&to=mallory").await.replayed());

    let reordered = pay("to=mallory&to=alice&memo=rent").await;
    reordered.assert_problem(422, problem::KEY_REUSED, Some("pay-1"));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_say_something_else_are_refused_however_close() {
    let payments = Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;
    let pairs = [
        // A second `amount` that one parser reads and another drops.
        (r#"{"amount":1000}"#, r#"{"amount":5000,"amount":1000}"#),
        (r#"{"amount":1e20}"#, r#"{"amount":100000000000000000001}"#),
        (r#"{"amount":0.3}"#, r#"{"amount":0.30000000000000001}"#),
    ];
    for (i, (first, other)) in pairs.into_iter().enumerate() {
        let key = format!("pay-{i}");
        let answered = send(server.post("/payments", Some(&key), first)).await;
        assert_eq!(answered.status, 201);
        send(server.post("/payments", Some(&key), other))
            .await
            .assert_problem(422, problem::KEY_REUSED, Some(&key));
    }
    assert_eq!(payments.runs(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_content_answer_is_replayed_without_content() {
    for status in [204, 205] {
        let payments = Payments::answering(http::StatusCode::from_u16(status).unwrap());
        let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;

        send(server.post("/payments", Some("pay-1"), "{}")).await;
        let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;

        assert!(retry.replayed(), "{status}");
        assert_eq!(retry.status, status);
        assert!(retry.body.is_empty(), "{status}: {:?}", retry.body);
        assert!(
            matches!(retry.header("content-length"), None | Some("0")),
            "{status}: {:?}",
            retry.header("content-length")
        );
        assert_eq!(payments.runs(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_hook_reshapes_replays_only() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .response_hook(|response, replay| {
            let key = http::HeaderValue::from_str(replay.key()).unwrap();
            response.headers_mut().insert("x-replay-of", key);
            *response.status_mut() = http::StatusCode::OK;
        })
        .build();
    let server = serve(app(layer, payments.clone())).await;

    let first = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert_eq!(first.status, 201, "the handler's own answer");
    assert_eq!(first.header("x-replay-of"), None);
    let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert!(retry.replayed());
    assert_eq!(retry.status, 200);
    assert_eq!(retry.header("x-replay-of"), Some("pay-1"));
    assert_eq!(retry.body, first.body);
    let reused = send(server.post("/payments", Some("pay-1"), r#"{"other":1}"#)).await;
    assert_eq!(reused.status, 422, "a problem answer is the layer's own");
    assert_eq!(reused.header("x-replay-of"), None);
    assert_eq!(payments.runs(), 1);
}
