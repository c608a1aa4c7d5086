//! A worker of the two-service test (`system_downstream`): an upstream order service on Redis
//! that charges each order, in a step, at a downstream service through idem-client: behind the
//! HTTP layer (`POST /orders/{order}`), and as an `#[idempotent]` function
//! (`POST /checkouts/{order}`). Prints `listening ADDRESS` once it serves (idem-certify's
//! `listening::announce`, as its servers do), then serves until killed. LEASE_MS is the
//! layer's lease; the attribute's is 1 s.
//!
//! `downstream_upstream REDIS_URL PREFIX DOWNSTREAM_URL KEYS LEASE_MS`, where KEYS is `derived`
//! (the client's downstream keys, the default) or `random` (keys minted at random inside calls
//! too, as before downstream keys: the run that must show double charges).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use idem_client::reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use idem_client::IdempotentRetry;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;

/// What the order handler needs.
struct Upstream {
    client: ClientWithMiddleware,
    charges_url: String,
}

/// Why a charge failed: idem's error, or the downstream's.
#[derive(Debug)]
enum ChargeFailed {
    Idem(idem_core::Error),
    Downstream(String),
}

impl From<idem_core::Error> for ChargeFailed {
    fn from(error: idem_core::Error) -> Self {
        ChargeFailed::Idem(error)
    }
}

/// Charges `order` at the downstream service, in the step `charge`: the client sends the step's
/// downstream key (or a random one, with `random` keys).
async fn charge(upstream: &Upstream, order: &str) -> Result<String, ChargeFailed> {
    idem_core::step("charge", async {
        let response = upstream
            .client
            .post(&upstream.charges_url)
            .bearer_auth("upstream-service")
            .header("content-type", "application/json")
            .body(format!(r#"{{"order":"{order}","amount":1250}}"#))
            .send()
            .await
            .map_err(|error| ChargeFailed::Downstream(format!("{error:?}")))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|error| ChargeFailed::Downstream(error.to_string()))?;
        if !status.is_success() {
            let why = format!("the downstream answered {status}: {body}");
            return Err(ChargeFailed::Downstream(why));
        }
        Ok(body)
    })
    .await
}

/// The order as an `#[idempotent]` function, on the installed handle (Redis): its lease is the
/// test's, 1 s.
#[idem_core::idempotent(key = "order", lease = "1s", skip = "upstream")]
async fn checkout(upstream: &Upstream, order: &str) -> Result<String, ChargeFailed> {
    charge(upstream, order).await
}

/// The answer to a charge: 201 with the charge, 409 while another call holds the order, 503
/// otherwise (which frees the key behind the layer unless the step was recorded).
fn answer(charged: Result<String, ChargeFailed>) -> (StatusCode, String) {
    match charged {
        Ok(charge) => (StatusCode::CREATED, charge),
        Err(ChargeFailed::Idem(error @ idem_core::Error::InProgress { .. })) => {
            (StatusCode::CONFLICT, error.to_string())
        }
        Err(ChargeFailed::Idem(error)) => (StatusCode::SERVICE_UNAVAILABLE, error.to_string()),
        Err(ChargeFailed::Downstream(why)) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

/// `POST /orders/{order}`, behind the layer: the handler runs inside the layer's call.
async fn place_order(
    State(upstream): State<Arc<Upstream>>,
    Path(order): Path<String>,
) -> (StatusCode, String) {
    answer(charge(&upstream, &order).await)
}

/// `POST /checkouts/{order}`, without the layer: the attribute makes the call.
async fn check_out(
    State(upstream): State<Arc<Upstream>>,
    Path(order): Path<String>,
) -> (StatusCode, String) {
    answer(checkout(&upstream, &order).await)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [redis_url, prefix, downstream, keys, lease_ms] = &args[..] else {
        eprintln!("usage: downstream_upstream REDIS_URL PREFIX DOWNSTREAM_URL KEYS LEASE_MS");
        return ExitCode::FAILURE;
    };
    let Ok(lease_ms) = lease_ms.parse::<u64>() else {
        eprintln!("downstream_upstream: LEASE_MS must be a number of milliseconds");
        return ExitCode::FAILURE;
    };
    let derived = match keys.as_str() {
        "derived" => true,
        "random" => false,
        other => {
            eprintln!("downstream_upstream: KEYS is `derived` or `random`, not `{other}`");
            return ExitCode::FAILURE;
        }
    };
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    runtime.block_on(async {
        match serve(redis_url, prefix, downstream, derived, lease_ms).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("downstream_upstream: {error}");
                ExitCode::FAILURE
            }
        }
    })
}

async fn serve(
    redis_url: &str,
    prefix: &str,
    downstream: &str,
    derived: bool,
    lease_ms: u64,
) -> Result<(), String> {
    let client = idem_stores::redis::client::Client::open(redis_url).map_err(|e| e.to_string())?;
    let store = idem_stores::redis::RedisStore::builder(client)
        .prefix(prefix)
        .connect()
        .await
        .map_err(|e| e.to_string())?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .map_err(|e| e.to_string())?;
    let retry = IdempotentRetry::builder()
        .downstream_keys(derived)
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
        .max_elapsed(Duration::from_millis(lease_ms * 3))
        .build();
    let upstream = Arc::new(Upstream {
        client: ClientBuilder::new(http).with(retry).build(),
        charges_url: format!("{downstream}/charges"),
    });
    let idem = Idempotency::new(store);
    idem_core::install(idem.clone());
    let layer = IdempotencyLayer::builder(idem)
        .lease(Duration::from_millis(lease_ms))
        .build();
    let behind_the_layer = Router::new()
        .route("/orders/{order}", post(place_order))
        .with_state(upstream.clone())
        .layer(layer);
    let app = Router::new()
        .route("/checkouts/{order}", post(check_out))
        .with_state(upstream)
        .merge(behind_the_layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    idem_certify::listening::announce(address).map_err(|e| e.to_string())?;
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}
