//! The protocol: reserve, run while renewing the lease, then complete or release.

mod guard;
mod quota;
mod replay;
mod settle;
mod stored;

pub(crate) use stored::Engine;

use std::future::Future;
use std::panic;
use std::time::Duration;

use tracing::Instrument;

use std::sync::Arc;

use crate::call::begun::{Begun, Pending, PendingCall};
use crate::call::codec::OutcomeCodec;
use crate::call::policy::ErrorPolicy;
use crate::engine::guard::{CatchUnwind, Settle};
use crate::engine::quota::Admission;
use crate::engine::replay::{check_fingerprint, replay, Replay};
use crate::engine::settle::Running;
use crate::lease::renewal::{Renew, Renewal};
use crate::lease::Lease;
use crate::steps::journal::{self, Journal};
use crate::telemetry::CallTelemetry;
use crate::{
    call::abort::OnAbort,
    call::arguments::Resolved,
    call::context::CallContext,
    call::{Answered, Call},
    error::{Error, StoreError},
    store::{Claim, InProgress, Outcome, OwnerToken, Record, Reservation, Store, Timestamp},
    TARGET,
};

impl Engine {
    /// Runs `body` for `call` under `policy`, its value stored through `codec`: the protocol
    /// behind every `run` of the handle
    /// ([`Idempotency::run_with_codec`](crate::Idempotency::run_with_codec)).
    pub(crate) async fn run_with_codec<T, E, P, C, F>(
        &self,
        call: Call,
        policy: &P,
        codec: &C,
        body: F,
    ) -> Result<Answered<T>, E>
    where
        E: From<Error>,
        P: ErrorPolicy<E>,
        C: OutcomeCodec<T>,
        F: Future<Output = Result<T, E>>,
    {
        match self.begin(call, policy, codec) {
            Begun::Answered(answered) => answered,
            Begun::Pending(pending) => self.run_pending(pending, policy, codec, body).await,
        }
    }

    /// The part of a call that never waits: its answer when its completed record is found
    /// before anything is claimed (or why it fails so early), else the call ready to reserve
    /// ([`Idempotency::begin`](crate::Idempotency::begin)).
    pub(crate) fn begin<T, E, P, C>(&self, call: Call, policy: &P, codec: &C) -> Begun<T, E>
    where
        E: From<Error>,
        P: ErrorPolicy<E>,
        C: OutcomeCodec<T>,
    {
        // Counted by the function named in the key in clear, which a digest hides.
        let mut telemetry = CallTelemetry::start(&call.key);
        let call = self.stored_call(call);
        telemetry.show_key(&call.key);
        let span = telemetry.span().clone();
        let now = self.clock.now();
        let found = span.in_scope(|| self.replay_first(&call, now, policy, codec, &mut telemetry));
        if let Some(replayed) = found {
            return Begun::Answered(replayed);
        }
        // Everything past the lookup works with the fingerprint: computed now, before anything
        // is claimed, if the call deferred it.
        match span.in_scope(|| Resolved::of(call)) {
            Ok(call) => Begun::Pending(PendingCall(Box::new(Pending {
                call,
                telemetry,
                began_on: self.identity(),
            }))),
            Err(error) => Begun::Answered(Err(telemetry.failed(error).into())),
        }
    }

    /// Reserves the key of `pending` and runs `body`, or answers with what the reservation
    /// found ([`Idempotency::run_pending`](crate::Idempotency::run_pending)).
    pub(crate) async fn run_pending<T, E, P, C, F>(
        &self,
        pending: PendingCall,
        policy: &P,
        codec: &C,
        body: F,
    ) -> Result<Answered<T>, E>
    where
        E: From<Error>,
        P: ErrorPolicy<E>,
        C: OutcomeCodec<T>,
        F: Future<Output = Result<T, E>>,
    {
        let Pending {
            call,
            mut telemetry,
            began_on,
        } = *pending.0;
        if began_on != self.identity() {
            // Its fingerprint is in the form of the other handle's store (keyed by its digest
            // secret, or not), which this one would store.
            let error = Error::Unsupported {
                store: self.store.name().to_owned(),
                what: "run a call that another handle began (run_pending on the handle whose begin made it)",
            };
            return Err(telemetry.failed(error).into());
        }
        // Read again: the caller may have done anything since the call began.
        let now = self.clock.now();
        let span = telemetry.span().clone();
        // Boxed: reserving, running the body and settling are most of a call's future, which
        // a replay answered by `begin` never builds.
        let reserving = Box::pin(self.run_counted(call, now, policy, codec, body, &mut telemetry));
        // Entered at every poll: only for a subscriber that listens.
        if span.is_disabled() {
            reserving.await
        } else {
            reserving.instrument(span).await
        }
    }

    /// What tells this handle (and its clones) from another: its store as it calls it, which
    /// carries its sealing.
    fn identity(&self) -> usize {
        Arc::as_ptr(&self.store) as *const () as usize
    }

    /// The store a call works through: the timed one when something listens, else the store
    /// itself, since the timing decorator costs a boxed future per operation even when it
    /// records nothing.
    fn store_for(&self, telemetry: &CallTelemetry) -> &Arc<dyn Store> {
        if telemetry.listens(&self.telemetry_probe) {
            &self.store
        } else {
            &self.view
        }
    }

    /// The call past its lookup, which found nothing to replay at `now`: admitted by the
    /// quota, it reserves the key (or finds the record to answer with) and runs the body.
    async fn run_counted<T, E, P, C, F>(
        &self,
        call: Resolved,
        now: Timestamp,
        policy: &P,
        codec: &C,
        body: F,
        telemetry: &mut CallTelemetry,
    ) -> Result<Answered<T>, E>
    where
        E: From<Error>,
        P: ErrorPolicy<E>,
        C: OutcomeCodec<T>,
        F: Future<Output = Result<T, E>>,
    {
        let failed =
            |telemetry: &mut CallTelemetry, error: Error| -> E { telemetry.failed(error).into() };
        // Held until the call ends: a running call counts against its scope.
        let admission = match self.admit(&call).await {
            Ok(admission) => admission,
            Err(error) => return Err(failed(telemetry, error)),
        };
        // The lookup's time, unless the quota was asked since.
        let started = match self.quota {
            None => now,
            Some(_) => self.clock.now(),
        };
        let store = self.store_for(telemetry).clone();
        let mut settle = Settle::new(store, &call.key, OwnerToken::generate());
        match self.acquire(&call, started, &mut settle, telemetry).await {
            Ok(Acquired::Owner(held)) => {
                let _permit = match admission {
                    Admission::Counted(permit) => permit,
                    Admission::OverQuota => match self.admit_owner(&call, &mut settle).await {
                        Ok(permit) => permit,
                        Err(error) => return Err(failed(telemetry, error)),
                    },
                };
                self.execute(&call, settle, held, policy, codec, body, telemetry)
                    .await
            }
            Ok(Acquired::Replay(found)) => replay(policy, codec, &call, found.outcome(), telemetry),
            Err(error) => Err(failed(telemetry, error)),
        }
    }

    /// Reserves the key, or finds the completed record to replay, waiting if the call asks to.
    ///
    /// `settle` stays armed to release while a reservation may have landed without an answer
    /// (the reserve failed or this future is dropped mid-request); a release by an owner that
    /// holds nothing is refused by fencing, so that is harmless.
    async fn acquire(
        &self,
        call: &Resolved,
        started: Timestamp,
        settle: &mut Settle<'_>,
        telemetry: &CallTelemetry,
    ) -> Result<Acquired, Error> {
        let key = call.key.as_str();
        let wait_until = call.wait.map(|wait| started + wait);
        // The first attempt reserves at `started`: one clock read fewer on every call.
        let mut first = Some(started);
        loop {
            let now = first.take().unwrap_or_else(|| self.clock.now());
            let record =
                InProgress::new(settle.owner().clone(), call.fingerprint, now + call.lease)
                    .with_fencing_token(crate::store::propose_fencing_token(now));
            let claim = Claim::new(record, now).with_max_outcome(call.max_outcome);
            settle.arm_release();
            let reservation = settle
                .store()
                .reserve(&call.key, &claim)
                .await
                .map_err(|e| e.into_error(key))?;
            let existing = match reservation {
                Reservation::Reserved(held) => {
                    tracing::debug!(target: TARGET, key, fencing_token = held.fencing_token(), "fresh: key reserved");
                    match self.fresh_lease(settle.store(), call, held).await? {
                        Some(held) => return Ok(Acquired::Owner(held)),
                        None => continue,
                    }
                }
                Reservation::TookOver { previous, record } => {
                    tracing::warn!(target: TARGET, key, previous = previous.as_str(), attempt = record.attempt(), fencing_token = record.fencing_token(), recorded_steps = record.steps().len(), "taken over: the previous owner's lease passed or it failed after recording steps");
                    telemetry.took_over();
                    match self.fresh_lease(settle.store(), call, record).await? {
                        Some(held) => return Ok(Acquired::Owner(held)),
                        None => continue,
                    }
                }
                Reservation::Existing(record) => record,
            };
            settle.disarm();
            check_fingerprint(call, existing.fingerprint())?;
            let in_progress = match existing {
                Record::Completed(completed) => {
                    return Ok(Acquired::Replay(self.replayed_record(call, completed, now)));
                }
                Record::InProgress(in_progress) => in_progress,
            };
            match wait_until {
                Some(until) if now < until => {
                    // Wake at the latest when the other owner's lease passes, to take over.
                    let until = until.min(in_progress.lease_until() + Duration::from_millis(1));
                    let timeout = until
                        .saturating_duration_since(now)
                        .max(Duration::from_millis(1));
                    settle
                        .store()
                        .changed(&call.key, timeout)
                        .await
                        .map_err(|e| e.into_error(key))?;
                }
                _ => {
                    tracing::debug!(target: TARGET, key, "in progress: a duplicate is running");
                    return Err(Error::InProgress {
                        key: key.to_owned(),
                        retry_after: in_progress.lease_until().saturating_duration_since(now),
                    });
                }
            }
        }
    }

    /// `held`, with a lease that still covers the clock skew renewal tolerates. A reservation
    /// answered late (a slow first connection, a stalled network) may arrive with most of its
    /// lease spent, and the first renewal comes only `renew_every` after the body starts: a
    /// duplicate whose clock is a little ahead could take the key over in between. Such a
    /// lease is renewed before the body starts; `None` when the key was taken over meanwhile
    /// (the caller reserves again, and finds the other owner's record).
    async fn fresh_lease(
        &self,
        store: &Arc<dyn Store>,
        call: &Call,
        held: InProgress,
    ) -> Result<Option<InProgress>, Error> {
        let now = self.clock.now();
        let spent = call
            .lease
            .saturating_sub(held.lease_until().saturating_duration_since(now));
        if !call.renewed || spent <= call.renew_every() {
            return Ok(Some(held));
        }
        let key = call.key.as_str();
        let until = now + call.lease;
        match store.renew(&call.key, held.owner(), until).await {
            Ok(()) => {
                tracing::debug!(target: TARGET, key, spent_ms = spent.as_millis() as u64, "reservation answered late; lease renewed before the body starts");
                Ok(Some(held.with_lease_until(until)))
            }
            Err(StoreError::LeaseLost) => {
                tracing::warn!(target: TARGET, key, spent_ms = spent.as_millis() as u64, "reservation answered after another caller took the key over; the body does not run");
                Ok(None)
            }
            // The renewal task goes on trying, and reports the loss at the deadline.
            Err(_) => Ok(Some(held)),
        }
    }

    /// Runs the body as the key's owner, renewing the lease until the outcome is recorded or
    /// the key released.
    #[expect(
        clippy::too_many_arguments,
        reason = "the call's parts, each passed on to its own step"
    )]
    async fn execute<T, E, P, C, F>(
        &self,
        call: &Resolved,
        mut guard: Settle<'_>,
        held: InProgress,
        policy: &P,
        codec: &C,
        body: F,
        telemetry: &mut CallTelemetry,
    ) -> Result<Answered<T>, E>
    where
        E: From<Error>,
        P: ErrorPolicy<E>,
        C: OutcomeCodec<T>,
        F: Future<Output = Result<T, E>>,
    {
        let owner = guard.owner().clone();
        let lease = Arc::new(Lease::new(held.lease_until(), self.clock.clone()));
        let renew = Renew {
            store: guard.store().clone(),
            clock: self.clock.clone(),
            key: call.key.clone(),
            owner: owner.clone(),
            fingerprint: call.fingerprint,
            lease: call.lease,
            every: call.renew_every(),
            state: lease.clone(),
        };
        let renewal = if call.renewed {
            Renewal::start(renew).await
        } else {
            Renewal::none()
        };
        telemetry.body_starts(held.attempt(), held.fencing_token());
        let journal = Arc::new(Journal::new(
            journal::Owner {
                store: guard.store().clone(),
                clock: self.clock.clone(),
                key: call.key.clone(),
                owner: owner.clone(),
                fingerprint: call.fingerprint,
                ttl: call.ttl,
                lease: lease.clone(),
            },
            resumable_steps(&held, self.clock.now()),
        ));
        guard.watch(journal.clone());
        let context = CallContext::new(
            call,
            self.stored_form(&call.key),
            owner.clone(),
            held.attempt(),
            held.fencing_token(),
            lease.clone(),
            journal.clone(),
        );
        match call.on_abort {
            OnAbort::Hold => guard.disarm(),
            OnAbort::Release => guard.arm_release(),
            OnAbort::Fail => guard.arm_complete(self.completed(call, Outcome::Aborted)),
        }
        let running = Running {
            guard,
            renewal,
            owner,
            lease,
            journal,
        };
        // No await between arming and the first poll: a drop from here on is an abort. The
        // body's future ends with this statement, before anything is settled: what it owns (a
        // transaction that rolls back when dropped) is gone before a retry can take the key.
        let answered = CatchUnwind(std::pin::pin!(context.scope(body))).await;
        match answered {
            Ok(result) => {
                self.settle(call, running, policy, codec, result, telemetry)
                    .await
            }
            Err(panic) => {
                self.settle_panic(call, running).await;
                panic::resume_unwind(panic);
            }
        }
    }
}

/// The steps of `held` a body resumes after: none once they stopped holding the key (a TTL
/// after the latest one), when the call counts as new, as a completed record's does.
fn resumable_steps(held: &InProgress, now: Timestamp) -> crate::store::Steps {
    if held.steps().hold_key(now) {
        held.steps().clone()
    } else {
        crate::store::Steps::new()
    }
}

enum Acquired {
    /// This call holds the key, as this record.
    Owner(InProgress),
    /// The key's call completed, as this record.
    Replay(Replay),
}
