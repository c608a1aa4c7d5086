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

use idem_core::{Idempotency, ScopeQuota};
use idem_lambda::http::LambdaHttpLayer;
use idem_stores::memory::MemoryStore;
use lambda_http::tower::ServiceBuilder;
use lambda_http::{service_fn, Body, Error, Request, RequestExt, Response};
use serde_json::{json, Value};

/// Set in the function process's environment: what the test binary runs instead of its tests.
pub const FUNCTION_VAR: &str = "IDEM_TEST_LAMBDA_HTTP_FUNCTION";

/// How the function's layer is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setup {
    /// `idem_lambda::http::layer(idem)`: a keyed request without a principal is refused.
    Default,
    /// One key space shared by every request without a principal (`Unscoped::Shared`).
    SharedUnscoped,
    /// At most one record per principal (`quota`).
    OneRecordPerPrincipal,
}

impl Setup {
    const ALL: [Setup; 3] = [
        Setup::Default,
        Setup::SharedUnscoped,
        Setup::OneRecordPerPrincipal,
    ];

    /// How the function process is told its setup.
    pub fn env_value(self) -> &'static str {
        match self {
            Setup::Default => "default",
            Setup::SharedUnscoped => "shared-unscoped",
            Setup::OneRecordPerPrincipal => "one-record-per-principal",
        }
    }

    fn from_env() -> Setup {
        let value = std::env::var(FUNCTION_VAR).unwrap_or_default();
        Setup::ALL
            .into_iter()
            .find(|setup| setup.env_value() == value)
            .unwrap_or_else(|| panic!("{FUNCTION_VAR}={value} names no setup"))
    }

    fn layer(self, idem: Idempotency) -> LambdaHttpLayer {
        let builder = match self {
            // The line the module's docs give.
            Setup::Default => return idem_lambda::http::layer(idem),
            Setup::SharedUnscoped => {
                idem_lambda::http::builder(idem).unscoped(idem_http::Unscoped::Shared)
            }
            Setup::OneRecordPerPrincipal => {
                idem_lambda::http::builder(idem).quota(ScopeQuota::new().max_records(1))
            }
        };
        LambdaHttpLayer::new(builder.build())
    }
}

/// Whether this process is the function, not the test harness.
pub fn is_function_process() -> bool {
    std::env::var_os(FUNCTION_VAR).is_some()
}

/// Runs the function until the Runtime API goes away.
pub fn run() -> ExitCode {
    let setup = Setup::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let ran = runtime.block_on(async move {
        let layer = setup.layer(Idempotency::new(MemoryStore::new()));
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
