//! `idem key lambda` and idem-lambda's multi-part keys on a real store: a handler with a
//! two-part key stores a record, `idem list` shows its order id, and the key the command
//! computes from the same event is the one `idem get` finds the record under.

use std::process::Output;
use std::sync::Arc;

use idem_core::Idempotency;
use idem_lambda::IdempotentHandler;
use idem_protocol::scope::ScopeKey;
use idem_test_servers::redis::target::RedisTarget;
use lambda_runtime::{service_fn, Context, LambdaEvent, Service};
use serde_json::{json, Value};

use crate::support;

/// The two-part key of the idem-lambda README: the caller, and the order in the body.
const EXPRESSION: &str = "[requestContext.authorizer.principalId, powertools_json(body).order_id]";

/// The function's scope secret.
const SECRET: &str = "the function's scope secret, 32 bytes or more";

async fn create_order(event: LambdaEvent<Value>) -> Result<Value, lambda_runtime::Error> {
    Ok(json!({"statusCode": 201, "body": event.context.request_id}))
}

/// An API Gateway REST event of `principal` ordering `order_id`.
fn order(principal: &str, order_id: &str) -> Value {
    json!({
        "body": format!("{{\"order_id\": \"{order_id}\", \"amount\": 5}}"),
        "requestContext": {
            "httpMethod": "POST",
            "requestId": "r-1",
            "authorizer": {"principalId": principal},
        },
    })
}

/// `idem key lambda ARGS` with `event` on standard input and the secret in `SCOPE_SECRET`.
fn key_lambda(args: &[&str], event: &Value) -> Output {
    let input = serde_json::to_vec(event).unwrap();
    support::idem()
        .env("SCOPE_SECRET", SECRET)
        .run_with_stdin(&[&["key", "lambda"], args].concat(), &input)
}

/// What `idem key lambda` printed, without its line feed.
fn printed_key(output: &Output) -> String {
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    stdout.strip_suffix('\n').unwrap_or(&stdout).to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_part_key_is_listed_readable_and_found_from_its_event() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(Arc::new(target.redis_store().clone()));
    let mut handler = IdempotentHandler::builder(idem)
        .name("orders")
        .event_key(EXPRESSION)
        .scope_secret(SECRET)
        .build(service_fn(create_order));
    let event = order("user-7", "o-42");
    let mut context = Context::default();
    context.request_id = "req-1".to_owned();
    handler
        .call(LambdaEvent::new(event.clone(), context))
        .await
        .unwrap();

    let cli = support::idem().store(["--store", target.url(), "--prefix", target.prefix()]);
    let listed = cli.run(&["list", "--json"]).exits(0).json();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let stored = listed[0]["key"].as_str().unwrap().to_owned();
    let scope = ScopeKey::new(SECRET.as_bytes()).keyed("principal:user-7");
    assert_eq!(
        stored,
        format!("idem|orders|={scope}|#list|user-7|o-42"),
        "the order id is readable in the listing"
    );

    let computed = printed_key(&key_lambda(
        &[
            "--name",
            "orders",
            "--expression",
            EXPRESSION,
            "--secret-env",
            "SCOPE_SECRET",
        ],
        &event,
    ));
    assert_eq!(computed, stored, "the command computes the stored key");
    cli.run(&["get", &computed])
        .exits(0)
        .prints("completed")
        .prints("req-1");

    // The brief's spelling of the secret's option, and another order: another key, no record.
    let other = printed_key(&key_lambda(
        &[
            "--name",
            "orders",
            "--expression",
            EXPRESSION,
            "--scope-secret-env",
            "SCOPE_SECRET",
        ],
        &order("user-7", "o-43"),
    ));
    assert_eq!(other, format!("idem|orders|={scope}|#list|user-7|o-43"));
    cli.run(&["get", &other]).exits(3).says("no record");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sqs_message_record_is_the_event_of_a_batch_processor_key() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(Arc::new(target.redis_store().clone()));
    let expression = "[messageAttributes.tenant.stringValue, powertools_json(body).order_id]";
    let processor = idem_lambda::sqs::BatchProcessor::new(idem)
        .name("fulfil")
        .event_key(expression);
    let record = json!({
        "messageId": "m-1",
        "body": "{\"order_id\": \"o-42\"}",
        "messageAttributes": {"tenant": {"stringValue": "t-9", "dataType": "String"}},
        "eventSourceARN": "arn:aws:sqs:us-east-1:1:orders",
    });
    let batch: aws_lambda_events::event::sqs::SqsEvent =
        serde_json::from_value(json!({"Records": [record.clone()]})).unwrap();
    let response = processor
        .process(LambdaEvent::new(batch, Context::default()), |_| async {
            Ok::<(), std::convert::Infallible>(())
        })
        .await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");

    let cli = support::idem().store(["--store", target.url(), "--prefix", target.prefix()]);
    let listed = cli.run(&["list", "--json"]).exits(0).json();
    let stored = listed[0]["key"].as_str().unwrap();
    assert_eq!(stored, "idem|fulfil|-|#list|t-9|o-42", "{listed:#}");
    let computed = printed_key(&key_lambda(
        &["--name", "fulfil", "--expression", expression],
        &record,
    ));
    assert_eq!(computed, stored);
}

#[test]
fn an_event_the_handler_would_not_key_is_refused_with_why() {
    let args = ["--name", "orders", "--expression", EXPRESSION];
    // An HTTP event without a principal: the handler refuses it, and so does the command.
    let mut anonymous = order("user-7", "o-42");
    anonymous["requestContext"]["authorizer"] = Value::Null;
    let refused = key_lambda(&args, &anonymous);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("would store no key"), "{stderr}");
    // Unless it shares one key space; then the key is unscoped, the missing part too.
    let shared = key_lambda(
        &["--unscoped-shared", "--allow-partial-keys"]
            .iter()
            .chain(&args)
            .copied()
            .collect::<Vec<_>>(),
        &anonymous,
    );
    assert_eq!(printed_key(&shared), "idem|orders|-|#list|#null|o-42");
    // Not JSON.
    let output =
        support::idem().run_with_stdin(&[&["key", "lambda"], &args[..]].concat(), b"order o-42");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a JSON event"));
}
