//! An SQS consumer on Lambda that fulfils orders, each once, whatever SQS delivers twice: the
//! key is `powertools_json(body).order_id`, the records live in DynamoDB, and the messages
//! that failed are answered as `batchItemFailures`, so that SQS redelivers only them.
//!
//! ```text
//! batch 1: m-1 o-1, m-2 o-2, m-3 o-1 (sent twice), m-4 o-3 (the warehouse is down), m-5 o-4
//!          -> o-1 fulfilled once, batchItemFailures = [m-4]
//! batch 2: m-4 o-3 (redelivered, the warehouse is back), m-2 o-2 (delivered again)
//!          -> o-3 fulfilled, o-2 not fulfilled again
//! ```
//!
//! Runs against the DynamoDB-compatible endpoint in `IDEM_DYNAMODB_ENDPOINT`, default
//! `http://127.0.0.1:8000`:
//!
//! ```text
//! ~/.cache/idem-services/venv/bin/moto_server -H 127.0.0.1 -p 8000 &   # scripts/services.sh installs it
//! IDEM_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 \
//!     cargo run -p idem-examples --features lambda --example sqs_batch
//! ```

mod local_dynamodb;

use std::sync::Mutex;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use idem_core::Idempotency;
use idem_lambda::sqs::{BatchProcessor, MessageOutcome};
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{json, Value};

const QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:orders";

/// A message of the orders queue, as Lambda delivers it.
fn message(id: &str, order_id: &str) -> SqsMessage {
    let mut message = SqsMessage::default();
    message.message_id = Some(id.to_owned());
    message.body = Some(json!({"order_id": order_id, "items": 2}).to_string());
    message.event_source = Some("aws:sqs".into());
    message.event_source_arn = Some(QUEUE_ARN.into());
    message
}

/// A batch of `messages`, in an invocation with 30 s left.
fn batch(messages: Vec<SqsMessage>) -> LambdaEvent<SqsEvent> {
    let mut event = SqsEvent::default();
    event.records = messages;
    let mut context = Context::default();
    context.request_id = "invocation".into();
    context.deadline = local_dynamodb::now_millis() + 30_000;
    LambdaEvent::new(event, context)
}

#[tokio::main]
async fn main() {
    let table = local_dynamodb::create("sqs_batch").await;
    let processor = BatchProcessor::new(Idempotency::new(table.store.clone()))
        .name("fulfil")
        .event_key("powertools_json(body).order_id")
        .concurrency(4);

    // The orders the handler fulfilled, and the one the warehouse cannot take yet.
    let fulfilled = Mutex::new(Vec::<String>::new());
    let warehouse_down_for = Mutex::new(Some("o-3".to_owned()));
    let fulfil = |message: SqsMessage| {
        let (fulfilled, warehouse_down_for) = (&fulfilled, &warehouse_down_for);
        async move {
            let id = message.message_id.unwrap_or_default();
            let body: Value = serde_json::from_str(message.body.as_deref().unwrap_or("{}"))
                .map_err(|error| error.to_string())?;
            let order = body["order_id"].as_str().unwrap_or_default().to_owned();
            if warehouse_down_for.lock().unwrap().as_deref() == Some(order.as_str()) {
                println!("   {id}: fulfilling {order} failed: the warehouse is down");
                return Err(format!("warehouse down for {order}"));
            }
            println!("   {id}: fulfilling {order}");
            fulfilled.lock().unwrap().push(order);
            Ok(())
        }
    };

    println!("batch 1: five messages, o-1 twice (m-1, m-3), o-3 fails");
    let first = batch(vec![
        message("m-1", "o-1"),
        message("m-2", "o-2"),
        message("m-3", "o-1"),
        message("m-4", "o-3"),
        message("m-5", "o-4"),
    ]);
    let response = processor.process(first, &fulfil).await;
    println!(
        "   answer: {}",
        serde_json::to_string(&response).expect("a batch response is JSON")
    );
    let failed: Vec<&str> = response
        .batch_item_failures
        .iter()
        .map(|failure| failure.item_identifier.as_str())
        .collect();
    assert_eq!(
        failed,
        ["m-4"],
        "the failed message is the only one SQS keeps"
    );
    let mut done = fulfilled.lock().unwrap().clone();
    done.sort();
    assert_eq!(
        done,
        ["o-1", "o-2", "o-4"],
        "o-1 was fulfilled once, not twice"
    );
    println!("   m-3 carried o-1 again: not fulfilled twice");

    println!("\nbatch 2: SQS redelivers m-4 (the warehouse is back) and delivers m-2 again");
    *warehouse_down_for.lock().unwrap() = None;
    let second = batch(vec![message("m-4", "o-3"), message("m-2", "o-2")]);
    let outcomes = processor.process_messages(second, &fulfil).await;
    for (id, outcome) in &outcomes {
        println!("   {id}: {outcome:?}");
    }
    assert_eq!(
        outcomes,
        [
            ("m-4".to_owned(), MessageOutcome::Processed),
            ("m-2".to_owned(), MessageOutcome::Replayed),
        ]
    );
    let mut done = fulfilled.lock().unwrap().clone();
    done.sort();
    assert_eq!(done, ["o-1", "o-2", "o-3", "o-4"], "each order once");

    println!("\nfour orders fulfilled once each, from seven deliveries");
    table.delete().await;
}
