//! Every call runs in an `idem.call` span with its function, key, attempt, fencing token and
//! outcome; store operations are its children, and what happens to the key is told inside it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::{
    store::{Claim, InProgress, OwnerToken, Store},
    Begun, Call, Error, Fingerprint, Idempotency, JsonCodec, Key, ManualClock, ReleaseErrors,
    StoreError,
};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

// The shared support of idem-core's tests; this binary uses its `ok` alone.
#[allow(dead_code)]
#[path = "it/support.rs"]
mod support;

use support::ok;

#[derive(Clone, Debug, Default)]
struct SpanSeen {
    id: u64,
    name: &'static str,
    parent: Option<u64>,
    fields: HashMap<String, String>,
}

#[derive(Clone, Debug)]
struct EventSeen {
    span: Option<&'static str>,
    fields: HashMap<String, String>,
}

/// Keeps every span and event this thread's calls make.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<SpanSeen>>>,
    events: Arc<Mutex<Vec<EventSeen>>>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut seen = SpanSeen {
            id: id.into_u64(),
            name: attrs.metadata().name(),
            parent: ctx
                .span(id)
                .and_then(|span| span.parent())
                .map(|parent| parent.id().into_u64()),
            ..SpanSeen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        self.spans.lock().unwrap().push(seen);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut spans = self.spans.lock().unwrap();
        if let Some(seen) = spans.iter_mut().find(|s| s.id == id.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        let span = ctx.event_span(event).map(|span| span.name());
        self.events.lock().unwrap().push(EventSeen { span, fields });
    }
}

impl Capture {
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
    }

    fn calls(&self) -> Vec<SpanSeen> {
        let spans = self.spans.lock().unwrap();
        spans
            .iter()
            .filter(|s| s.name == "idem.call")
            .cloned()
            .collect()
    }

    fn children(&self, parent: &SpanSeen) -> Vec<SpanSeen> {
        let spans = self.spans.lock().unwrap();
        spans
            .iter()
            .filter(|s| s.parent == Some(parent.id))
            .cloned()
            .collect()
    }

    fn event(&self, message_starts: &str) -> EventSeen {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .find(|e| {
                e.fields
                    .get("message")
                    .is_some_and(|m| m.starts_with(message_starts))
            })
            .cloned()
            .unwrap_or_else(|| panic!("no event `{message_starts}…` in {events:?}"))
    }
}

fn call(idem: &Idempotency, part: &str) -> Call {
    let key = idem.key("orders.create").part(part).finish().unwrap();
    Call::new(key, Fingerprint::of(&part).unwrap())
}

#[tokio::test]
async fn a_call_span_names_the_call_and_holds_its_store_operations() {
    let capture = Capture::default();
    let _guard = capture.install();
    let idem = Idempotency::new(ReferenceStore::new());
    let fresh = call(&idem, "order-42");
    ok(&idem, fresh.clone()).await.unwrap();

    let [span] = capture.calls().try_into().unwrap();
    let field = |name: &str| span.fields.get(name).map(String::as_str);
    assert_eq!(field("code.function.name"), Some("orders.create"));
    assert_eq!(field("idem.key"), Some(fresh.key().as_str()));
    assert_eq!(field("idem.attempt"), Some("1"));
    assert!(field("idem.fencing_token").is_some_and(|t| t.parse::<u64>().is_ok()));
    assert_eq!(field("idem.outcome"), Some("executed"));
    assert_eq!(field("otel.status_code"), None);

    let operations: Vec<_> = capture
        .children(&span)
        .iter()
        .filter(|s| s.name == "idem.store")
        .map(|s| s.fields["db.operation.name"].clone())
        .collect();
    assert_eq!(operations, ["lookup", "reserve", "complete"]);
    let store = &capture.children(&span)[0];
    assert_eq!(store.fields["db.system.name"], "custom");
}

/// A replay answered by the store's lookup reads as one answered by a reservation: its call's
/// span says `replayed` and holds the one store operation, and the replay is told inside it.
#[tokio::test]
async fn a_replay_answered_by_a_lookup_is_told_inside_its_call() {
    let capture = Capture::default();
    let idem = Idempotency::new(ReferenceStore::new());
    let replayed = call(&idem, "order-5");
    ok(&idem, replayed.clone()).await.unwrap();
    let _guard = capture.install();
    ok(&idem, replayed.clone()).await.unwrap();

    let [span] = capture.calls().try_into().unwrap();
    assert_eq!(span.fields["idem.key"], replayed.key().as_str());
    assert_eq!(span.fields["idem.outcome"], "replayed");
    assert_eq!(span.fields.get("otel.status_code"), None);
    let operations: Vec<_> = capture
        .children(&span)
        .iter()
        .map(|s| (s.name, s.fields["db.operation.name"].clone()))
        .collect();
    assert_eq!(operations, [("idem.store", "lookup".to_owned())]);
    let told = capture.event("replayed: stored outcome returned");
    assert_eq!(told.span, Some("idem.call"));
}

/// A call run in two halves (`begin`, then `run_pending`) is one call span holding every
/// store operation of both.
#[tokio::test]
async fn a_call_in_two_halves_is_one_span() {
    let capture = Capture::default();
    let _guard = capture.install();
    let idem = Idempotency::new(ReferenceStore::new());
    let fresh = call(&idem, "order-7");
    let pending = match idem.begin::<(), Error, _, _>(fresh, &ReleaseErrors, &JsonCodec) {
        Begun::Pending(pending) => pending,
        Begun::Answered(answered) => panic!("nothing to replay: {answered:?}"),
    };
    idem.run_pending(pending, &ReleaseErrors, &JsonCodec, async {
        Ok::<(), Error>(())
    })
    .await
    .unwrap();

    let [span] = capture.calls().try_into().unwrap();
    assert_eq!(span.fields["idem.outcome"], "executed");
    let operations: Vec<_> = capture
        .children(&span)
        .iter()
        .map(|s| s.fields["db.operation.name"].clone())
        .collect();
    assert_eq!(operations, ["lookup", "reserve", "complete"]);
}

#[tokio::test]
async fn a_takeover_is_told_inside_the_call_that_took_over() {
    let capture = Capture::default();
    let _guard = capture.install();
    let clock = ManualClock::new();
    let store = Arc::new(ReferenceStore::new());
    let idem = Idempotency::from_arc(store.clone()).with_clock(clock.clone());
    let taken = call(&idem, "order-7");
    let now = idem.clock().now();
    let stale = InProgress::new(
        OwnerToken::generate(),
        *taken.fingerprint().unwrap(),
        now + Duration::from_secs(1),
    );
    store
        .reserve(taken.key(), &Claim::new(stale, now))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(2));

    ok(&idem, taken).await.unwrap();
    let [span] = capture.calls().try_into().unwrap();
    assert_eq!(span.fields["idem.attempt"], "2");
    assert_eq!(capture.event("taken over").span, Some("idem.call"));
}

/// Refuses every completion, as a store that lost the record would.
struct RefusingCompletion(ReferenceStore);

#[async_trait]
impl Interceptor for RefusingCompletion {
    fn inner(&self) -> &dyn Store {
        &self.0
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        match operation {
            Operation::Complete => Err(StoreError::rejected("too large")),
            _ => Ok(()),
        }
    }
}

#[tokio::test]
async fn a_failure_after_the_body_ran_marks_the_span_an_error() {
    let capture = Capture::default();
    let _guard = capture.install();
    let idem = Idempotency::new(Intercepted(RefusingCompletion(ReferenceStore::new())));
    let lost = ok(&idem, call(&idem, "order-9")).await;
    assert!(lost.unwrap_err().ran_without_record());

    let [span] = capture.calls().try_into().unwrap();
    assert_eq!(span.fields["idem.outcome"], "not_recorded");
    assert_eq!(span.fields["otel.status_code"], "ERROR");
    assert_eq!(
        capture
            .event("the function ran but its outcome was not stored")
            .span,
        Some("idem.call")
    );
}

#[cfg(feature = "seal")]
#[tokio::test]
async fn hidden_keys_stay_hidden_in_spans_and_events() {
    let capture = Capture::default();
    let _guard = capture.install();
    let idem = Idempotency::new(ReferenceStore::new())
        .with_key_digest([7u8; 32])
        .name_keys_by_digest();
    let personal = call(&idem, "alice@example.com");
    ok(&idem, personal.clone()).await.unwrap();

    let [span] = capture.calls().try_into().unwrap();
    assert_eq!(
        span.fields["idem.key"],
        idem.stored_key(personal.key()).as_str()
    );
    let spans = capture.spans.lock().unwrap();
    let events = capture.events.lock().unwrap();
    let everything = spans
        .iter()
        .flat_map(|s| s.fields.values())
        .chain(events.iter().flat_map(|e| e.fields.values()));
    for value in everything {
        assert!(!value.contains("alice@example.com"), "{value}");
    }
}

/// The subscriber decides by the spans' own names: one that takes `idem.call` and `idem.store`
/// spans by name, and nothing else, gets both.
#[tokio::test]
async fn a_subscriber_that_takes_spans_by_name_gets_the_call_and_its_store_operations() {
    let capture = Capture::default();
    let by_name = tracing_subscriber::filter::filter_fn(|metadata| {
        metadata.is_span() && ["idem.call", "idem.store"].contains(&metadata.name())
    });
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(capture.clone().with_filter(by_name)),
    );
    let idem = Idempotency::new(ReferenceStore::new());
    ok(&idem, call(&idem, "order-7")).await.unwrap();

    let [span] = capture.calls().try_into().unwrap();
    let operations: Vec<_> = capture.children(&span).iter().map(|s| s.name).collect();
    assert!(operations.contains(&"idem.store"), "{operations:?}");
}

/// A subscriber that takes only the store's spans gets them, though it takes no call span.
#[tokio::test]
async fn a_subscriber_that_takes_only_store_spans_gets_them() {
    let capture = Capture::default();
    let store_only =
        tracing_subscriber::filter::filter_fn(|metadata| metadata.name() == "idem.store");
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(capture.clone().with_filter(store_only)),
    );
    let idem = Idempotency::new(ReferenceStore::new());
    ok(&idem, call(&idem, "order-8")).await.unwrap();

    let spans = capture.spans.lock().unwrap();
    assert!(spans.iter().all(|s| s.name == "idem.store"), "{spans:?}");
    assert!(
        spans
            .iter()
            .any(|s| s.fields.get("db.operation.name").map(String::as_str) == Some("reserve")),
        "{spans:?}"
    );
}
