//! Floods from clients the server does not know: made-up credentials keep nothing, one
//! credential spelt many ways is one client, and many clients together meet the quota's
//! total, while the principals already served go on.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use idem_core::{Idempotency, ScopeQuota};
use idem_http::{problem, IdempotencyLayer};
use idem_stores::memory::MemoryStore;
use support::{send, serve, Answer, Server};

/// A payments service that authenticates in its handler: the tokens `Bearer user-N`, whatever
/// the case of the scheme (RFC 9110 section 11.1), and nothing else.
fn authenticating(layer: IdempotencyLayer, runs: Arc<AtomicUsize>) -> Router {
    let handler = move |headers: HeaderMap| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let credential = headers
                .get("authorization")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().split_once(' '))
                .filter(|(scheme, token)| {
                    scheme.eq_ignore_ascii_case("bearer") && token.trim().starts_with("user-")
                });
            match credential {
                Some(_) => (StatusCode::CREATED, "charged"),
                None => (StatusCode::UNAUTHORIZED, "who are you?"),
            }
        }
    };
    Router::new().route("/payments", post(handler)).layer(layer)
}

/// A server over a memory store with room for `room` records in all, under `quota`.
async fn server(room: usize, quota: ScopeQuota) -> (Server, Arc<AtomicUsize>) {
    let idem = Idempotency::new(MemoryStore::builder().max_records(room).build());
    let layer = IdempotencyLayer::builder(idem).quota(quota).build();
    let runs = Arc::new(AtomicUsize::new(0));
    (serve(authenticating(layer, runs.clone())).await, runs)
}

async fn pay(server: &Server, authorization: &str, key: &str) -> Answer {
    send(
        server
            .post("/payments", Some(key), "{}")
            .header("authorization", authorization),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_credentials_keep_nothing_and_fill_nothing() {
    let (server, runs) = server(40, ScopeQuota::new().max_records(2)).await;

    for n in 0..60 {
        let answer = pay(&server, &format!("Bearer forged-{n}"), &format!("k-{n}")).await;
        assert_eq!(answer.status, 401, "forged-{n}: {:?}", answer.body);
        let again = pay(&server, &format!("Bearer forged-{n}"), &format!("k-{n}")).await;
        assert!(!again.replayed(), "a 401 is not kept for forged-{n}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 120);

    for n in 0..2 {
        let answer = pay(&server, "Bearer user-alice", &format!("order-{n}")).await;
        assert_eq!(answer.status, 201, "alice's order-{n}: {:?}", answer.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_credential_spelt_many_ways_is_one_client() {
    let (server, _runs) = server(100, ScopeQuota::new().max_records(2)).await;
    let spellings = ["Bearer", "bearer", "BEARER", "bEaReR", "BeArEr"];

    let mut kept = 0;
    for (n, scheme) in spellings.iter().cycle().take(20).enumerate() {
        let authorization = format!("{scheme}  user-alice ");
        let answer = pay(&server, &authorization, &format!("order-{n}")).await;
        match answer.status {
            201 => kept += 1,
            429 => answer.assert_problem(429, problem::QUOTA_EXCEEDED, None),
            other => panic!("{authorization:?}: {other} {:?}", answer.body),
        }
    }
    assert_eq!(kept, 2, "one client, one quota of 2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_total_turns_new_clients_away_while_kept_ones_go_on() {
    let quota = ScopeQuota::new().max_records(3).max_total_records(10);
    let (server, runs) = server(100, quota).await;
    let alice = "Bearer user-alice";
    assert_eq!(pay(&server, alice, "alice-0").await.status, 201);

    let mut turned_away = 0;
    for n in 0..30 {
        let answer = pay(&server, &format!("Bearer user-{n}"), "first-order").await;
        match answer.status {
            201 => {}
            503 => {
                answer.assert_problem(503, problem::STORE_FULL, Some("first-order"));
                let retry_after: u64 = answer.header("retry-after").unwrap().parse().unwrap();
                // Until the first answer kept expires, a TTL (24 h) after it was stored.
                assert!((86_000..=86_400).contains(&retry_after), "{retry_after}");
                turned_away += 1;
            }
            other => panic!("user-{n}: {other} {:?}", answer.body),
        }
    }
    assert_eq!(turned_away, 21, "room for 9 more clients after alice");
    assert_eq!(runs.load(Ordering::SeqCst), 10);

    assert!(pay(&server, "Bearer user-0", "first-order")
        .await
        .replayed());
    for n in 1..3 {
        let answer = pay(&server, alice, &format!("alice-{n}")).await;
        assert_eq!(answer.status, 201, "alice, within her own quota");
    }
    pay(&server, alice, "alice-3").await.assert_problem(
        429,
        problem::QUOTA_EXCEEDED,
        Some("alice-3"),
    );
}
