//! `name_keys_by_digest` across the crates: with it, no event or span of the engine, the HTTP
//! layer, the client or a Lambda handler names the key in clear, whatever path it takes
//! (refused for want of a scope, released after a 500, retried by the client, stored,
//! replayed, reused with another payload), and no Lambda error does. Guards the seams between
//! idem-core, which owns the setting, and the front ends that log the key they were given.

use std::fmt::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use idem_client::IdempotentRetry;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_lambda::IdempotentHandler;
use idem_stores::memory::MemoryStore;
use lambda_runtime::{service_fn, Context, LambdaEvent, Service};
use serde_json::{json, Value};
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

/// Whether a captured `line` is an event's or a span's of `target` itself (`idem`, not
/// `idem::http`).
fn of_target(line: &str, target: &str) -> bool {
    let (_, rest) = line.split_once(' ').unwrap();
    rest.strip_prefix(target)
        .is_some_and(|rest| rest.starts_with(": ") || rest == ":")
}

/// Sends the marker key to `/fail` through idem-client, which retries it once and gives up.
async fn retried_by_the_client(url: &str, retry: idem_client::IdempotentRetryBuilder) {
    let retry = retry
        .max_attempts(2)
        .backoff(Duration::from_millis(1), Duration::from_millis(1))
        .build();
    let client =
        idem_client::reqwest_middleware::ClientBuilder::new(idem_client::reqwest::Client::new())
            .with(retry)
            .build();
    let answer = client
        .post(format!("{url}/fail"))
        .header("idempotency-key", MARKER)
        .header("authorization", "Bearer bob")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 500);
}

/// An invocation of a Lambda handler keyed by the event's `order_id`, the marker.
fn invocation(amount: u64) -> LambdaEvent<Value> {
    let mut context = Context::default();
    context.request_id = format!("req-{amount}");
    LambdaEvent::new(json!({"order_id": MARKER, "amount": amount}), context)
}

/// A Lambda handler on `idem` takes the marker through a failure, a run, a replay and a
/// reuse with another payload; returns the texts of the errors it gave.
async fn lambda(idem: Idempotency) -> Vec<String> {
    let failures = Arc::new(Mutex::new(1));
    let mut handler = IdempotentHandler::builder(idem)
        .name("orders")
        .event_key("order_id")
        .payload_validation("amount")
        .build(service_fn(move |_event: LambdaEvent<Value>| {
            let failures = failures.clone();
            async move {
                let mut left = failures.lock().unwrap();
                if *left > 0 {
                    *left -= 1;
                    return Err(lambda_runtime::Error::from("the payment provider is down"));
                }
                Ok::<_, lambda_runtime::Error>(json!({"statusCode": 201}))
            }
        }));
    let mut errors = Vec::new();
    errors.push(handler.call(invocation(100)).await.unwrap_err().to_string());
    handler.call(invocation(100)).await.unwrap();
    handler.call(invocation(100)).await.unwrap();
    let reused = handler.call(invocation(999)).await.unwrap_err();
    assert_eq!(reused.error_type(), Some("IdempotencyValidationError"));
    errors.push(reused.to_string());
    errors
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_event_names_the_clients_key_when_clear_keys_are_hidden() {
    let everything = Everything::default();
    tracing::subscriber::set_global_default(everything.clone()).unwrap();
    tracing::callsite::rebuild_interest_cache();

    // Control: without the setting, the layer's, the client's and the engine's events (and
    // the Lambda errors) name the key, so the capture sees it.
    let clear = serve(Idempotency::new(MemoryStore::new())).await;
    walk(&clear).await;
    retried_by_the_client(&clear, IdempotentRetry::builder()).await;
    let errors = lambda(Idempotency::new(MemoryStore::new())).await;
    assert!(
        errors.iter().any(|error| error.contains(MARKER)),
        "{errors:#?}"
    );
    let seen = std::mem::take(&mut *everything.0.lock().unwrap());
    for target in [
        idem_protocol::log::HTTP,
        idem_protocol::log::CLIENT,
        idem_protocol::log::CORE,
    ] {
        assert!(
            seen.iter()
                .any(|line| line.contains(MARKER) && of_target(line, target)),
            "{target}: {seen:#?}"
        );
    }

    let hidden = || {
        Idempotency::new(MemoryStore::new())
            .with_key_digest(SECRET)
            .name_keys_by_digest()
    };
    assert!(hidden().names_keys_by_digest());
    let url = serve(hidden()).await;
    walk(&url).await;
    retried_by_the_client(&url, IdempotentRetry::builder().hide_keys_in_logs()).await;
    let errors = lambda(hidden()).await;
    let seen = everything.0.lock().unwrap().clone();
    for target in [idem_protocol::log::HTTP, idem_protocol::log::CLIENT] {
        let events = seen
            .iter()
            .filter(|line| line.starts_with("event") && of_target(line, target))
            .count();
        assert!(events >= 1, "{target}'s events were captured: {seen:#?}");
    }
    let named: Vec<&String> = seen.iter().filter(|line| line.contains(MARKER)).collect();
    assert!(named.is_empty(), "{named:#?}");
    assert_eq!(errors.len(), 2);
    let named: Vec<&String> = errors.iter().filter(|e| e.contains(MARKER)).collect();
    assert!(named.is_empty(), "{named:#?}");
}
