//! Asking the quota before a reservation, and what a scope over it is still answered.

use std::sync::Arc;

use crate::{Call, Completed, Error, Idempotency, Outcome, QuotaPermit, Record, TARGET};

/// What the quota leaves a call to do.
pub(super) enum Admitted {
    /// Reserve the key; the permit counts the call until it ends.
    Go(QuotaPermit),
    /// The scope is over its quota, but the key holds this outcome: replay it.
    Done(Arc<Completed>),
}

impl Idempotency {
    /// The quota's permit for `call`. A scope over its quota is still answered for a key it
    /// already used (its outcome, "in progress" or a mismatch), read without reserving; a new
    /// key gets [`Error::QuotaExceeded`], and nothing is written.
    pub(super) async fn admit(&self, call: &Call) -> Result<Admitted, Error> {
        let Some(quota) = &self.quota else {
            return Ok(Admitted::Go(QuotaPermit::free()));
        };
        let now = self.clock.now();
        let exceeded = match quota.admit(call.key.scope(), now).await {
            Ok(permit) => return Ok(Admitted::Go(permit)),
            Err(exceeded) => exceeded,
        };
        let key = call.key.as_str();
        let record = self
            .store
            .get(&call.key)
            .await
            .map_err(|e| e.into_error(key))?;
        match record.filter(|record| record.is_live(now)) {
            Some(record) if record.fingerprint() != &call.fingerprint => {
                tracing::warn!(target: TARGET, key, "mismatch: key reused with other arguments");
                Err(Error::Mismatch {
                    key: key.to_owned(),
                })
            }
            Some(Record::Completed(completed)) => {
                tracing::debug!(target: TARGET, key, "replayed: stored outcome returned to a scope over its quota");
                let completed = Arc::new(completed);
                self.cache(call, completed.clone());
                Ok(Admitted::Done(completed))
            }
            Some(Record::InProgress(running)) => Err(Error::InProgress {
                key: key.to_owned(),
                retry_after: running.lease_until().saturating_duration_since(now),
            }),
            None => {
                tracing::warn!(target: TARGET, key, reason = exceeded.reason(), "refused: the key's scope is over its quota");
                Err(Error::QuotaExceeded {
                    key: key.to_owned(),
                    reason: exceeded.reason().to_owned(),
                    retry_after: exceeded.retry_after(),
                })
            }
        }
    }

    /// Tells the quota that `call` stored `completed`.
    pub(super) fn count_stored(&self, call: &Call, completed: &Completed) {
        if let Some(quota) = &self.quota {
            let bytes = match completed.outcome() {
                Outcome::Ok(body) | Outcome::Err(body) => body.len(),
                Outcome::Aborted => 0,
            };
            quota.stored(call.key.scope(), &call.key, bytes, completed.expires_at());
        }
    }
}
