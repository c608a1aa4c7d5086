//! What the engine reads back before it reports an outcome lost (semantic 13): a completion
//! that landed while the store went down (given up after failures, or refused when tried
//! again), and a completion the body wrote in its own transaction while the engine's own
//! completions failed.

use std::sync::Arc;
use std::time::Duration;

use super::{call, charge, Charge, Context};
use crate::probes::Probe;
use idem_core::{
    context,
    store::{Completed, Outcome, Record, Store},
    Clock, Error, ManualClock,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(a_landed_completion_is_read_back_while_the_store_is_down),
    check!(a_refused_completion_is_read_back_while_the_store_is_down),
    check!(a_completion_written_in_the_body_s_transaction_counts_as_landed),
];

/// Semantic 13: a completion that landed, whose answer was lost past the lease, while the
/// store stays down for a few reads more, is read back until the store answers (for up to one
/// more lease), not reported "not recorded" on the first read that fails.
async fn a_landed_completion_is_read_back_while_the_store_is_down(ctx: Context) {
    let clock = ManualClock::new();
    let lease = Duration::from_secs(60);
    let probe =
        Probe::losing_a_completion_answer_and_reads(ctx.store().clone(), clock.clone(), lease, 3);
    let store: Arc<dyn Store> = probe.clone();
    let idem = ctx.handle_with(clock, store);
    let side_effect = Charge::instant();
    let call = call(&ctx, "o-read-back-1", 1).with_lease(lease);
    let done = charge(&idem, call.clone(), 1, &side_effect).await;
    assert!(
        matches!(&done, Ok(answered) if !answered.replayed),
        "the outcome is in the store: it must be read back once the store answers, got {done:?}"
    );
    assert_eq!(
        probe.reads_left_to_fail(),
        0,
        "every failed read was retried"
    );
    let retry = charge(&ctx.handle(), call, 1, &side_effect).await.unwrap();
    assert!(retry.replayed);
    assert_eq!(side_effect.runs(), 1);
}

/// Semantic 13: a completion that landed with its answer lost, while the lease still holds, is
/// tried again and refused (the record is no longer in progress); the store then stays down for
/// a few reads. The record is read back until the store answers, not reported lost on the
/// first read that fails.
async fn a_refused_completion_is_read_back_while_the_store_is_down(ctx: Context) {
    let clock = ManualClock::new();
    let lease = Duration::from_secs(60);
    let probe = Probe::losing_a_completion_answer_and_reads(
        ctx.store().clone(),
        clock.clone(),
        Duration::from_secs(1),
        3,
    );
    let store: Arc<dyn Store> = probe;
    let idem = ctx.handle_with(clock, store);
    let side_effect = Charge::instant();
    let call = call(&ctx, "o-read-back-3", 1).with_lease(lease);
    let done = charge(&idem, call.clone(), 1, &side_effect).await;
    // A store whose completion tells the record it finds apart (DynamoDB answers with it) is
    // not refused and reads nothing back: what counts is the outcome.
    assert!(
        matches!(&done, Ok(answered) if !answered.replayed),
        "the outcome is in the store: it must be read back once the store answers, got {done:?}"
    );
    let retry = charge(&ctx.handle(), call, 1, &side_effect).await.unwrap();
    assert!(retry.replayed);
    assert_eq!(side_effect.runs(), 1);
}

/// Semantic 13: the body completed the record in its own transaction (as PostgreSQL's
/// `complete_in_transaction` does, by its own clock) and the engine's completions then fail
/// until the lease passes: the record read back holds this call's fingerprint and outcome, so
/// the call succeeded, though its expiry is not the one the engine would have written.
async fn a_completion_written_in_the_body_s_transaction_counts_as_landed(ctx: Context) {
    let clock = ManualClock::new();
    let lease = Duration::from_secs(60);
    let failing = Probe::failing_completions(ctx.store().clone(), clock.clone(), lease / 2);
    let store: Arc<dyn Store> = failing;
    let idem = ctx.handle_with(clock.clone(), store);
    let own = ctx.store().clone();
    let side_effect = Charge::instant();
    let call = call(&ctx, "o-read-back-2", 1).with_lease(lease);
    let ttl = call.ttl();
    let done = idem
        .run(call.clone(), async {
            let receipt = side_effect.run(1).await;
            let body = context().expect("inside an idempotent body");
            let stored_key = body.stored_key();
            let held = match own.get(&stored_key).await {
                Ok(Some(Record::InProgress(held))) => held,
                other => panic!("the call's own in-progress record, got {other:?}"),
            };
            // The receipt as JSON, as the engine encodes it: a string with nothing to escape.
            assert!(!receipt.contains(['"', '\\']), "{receipt}");
            let value = format!("\"{receipt}\"").into_bytes();
            // Committed by the transaction's clock, a moment before the engine's would be.
            let mine = Completed::new(
                *held.fingerprint(),
                body.stored_outcome(Outcome::ok(value)),
                clock.now() + ttl - Duration::from_secs(1),
            );
            own.complete(&stored_key, body.owner(), &mine)
                .await
                .expect("the owner completes its own record");
            body.completed_in_transaction();
            Ok::<_, Error>(receipt)
        })
        .await;
    assert!(
        matches!(&done, Ok(answered) if !answered.replayed),
        "the body's own completion is this call's outcome, got {done:?}"
    );
    let retry = charge(&ctx.handle(), call, 1, &side_effect).await.unwrap();
    assert!(retry.replayed);
    assert_eq!(side_effect.runs(), 1);
}
