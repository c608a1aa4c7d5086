//! Settling a call once its body has answered: store the outcome, release the key, or hold it
//! until its lease passes, and what a panicking body leaves behind.

use std::sync::Arc;

use bytes::Bytes;

use crate::call::codec::OutcomeCodec;
use crate::call::policy::ErrorPolicy;
use crate::engine::guard::Settle;
use crate::engine::Engine;
use crate::lease::renewal::Renewal;
use crate::lease::retry::{FencedWrite, Patience};
use crate::lease::Lease;
use crate::steps::journal::Journal;
use crate::telemetry::{CallOutcome, CallTelemetry};
use crate::{
    call::abort::OnAbort,
    call::arguments::Resolved,
    call::{Answered, Call},
    error::{Error, StoreError},
    store::{Completed, Outcome, OwnerToken, Record, Store},
    TARGET,
};

/// A call whose body runs as the key's owner.
pub(super) struct Running<'call> {
    /// Settles the key if this call's future is dropped before it is settled here.
    pub(super) guard: Settle<'call>,
    /// Keeps the lease renewed while alive.
    pub(super) renewal: Renewal,
    pub(super) owner: OwnerToken,
    pub(super) lease: Arc<Lease>,
    pub(super) journal: Arc<Journal>,
}

/// What the body's answer leaves to do with the key.
enum Verdict {
    /// Store this outcome and replay it to retries.
    Store(Outcome),
    /// Free the key: the error is one the policy does not keep.
    Release,
    /// Keep the key until its lease passes: a step ran whose result was not recorded, so a
    /// retry after a release would run it again.
    HoldForUnrecordedStep,
    /// Keep the key until its lease passes: the policy says the error may come after a side
    /// effect, as a panic may.
    HoldForPolicy,
    /// Complete the key as having left no outcome: the outcome cannot be encoded, and a retry
    /// would run the side effect again only to fail the same way.
    HoldUnstorable(Error),
}

fn verdict<T, E, P, C>(
    call: &Resolved,
    result: &Result<T, E>,
    policy: &P,
    codec: &C,
    journal: &Journal,
) -> Verdict
where
    P: ErrorPolicy<E>,
    C: OutcomeCodec<T>,
{
    let encoded = match result {
        Ok(value) => Some(
            match &call.request {
                Some(request) => codec.encode_for(value, request),
                None => codec.encode(value),
            }
            .map_err(Error::codec)
            .and_then(refuse_sealed_look)
            .map(Outcome::ok),
        ),
        Err(error) => policy.encode(error).map(|body| body.map(Outcome::err)),
    };
    match encoded {
        Some(Ok(outcome)) => Verdict::Store(outcome),
        Some(Err(codec)) => Verdict::HoldUnstorable(codec),
        None if journal.has_unrecorded() => Verdict::HoldForUnrecordedStep,
        None if result.as_ref().is_err_and(|error| policy.holds(error)) => Verdict::HoldForPolicy,
        None => Verdict::Release,
    }
}

/// A codec's value that starts as a sealed value does would be refused by every replay (as
/// sealed, and not opened): it is refused here, as a value that cannot be stored.
fn refuse_sealed_look(encoded: Bytes) -> Result<Bytes, Error> {
    if crate::store::is_sealed(&encoded) {
        return Err(Error::codec(
            "the outcome codec's value starts with the bytes that mark a sealed value (\\0iS)",
        ));
    }
    Ok(encoded)
}

fn fresh<T, E>(result: Result<T, E>) -> Result<Answered<T>, E> {
    result.map(|value| Answered {
        value,
        replayed: false,
    })
}

impl Engine {
    /// Settles `running` after its body answered `result`. Each branch keeps the guard armed
    /// for exactly what a drop mid-way must still do, and disarms it once that is done.
    pub(super) async fn settle<T, E, P, C>(
        &self,
        call: &Resolved,
        running: Running<'_>,
        policy: &P,
        codec: &C,
        result: Result<T, E>,
        telemetry: &mut CallTelemetry,
    ) -> Result<Answered<T>, E>
    where
        E: From<Error>,
        P: ErrorPolicy<E>,
        C: OutcomeCodec<T>,
    {
        let key = call.key.as_str();
        let Running {
            mut guard,
            renewal,
            owner,
            lease,
            journal,
        } = running;
        match verdict(call, &result, policy, codec, &journal) {
            Verdict::Store(outcome) => {
                let completed = self.completed(call, outcome);
                guard.arm_complete(completed.clone());
                // Dropped from here on, the guard stores the outcome: counted as stored.
                telemetry.ended(if result.is_ok() {
                    CallOutcome::Executed
                } else {
                    CallOutcome::StoredError
                });
                let recorded = self
                    .record_outcome(guard.store(), call, &owner, &completed, &lease)
                    .await;
                guard.disarm();
                drop(renewal);
                match recorded {
                    Ok(()) => {
                        tracing::debug!(target: TARGET, key, ok = result.is_ok(), "completed: outcome stored");
                        self.count_stored(call, &completed);
                        self.cache(call, Arc::new(completed), self.clock.now());
                        fresh(result)
                    }
                    Err(error) => {
                        tracing::error!(target: TARGET, key, %error, "the function ran but its outcome was not stored");
                        telemetry.ended(CallOutcome::NotRecorded);
                        if matches!(error, StoreError::Rejected(_)) {
                            self.keep_no_outcome(call, &owner, &lease, &mut guard).await;
                        }
                        Err(error.into_error(key).after_run(key).into())
                    }
                }
            }
            Verdict::Release => {
                guard.arm_release();
                // A renewal landing after a release that keeps the record (it holds steps)
                // would bring its lease back and lock the retry out.
                drop(renewal);
                telemetry.ended(CallOutcome::Released);
                self.release(guard.store(), call, &owner).await;
                guard.disarm();
                fresh(result)
            }
            Verdict::HoldForUnrecordedStep => {
                tracing::error!(target: TARGET, key, "the call failed after a step that was not recorded; the key stays reserved until its lease passes");
                guard.disarm();
                telemetry.ended(CallOutcome::NotRecorded);
                fresh(result)
            }
            Verdict::HoldForPolicy => {
                tracing::error!(target: TARGET, key, "the function failed in a way that may come after its side effect; the key is held until its lease passes");
                drop(renewal);
                guard.disarm();
                telemetry.ended(CallOutcome::NotRecorded);
                fresh(result)
            }
            Verdict::HoldUnstorable(codec) => {
                tracing::error!(target: TARGET, key, error = %codec, "outcome could not be serialised");
                drop(renewal);
                telemetry.ended(CallOutcome::NotRecorded);
                self.keep_no_outcome(call, &owner, &lease, &mut guard).await;
                Err(codec.after_run(key).into())
            }
        }
    }

    /// Does what [`Call::on_abort`](crate::Call::on_abort) says after the body of `running` panicked.
    pub(super) async fn settle_panic(&self, call: &Resolved, running: Running<'_>) {
        let key = call.key.as_str();
        let Running {
            mut guard,
            renewal,
            owner,
            lease,
            journal,
        } = running;
        // No renewal may land between a release and the end of this call.
        drop(renewal);
        match call.on_abort {
            OnAbort::Release if journal.has_unrecorded() => {
                tracing::error!(target: TARGET, key, "the function panicked after a step that was not recorded; the key is held until its lease passes");
            }
            OnAbort::Hold => {
                tracing::error!(target: TARGET, key, "the function panicked; the key is held until its lease passes");
            }
            OnAbort::Release => self.release(guard.store(), call, &owner).await,
            OnAbort::Fail => {
                let aborted = self.completed(call, Outcome::Aborted);
                match self
                    .record_outcome(guard.store(), call, &owner, &aborted, &lease)
                    .await
                {
                    Ok(()) => {
                        self.count_stored(call, &aborted);
                        tracing::error!(target: TARGET, key, "the function panicked; recorded as aborted")
                    }
                    Err(error) => {
                        tracing::error!(target: TARGET, key, %error, "the function panicked and recording it failed; the key is held until its lease passes")
                    }
                }
            }
        }
        guard.disarm();
    }

    /// Completes `call`, whose function answered with an outcome that cannot be kept (the
    /// store refused it, or it could not be encoded), as one that left no outcome
    /// ([`Outcome::Aborted`]): its retries are told so ([`Error::Aborted`]) for the TTL, rather
    /// than "in progress" until the lease passes and then a second run of the side effect.
    /// A drop of the caller's future meanwhile still records it (`guard`).
    async fn keep_no_outcome(
        &self,
        call: &Resolved,
        owner: &OwnerToken,
        lease: &Lease,
        guard: &mut Settle<'_>,
    ) {
        let key = call.key.as_str();
        let none = self.completed(call, Outcome::Aborted);
        guard.arm_complete(none.clone());
        let recorded = self
            .record_outcome(guard.store(), call, owner, &none, lease)
            .await;
        guard.disarm();
        match recorded {
            Ok(()) => {
                self.count_stored(call, &none);
                tracing::warn!(target: TARGET, key, "recorded as having left no outcome: retries are told to check its effect");
            }
            Err(StoreError::LeaseLost) => {
                tracing::error!(target: TARGET, key, "the key was taken over before the call could record that it left no outcome");
            }
            Err(error) => {
                tracing::error!(target: TARGET, key, %error, "recording that the call left no outcome failed too; the key is held until its lease passes");
            }
        }
    }

    /// The completed record of `call` with `outcome`, expiring a TTL from now.
    pub(super) fn completed(&self, call: &Resolved, outcome: Outcome) -> Completed {
        Completed::new(call.fingerprint, outcome, self.clock.now() + call.ttl)
    }

    /// Stores the completed record, retrying a backend failure while the lease holds
    /// ([`FencedWrite`]).
    async fn record_outcome(
        &self,
        store: &Arc<dyn Store>,
        call: &Resolved,
        owner: &OwnerToken,
        completed: &Completed,
        lease: &Lease,
    ) -> Result<(), StoreError> {
        let write = FencedWrite {
            store: &**store,
            clock: &*self.clock,
            key: &call.key,
            owner,
            fingerprint: &call.fingerprint,
            lease,
            what: "the outcome",
            patience: Patience::Lease,
        };
        // Exactly this record, expiry included: an earlier attempt landed with its answer
        // lost. A successor's completion with an equal outcome is not this call's. A record
        // the body completed in its own transaction (which the store's completion itself
        // accepts, when it answers) expires by the transaction's clock: it is this call's
        // when its fingerprint and outcome are: a successor takes over in-progress records
        // only, so no one else completed it meanwhile.
        let landed = |stored: &Record| match stored {
            Record::Completed(stored) => {
                stored == completed
                    || (lease.wrote_completion_in_transaction()
                        && stored.fingerprint() == completed.fingerprint()
                        && stored.outcome() == completed.outcome())
            }
            _ => false,
        };
        write
            .run(|| store.complete(&call.key, owner, completed), landed)
            .await
    }

    pub(super) async fn release(&self, store: &Arc<dyn Store>, call: &Call, owner: &OwnerToken) {
        let key = call.key.as_str();
        match store.release(&call.key, owner).await {
            Ok(()) => tracing::debug!(target: TARGET, key, "released: key free for a retry"),
            Err(error) => {
                tracing::warn!(target: TARGET, key, %error, "release failed; the key frees when its lease passes")
            }
        }
    }
}
