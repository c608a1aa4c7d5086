//! What a replay never carries, whatever the layer is told: the first answer's `Set-Cookie`
//! (under a shared scope, one client's session handed to another) and its `Date`, over real
//! HTTP on loopback.

use axum::http::header::{DATE, SET_COOKIE};
use axum::http::{HeaderName, StatusCode};
use axum::routing::post;
use axum::Router;
use idem_core::Idempotency;
use idem_http::{IdempotencyLayer, Unscoped};
use idem_stores::memory::MemoryStore;
use tokio::net::TcpListener;

const STORED_DATE: &str = "Mon, 01 Jan 2001 00:00:00 GMT";

async fn log_in() -> (StatusCode, [(HeaderName, &'static str); 3], &'static str) {
    (
        StatusCode::CREATED,
        [
            (SET_COOKIE, "session=first-caller"),
            (DATE, STORED_DATE),
            (HeaderName::from_static("x-order"), "1"),
        ],
        "welcome",
    )
}

async fn serve(layer: IdempotencyLayer) -> String {
    let app = Router::new().route("/login", post(log_in)).layer(layer);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/login", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_cookie_and_date_are_not_replayed_even_when_allowed() {
    let layer = IdempotencyLayer::builder(Idempotency::new(MemoryStore::new()))
        .unscoped(Unscoped::Shared)
        .replay_headers([
            SET_COOKIE,
            DATE,
            HeaderName::from_static("set-cookie2"),
            HeaderName::from_static("x-order"),
        ])
        .build();
    let url = serve(layer).await;
    let client = reqwest::Client::new();
    let send = || {
        client
            .post(&url)
            .header("idempotency-key", "login-1")
            .send()
    };

    let first = send().await.unwrap();
    assert_eq!(first.status(), 201);
    assert_eq!(first.headers()["set-cookie"], "session=first-caller");

    let replay = send().await.unwrap();
    assert_eq!(replay.status(), 201);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(
        replay.headers()["x-order"],
        "1",
        "the allow-list still counts"
    );
    assert!(
        replay.headers().get("set-cookie").is_none(),
        "the first caller's cookie was replayed: {:?}",
        replay.headers().get("set-cookie")
    );
    let date = replay
        .headers()
        .get("date")
        .map(|date| date.to_str().unwrap());
    assert_ne!(date, Some(STORED_DATE), "the stored Date was replayed");
    assert_eq!(replay.text().await.unwrap(), "welcome");
}
