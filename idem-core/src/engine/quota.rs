//! Asking the quota before a reservation; a key that still has a record goes on, but runs
//! only with room in the quota.

use crate::engine::guard::Settle;
use crate::engine::Engine;
use crate::{
    call::Call,
    error::Error,
    quota::{QuotaExceeded, QuotaPermit},
    store::{Completed, Outcome},
    TARGET,
};

/// The quota's answer for a call about to reserve its key.
pub(super) enum Admission {
    /// Counted: the call may run.
    Counted(QuotaPermit),
    /// The scope is over its quota, but the key has a record: the call goes on for its
    /// answer (a replay, "in progress", a wait, a mismatch), and runs only if the quota
    /// admits it once it holds the key.
    OverQuota,
}

impl Engine {
    /// The quota's admission of `call`. A scope over its quota is refused a key without a
    /// record ([`Error::QuotaExceeded`]; nothing is written); a key with one goes on.
    pub(super) async fn admit(&self, call: &Call) -> Result<Admission, Error> {
        let Some(quota) = &self.quota else {
            return Ok(Admission::Counted(QuotaPermit::free()));
        };
        let exceeded = match quota
            .admit(call.quota_scope(), &call.key, self.clock.now())
            .await
        {
            Ok(permit) => return Ok(Admission::Counted(permit)),
            Err(exceeded) => exceeded,
        };
        // A key-only read: the reservation that follows reads the record, within the call's
        // longest outcome, once.
        let key = call.key.as_str();
        let stored = self
            .store
            .contains(&call.key)
            .await
            .map_err(|e| e.into_error(key))?;
        if stored {
            Ok(Admission::OverQuota)
        } else {
            Err(refused(call, &exceeded))
        }
    }

    /// The permit of a call that was over its quota and now holds its key, about to run: one
    /// that counts, or the key released (the body has not started) and
    /// [`Error::QuotaExceeded`].
    pub(super) async fn admit_owner(
        &self,
        call: &Call,
        settle: &mut Settle<'_>,
    ) -> Result<QuotaPermit, Error> {
        let Some(quota) = &self.quota else {
            return Ok(QuotaPermit::free());
        };
        match quota
            .admit(call.quota_scope(), &call.key, self.clock.now())
            .await
        {
            Ok(permit) => Ok(permit),
            Err(exceeded) => {
                // Disarmed only once released: a drop mid-way still releases.
                self.release(settle.store(), call, settle.owner()).await;
                settle.disarm();
                Err(refused(call, &exceeded))
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
            quota.stored(call.quota_scope(), &call.key, bytes, completed.expires_at());
        }
    }
}

fn refused(call: &Call, exceeded: &QuotaExceeded) -> Error {
    let key = call.key.as_str();
    let (key, reason, retry_after) = (
        key.to_owned(),
        exceeded.reason().to_owned(),
        exceeded.retry_after(),
    );
    if exceeded.is_store_full() {
        tracing::debug!(target: TARGET, key, reason, "refused: every scope together is over the quota's total");
        return Error::StoreFull {
            key,
            reason,
            retry_after,
        };
    }
    tracing::debug!(target: TARGET, key, reason, "refused: the key's scope is over its quota");
    Error::QuotaExceeded {
        key,
        reason,
        retry_after,
    }
}
