//! `hide_clear_keys` across the crates: with it, no event of the engine or of the HTTP layer
//! names the client's key in clear, whatever path the request takes (refused for want of a
//! scope, released after a 500, stored and replayed). Guards the seam between idem-core, which
//! owns the setting, and idem-http, which logs the key it read from the header.

use std::fmt::Write;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const MARKER: &str = "marker-5c1f9e-client-key";
const SECRET: &[u8] = b"a key-digest secret of 32+ bytes!";

/// Every event and span field of the process, as text, with its target.
#[derive(Clone, Default)]
struct Everything(Arc<Mutex<Vec<String>>>);

struct Text<'a>(&'a mut String);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl Subscriber for Everything {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        let mut line = format!("span {}:", attributes.metadata().target());
        attributes.record(&mut Text(&mut line));
        self.0.lock().unwrap().push(line);
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut line = "record:".to_owned();
        values.record(&mut Text(&mut line));
        self.0.lock().unwrap().push(line);
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = format!("event {}:", event.metadata().target());
        event.record(&mut Text(&mut line));
        self.0.lock().unwrap().push(line);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// A service whose `/ok` answers 201 and `/fail` 500, behind the layer on `idem`.
async fn serve(idem: Idempotency) -> String {
    let app = Router::new()
        .route("/ok", post(|| async { (StatusCode::CREATED, "done") }))
        .route(
            "/fail",
            post(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        )
        .layer(IdempotencyLayer::new(idem));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// Takes every path that names the key in an event: refused without a scope, released after
/// a 500, stored, then replayed.
async fn walk(url: &str) {
    let client = reqwest::Client::new();
    let send = |path: &str, authorized: bool| {
        let mut request = client
            .post(format!("{url}{path}"))
            .header("idempotency-key", MARKER)
            .body("{}");
        if authorized {
            request = request.header("authorization", "Bearer alice");
        }
        request.send()
    };
    assert_eq!(send("/ok", false).await.unwrap().status(), 400);
    assert_eq!(send("/fail", true).await.unwrap().status(), 500);
    assert_eq!(send("/ok", true).await.unwrap().status(), 201);
    let replay = send("/ok", true).await.unwrap();
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_event_names_the_clients_key_when_clear_keys_are_hidden() {
    let everything = Everything::default();
    tracing::subscriber::set_global_default(everything.clone()).unwrap();
    tracing::callsite::rebuild_interest_cache();

    // Control: without the setting, the layer's events name the key, so the capture sees it.
    let clear = serve(Idempotency::new(MemoryStore::new())).await;
    walk(&clear).await;
    let seen = std::mem::take(&mut *everything.0.lock().unwrap());
    assert!(
        seen.iter()
            .any(|line| line.contains(MARKER) && line.contains(idem_protocol::log::HTTP)),
        "{seen:#?}"
    );

    let hidden = Idempotency::new(MemoryStore::new())
        .with_key_digest(SECRET)
        .hide_clear_keys();
    assert!(hidden.hides_clear_keys());
    walk(&serve(hidden).await).await;
    let seen = everything.0.lock().unwrap().clone();
    let http_events = seen
        .iter()
        .filter(|line| line.starts_with(&format!("event {}:", idem_protocol::log::HTTP)))
        .count();
    assert!(
        http_events >= 2,
        "the layer's events were captured: {seen:#?}"
    );
    let named: Vec<&String> = seen.iter().filter(|line| line.contains(MARKER)).collect();
    assert!(named.is_empty(), "{named:#?}");
}
