//! The seam guarded here: "the same JSON number" means one thing wherever idem reads a request.
//! The HTTP layer (idem-http, over real HTTP on loopback) and the Lambda handler (idem-lambda,
//! with `payload_validation`) both take `100` and `100.0`, and `1.5` and `15e-1`, as one value
//! under one key, so the retry replays and the body runs once; both refuse `101` under that key
//! (422, `IdempotencyValidationError`). The rule lives in `idem_core::json` alone: the last test
//! fails if either crate grows a number reader of its own.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_lambda::IdempotentHandler;
use idem_stores::memory::MemoryStore;
use lambda_runtime::{service_fn, Context, Diagnostic, LambdaEvent, Service};
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// Pairs of bodies that spell one amount two ways.
const SPELT_TWICE: [(&str, &str); 2] = [("100", "100.0"), ("1.5", "15e-1")];

/// An orders endpoint behind the layer on loopback, counting the runs of its handler.
async fn http_server(idem: Idempotency, runs: Arc<AtomicUsize>) -> String {
    let handler = move || {
        let runs = runs.clone();
        async move {
            let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
            (StatusCode::CREATED, format!("run {run}"))
        }
    };
    let app = Router::new()
        .route("/orders", post(handler))
        .layer(IdempotencyLayer::new(idem));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/orders")
}

/// POSTs an order of `amount` (JSON text as written) under `key`: its status, whether it was
/// a replay, and its body.
async fn post_order(url: &str, key: &str, amount: &str) -> (StatusCode, bool, String) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let response = client
        .post(url)
        .header("authorization", "Bearer system-numbers")
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(format!(r#"{{"order_id": "{key}", "amount": {amount}}}"#))
        .send()
        .await
        .unwrap();
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let replayed = response.headers().get("idempotent-replayed").is_some();
    (status, replayed, response.text().await.unwrap())
}

#[tokio::test]
async fn the_http_layer_takes_one_number_spelt_two_ways_as_one_request() {
    let runs = Arc::new(AtomicUsize::new(0));
    let url = http_server(Idempotency::new(MemoryStore::new()), runs.clone()).await;
    for (i, (first, retry)) in SPELT_TWICE.into_iter().enumerate() {
        let key = format!("order-{i}");
        let original = post_order(&url, &key, first).await;
        assert_eq!(original.0, StatusCode::CREATED, "{first}");
        assert!(!original.1);
        let replay = post_order(&url, &key, retry).await;
        assert_eq!(
            replay,
            (StatusCode::CREATED, true, original.2.clone()),
            "{retry} after {first} replays"
        );
        assert_eq!(runs.load(Ordering::SeqCst), i + 1, "the handler ran once");
    }
    let (status, _, _) = post_order(&url, "order-0", "101").await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "101 is another amount"
    );
    // Digits past a double's precision still count: the layer reads JSON text exactly.
    let (status, _, _) = post_order(&url, "order-0", "100.00000000000000001").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(runs.load(Ordering::SeqCst), SPELT_TWICE.len());
}

/// An API Gateway event whose body holds the order `key` of `amount` (JSON text as written).
fn api_gateway_event(key: &str, amount: &str, request_id: &str) -> LambdaEvent<Value> {
    let body = format!(r#"{{"order_id": "{key}", "amount": {amount}}}"#);
    let mut context = Context::default();
    context.request_id = request_id.to_owned();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    context.deadline = u64::try_from((now + Duration::from_secs(60)).as_millis()).unwrap();
    LambdaEvent::new(json!({"body": body}), context)
}

#[tokio::test]
async fn lambda_validation_takes_one_number_spelt_two_ways_as_one_payload() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let mut handler = IdempotentHandler::builder(Idempotency::new(MemoryStore::new()))
        .name("orders")
        .event_key("powertools_json(body).order_id")
        .payload_validation("powertools_json(body).amount")
        .build(service_fn(move |event: LambdaEvent<Value>| {
            let runs = counted.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, lambda_runtime::Error>(json!({"ranFor": event.context.request_id}))
            }
        }));
    for (i, (first, retry)) in SPELT_TWICE.into_iter().enumerate() {
        let key = format!("order-{i}");
        let original = handler
            .call(api_gateway_event(&key, first, &format!("{key}-a")))
            .await
            .unwrap();
        let replay = handler
            .call(api_gateway_event(&key, retry, &format!("{key}-b")))
            .await
            .unwrap();
        assert_eq!(replay, original, "{retry} after {first} replays");
        assert_eq!(runs.load(Ordering::SeqCst), i + 1, "the handler ran once");
    }
    let refused = handler
        .call(api_gateway_event("order-0", "101", "order-0-c"))
        .await
        .expect_err("101 is another amount");
    assert_eq!(
        Diagnostic::from(refused).error_type,
        "IdempotencyValidationError"
    );
    assert_eq!(runs.load(Ordering::SeqCst), SPELT_TWICE.len());
}

/// What a number reader leaves in Rust source: JSON's exponent marker, a float parse, a
/// reader of its own. The HTTP layer and the Lambda handler read numbers with
/// `idem_core::json` only.
const NUMBER_READING: [&str; 6] = [
    "exponent",
    "b'E'",
    "b'e'",
    "parse::<f64>",
    "canonical_json",
    "number.to_string()",
];

#[test]
fn no_crate_but_idem_core_reads_numbers_its_own_way() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for crate_dir in ["idem-http", "idem-lambda"] {
        let sources = source_files(&workspace.join(crate_dir).join("src"));
        assert!(!sources.is_empty(), "{crate_dir} has sources");
        for path in sources {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"));
            for line in code {
                if let Some(marker) = NUMBER_READING.iter().find(|m| line.contains(*m)) {
                    found.push(format!("{}: `{marker}` in {line:?}", path.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "numbers are read by idem_core::json alone; found:\n{}",
        found.join("\n")
    );
}

fn source_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(source_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}
