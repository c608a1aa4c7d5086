//! The invocation's deadline as the key's lease: a takeover once it passed, a deadline already
//! past, one further ahead than Lambda lets a function run.

use super::*;

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
