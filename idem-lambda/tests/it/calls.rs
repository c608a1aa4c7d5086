//! The handler of an event and of an SQS message runs inside the engine's call, as behind every
//! HTTP front end: `idem_core::context()` is the call, and `idem_core::step` records.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use idem_core::Idempotency;
use idem_lambda::sqs::BatchProcessor;
use idem_lambda::IdempotentHandler;
use idem_stores::memory::MemoryStore;
use lambda_runtime::{service_fn, Context, LambdaEvent, Service};
use serde_json::{json, Value};

/// Charges in a step, then fails on its first run, as a ledger that is down would.
struct Checkout {
    runs: AtomicUsize,
    charges: AtomicUsize,
}

impl Checkout {
    fn new() -> Arc<Self> {
        Arc::new(Checkout {
            runs: AtomicUsize::new(0),
            charges: AtomicUsize::new(0),
        })
    }

    async fn run(&self) -> Result<String, lambda_runtime::Error> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst);
        let call = idem_core::context().expect("the handler runs inside the engine's call");
        let charge = idem_core::step("charge", async {
            Ok::<_, lambda_runtime::Error>(self.charges.fetch_add(1, Ordering::SeqCst) + 1)
        })
        .await?;
        if run == 0 {
            return Err("the ledger is down".into());
        }
        Ok(format!("charge {charge}, attempt {}", call.attempt()))
    }
}

fn context(request_id: &str) -> Context {
    let mut context = Context::default();
    context.request_id = request_id.to_owned();
    context.deadline = (std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    context
}

#[tokio::test]
async fn an_event_handler_runs_inside_the_call_and_its_step_runs_once() {
    let checkout = Checkout::new();
    let serving = checkout.clone();
    let mut handler = IdempotentHandler::builder(Idempotency::new(MemoryStore::new()))
        .name("checkout")
        .event_key("order_id")
        .build(service_fn(move |_: LambdaEvent<Value>| {
            let checkout = serving.clone();
            async move {
                let said = checkout.run().await?;
                Ok::<_, lambda_runtime::Error>(json!({ "said": said }))
            }
        }));
    let event = |request_id| LambdaEvent::new(json!({"order_id": "o-1"}), context(request_id));
    assert!(
        handler.call(event("r1")).await.is_err(),
        "the ledger is down"
    );
    let retried = handler.call(event("r2")).await.unwrap();
    // The retry takes over the key the failure kept for it, and resumes after the charge.
    assert_eq!(retried["said"], "charge 1, attempt 2");
    assert_eq!(
        checkout.charges.load(Ordering::SeqCst),
        1,
        "the retry resumed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sqs_message_runs_inside_the_call_and_its_step_runs_once() {
    let checkout = Checkout::new();
    let processor = BatchProcessor::new(Idempotency::new(MemoryStore::new()))
        .name("checkout")
        .event_key("powertools_json(body).order_id");
    let mut message = SqsMessage::default();
    message.message_id = Some("m-1".to_owned());
    message.body = Some(json!({"order_id": "o-1"}).to_string());
    let batch = || {
        let mut event = SqsEvent::default();
        event.records = vec![message.clone()];
        LambdaEvent::new(event, context("batch"))
    };
    let handle = |_: SqsMessage| {
        let checkout = checkout.clone();
        async move { checkout.run().await.map(drop) }
    };
    let first = processor.process(batch(), handle).await;
    assert_eq!(first.batch_item_failures.len(), 1, "the ledger is down");
    let redelivered = processor.process(batch(), handle).await;
    assert!(redelivered.batch_item_failures.is_empty());
    assert_eq!(
        checkout.charges.load(Ordering::SeqCst),
        1,
        "the redelivery resumed"
    );
    assert_eq!(checkout.runs.load(Ordering::SeqCst), 2);
}
