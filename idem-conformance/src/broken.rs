//! Stores that break one rule of the contract each, by wrapping a correct store: the
//! conformance suite must fail each of them by name. `idem-stores`' `broken_stores` test runs
//! them; they are public so that a store author can see what the suite catches.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::{Intercepted, Interceptor};
use idem_core::{
    store::{
        Claim, Completed, InProgress, Lookup, OwnerToken, Probe, Record, Reservation, Steps, Store,
        Timestamp,
    },
    Fingerprint, Key, StoreError,
};

/// The rule a [`Broken`] store breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// `reserve` always grants the key, deleting whatever record held it.
    ReserveAlwaysGrants,
    /// `complete` and `release` act for whoever holds the key, whatever owner they are given.
    OwnerIgnored,
    /// `reserve` replays a completed record even after its expiry.
    ExpiryIgnoredOnRead,
    /// `reserve` reports the record it found as if it had the claim's fingerprint.
    FingerprintIgnored,
    /// `renew` answers its owner without moving the lease.
    RenewDoesNotExtend,
    /// `reserve` judges leases and expiry one second ahead of the caller's clock.
    TakeoverOneSecondEarly,
    /// `complete` and `renew` on a missing key write the record anew.
    RecreatesMissing,
    /// `renew` of a completed record succeeds.
    RenewsCompleted,
    /// `changed` never returns before its timeout.
    NeverWakes,
    /// `reserve` reports a takeover as a plain reservation.
    NeverReportsTakeover,
    /// A takeover answers with the record as if it held no steps.
    StepsForgottenOnTakeover,
    /// `record_step` writes to whoever holds the key, whatever owner it is given.
    StepOwnerIgnored,
    /// `release` deletes a record that holds steps.
    ReleaseForgetsSteps,
    /// `lookup` serves a completed record after its expiry too. Every other fault leaves
    /// lookups to miss, and replays to the reservation it breaks; these two break the lookup
    /// of a store that answers them (the memory store), and change nothing on one that does
    /// not.
    LookupIgnoresExpiry,
    /// `lookup` of a key it finds no record under serves the record of the same key without
    /// its scope: another tenant's or principal's record.
    LookupIgnoresScope,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 15] = [
        Fault::ReserveAlwaysGrants,
        Fault::OwnerIgnored,
        Fault::ExpiryIgnoredOnRead,
        Fault::FingerprintIgnored,
        Fault::RenewDoesNotExtend,
        Fault::TakeoverOneSecondEarly,
        Fault::RecreatesMissing,
        Fault::RenewsCompleted,
        Fault::NeverWakes,
        Fault::NeverReportsTakeover,
        Fault::StepsForgottenOnTakeover,
        Fault::StepOwnerIgnored,
        Fault::ReleaseForgetsSteps,
        Fault::LookupIgnoresExpiry,
        Fault::LookupIgnoresScope,
    ];

    /// The checks that catch this fault: each must fail against a store with it.
    pub fn caught_by(self) -> &'static [&'static str] {
        match self {
            Fault::ReserveAlwaysGrants => &[
                "concurrent_reservations_admit_exactly_one",
                "duplicate_in_flight_is_in_progress",
                "fresh_call_runs_then_replays",
            ],
            Fault::OwnerIgnored => &[
                "only_the_owner_completes_releases_or_renews",
                "lease_takeover_fences_the_stale_owner",
            ],
            Fault::ExpiryIgnoredOnRead => &[
                "ttl_expiry_makes_the_key_new",
                "ttl_passes_exactly_at_expiry",
            ],
            Fault::FingerprintIgnored => &[
                "mismatch_on_completed_record",
                "mismatch_on_in_progress_record",
            ],
            Fault::RenewDoesNotExtend => &[
                "lease_is_renewed_while_running",
                "renewal_continues_through_a_slow_completion",
            ],
            Fault::TakeoverOneSecondEarly => &[
                "lease_passes_exactly_at_its_deadline",
                "ttl_passes_exactly_at_expiry",
                "abandonment_starts_exactly_a_grace_after_the_lease",
            ],
            Fault::RecreatesMissing => &["fenced_writes_never_recreate_a_record"],
            Fault::RenewsCompleted => &["a_completed_record_is_not_renewed"],
            Fault::NeverWakes => &["waiting_duplicate_gets_the_result"],
            Fault::NeverReportsTakeover => &[
                "lease_passes_exactly_at_its_deadline",
                "abandonment_starts_exactly_a_grace_after_the_lease",
            ],
            Fault::StepsForgottenOnTakeover => &[
                "a_takeover_resumes_after_the_recorded_steps",
                "an_error_after_a_step_keeps_the_key_for_the_same_call",
            ],
            Fault::StepOwnerIgnored => &["a_stale_owners_step_is_refused"],
            Fault::ReleaseForgetsSteps => &[
                "an_error_after_a_step_keeps_the_key_for_the_same_call",
                "a_released_record_keeps_its_steps",
            ],
            Fault::LookupIgnoresExpiry => &[
                "ttl_expiry_makes_the_key_new",
                "lookup_answers_only_a_live_completed_record",
            ],
            Fault::LookupIgnoresScope => &["lookup_never_serves_another_keys_record"],
        }
    }
}

/// A correct store with one [`Fault`].
pub struct Broken {
    inner: Arc<dyn Store>,
    fault: Fault,
}

impl Broken {
    /// `inner`, breaking `fault`'s rule, as a store.
    pub fn new(inner: Arc<dyn Store>, fault: Fault) -> Intercepted<Broken> {
        Intercepted(Broken { inner, fault })
    }

    /// The owner holding `key` in progress, if any.
    async fn holder(&self, key: &Key) -> Result<Option<OwnerToken>, StoreError> {
        Ok(match self.inner.get(key).await? {
            Some(Record::InProgress(held)) => Some(held.owner().clone()),
            _ => None,
        })
    }

    /// Writes `owner`'s in-progress record, leased until `lease_until`, under a missing key.
    async fn recreate(
        &self,
        key: &Key,
        owner: &OwnerToken,
        fingerprint: Fingerprint,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        let record = InProgress::new(owner.clone(), fingerprint, lease_until);
        let claim = Claim::new(record, Timestamp::EPOCH);
        self.inner.reserve(key, &claim).await.map(drop)
    }
}

/// `key` without its scope (`namespace|name|-|parts`), or `None` when it has none.
fn unscoped(key: &Key) -> Option<Key> {
    key.scope()?;
    let mut slots = key.as_str().splitn(4, '|');
    let (namespace, name, _, parts) = (slots.next()?, slots.next()?, slots.next()?, slots.next());
    let parts = parts.map(|parts| format!("|{parts}")).unwrap_or_default();
    Key::parse(&format!("{namespace}|{name}|-{parts}")).ok()
}

#[async_trait]
impl Interceptor for Broken {
    fn inner(&self) -> &dyn Store {
        &*self.inner
    }

    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        match self.fault {
            Fault::LookupIgnoresExpiry => {
                // Every record is live at the epoch.
                let any_time = Probe::new(Timestamp::EPOCH).with_max_outcome(probe.max_outcome());
                self.inner.lookup(key, &any_time)
            }
            Fault::LookupIgnoresScope => match self.inner.lookup(key, probe)? {
                Lookup::Completed(own) => Ok(Lookup::Completed(own)),
                _ => match unscoped(key) {
                    Some(unscoped) => self.inner.lookup(&unscoped, probe),
                    None => Ok(Lookup::Miss),
                },
            },
            _ => Ok(Lookup::Miss),
        }
    }

    fn looks_up(&self) -> bool {
        matches!(
            self.fault,
            Fault::LookupIgnoresExpiry | Fault::LookupIgnoresScope
        ) && self.inner.looks_up()
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        match self.fault {
            Fault::ReserveAlwaysGrants => {
                if let Reservation::Existing(_) = self.inner.reserve(key, claim).await? {
                    self.inner.delete(key).await?;
                    return self.inner.reserve(key, claim).await;
                }
                Ok(Reservation::Reserved(claim.record().clone()))
            }
            Fault::ExpiryIgnoredOnRead => match self.inner.get(key).await? {
                Some(Record::Completed(done)) => Ok(Reservation::Existing(Record::Completed(done))),
                _ => self.inner.reserve(key, claim).await,
            },
            Fault::FingerprintIgnored => Ok(match self.inner.reserve(key, claim).await? {
                Reservation::Existing(Record::Completed(done)) => {
                    Reservation::Existing(Record::Completed(Completed::new(
                        *claim.record().fingerprint(),
                        done.outcome().clone(),
                        done.expires_at(),
                    )))
                }
                Reservation::Existing(Record::InProgress(held)) => {
                    let posing = InProgress::new(
                        held.owner().clone(),
                        *claim.record().fingerprint(),
                        held.lease_until(),
                    )
                    .with_fencing_token(held.fencing_token())
                    .with_attempt(held.attempt());
                    Reservation::Existing(Record::InProgress(posing))
                }
                other => other,
            }),
            Fault::TakeoverOneSecondEarly => {
                let early = Claim::new(
                    claim.record().clone(),
                    claim.now() + std::time::Duration::from_secs(1),
                );
                self.inner.reserve(key, &early).await
            }
            Fault::NeverReportsTakeover => Ok(match self.inner.reserve(key, claim).await? {
                Reservation::TookOver { record, .. } => Reservation::Reserved(record),
                other => other,
            }),
            Fault::StepsForgottenOnTakeover => Ok(match self.inner.reserve(key, claim).await? {
                Reservation::TookOver { previous, record } => Reservation::TookOver {
                    previous,
                    record: record.with_steps(Steps::new()),
                },
                other => other,
            }),
            _ => self.inner.reserve(key, claim).await,
        }
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        match self.fault {
            Fault::OwnerIgnored => {
                let holder = self.holder(key).await?.unwrap_or_else(|| owner.clone());
                self.inner.complete(key, &holder, record).await
            }
            Fault::RecreatesMissing if self.inner.get(key).await?.is_none() => {
                self.recreate(key, owner, *record.fingerprint(), record.expires_at())
                    .await?;
                self.inner.complete(key, owner, record).await
            }
            _ => self.inner.complete(key, owner, record).await,
        }
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        match self.fault {
            Fault::OwnerIgnored => {
                let holder = self.holder(key).await?.unwrap_or_else(|| owner.clone());
                self.inner.release(key, &holder).await
            }
            Fault::ReleaseForgetsSteps if self.holder(key).await?.as_ref() == Some(owner) => {
                self.inner.delete(key).await
            }
            _ => self.inner.release(key, owner).await,
        }
    }

    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        let owner = match self.fault {
            Fault::StepOwnerIgnored => self.holder(key).await?.unwrap_or_else(|| owner.clone()),
            _ => owner.clone(),
        };
        self.inner
            .record_step(key, &owner, name, value, kept_until)
            .await
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        match self.fault {
            Fault::RenewDoesNotExtend => match self.holder(key).await? {
                Some(holder) if holder == *owner => Ok(()),
                _ => Err(StoreError::LeaseLost),
            },
            Fault::RecreatesMissing if self.inner.get(key).await?.is_none() => {
                self.recreate(key, owner, Fingerprint::empty(), lease_until)
                    .await
            }
            Fault::RenewsCompleted => match self.inner.get(key).await? {
                Some(Record::Completed(_)) => Ok(()),
                _ => self.inner.renew(key, owner, lease_until).await,
            },
            _ => self.inner.renew(key, owner, lease_until).await,
        }
    }

    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        match self.fault {
            Fault::NeverWakes => {
                tokio::time::sleep(timeout).await;
                Ok(())
            }
            _ => self.inner.changed(key, timeout).await,
        }
    }
}
