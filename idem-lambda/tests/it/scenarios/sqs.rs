//! The batch processor: duplicates in a batch, failures reported and redelivered, FIFO order,
//! concurrency, messages without keys.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use idem_lambda::sqs::{BatchProcessor, MessageOutcome};
use lambda_runtime::LambdaEvent;
use serde_json::json;

use super::Subject;

const QUEUE: &str = "arn:aws:sqs:us-east-1:123456789012:orders";
const FIFO_QUEUE: &str = "arn:aws:sqs:us-east-1:123456789012:orders.fifo";

/// A message `id` about `order_id` from `queue`.
pub fn message(queue: &str, id: &str, order_id: &str) -> SqsMessage {
    let mut message = SqsMessage::default();
    message.message_id = Some(id.to_owned());
    message.body = Some(json!({"order_id": order_id, "amount": 5}).to_string());
    message.event_source_arn = Some(queue.to_owned());
    message
}

fn batch(subject: &Subject, messages: Vec<SqsMessage>) -> LambdaEvent<SqsEvent> {
    let mut event = SqsEvent::default();
    event.records = messages;
    LambdaEvent::new(event, subject.context("batch"))
}

/// Runs of the handler by message id; the handler fails for the message ids in `failing`.
#[derive(Clone, Default)]
struct Handler {
    runs: Arc<Mutex<Vec<String>>>,
    failing: Arc<Mutex<Vec<String>>>,
}

impl Handler {
    fn failing(ids: &[&str]) -> Self {
        let handler = Handler::default();
        handler.set_failing(ids);
        handler
    }

    fn set_failing(&self, ids: &[&str]) {
        *self.failing.lock().unwrap() = ids.iter().map(|id| id.to_string()).collect();
    }

    async fn handle(&self, message: SqsMessage) -> Result<(), String> {
        let id = message.message_id.unwrap_or_default();
        self.runs.lock().unwrap().push(id.clone());
        if self.failing.lock().unwrap().contains(&id) {
            return Err(format!("{id} failed"));
        }
        Ok(())
    }

    fn runs(&self) -> Vec<String> {
        std::mem::take(&mut *self.runs.lock().unwrap())
    }
}

fn failures(response: &SqsBatchResponse) -> Vec<&str> {
    response
        .batch_item_failures
        .iter()
        .map(|failure| failure.item_identifier.as_str())
        .collect()
}

fn by_order(subject: &Subject) -> BatchProcessor {
    BatchProcessor::new(subject.idem.clone()).event_key("powertools_json(body).order_id")
}

/// Two messages about one order in a batch: the handler runs once, the later one replays.
pub async fn a_duplicate_in_the_batch_runs_once(subject: Subject) {
    let handler = Handler::default();
    let processor = by_order(&subject);
    let messages = vec![
        message(QUEUE, "m1", "o-1"),
        message(QUEUE, "m2", "o-2"),
        message(QUEUE, "m3", "o-1"),
    ];
    let outcomes = processor
        .process_messages(batch(&subject, messages), |m| handler.handle(m))
        .await;
    let outcomes: Vec<(&str, &MessageOutcome)> =
        outcomes.iter().map(|(id, o)| (id.as_str(), o)).collect();
    assert_eq!(
        outcomes,
        [
            ("m1", &MessageOutcome::Processed),
            ("m2", &MessageOutcome::Processed),
            ("m3", &MessageOutcome::Replayed),
        ]
    );
    assert_eq!(handler.runs(), ["m1", "m2"]);
}

/// A failed message is the only one reported; when SQS redelivers it (and the handler now
/// succeeds), it runs and nothing else does. Keyed by message id, the default, a redelivered
/// batch runs only what failed.
pub async fn only_failures_are_reported_and_redelivery_runs_only_them(subject: Subject) {
    let handler = Handler::failing(&["m2"]);
    let processor = BatchProcessor::new(subject.idem.clone()).name("fulfil");
    let messages = || {
        vec![
            message(QUEUE, "m1", "o-1"),
            message(QUEUE, "m2", "o-2"),
            message(QUEUE, "m3", "o-3"),
        ]
    };
    let response = processor
        .process(batch(&subject, messages()), |m| handler.handle(m))
        .await;
    assert_eq!(failures(&response), ["m2"]);
    assert_eq!(handler.runs(), ["m1", "m2", "m3"]);

    handler.set_failing(&[]);
    let response = processor
        .process(batch(&subject, messages()), |m| handler.handle(m))
        .await;
    assert!(failures(&response).is_empty());
    assert_eq!(handler.runs(), ["m2"], "only the failed message ran again");
}

/// From a FIFO queue, processing stops at the first failure: it and every later message are
/// reported, and the later ones were not attempted.
pub async fn a_fifo_batch_stops_at_the_first_failure(subject: Subject) {
    let handler = Handler::failing(&["m2"]);
    let processor = by_order(&subject).concurrency(8);
    let messages = ["m1", "m2", "m3", "m4"]
        .iter()
        .enumerate()
        .map(|(n, id)| message(FIFO_QUEUE, id, &format!("o-{n}")))
        .collect();
    let outcomes = processor
        .process_messages(batch(&subject, messages), |m| handler.handle(m))
        .await;
    assert_eq!(handler.runs(), ["m1", "m2"]);
    let outcomes: HashMap<&str, &MessageOutcome> =
        outcomes.iter().map(|(id, o)| (id.as_str(), o)).collect();
    assert_eq!(outcomes["m1"], &MessageOutcome::Processed);
    assert!(
        matches!(outcomes["m2"], MessageOutcome::Failed { error_type, .. } if error_type == "HandlerError")
    );
    assert_eq!(outcomes["m3"], &MessageOutcome::NotAttempted);
    assert_eq!(outcomes["m4"], &MessageOutcome::NotAttempted);
}

/// With a concurrency limit, messages with different keys run at once (each waits for the
/// others to start), while messages that share a key still run one after another.
pub async fn different_keys_run_concurrently_and_one_key_in_order(subject: Subject) {
    let processor = by_order(&subject).concurrency(3);
    let together = Arc::new(tokio::sync::Barrier::new(3));
    let runs = Arc::new(Mutex::new(Vec::new()));
    let messages = vec![
        message(QUEUE, "m1", "o-1"),
        message(QUEUE, "m2", "o-2"),
        message(QUEUE, "m3", "o-1"),
        message(QUEUE, "m4", "o-3"),
    ];
    let handle = |message: SqsMessage| {
        let (together, runs) = (together.clone(), runs.clone());
        async move {
            let id = message.message_id.unwrap();
            runs.lock().unwrap().push(id.clone());
            if id != "m3" {
                // m1, m2 and m4 are all in flight at once, or this never returns.
                together.wait().await;
            }
            Ok::<(), String>(())
        }
    };
    let outcomes = tokio::time::timeout(
        Duration::from_secs(30),
        processor.process_messages(batch(&subject, messages), handle),
    )
    .await
    .expect("three keys ran at once");
    let replayed: Vec<&str> = outcomes
        .iter()
        .filter(|(_, o)| *o == MessageOutcome::Replayed)
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(replayed, ["m3"]);
    assert_eq!(runs.lock().unwrap().len(), 3, "m3 did not run");
}

/// A message without a key fails and is reported; allowed, it runs without idempotency.
/// A message with a changed payload under a validated key is reported too.
pub async fn messages_without_keys_or_with_changed_payloads_fail(subject: Subject) {
    let handler = Handler::default();
    let mut keyless = message(QUEUE, "m2", "o-2");
    keyless.body = Some("{\"amount\": 5}".into());
    let mut changed = message(QUEUE, "m3", "o-1");
    changed.body = Some(json!({"order_id": "o-1", "amount": 6}).to_string());
    let messages = || {
        vec![
            message(QUEUE, "m1", "o-1"),
            keyless.clone(),
            changed.clone(),
        ]
    };

    let strict = by_order(&subject).payload_validation("powertools_json(body).amount");
    let outcomes = strict
        .process_messages(batch(&subject, messages()), |m| handler.handle(m))
        .await;
    let types: Vec<Option<&str>> = outcomes
        .iter()
        .map(|(_, outcome)| match outcome {
            MessageOutcome::Failed { error_type, .. } => Some(error_type.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        types,
        [
            None,
            Some("IdempotencyKeyError"),
            Some("IdempotencyValidationError")
        ]
    );
    assert_eq!(handler.runs(), ["m1"]);

    let lenient = by_order(&subject)
        .name("lenient")
        .raise_on_no_idempotency_key(false);
    let outcomes = lenient
        .process_messages(batch(&subject, vec![keyless.clone()]), |m| {
            handler.handle(m)
        })
        .await;
    assert_eq!(outcomes[0].1, MessageOutcome::ProcessedWithoutKey);
    assert_eq!(handler.runs(), ["m2"]);
}

/// A message whose key another invocation holds is reported, not run; once that invocation
/// finished, the redelivery replays.
pub async fn a_message_held_by_another_invocation_is_reported(subject: Subject) {
    let processor = by_order(&subject);
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let (started, mut first_started) = tokio::sync::mpsc::unbounded_channel();
    let first = {
        let (processor, gate) = (by_order(&subject), gate.clone());
        let event = batch(&subject, vec![message(QUEUE, "m1", "o-1")]);
        tokio::spawn(async move {
            processor
                .process(event, |_| {
                    let (gate, started) = (gate.clone(), started.clone());
                    async move {
                        started.send(()).unwrap();
                        let _open = gate.acquire().await.unwrap();
                        Ok::<(), String>(())
                    }
                })
                .await
        })
    };
    first_started.recv().await.unwrap();
    let handler = Handler::default();
    let duplicate = || batch(&subject, vec![message(QUEUE, "m1", "o-1")]);
    let outcomes = processor
        .process_messages(duplicate(), |m| handler.handle(m))
        .await;
    assert!(
        matches!(&outcomes[0].1, MessageOutcome::Failed { error_type, .. } if error_type == "IdempotencyAlreadyInProgressError"),
        "{outcomes:?}"
    );
    gate.add_permits(1);
    assert!(failures(&first.await.unwrap()).is_empty());
    let outcomes = processor
        .process_messages(duplicate(), |m| handler.handle(m))
        .await;
    assert_eq!(outcomes[0].1, MessageOutcome::Replayed);
    assert!(handler.runs().is_empty());
}

/// A handler that panics fails its own message; the others are processed and reported as
/// they went, and a redelivery after the deadline runs the panicked one again.
pub async fn a_panicking_message_fails_alone(subject: Subject) {
    let processor = by_order(&subject).concurrency(2);
    let panics = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let handler = Handler::default();
    let handle = |message: SqsMessage| {
        let (handler, panics) = (handler.clone(), panics.clone());
        async move {
            let id = message.message_id.clone().unwrap_or_default();
            if id == "m2" && panics.load(std::sync::atomic::Ordering::SeqCst) {
                panic!("the fulfilment client panicked on {id}");
            }
            handler.handle(message).await
        }
    };
    let messages = || {
        vec![
            message(QUEUE, "m1", "o-1"),
            message(QUEUE, "m2", "o-2"),
            message(QUEUE, "m3", "o-3"),
        ]
    };
    let outcomes = processor
        .process_messages(batch(&subject, messages()), handle)
        .await;
    assert_eq!(outcomes[0].1, MessageOutcome::Processed);
    assert!(
        matches!(&outcomes[1].1, MessageOutcome::Failed { error_type, message }
            if error_type == "HandlerPanic" && message.contains("panicked on m2")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[2].1, MessageOutcome::Processed);
    assert_eq!(handler.runs(), ["m1", "m3"]);

    panics.store(false, std::sync::atomic::Ordering::SeqCst);
    subject.clock.advance(Duration::from_secs(61));
    let response = processor.process(batch(&subject, messages()), handle).await;
    assert!(failures(&response).is_empty());
    assert_eq!(
        handler.runs(),
        ["m2"],
        "only the panicked message ran again"
    );
}

/// A message's key is unscoped: two producers' messages with one order id are one call,
/// since the producer is trusted. A principal function names the tenant a message belongs to,
/// and then two tenants' messages with one key are two calls, while a tenant's duplicate still
/// replays.
pub async fn a_named_tenant_scopes_a_message_key(subject: Subject) {
    let from = |id: &str, tenant: &str| {
        let mut message = message(QUEUE, id, "o-1");
        let mut attribute = aws_lambda_events::event::sqs::SqsMessageAttribute::default();
        attribute.string_value = Some(tenant.to_owned());
        attribute.data_type = Some("String".to_owned());
        message.message_attributes = [("tenant".to_owned(), attribute)].into();
        message
    };
    let batch_of = || vec![from("m1", "t-1"), from("m2", "t-2"), from("m3", "t-1")];

    let handler = Handler::default();
    let unscoped = by_order(&subject).name("unscoped");
    let outcomes = unscoped
        .process_messages(batch(&subject, batch_of()), |m| handler.handle(m))
        .await;
    assert_eq!(handler.runs(), ["m1"], "{outcomes:?}");

    let by_tenant = by_order(&subject)
        .name("by-tenant")
        .principal(|message: &SqsMessage| {
            let tenant = message.message_attributes.get("tenant")?;
            Some(format!("tenant:{}", tenant.string_value.as_deref()?))
        });
    let outcomes = by_tenant
        .process_messages(batch(&subject, batch_of()), |m| handler.handle(m))
        .await;
    let outcomes: Vec<(&str, &MessageOutcome)> =
        outcomes.iter().map(|(id, o)| (id.as_str(), o)).collect();
    assert_eq!(
        outcomes,
        [
            ("m1", &MessageOutcome::Processed),
            ("m2", &MessageOutcome::Processed),
            ("m3", &MessageOutcome::Replayed),
        ]
    );
    assert_eq!(handler.runs(), ["m1", "m2"]);
}
