//! A worker of the two-service test (`system_downstream`): an upstream order service behind the
//! HTTP layer on Redis, whose handler charges each order, in a step, at a downstream service
//! through idem-client. Prints `listening ADDRESS` once it serves, then serves until killed.
//!
//! `downstream_upstream REDIS_URL PREFIX DOWNSTREAM_URL KEYS LEASE_MS`, where KEYS is `derived`
//! (the client's downstream keys, the default) or `random` (keys minted at random inside calls
//! too, as before downstream keys: the run that must show double charges).

use std::io::Write;
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

/// Why a charge failed, as the step's error.
struct ChargeFailed(String);

impl From<idem_core::Error> for ChargeFailed {
    fn from(error: idem_core::Error) -> Self {
        ChargeFailed(error.to_string())
    }
}

/// Charges `order` at the downstream service, in the step `charge`: the client sends the step's
/// downstream key (or a random one, with `random` keys).
async fn place_order(
    State(upstream): State<Arc<Upstream>>,
    Path(order): Path<String>,
) -> (StatusCode, String) {
    let charged = idem_core::step("charge", async {
        let response = upstream
            .client
            .post(&upstream.charges_url)
            .bearer_auth("upstream-service")
            .header("content-type", "application/json")
            .body(format!(r#"{{"order":"{order}","amount":1250}}"#))
            .send()
            .await
            .map_err(|error| ChargeFailed(format!("{error:?}")))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|error| ChargeFailed(error.to_string()))?;
        if !status.is_success() {
            return Err(ChargeFailed(format!(
                "the downstream answered {status}: {body}"
            )));
        }
        Ok::<_, ChargeFailed>(body)
    })
    .await;
    match charged {
        Ok(charge) => (StatusCode::CREATED, charge),
        // A 5xx frees the key (unless the step was recorded): the order is retried.
        Err(ChargeFailed(why)) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
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
    let layer = IdempotencyLayer::builder(Idempotency::new(store))
        .lease(Duration::from_millis(lease_ms))
        .build();
    let app = Router::new()
        .route("/orders/{order}", post(place_order))
        .with_state(upstream)
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening {address}").map_err(|e| e.to_string())?;
        stdout.flush().map_err(|e| e.to_string())?;
    }
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}
