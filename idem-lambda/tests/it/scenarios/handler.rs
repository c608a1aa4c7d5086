//! The idempotent handler: replay across envelopes, validation, in-flight duplicates, the
//! deadline lease, missing keys and failures.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_lambda::{Error, IdempotentHandler};
use lambda_runtime::{service_fn, Diagnostic, LambdaEvent, Service};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};

use super::Subject;

type HandlerError = lambda_runtime::Error;
type Answer = Result<Value, Error<HandlerError>>;

/// An API Gateway event whose JSON body holds `order_id` and `amount`, sent by the principal
/// `user-1` (a REST API's Lambda authorizer named it).
pub fn api_event(order_id: Value, amount: u64, request_id: &str) -> Value {
    let body = json!({"order_id": order_id, "amount": amount}).to_string();
    json!({
        "body": body,
        "requestContext": {
            "requestId": request_id,
            "httpMethod": "POST",
            "resourcePath": "/orders",
            "requestTimeEpoch": 1_700_000_000_000u64,
            "authorizer": {"principalId": "user-1"},
        },
    })
}

/// A handler that counts its runs and answers with the request id that ran it.
fn counting(
    runs: &Arc<AtomicUsize>,
) -> impl Service<LambdaEvent<Value>, Response = Value, Error = HandlerError, Future = impl Send>
       + Clone
       + Send
       + 'static {
    let runs = runs.clone();
    service_fn(move |event: LambdaEvent<Value>| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, HandlerError>(json!({"statusCode": 201, "body": event.context.request_id}))
        }
    })
}

/// A handler whose first run is held until `gate` opens (or for ever, as a hung invocation);
/// later runs answer at once, so a duplicate wrongly let in shows as a second run rather than
/// a hang. Answers with the request id that ran it.
struct FirstRunHeld {
    runs: Arc<AtomicUsize>,
    gate: Arc<Semaphore>,
    started: mpsc::UnboundedReceiver<()>,
    sender: mpsc::UnboundedSender<()>,
}

impl FirstRunHeld {
    fn new() -> Self {
        let (sender, started) = mpsc::unbounded_channel();
        FirstRunHeld {
            runs: Arc::new(AtomicUsize::new(0)),
            gate: Arc::new(Semaphore::new(0)),
            started,
            sender,
        }
    }

    fn service(
        &self,
    ) -> impl Service<LambdaEvent<Value>, Response = Value, Error = HandlerError, Future = impl Send>
           + Clone
           + Send
           + 'static {
        let (runs, gate, started) = (self.runs.clone(), self.gate.clone(), self.sender.clone());
        service_fn(move |event: LambdaEvent<Value>| {
            let (runs, gate, started) = (runs.clone(), gate.clone(), started.clone());
            async move {
                if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                    started.send(()).unwrap();
                    let _open = gate.acquire().await.unwrap();
                }
                Ok::<_, HandlerError>(json!({"body": event.context.request_id}))
            }
        })
    }

    /// Invokes `handler` with `event` in a task of its own, once its first run started.
    async fn first<S>(
        &mut self,
        handler: &S,
        event: LambdaEvent<Value>,
    ) -> tokio::task::JoinHandle<Answer>
    where
        S: Service<LambdaEvent<Value>, Response = Value, Error = Error<HandlerError>>
            + Clone
            + Send
            + 'static,
        S::Future: Send,
    {
        let mut handler = handler.clone();
        let first = tokio::spawn(async move { handler.call(event).await });
        self.started.recv().await.unwrap();
        first
    }

    fn release(&self) {
        self.gate.add_permits(1);
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

fn orders(subject: &Subject) -> idem_lambda::IdempotentHandlerBuilder {
    IdempotentHandler::builder(subject.idem.clone()).event_key("powertools_json(body).order_id")
}

async fn invoke<S>(handler: &mut S, subject: &Subject, event: Value, request_id: &str) -> Answer
where
    S: Service<LambdaEvent<Value>, Response = Value, Error = Error<HandlerError>>,
{
    let event = LambdaEvent::new(event, subject.context(request_id));
    handler.call(event).await
}

fn error_type(answer: Answer) -> String {
    Diagnostic::from(answer.expect_err("an error")).error_type
}

/// A retry in another envelope (request id, timestamp) gets the first response; the handler
/// ran once.
pub async fn a_retry_in_a_new_envelope_replays(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject).build(counting(&runs));
    let first = invoke(
        &mut handler,
        &subject,
        api_event(json!("o-1"), 300, "req-1"),
        "req-1",
    )
    .await
    .unwrap();
    let mut retry_event = api_event(json!("o-1"), 300, "req-2");
    retry_event["requestContext"]["requestTimeEpoch"] = json!(1_700_000_009_000u64);
    let retry = invoke(&mut handler, &subject, retry_event, "req-2")
        .await
        .unwrap();
    assert_eq!(first["body"], "req-1");
    assert_eq!(retry, first, "the retry replays the first response");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let other = invoke(
        &mut handler,
        &subject,
        api_event(json!("o-2"), 300, "req-3"),
        "req-3",
    )
    .await
    .unwrap();
    assert_eq!(other["body"], "req-3", "another key runs");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// With `payload_validation`, the same key with another amount is refused, as
/// `IdempotencyValidationError`; without it, the amount is not part of the call.
pub async fn a_changed_payload_under_the_same_key_is_refused(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut validated = orders(&subject)
        .name("validated")
        .payload_validation("powertools_json(body).amount")
        .build(counting(&runs));
    invoke(
        &mut validated,
        &subject,
        api_event(json!("o-1"), 300, "r1"),
        "r1",
    )
    .await
    .unwrap();
    let changed = invoke(
        &mut validated,
        &subject,
        api_event(json!("o-1"), 999, "r2"),
        "r2",
    )
    .await;
    assert!(
        matches!(
            changed,
            Err(Error::Idempotency(idem_core::Error::Mismatch { .. }))
        ),
        "{changed:?}"
    );
    let changed = invoke(
        &mut validated,
        &subject,
        api_event(json!("o-1"), 999, "r3"),
        "r3",
    )
    .await;
    assert_eq!(error_type(changed), "IdempotencyValidationError");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let mut unvalidated = orders(&subject).name("unvalidated").build(counting(&runs));
    invoke(
        &mut unvalidated,
        &subject,
        api_event(json!("o-1"), 300, "r4"),
        "r4",
    )
    .await
    .unwrap();
    let replayed = invoke(
        &mut unvalidated,
        &subject,
        api_event(json!("o-1"), 999, "r5"),
        "r5",
    )
    .await
    .unwrap();
    assert_eq!(replayed["body"], "r4");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// A duplicate delivered while the first invocation runs is told it is in progress, and runs
/// nothing; once the first finishes, a retry replays it.
pub async fn a_duplicate_in_flight_is_told_in_progress(subject: Subject) {
    let mut held = FirstRunHeld::new();
    let handler = orders(&subject).build(held.service());
    let event = LambdaEvent::new(api_event(json!("o-7"), 1, "r1"), subject.context("r1"));
    let first = held.first(&handler, event).await;
    let mut duplicate = handler.clone();
    let answer = invoke(
        &mut duplicate,
        &subject,
        api_event(json!("o-7"), 1, "r2"),
        "r2",
    )
    .await;
    let diagnostic = Diagnostic::from(answer.unwrap_err());
    assert_eq!(diagnostic.error_type, "IdempotencyAlreadyInProgressError");
    assert!(
        diagnostic.error_message.contains("retry in 60 s"),
        "{}",
        diagnostic.error_message
    );
    held.release();
    let first = first.await.unwrap().unwrap();
    let retry = invoke(
        &mut duplicate,
        &subject,
        api_event(json!("o-7"), 1, "r3"),
        "r3",
    )
    .await
    .unwrap();
    assert_eq!(retry, first);
    assert_eq!(held.runs(), 1);
}

/// The reservation lasts until the invocation's deadline, not renewed: before it, a
/// redelivery is told the first is in progress; once Lambda ended the timed-out invocation,
/// the next delivery takes the key over and runs.
pub async fn a_timed_out_invocation_is_taken_over_after_its_deadline(subject: Subject) {
    // The first invocation hangs until Lambda ends it.
    let mut held = FirstRunHeld::new();
    let handler = orders(&subject).build(held.service());
    let left = Duration::from_secs(10);
    let context = subject.context_with("r1", left);
    let timed_out = held
        .first(
            &handler,
            LambdaEvent::new(api_event(json!("o-9"), 1, "r1"), context),
        )
        .await;
    let mut redelivery = handler.clone();
    subject.clock.advance(left - Duration::from_secs(1));
    let early = invoke(
        &mut redelivery,
        &subject,
        api_event(json!("o-9"), 1, "r2"),
        "r2",
    )
    .await;
    assert_eq!(error_type(early), "IdempotencyAlreadyInProgressError");

    // Lambda ends the invocation at its deadline: its process, and the call with it, is gone.
    timed_out.abort();
    subject.clock.advance(Duration::from_secs(2));
    let taken_over = invoke(
        &mut redelivery,
        &subject,
        api_event(json!("o-9"), 1, "r3"),
        "r3",
    )
    .await
    .unwrap();
    assert_eq!(taken_over["body"], "r3");
    assert_eq!(held.runs(), 2);
}

/// A deadline already past when the invocation starts (cargo-lambda's emulator sends
/// `600000`, a duration, where Lambda sends a time) keeps idem's renewed lease: a duplicate a
/// while later is still told the first is in progress.
pub async fn a_deadline_already_past_keeps_the_renewed_lease(subject: Subject) {
    let mut held = FirstRunHeld::new();
    let handler = orders(&subject).build(held.service());
    let mut context = subject.context("r1");
    context.deadline = 600_000;
    let first = held
        .first(
            &handler,
            LambdaEvent::new(api_event(json!("o-8"), 1, "r1"), context),
        )
        .await;
    subject.clock.advance(Duration::from_secs(5));
    let mut duplicate = handler.clone();
    let answer = invoke(
        &mut duplicate,
        &subject,
        api_event(json!("o-8"), 1, "r2"),
        "r2",
    )
    .await;
    assert_eq!(error_type(answer), "IdempotencyAlreadyInProgressError");
    held.release();
    first.await.unwrap().unwrap();
    assert_eq!(held.runs(), 1);
}

/// An event without its key is refused as `IdempotencyKeyError` and runs nothing; with
/// `raise_on_no_idempotency_key(false)` it runs, every time, without idempotency.
pub async fn an_event_without_a_key_is_refused_unless_allowed(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let no_key = || json!({"body": "{\"amount\": 3}"});
    let null_key = || json!({"body": "{\"order_id\": null}"});
    let empty_key = json!({"body": "{\"order_id\": \"\", \"item\": \"sofa\"}"});
    let mut strict = orders(&subject).build(counting(&runs));
    for event in [no_key(), null_key(), empty_key, json!({"headers": {}})] {
        let answer = invoke(&mut strict, &subject, event, "r1").await;
        assert!(
            matches!(answer, Err(Error::KeyMissing { .. })),
            "{answer:?}"
        );
    }
    let answer = invoke(&mut strict, &subject, no_key(), "r1").await;
    let diagnostic = Diagnostic::from(answer.unwrap_err());
    assert_eq!(diagnostic.error_type, "IdempotencyKeyError");
    assert!(
        diagnostic
            .error_message
            .contains("powertools_json(body).order_id"),
        "{}",
        diagnostic.error_message
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let mut lenient = orders(&subject)
        .raise_on_no_idempotency_key(false)
        .build(counting(&runs));
    for request in ["r2", "r3"] {
        invoke(&mut lenient, &subject, no_key(), request)
            .await
            .unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2, "no key, no idempotency");
}

/// A key of several parts with one missing is no key: without its `order_id`, `[customer,
/// order_id]` would be one key for all of the customer's orders. `allow_partial_keys` takes
/// it as Powertools does.
pub async fn a_key_with_a_missing_part_is_no_key_unless_allowed(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let order = |order_id: Value| json!({"customer": "c-1", "order_id": order_id});
    let by_customer_and_order = || {
        IdempotentHandler::builder(subject.idem.clone())
            .name("orders")
            .event_key("[customer, order_id]")
    };
    let mut strict = by_customer_and_order().build(counting(&runs));
    for missing in [Value::Null, json!("")] {
        let answer = invoke(&mut strict, &subject, order(missing), "r1").await;
        assert!(
            matches!(answer, Err(Error::KeyMissing { .. })),
            "{answer:?}"
        );
    }
    let mut by_hash = IdempotentHandler::builder(subject.idem.clone())
        .name("orders")
        .event_key("{c: customer, o: order_id}")
        .build(counting(&runs));
    let answer = invoke(&mut by_hash, &subject, order(Value::Null), "r1").await;
    assert!(
        matches!(answer, Err(Error::KeyMissing { .. })),
        "{answer:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // A body selected whole is the event's own data: its nulls are its own.
    let mut whole_body = IdempotentHandler::builder(subject.idem.clone())
        .name("bodies")
        .event_key("powertools_json(body)")
        .build(counting(&runs));
    let body = json!({"body": "{\"order_id\": 7, \"coupon\": null}"});
    invoke(&mut whole_body, &subject, body, "r0").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    invoke(&mut strict, &subject, order(json!("o-1")), "r2")
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    let mut partial = by_customer_and_order()
        .allow_partial_keys()
        .build(counting(&runs));
    for request in ["r3", "r4"] {
        invoke(&mut partial, &subject, order(Value::Null), request)
            .await
            .unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3, "the second one replays");
}

/// A key that loses a part of the event on the way is no key, whatever the expression does
/// with the part after: two orders of one customer without their `order_id` would otherwise
/// share a key, and the second would get the first one's response. A filter's choice is no
/// loss, and `allow_partial_keys` takes such keys as Powertools does.
pub async fn a_key_that_lost_a_part_on_the_way_is_no_key_unless_allowed(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    // Two orders of one customer, both without their order_id.
    let order = |amount: u64| {
        json!({
            "customer": "c-1",
            "sku": "s-1",
            "amount": amount,
            "lines": [{"sku": "s-1"}, {"kind": "gift"}],
        })
    };
    for (at, expression) in [
        "[customer, order_id][]",
        "[customer, [order_id, sku]]",
        "[customer, order_id] | [?@ != null]",
        "to_string(order_id)",
        "type(order_id)",
        "{c: customer, rest: [order_id][]}",
        "lines[*].sku",
    ]
    .into_iter()
    .enumerate()
    {
        let mut handler = IdempotentHandler::builder(subject.idem.clone())
            .name(format!("orders-{at}"))
            .event_key(expression)
            .build(counting(&runs));
        for (amount, request) in [(5, "r1"), (9, "r2")] {
            let answer = invoke(&mut handler, &subject, order(amount), request).await;
            assert!(
                matches!(answer, Err(Error::KeyMissing { .. })),
                "`{expression}`, order of {amount}: {answer:?}"
            );
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");

    // Every part there: a key, and the retry replays.
    let mut whole = IdempotentHandler::builder(subject.idem.clone())
        .name("whole")
        .event_key("[customer, [order_id, sku]][]")
        .build(counting(&runs));
    let mut complete = order(5);
    complete["order_id"] = json!("o-1");
    for request in ["r3", "r4"] {
        let done = invoke(&mut whole, &subject, complete.clone(), request)
            .await
            .unwrap();
        assert_eq!(done["body"], "r3");
    }
    // A filter chooses the lines it keys by: the gift line is left out, not lost.
    let mut filtered = IdempotentHandler::builder(subject.idem.clone())
        .name("filtered")
        .event_key("[customer, lines[?sku].sku]")
        .build(counting(&runs));
    invoke(&mut filtered, &subject, order(5), "r5")
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    let mut partial = IdempotentHandler::builder(subject.idem.clone())
        .name("partial")
        .event_key("[customer, order_id][]")
        .allow_partial_keys()
        .build(counting(&runs));
    for request in ["r6", "r7"] {
        let done = invoke(&mut partial, &subject, order(5), request)
            .await
            .unwrap();
        assert_eq!(
            done["body"], "r6",
            "taken as Powertools takes it, and replayed"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

/// A response hook sees every replay, and only replays, and what it returns is the answer.
pub async fn a_response_hook_reshapes_replays_only(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut handler = orders(&subject)
        .name("orders")
        .response_hook({
            let seen = seen.clone();
            move |mut response: Value, replay: &idem_lambda::Replay<'_>| {
                let key = replay.key().as_str().to_owned();
                seen.lock()
                    .unwrap()
                    .push((key, replay.request_id().to_owned()));
                response["headers"] = json!({"x-idempotent-replay": replay.request_id()});
                response
            }
        })
        .build(counting(&runs));
    let event = || json!({"body": "{\"order_id\": \"o-7\"}"});

    let first = invoke(&mut handler, &subject, event(), "r1").await.unwrap();
    assert_eq!(
        first["headers"],
        Value::Null,
        "the first response is the handler's own"
    );
    let retry = invoke(&mut handler, &subject, event(), "r2").await.unwrap();
    assert_eq!(retry["body"], "r1", "the stored response");
    assert_eq!(retry["headers"]["x-idempotent-replay"], "r2");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].0.contains("o-7"), "{seen:?}");
    assert_eq!(seen[0].1, "r2");
}

/// An answer the store cannot keep (over DynamoDB's 400 KB item limit): the first invocation
/// is told its outcome was not recorded, and so is every retry after it, never "in progress",
/// and the handler does not run again.
pub async fn an_answer_too_large_to_keep_is_never_in_progress(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject).name("orders").build(service_fn({
        let runs = runs.clone();
        move |_: LambdaEvent<Value>| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, HandlerError>(json!({"statusCode": 200, "body": "x".repeat(500_000)}))
            }
        }
    }));
    let event = || json!({"body": "{\"order_id\": \"o-big\"}"});
    for request in ["r1", "r2", "r3"] {
        let answer = invoke(&mut handler, &subject, event(), request).await;
        assert_eq!(
            error_type(answer),
            "IdempotencyNotRecordedError",
            "{request}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A body that is not JSON under `powertools_json` gives no key: refused, nothing runs.
pub async fn a_body_that_is_not_json_is_refused(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject)
        .raise_on_no_idempotency_key(false)
        .build(counting(&runs));
    let answer = invoke(
        &mut handler,
        &subject,
        json!({"body": "order_id=o-1"}),
        "r1",
    )
    .await;
    assert!(matches!(answer, Err(Error::Expression(_))), "{answer:?}");
    let answer = invoke(&mut handler, &subject, json!({"body": "{"}), "r1").await;
    assert_eq!(error_type(answer), "IdempotencyKeyError");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A failed handler releases its key: the retry runs again, and its success is replayed.
pub async fn a_failed_invocation_runs_again(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject).build(service_fn({
        let runs = runs.clone();
        move |event: LambdaEvent<Value>| {
            let runs = runs.clone();
            async move {
                if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(HandlerError::from("the payment provider timed out"));
                }
                Ok(json!({"body": event.context.request_id}))
            }
        }
    }));
    let failed = invoke(
        &mut handler,
        &subject,
        api_event(json!("o-3"), 1, "r1"),
        "r1",
    )
    .await;
    let Err(Error::Handler(error)) = failed else {
        panic!("the handler's own error: {failed:?}")
    };
    assert_eq!(error.to_string(), "the payment provider timed out");
    let retried = invoke(
        &mut handler,
        &subject,
        api_event(json!("o-3"), 1, "r2"),
        "r2",
    )
    .await
    .unwrap();
    let replayed = invoke(
        &mut handler,
        &subject,
        api_event(json!("o-3"), 1, "r3"),
        "r3",
    )
    .await
    .unwrap();
    assert_eq!(
        (retried["body"].as_str(), replayed),
        (Some("r2"), retried.clone())
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// Keys are typed: the number 42 and the string "42" are two keys; a list key works; a
/// number too large to compare exactly is refused rather than confused with its neighbour.
pub async fn keys_keep_their_type_and_their_exact_value(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject).build(counting(&runs));
    for (order_id, request) in [
        (json!(42), "r1"),
        (json!("42"), "r2"),
        (json!([1, "a"]), "r3"),
    ] {
        let done = invoke(
            &mut handler,
            &subject,
            api_event(order_id, 1, request),
            request,
        )
        .await
        .unwrap();
        assert_eq!(done["body"], request, "a key of its own");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);

    for huge in ["123456789012345678901", "123456789012345678902"] {
        let event = json!({"body": format!("{{\"order_id\": {huge}}}")});
        let answer = invoke(&mut handler, &subject, event, "r4").await;
        let Err(Error::Expression(error)) = &answer else {
            panic!("refused: {answer:?}")
        };
        assert!(error.message.contains("as a string"), "{error}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

/// Numbers count by value, in keys and in validated data: `42` and `42.0` are one key,
/// `100` and `100.0` one amount, while `101` is another amount and `"42"` another key.
pub async fn numbers_count_by_value_in_keys_and_validation(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject)
        .name("numbers")
        .payload_validation("powertools_json(body).amount")
        .build(counting(&runs));
    let event = |body: &str| json!({"body": body});
    let first = invoke(
        &mut handler,
        &subject,
        event(r#"{"order_id": 42, "amount": 100}"#),
        "r1",
    )
    .await
    .unwrap();
    for (body, request) in [
        (r#"{"order_id": 42.0, "amount": 100.0}"#, "r2"),
        (r#"{"order_id": 4.2e1, "amount": 1e2}"#, "r3"),
    ] {
        let replayed = invoke(&mut handler, &subject, event(body), request)
            .await
            .unwrap();
        assert_eq!(replayed, first, "{body} replays");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let changed = invoke(
        &mut handler,
        &subject,
        event(r#"{"order_id": 42.0, "amount": 101}"#),
        "r4",
    )
    .await;
    assert_eq!(error_type(changed), "IdempotencyValidationError");
    let text_key = invoke(
        &mut handler,
        &subject,
        event(r#"{"order_id": "42", "amount": 100}"#),
        "r5",
    )
    .await
    .unwrap();
    assert_eq!(
        text_key["body"], "r5",
        "the string \"42\" is a key of its own"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// The handler is keyed under the function's name from the context unless named, and one
/// with neither is refused with what to do.
pub async fn the_name_comes_from_the_context_unless_given(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut by_context = orders(&subject).build(counting(&runs));
    let mut named = orders(&subject).name("orders-fn").build(counting(&runs));
    let mut other = orders(&subject).name("refunds").build(counting(&runs));
    invoke(
        &mut by_context,
        &subject,
        api_event(json!("o-5"), 1, "r1"),
        "r1",
    )
    .await
    .unwrap();
    let same = invoke(&mut named, &subject, api_event(json!("o-5"), 1, "r2"), "r2")
        .await
        .unwrap();
    assert_eq!(same["body"], "r1", "the context's name, shared");
    let separate = invoke(&mut other, &subject, api_event(json!("o-5"), 1, "r3"), "r3")
        .await
        .unwrap();
    assert_eq!(separate["body"], "r3");

    let mut context = subject.context("r4");
    context.env_config = Arc::new(lambda_runtime::Config::default());
    let unnamed = by_context
        .call(LambdaEvent::new(api_event(json!("o-5"), 1, "r4"), context))
        .await;
    let diagnostic = Diagnostic::from(unnamed.unwrap_err());
    assert_eq!(diagnostic.error_type, "IdempotencyConfigError");
    assert!(diagnostic.error_message.contains(".name("));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// A deadline further ahead than Lambda lets a function run is not trusted: a handler that
/// hung under it holds its key no longer than Lambda's longest invocation.
pub async fn a_deadline_far_ahead_holds_the_key_no_longer_than_lambda_can_run(subject: Subject) {
    let mut held = FirstRunHeld::new();
    let handler = orders(&subject).build(held.service());
    let mut context = subject.context("r1");
    context.deadline = u64::MAX;
    let hung = held
        .first(
            &handler,
            LambdaEvent::new(api_event(json!("o-4"), 1, "r1"), context),
        )
        .await;
    hung.abort();
    let mut redelivery = handler.clone();
    subject.clock.advance(Duration::from_secs(17 * 60));
    let taken_over = invoke(
        &mut redelivery,
        &subject,
        api_event(json!("o-4"), 1, "r2"),
        "r2",
    )
    .await
    .unwrap();
    assert_eq!(taken_over["body"], "r2");
}

/// An order as a typed event, with what JMESPath's own serializer refuses and serde_json
/// writes: a map with integer keys, a 128-bit number.
#[derive(serde::Serialize, Clone)]
pub struct TypedOrder {
    order_id: String,
    lines: std::collections::HashMap<u32, String>,
    total_micros: u128,
}

/// A typed event is keyed as serde_json writes it, whatever fields it holds.
pub async fn a_typed_event_is_keyed_as_serde_json_writes_it(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = IdempotentHandler::builder(subject.idem.clone())
        .event_key("order_id")
        .build(service_fn({
            let runs = runs.clone();
            move |event: LambdaEvent<TypedOrder>| {
                let runs = runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, HandlerError>(event.context.request_id)
                }
            }
        }));
    let order = TypedOrder {
        order_id: "o-6".into(),
        lines: [(1, "tv".to_owned())].into(),
        total_micros: u128::MAX,
    };
    for request in ["r1", "r2"] {
        let event = LambdaEvent::new(order.clone(), subject.context(request));
        assert_eq!(handler.call(event).await.unwrap(), "r1");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
