//! The protocol: reserve, run while renewing the lease, then complete or release.

use std::future::Future;
use std::panic;
use std::time::Duration;

use serde::{de::DeserializeOwned, Serialize};

use crate::guard::{CatchUnwind, Pending, Settle};
use crate::policy::{ErrorPolicy, ReleaseErrors, StoreErrorsWhen};
use crate::renewal::Renewal;
use crate::{
    Call, Claim, Completed, Error, Executed, Idempotency, InProgress, Millis, Outcome, OwnerToken,
    Record, Reservation, StoreError,
};

const TARGET: &str = "idem";

/// How often storing an outcome is tried before the call fails.
const COMPLETE_ATTEMPTS: u32 = 3;
/// The pause before the second attempt; each later pause is four times longer.
const COMPLETE_RETRY_BACKOFF: Duration = Duration::from_millis(25);

fn millis(duration: Duration) -> Millis {
    duration.as_millis().try_into().unwrap_or(Millis::MAX)
}

impl Idempotency {
    /// Runs `body` at most once for `call`'s key, releasing the key when it returns `Err`.
    ///
    /// - The key is free: it is reserved, `body` runs, its `Ok` value is stored and returned
    ///   with `replayed: false`.
    /// - A call with the same fingerprint completed earlier: `body` does not run; the stored value
    ///   is returned with `replayed: true`.
    /// - A call with the same fingerprint is running: [`Error::InProgress`], or with
    ///   [`Call::wait`] its outcome once it finishes.
    /// - The key was used with another fingerprint: [`Error::Mismatch`].
    ///
    /// `body` is a future, so nothing in it happens unless the key is reserved. If it panics or
    /// the returned future is dropped, the reservation is released.
    ///
    /// ```
    /// # async fn demo(idem: idem_core::Idempotency) -> Result<(), idem_core::Error> {
    /// use idem_core::{Call, Fingerprint};
    /// let key = idem.key("orders.create").part("order-42").finish()?;
    /// let call = Call::new(key, Fingerprint::of(&("order-42", 3))?);
    /// let created = idem.run(call, async { Ok::<_, idem_core::Error>(42u64) }).await?;
    /// println!("order {} (replayed: {})", created.value, created.replayed);
    /// # Ok(()) }
    /// ```
    pub async fn run<T, E, F>(&self, call: Call, body: F) -> Result<Executed<T>, E>
    where
        T: Serialize + DeserializeOwned,
        E: From<Error>,
        F: Future<Output = Result<T, E>>,
    {
        self.run_with_policy(call, &ReleaseErrors, body).await
    }

    /// Like [`run`](Idempotency::run), but an `Err` for which `store_err` returns `true` is
    /// stored and replayed to retries instead of releasing the key. Use it for failures that
    /// happen after an irreversible side effect.
    pub async fn run_storing_errors<T, E, P, F>(
        &self,
        call: Call,
        store_err: P,
        body: F,
    ) -> Result<Executed<T>, E>
    where
        T: Serialize + DeserializeOwned,
        E: From<Error> + Serialize + DeserializeOwned,
        P: Fn(&E) -> bool,
        F: Future<Output = Result<T, E>>,
    {
        self.run_with_policy(call, &StoreErrorsWhen(store_err), body)
            .await
    }

    /// [`run`](Idempotency::run) with any [`ErrorPolicy`].
    pub async fn run_with_policy<T, E, P, F>(
        &self,
        call: Call,
        policy: &P,
        body: F,
    ) -> Result<Executed<T>, E>
    where
        T: Serialize + DeserializeOwned,
        E: From<Error>,
        P: ErrorPolicy<E>,
        F: Future<Output = Result<T, E>>,
    {
        let mut settle = Settle::new(self.store.clone(), call.key.clone(), OwnerToken::generate());
        match self.acquire(&call, &mut settle).await? {
            Acquired::Owner => self.execute(&call, settle, policy, body).await,
            Acquired::Done(completed) => replay(policy, &completed.outcome),
        }
    }

    /// Reserves the key, or finds the completed record to replay, waiting if the call asks to.
    ///
    /// `settle` stays armed to release while a reservation may have landed without an answer
    /// (the reserve failed or this future is dropped mid-request); a release by an owner that
    /// holds nothing is refused by fencing, so that is harmless.
    async fn acquire(&self, call: &Call, settle: &mut Settle) -> Result<Acquired, Error> {
        let key = call.key.as_str();
        let started = self.clock.now();
        let wait_until = call.wait.map(|wait| started.saturating_add(millis(wait)));
        loop {
            let now = self.clock.now();
            let claim = Claim {
                record: InProgress {
                    owner: settle.owner().clone(),
                    fingerprint: call.fingerprint,
                    lease_until: now.saturating_add(millis(call.lease)),
                },
                now,
            };
            settle.pending = Pending::Release;
            let reservation = self
                .store
                .reserve(&call.key, &claim)
                .await
                .map_err(|e| e.into_error(key))?;
            let existing = match reservation {
                Reservation::Reserved => {
                    tracing::debug!(target: TARGET, key, "fresh: key reserved");
                    return Ok(Acquired::Owner);
                }
                Reservation::TookOver { previous } => {
                    tracing::warn!(target: TARGET, key, previous = previous.as_str(), "taken over: the previous owner's lease passed");
                    return Ok(Acquired::Owner);
                }
                Reservation::Existing(record) => record,
            };
            settle.settled();
            if existing.fingerprint() != &call.fingerprint {
                tracing::warn!(target: TARGET, key, "mismatch: key reused with other arguments");
                return Err(Error::Mismatch {
                    key: key.to_owned(),
                });
            }
            let in_progress = match existing {
                Record::Completed(completed) => {
                    tracing::debug!(target: TARGET, key, "replayed: stored outcome returned");
                    return Ok(Acquired::Done(completed));
                }
                Record::InProgress(in_progress) => in_progress,
            };
            match wait_until {
                Some(until) if now < until => {
                    // Wake at the latest when the other owner's lease passes, to take over.
                    let until = until.min(in_progress.lease_until.saturating_add(1));
                    let timeout = Duration::from_millis(until.saturating_sub(now).max(1));
                    self.store
                        .changed(&call.key, timeout)
                        .await
                        .map_err(|e| e.into_error(key))?;
                }
                _ => {
                    tracing::debug!(target: TARGET, key, "in progress: a duplicate is running");
                    return Err(Error::InProgress {
                        key: key.to_owned(),
                    });
                }
            }
        }
    }

    /// Runs the body as the key's owner, then records or releases.
    async fn execute<T, E, P, F>(
        &self,
        call: &Call,
        mut settle: Settle,
        policy: &P,
        body: F,
    ) -> Result<Executed<T>, E>
    where
        T: Serialize,
        E: From<Error>,
        P: ErrorPolicy<E>,
        F: Future<Output = Result<T, E>>,
    {
        let key = call.key.as_str();
        let owner = settle.owner().clone();
        let body = std::pin::pin!(body);
        let renewal = Renewal::start(
            self.store.clone(),
            self.clock.clone(),
            call.key.clone(),
            owner.clone(),
            call.lease,
        )
        .await;
        let outcome = CatchUnwind(body).await;
        drop(renewal);
        let result = match outcome {
            Ok(result) => result,
            Err(panic) => {
                self.release(call, &owner).await;
                settle.settled();
                panic::resume_unwind(panic);
            }
        };
        let stored = match &result {
            Ok(value) => Some(
                serde_json::to_vec(value)
                    .map(Outcome::Ok)
                    .map_err(Error::codec),
            ),
            Err(error) => policy.encode(error).map(|body| body.map(Outcome::Err)),
        };
        let outcome = match stored {
            None => {
                self.release(call, &owner).await;
                settle.settled();
                return result.map(|value| Executed {
                    value,
                    replayed: false,
                });
            }
            Some(Err(codec)) => {
                // Releasing would let every retry run the side effect again, and fail the same
                // way: keep the key reserved until its lease passes instead.
                tracing::error!(target: TARGET, key, error = %codec, "outcome could not be serialised; the key stays reserved until its lease passes");
                settle.settled();
                return Err(codec.into());
            }
            Some(Ok(outcome)) => outcome,
        };
        settle.pending = Pending::Complete(Completed {
            fingerprint: call.fingerprint,
            outcome,
            expires_at: self.clock.now().saturating_add(millis(call.ttl)),
        });
        let Pending::Complete(completed) = &settle.pending else {
            unreachable!("just set")
        };
        let recorded = self.record_outcome(call, &owner, completed).await;
        settle.settled();
        match recorded {
            Ok(()) => {
                tracing::debug!(target: TARGET, key, ok = result.is_ok(), "completed: outcome stored");
                result.map(|value| Executed {
                    value,
                    replayed: false,
                })
            }
            Err(StoreError::LeaseLost) => {
                tracing::error!(target: TARGET, key, "lease lost: the outcome was not stored");
                Err(Error::LeaseLost {
                    key: key.to_owned(),
                }
                .into())
            }
            Err(error) => {
                tracing::error!(target: TARGET, key, %error, "outcome could not be stored; the key stays reserved until its lease passes");
                Err(error.not_recorded(key).into())
            }
        }
    }

    /// Stores the completed record, retrying a backend failure: once the body has run, giving up
    /// leaves the key reserved until the lease passes, and a retry after that runs the body again.
    async fn record_outcome(
        &self,
        call: &Call,
        owner: &OwnerToken,
        completed: &Completed,
    ) -> Result<(), StoreError> {
        let key = call.key.as_str();
        let mut backoff = COMPLETE_RETRY_BACKOFF;
        for attempt in 1..=COMPLETE_ATTEMPTS {
            match self.store.complete(&call.key, owner, completed).await {
                Ok(()) => return Ok(()),
                Err(StoreError::Backend(error)) if attempt < COMPLETE_ATTEMPTS => {
                    tracing::warn!(target: TARGET, key, %error, attempt, "storing the outcome failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff *= 4;
                }
                Err(StoreError::LeaseLost) if attempt > 1 => {
                    // An earlier attempt may have landed and only its answer was lost.
                    return match self.store.get(&call.key).await {
                        Ok(Some(Record::Completed(stored))) if stored == *completed => Ok(()),
                        _ => Err(StoreError::LeaseLost),
                    };
                }
                Err(error) => return Err(error),
            }
        }
        unreachable!("the last attempt returns")
    }

    async fn release(&self, call: &Call, owner: &OwnerToken) {
        let key = call.key.as_str();
        match self.store.release(&call.key, owner).await {
            Ok(()) => tracing::debug!(target: TARGET, key, "released: key free for a retry"),
            Err(error) => {
                tracing::warn!(target: TARGET, key, %error, "release failed; the key frees when its lease passes")
            }
        }
    }
}

enum Acquired {
    Owner,
    Done(Completed),
}

fn replay<T, E, P>(policy: &P, outcome: &Outcome) -> Result<Executed<T>, E>
where
    T: DeserializeOwned,
    E: From<Error>,
    P: ErrorPolicy<E>,
{
    match outcome {
        Outcome::Ok(body) => serde_json::from_slice(body)
            .map(|value| Executed {
                value,
                replayed: true,
            })
            .map_err(|e| Error::codec(e).into()),
        Outcome::Err(body) => Err(policy.decode(body).unwrap_or_else(E::from)),
    }
}
