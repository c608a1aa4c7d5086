//! An order endpoint on Lambda behind API Gateway, made idempotent as Powertools' `@idempotent`
//! makes a Python handler: the key is `powertools_json(body).order_id`, the amount must match
//! on a retry, and the records live in DynamoDB.
//!
//! ```text
//! client -> API Gateway -> Lambda (request req-1: the order is created)
//! client <- timeout
//! client -> API Gateway -> Lambda (request req-2, same body: the first response, not run again)
//! client -> API Gateway -> Lambda (request req-3, same order, another amount: refused)
//! ```
//!
//! The handler is invoked here as `lambda_runtime::run` would invoke it, through its tower
//! `Service`, with events shaped as API Gateway sends them. Runs against the DynamoDB-compatible
//! endpoint in `IDEM_DYNAMODB_ENDPOINT`, default `http://127.0.0.1:8000`:
//!
//! ```text
//! ~/.cache/idem-services/venv/bin/moto_server -H 127.0.0.1 -p 8000 &   # scripts/services.sh installs it
//! IDEM_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 \
//!     cargo run -p idem-examples --features lambda --example lambda_orders
//! ```

mod local_dynamodb;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idem_core::Idempotency;
use idem_lambda::IdempotentHandler;
use lambda_runtime::tower::ServiceExt;
use lambda_runtime::{service_fn, Context, Diagnostic, LambdaEvent, Service};
use serde_json::{json, Value};

/// An API Gateway proxy event for `POST /orders` with `body`, as the request `request_id`.
fn post_order(request_id: &str, body: Value) -> LambdaEvent<Value> {
    let now = local_dynamodb::now_millis();
    let payload = json!({
        "resource": "/orders",
        "path": "/orders",
        "httpMethod": "POST",
        "headers": {"content-type": "application/json"},
        "body": body.to_string(),
        "isBase64Encoded": false,
        // The customer the API's authorizer let in: keys are scoped by this principal.
        "requestContext": {
            "requestId": request_id,
            "requestTimeEpoch": now,
            "authorizer": {"principalId": "customer-7"},
        },
    });
    let mut context = Context::default();
    context.request_id = format!("invocation-{request_id}");
    context.invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:orders".into();
    // Lambda gives every invocation a deadline; the key's reservation ends with it.
    context.deadline = now + 30_000;
    LambdaEvent::new(payload, context)
}

/// An API Gateway answer as a line: its status and body.
fn answer(response: &Value) -> String {
    let body = response["body"].as_str().unwrap_or_default();
    format!("{} {body}", response["statusCode"])
}

#[tokio::main]
async fn main() {
    let table = local_dynamodb::create("lambda_orders").await;

    // The handler: creates the order and answers API Gateway. It counts its runs.
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let create_order = service_fn(move |event: LambdaEvent<Value>| {
        let runs = counted.clone();
        async move {
            let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
            let order: Value =
                serde_json::from_str(event.payload["body"].as_str().unwrap_or("{}"))?;
            let receipt = json!({
                "order_id": order["order_id"],
                "amount": order["amount"],
                "receipt": format!("rcpt-{run}"),
                "created_by": event.payload["requestContext"]["requestId"],
            });
            Ok::<Value, lambda_runtime::Error>(
                json!({"statusCode": 201, "body": receipt.to_string()}),
            )
        }
    });

    // As @idempotent(config=IdempotencyConfig(event_key_jmespath=..., payload_validation_jmespath=...)).
    let mut handler = IdempotentHandler::builder(Idempotency::new(table.store.clone()))
        .name("orders")
        .event_key("powertools_json(body).order_id")
        .payload_validation("powertools_json(body).amount")
        .build(create_order);

    let order = json!({"order_id": "o-42", "amount": 300});

    let first = handler
        .ready()
        .await
        .expect("ready")
        .call(post_order("req-1", order.clone()))
        .await
        .expect("the first delivery runs");
    println!("1. POST /orders o-42, 300 (req-1): {}", answer(&first));
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let retry = handler
        .ready()
        .await
        .expect("ready")
        .call(post_order("req-2", order.clone()))
        .await
        .expect("the retry is answered");
    println!("2. the same POST again (req-2):    {}", answer(&retry));
    assert_eq!(retry, first, "the retry gets the first response");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the retry did not run the handler"
    );
    println!("   replayed: created by req-1, and the handler ran once");

    let changed = json!({"order_id": "o-42", "amount": 500});
    let error = handler
        .ready()
        .await
        .expect("ready")
        .call(post_order("req-3", changed))
        .await
        .expect_err("another amount under the same key is refused");
    let diagnostic = Diagnostic::from(error);
    println!(
        "3. POST /orders o-42, 500 (req-3): errorType {}\n   {}",
        diagnostic.error_type, diagnostic.error_message
    );
    assert_eq!(diagnostic.error_type, "IdempotencyValidationError");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the refused event did not run"
    );

    let error = handler
        .ready()
        .await
        .expect("ready")
        .call(post_order("req-4", json!({"amount": 300})))
        .await
        .expect_err("an event without a key is refused");
    let diagnostic = Diagnostic::from(error);
    println!(
        "4. a body without order_id (req-4): errorType {}",
        diagnostic.error_type
    );
    assert_eq!(diagnostic.error_type, "IdempotencyKeyError");

    let other = handler
        .ready()
        .await
        .expect("ready")
        .call(post_order(
            "req-5",
            json!({"order_id": "o-43", "amount": 500}),
        ))
        .await
        .expect("another order runs");
    println!("5. POST /orders o-43, 500 (req-5): {}", answer(&other));
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    println!("\nthe handler ran twice for five deliveries: once per order");
    table.delete().await;
}
