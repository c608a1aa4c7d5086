//! The function under test, as a Lambda function is written with `lambda_http`: an order
//! handler behind `idem_lambda::http::layer`, run by `lambda_http::run` against the Runtime API
//! of its environment. The test binary runs it in a process of its own (`lambda_runtime` reads
//! its configuration from the environment only).
//!
//! The handler answers what it saw, so that the test can check it from outside: how many
//! times it ran, whether it ran inside the engine's call, how many times its `charge` step
//! ran, and the request as `lambda_http` gave it.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use idem_core::Idempotency;
use idem_stores::memory::MemoryStore;
use lambda_http::tower::ServiceBuilder;
use lambda_http::{service_fn, Body, Error, Request, RequestExt, Response};
use serde_json::{json, Value};

/// Set in the function process's environment: what the test binary runs instead of its tests.
pub const FUNCTION_VAR: &str = "IDEM_TEST_LAMBDA_HTTP_FUNCTION";

/// How the function's layer treats a keyed request without a principal.
#[derive(Clone, Copy, Debug)]
pub enum Unprincipled {
    /// Refused: the default of `idem_lambda::http::layer`.
    Refused,
    /// One key space shared by every such request (`Unscoped::Shared`).
    Shared,
}

impl Unprincipled {
    pub fn env_value(self) -> &'static str {
        match self {
            Unprincipled::Refused => "refused",
            Unprincipled::Shared => "shared",
        }
    }
}

/// Whether this process is the function, not the test harness.
pub fn is_function_process() -> bool {
    std::env::var_os(FUNCTION_VAR).is_some()
}

/// Runs the function until the Runtime API goes away.
pub fn run() -> ExitCode {
    let shared = std::env::var(FUNCTION_VAR).as_deref() == Ok(Unprincipled::Shared.env_value());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let ran = runtime.block_on(async move {
        let idem = Idempotency::new(MemoryStore::new());
        let layer = if shared {
            idem_lambda::http::LambdaHttpLayer::new(
                idem_lambda::http::builder(idem)
                    .unscoped(idem_http::Unscoped::Shared)
                    .build(),
            )
        } else {
            // The line the module's docs give.
            idem_lambda::http::layer(idem)
        };
        lambda_http::run(
            ServiceBuilder::new()
                .layer(layer)
                .service(service_fn(create_order)),
        )
        .await
    });
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("the function stopped: {error}");
            ExitCode::FAILURE
        }
    }
}

static RUNS: AtomicUsize = AtomicUsize::new(0);
static CHARGES: AtomicUsize = AtomicUsize::new(0);
static FAILED_ONCE: AtomicBool = AtomicBool::new(false);

/// The handler, written against `lambda_http::Request` as any `lambda_http` function is.
async fn create_order(request: Request) -> Result<Response<Body>, Error> {
    let run = RUNS.fetch_add(1, Ordering::SeqCst) + 1;
    let in_call = idem_core::context().is_some();
    let body_kind = match request.body() {
        Body::Empty => "empty",
        Body::Text(_) => "text",
        _ => "binary",
    };
    let order: Value = serde_json::from_slice(request.body().as_ref()).unwrap_or(Value::Null);
    let charge = idem_core::step("charge", async {
        Ok::<_, Error>(CHARGES.fetch_add(1, Ordering::SeqCst) + 1)
    })
    .await?;
    let seen = json!({
        "run": run,
        "in_call": in_call,
        "charge": charge,
        "charges": CHARGES.load(Ordering::SeqCst),
        "order": order,
        "body": body_kind,
        "method": request.method().as_str(),
        "path": request.uri().path(),
        "request_context": request.request_context_ref().is_some(),
        "lambda_context": request.lambda_context_ref().is_some(),
    });
    // The downstream fails once after the charge: the retry must not charge again.
    let status =
        if order["fail_once_after_charge"] == true && !FAILED_ONCE.swap(true, Ordering::SeqCst) {
            502
        } else {
            201
        };
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::Text(seen.to_string()))?)
}
