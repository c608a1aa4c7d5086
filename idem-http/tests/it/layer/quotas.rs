//! A quota per client: one that floods the store with new keys is refused with a 429, keeps
//! its answers, and leaves room for the others.

use crate::support;

use std::sync::Arc;

use idem_core::{Idempotency, ScopeQuota};
use idem_http::{problem, IdempotencyLayer};
use idem_stores::memory::MemoryStore;
use support::{app, send, serve, soon, Answer, Payments, Server};

/// Room for 50 records in all, as a small service might size its store.
fn bounded_store() -> Idempotency {
    Idempotency::new(MemoryStore::builder().max_records(50).build())
}

async fn pay(server: &Server, client: &str, key: &str) -> Answer {
    send(
        server
            .post("/payments", Some(key), r#"{"amount":1000}"#)
            .header("authorization", format!("Bearer {client}")),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_new_keys_is_refused_and_leaves_room_for_others() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(bounded_store())
        .quota(ScopeQuota::new().max_records(20))
        .build();
    let server = serve(app(layer, payments.clone())).await;

    let mut refused = 0;
    for n in 0..60 {
        let answer = pay(&server, "mallory", &format!("flood-{n}")).await;
        match answer.status {
            201 => {}
            429 => {
                answer.assert_problem(429, problem::QUOTA_EXCEEDED, Some(&format!("flood-{n}")));
                let retry_after: u64 = answer.header("retry-after").unwrap().parse().unwrap();
                // Until mallory's first answer expires, a TTL (24 h) after it was stored.
                assert!((86_000..=86_400).contains(&retry_after), "{retry_after}");
                let detail = answer.json()["detail"].as_str().unwrap().to_owned();
                assert!(detail.contains("(20 records)"), "{detail}");
                refused += 1;
            }
            other => panic!("flood-{n}: {other} {:?}", answer.body),
        }
    }
    assert_eq!(refused, 40);
    assert_eq!(payments.runs(), 20, "a refused request does not run");

    let replay = pay(&server, "mallory", "flood-0").await;
    assert_eq!(replay.status, 201);
    assert!(
        replay.replayed(),
        "a key already answered is replayed over the quota"
    );

    for n in 0..20 {
        let answer = pay(&server, "alice", &format!("order-{n}")).await;
        assert_eq!(answer.status, 201, "alice's order-{n}: {:?}", answer.body);
        assert!(!answer.replayed());
    }
    assert_eq!(payments.runs(), 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_of_a_shared_space_share_one_allowance() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(bounded_store())
        .unscoped(idem_http::Unscoped::Shared)
        .quota(ScopeQuota::new().max_records(1))
        .build();
    let server = serve(app(layer, payments.clone())).await;
    let anonymous = |key: &str| {
        server
            .post("/payments", Some(key), "{}")
            .header("authorization", "")
    };
    assert_eq!(send(anonymous("a")).await.status, 201);
    send(anonymous("b"))
        .await
        .assert_problem(429, problem::QUOTA_EXCEEDED, Some("b"));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_of_a_new_key_at_the_limit_are_in_progress_not_over_quota() {
    let (payments, mut started) = Payments::held();
    let layer = IdempotencyLayer::builder(bounded_store())
        .quota(ScopeQuota::new().max_records(1))
        .build();
    let server = Arc::new(serve(app(layer, payments.clone())).await);
    let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..16 {
        let (server, answers) = (server.clone(), answers.clone());
        tokio::spawn(async move { answers.send(pay(&server, "mallory", "only-key").await) });
    }
    soon(started.recv()).await.unwrap();
    // Fifteen copies are answered while the first is held.
    let mut statuses = Vec::new();
    for _ in 0..15 {
        statuses.push(soon(answered.recv()).await.unwrap().status);
    }
    payments.release();
    let first = soon(answered.recv()).await.unwrap();
    assert_eq!(first.status, 201);
    assert_eq!(statuses, vec![409; 15], "never 429 for a key in use");
    assert_eq!(payments.runs(), 1);
}
