//! The handler's replays: a retry in a new envelope, another payload under the same key, a
//! duplicate while the first invocation runs.

use super::*;

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
