//! `idem_http_requests_total{outcome}` counts the same outcomes for the same requests under
//! the actix-web middleware as under the tower layer.

#[path = "it/support/actix_server.rs"]
#[macro_use]
mod actix_server;

use std::collections::BTreeMap;
use std::time::Duration;

use actix_web::{web, App, HttpResponse};
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

const HANG: Duration = Duration::from_secs(60);

fn layer() -> IdempotencyLayer {
    IdempotencyLayer::builder(Idempotency::new(MemoryStore::new()))
        .max_request_body(64)
        .build()
}

fn outcomes(snapshotter: &Snapshotter) -> BTreeMap<String, u64> {
    let mut counted = BTreeMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        if key.name() != idem_http::HTTP_REQUESTS_TOTAL {
            continue;
        }
        let outcome = key.labels().find(|l| l.key() == "outcome").unwrap();
        let DebugValue::Counter(n) = value else {
            panic!()
        };
        *counted.entry(outcome.value().to_owned()).or_default() += n;
    }
    counted
}

/// The same requests, one answer each: executed, replayed, mismatch, too large, key refused,
/// passed through, scope refused, not stored, not recorded, streamed.
async fn requests(url: &str) {
    let client = reqwest::Client::builder().timeout(HANG).build().unwrap();
    let post = |path: &str, key: Option<&str>, body: &str| {
        let mut request = client
            .post(format!("{url}{path}"))
            .header("authorization", "Bearer m")
            .body(body.to_owned());
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        request
    };
    let status = |request: reqwest::RequestBuilder| async move {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let _ = response.bytes().await;
        status
    };
    assert_eq!(status(post("/ok", Some("k1"), "a")).await, 201);
    assert_eq!(status(post("/ok", Some("k1"), "a")).await, 201);
    assert_eq!(status(post("/ok", Some("k1"), "b")).await, 422);
    assert_eq!(status(post("/ok", Some("k2"), &"x".repeat(65))).await, 413);
    assert_eq!(status(post("/ok", Some(""), "a")).await, 400);
    assert_eq!(status(post("/ok", None, "a")).await, 201);
    let anonymous = client
        .post(format!("{url}/ok"))
        .header("idempotency-key", "k3")
        .body("a");
    assert_eq!(status(anonymous).await, 400);
    assert_eq!(status(post("/unavailable", Some("k4"), "a")).await, 503);
    assert_eq!(status(post("/panics", Some("k5"), "a")).await, 500);
    assert_eq!(status(post("/large", Some("k6"), "a")).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_two_front_ends_count_the_same_outcomes() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::set_global_recorder(recorder).unwrap();

    let large = || "z".repeat(2 << 20);
    let router = axum::Router::new()
        .route(
            "/ok",
            axum::routing::post(|| async { (axum::http::StatusCode::CREATED, "ok") }),
        )
        .route(
            "/unavailable",
            axum::routing::post(|| async { axum::http::StatusCode::SERVICE_UNAVAILABLE }),
        )
        .route(
            "/panics",
            axum::routing::post(|| async {
                if true {
                    panic!("the handler fails halfway");
                }
            }),
        )
        .route(
            "/large",
            axum::routing::post(move || async move { large() }),
        )
        .layer(layer());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    requests(&url).await;
    let tower = outcomes(&snapshotter);

    let layer = layer();
    let (url, _server) = actix_serve!(1, move || {
        App::new()
            .wrap(layer.clone())
            .route(
                "/ok",
                web::post().to(|| async { HttpResponse::Created().body("ok") }),
            )
            .route(
                "/unavailable",
                web::post().to(|| async { HttpResponse::ServiceUnavailable().finish() }),
            )
            .route(
                "/panics",
                web::post().to(|| async {
                    if true {
                        panic!("the handler fails halfway");
                    }
                    HttpResponse::Ok().finish()
                }),
            )
            .route(
                "/large",
                web::post().to(|| async { HttpResponse::Ok().body("z".repeat(2 << 20)) }),
            )
    });
    requests(&url).await;
    // A snapshot drains the counters: this one holds actix-web's requests only.
    let actix = outcomes(&snapshotter);
    assert_eq!(tower.values().sum::<u64>(), 10, "{tower:?}");
    assert_eq!(
        tower, actix,
        "the tower layer (left) and actix-web (right) differ"
    );
}
