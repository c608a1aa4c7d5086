//! A whole Lambda function: `lambda_runtime::run` with an idempotent order handler, for the
//! Lambda Runtime API of the environment (`AWS_LAMBDA_RUNTIME_API`), its records in DynamoDB.
//!
//! scripts/run-examples.sh runs it under cargo-lambda's emulator of the Runtime API, invokes
//! it twice with one event and once with another, and checks that the handler ran twice:
//!
//! ```text
//! cargo lambda watch --only-lambda-apis -A 127.0.0.1 -P 9000 &      # pip install cargo-lambda
//! AWS_LAMBDA_RUNTIME_API=http://127.0.0.1:9000/.rt AWS_LAMBDA_FUNCTION_NAME=orders \
//! IDEM_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 \
//!     cargo run -p idem-examples --features lambda --example lambda_function &
//! curl -X POST http://127.0.0.1:9000/2015-03-31/functions/_/invocations \
//!     -d '{"body": "{\"order_id\": \"o-1\"}"}'
//! ```

mod local_dynamodb;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idem_core::Idempotency;
use idem_lambda::IdempotentHandler;
use lambda_runtime::{service_fn, LambdaEvent};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let table = local_dynamodb::create("lambda_function").await;
    let runs = Arc::new(AtomicUsize::new(0));
    let create_order = service_fn(move |event: LambdaEvent<Value>| {
        let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            let body: Value = serde_json::from_str(event.payload["body"].as_str().unwrap_or("{}"))?;
            let created = json!({
                "order_id": body["order_id"],
                "request_id": event.context.request_id,
                "run": run,
            });
            println!("run {run}: created {created}");
            Ok::<_, lambda_runtime::Error>(json!({"statusCode": 201, "body": created.to_string()}))
        }
    });
    let handler = IdempotentHandler::builder(Idempotency::new(table.store))
        .event_key("powertools_json(body).order_id")
        .build(create_order);
    lambda_runtime::run(handler).await
}
