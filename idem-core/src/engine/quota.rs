//! Asking the quota before a reservation, and letting a key that still has a record go on.

use crate::{Call, Completed, Error, Idempotency, Outcome, QuotaPermit, Record, TARGET};

impl Idempotency {
    /// The quota's permit for `call`. When its scope is over the quota, a key that still has a
    /// record goes on as it would without one (a replay, "in progress", a wait, a takeover, a
    /// mismatch: none adds a record), with a permit that counts nothing; a new key gets
    /// [`Error::QuotaExceeded`], and nothing is written.
    pub(super) async fn admit(&self, call: &Call) -> Result<QuotaPermit, Error> {
        let Some(quota) = &self.quota else {
            return Ok(QuotaPermit::free());
        };
        let now = self.clock.now();
        let exceeded = match quota.admit(call.key.scope(), &call.key, now).await {
            Ok(permit) => return Ok(permit),
            Err(exceeded) => exceeded,
        };
        let key = call.key.as_str();
        let record = self
            .store
            .get(&call.key)
            .await
            .map_err(|e| e.into_error(key))?;
        let held = match &record {
            Some(Record::Completed(completed)) => now < completed.expires_at(),
            Some(Record::InProgress(running)) => !running.is_abandoned(now),
            None => false,
        };
        if held {
            return Ok(QuotaPermit::free());
        }
        tracing::debug!(target: TARGET, key, reason = exceeded.reason(), "refused: the key's scope is over its quota");
        Err(Error::QuotaExceeded {
            key: key.to_owned(),
            reason: exceeded.reason().to_owned(),
            retry_after: exceeded.retry_after(),
        })
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
