//! What an operator reads of a batch: every message reported for redelivery is logged once,
//! with its `messageId` and why (no key, another payload, the handler's error, a FIFO batch
//! stopped), and a message processed without a key says so. Its own binary: it installs a
//! global subscriber.

#[path = "it/scenarios/mod.rs"]
mod scenarios;

use std::fmt::Write;
use std::sync::{Arc, Mutex};

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use idem_lambda::sqs::BatchProcessor;
use idem_stores::memory::MemoryStore;
use lambda_runtime::LambdaEvent;
use scenarios::sqs::message;
use scenarios::Subject;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const QUEUE: &str = "arn:aws:sqs:us-east-1:123456789012:orders";
const FIFO_QUEUE: &str = "arn:aws:sqs:us-east-1:123456789012:orders.fifo";

/// Every event of idem-lambda, as one line of its fields.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

struct Text<'a>(&'a mut String);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }
}

impl Subscriber for Lines {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == idem_protocol::log::LAMBDA
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = String::new();
        event.record(&mut Text(&mut line));
        self.0.lock().unwrap().push(line);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Lines {
    /// The lines logged since the last call.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// The lines of `lines` that name message `id`.
fn about<'a>(lines: &'a [String], id: &str) -> Vec<&'a String> {
    let field = format!("message_id={id}");
    lines
        .iter()
        .filter(|line| line.split(' ').any(|token| token == field))
        .collect()
}

fn batch(subject: &Subject, messages: Vec<SqsMessage>) -> LambdaEvent<SqsEvent> {
    let mut event = SqsEvent::default();
    event.records = messages;
    LambdaEvent::new(event, subject.context("batch"))
}

/// Fails the messages whose id is `m3`, `m5` or `m6`.
async fn handle(message: SqsMessage) -> Result<(), String> {
    let id = message.message_id.unwrap_or_default();
    match id.as_str() {
        "m3" | "m5" | "m6" => Err(format!("the warehouse refused {id}")),
        _ => Ok(()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_reported_for_redelivery_is_logged_once_with_its_id_and_why() {
    let lines = Lines::default();
    tracing::subscriber::set_global_default(lines.clone()).unwrap();
    tracing::callsite::rebuild_interest_cache();
    let subject = Subject::new(Arc::new(MemoryStore::new()));
    let processor = |strict: bool| {
        BatchProcessor::new(subject.idem.clone())
            .event_key("powertools_json(body).order_id")
            .payload_validation("powertools_json(body).amount")
            .raise_on_no_idempotency_key(strict)
    };
    let mut keyless = message(QUEUE, "m2", "o-2");
    keyless.body = Some(r#"{"amount": 5}"#.into());
    let mut changed = message(QUEUE, "m4", "o-1");
    changed.body = Some(r#"{"order_id": "o-1", "amount": 6}"#.into());
    let messages = vec![
        message(QUEUE, "m1", "o-1"),
        keyless.clone(),
        message(QUEUE, "m3", "o-3"),
        changed,
    ];

    processor(true)
        .process_messages(batch(&subject, messages), handle)
        .await;
    let logged = lines.take();
    assert!(about(&logged, "m1").is_empty(), "{logged:#?}");
    for (id, error_type, reason) in [
        ("m2", "IdempotencyKeyError", "order_id"),
        ("m3", "HandlerError", "the warehouse refused m3"),
        ("m4", "IdempotencyValidationError", "different"),
    ] {
        let named = about(&logged, id);
        assert_eq!(named.len(), 1, "{id}: {logged:#?}");
        assert!(named[0].contains("reported for redelivery"), "{named:?}");
        assert!(
            named[0].contains(&format!(" error_type={error_type}")),
            "{named:?}"
        );
        assert!(named[0].contains(reason), "{id}: {named:?}");
    }

    processor(false)
        .process_messages(batch(&subject, vec![keyless]), handle)
        .await;
    let logged = lines.take();
    let named = about(&logged, "m2");
    assert_eq!(named.len(), 1, "{logged:#?}");
    assert!(
        named[0].contains("processed without idempotency"),
        "{named:?}"
    );
    assert!(
        named[0].contains("expression=powertools_json(body).order_id"),
        "{named:?}"
    );

    let fifo = vec![
        message(FIFO_QUEUE, "m5", "o-5"),
        message(FIFO_QUEUE, "m6", "o-6"),
    ];
    processor(true)
        .process_messages(batch(&subject, fifo), handle)
        .await;
    let logged = lines.take();
    assert_eq!(about(&logged, "m5").len(), 1, "{logged:#?}");
    let named = about(&logged, "m6");
    assert_eq!(named.len(), 1, "{logged:#?}");
    assert!(named[0].contains("not attempted"), "{named:?}");
}
