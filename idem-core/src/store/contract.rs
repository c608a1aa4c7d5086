//! The `Store` trait: what a backend must provide.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::store::Inventory;
#[cfg(doc)]
use crate::store::{InProgress, Steps, LEASE_GRACE};
use crate::{
    error::StoreError,
    key::Key,
    store::{Claim, Completed, Lookup, OwnerToken, Probe, Record, Reservation, Timestamp},
};

/// A place to keep idempotency records: in-process memory, Redis, DynamoDB, or your own.
///
/// Object safe, used as `Arc<dyn Store>`. Every method is one atomic operation on one key; the
/// engine builds the whole protocol out of them:
///
/// 0. [`lookup`](Store::lookup) first, which answers a replay in process when the store can
///    (the default says it cannot, and the reservation answers it);
/// 1. [`reserve`](Store::reserve) before the function runs;
/// 2. [`renew`](Store::renew) while it runs, and [`record_step`](Store::record_step) for each
///    [`step`](crate::step) it finishes;
/// 3. [`complete`](Store::complete) with its outcome, or [`release`](Store::release) to free the
///    key when it failed.
///
/// # The contract
///
/// - **Time comes from the caller.** A record is live while `now < record.live_until()`, with
///   `now` taken from the [`Claim`] ([`Claim::now`]). A store never trusts its backend's own expiry alone (that
///   may run late). It may delete a completed record once it expired, and an in-progress record
///   once it is abandoned ([`InProgress::is_abandoned`]).
/// - **`reserve` is atomic.** It writes the claim if and only if the key is free: no record, an
///   expired completed one, an in-progress record *with the claim's fingerprint* whose lease has
///   passed, or an abandoned in-progress record (lease passed more than [`LEASE_GRACE`] ago,
///   whatever its fingerprint); replacing an in-progress record is a takeover. Otherwise it
///   writes nothing and returns the record it found. Of any number of concurrent claims on a
///   free key exactly one gets [`Reservation::Reserved`] or [`Reservation::TookOver`].
/// - **Steps.** A takeover writes [`InProgress::taking_over`], which keeps the previous record's
///   [`Steps`] when the claim has the same fingerprint, and returns it with them. An
///   in-progress record whose steps still hold the key ([`Steps::hold_key`]) is not abandoned,
///   and must be kept (by the backend's own expiry too) until its steps'
///   [`kept_until`](Steps::kept_until).
/// - **Fencing.** `complete`, `release`, `renew` and `record_step` succeed only while the record under the key
///   is in progress and owned by `owner`; otherwise they change nothing and return
///   [`StoreError::LeaseLost`]. They do not check the lease deadline: an owner whose lease passed
///   but who was not taken over may still finish.
/// - **Errors.** Backend failures are [`StoreError::Backend`]; a record that cannot be decoded is
///   [`StoreError::Corrupt`]. Never panic on stored data.
///
/// The `idem-conformance` crate checks all of this against a real instance of your store.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The completed record under `key` when it is live at the probe's
    /// [`now`](Probe::now), its outcome lent: a replay answered before anything is claimed
    /// (no owner token, no quota, no reservation). Answered in process, without I/O: a call
    /// that is not a replay asks it too, so it must cost no round trip. Writes nothing.
    ///
    /// [`Lookup::Miss`] for no record, an expired or in-progress one, or one the reservation
    /// must judge (an outcome over the probe's [`max_outcome`](Probe::max_outcome)); the
    /// caller then reserves, and the reservation answers as it always does. A miss is never
    /// wrong: only a [`Lookup::Completed`] must be exactly the live completed record.
    ///
    /// The default misses. A store whose records live across a network keeps it: its
    /// reservation answers a replay in one round trip already, and a read before it would
    /// make every new call pay one more. A store that holds its records in process
    /// overrides it.
    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        let _ = (key, probe);
        Ok(Lookup::Miss)
    }

    /// Whether [`lookup`](Store::lookup) may answer anything but a miss: `true` for a store
    /// that overrides it. The default is `false`, and then the lookup is not timed nor traced
    /// (a store across a network would otherwise show a lookup it never makes on every call).
    /// A store that says `false` must always miss; the conformance suite checks it.
    fn looks_up(&self) -> bool {
        false
    }

    /// Writes `claim.record` under `key` if the key is free, else returns the live record.
    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError>;

    /// Replaces `owner`'s in-progress record with the completed one.
    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError>;

    /// Deletes `owner`'s in-progress record, so the key can be used again. A record that holds
    /// steps is kept instead, with its lease ended ([`InProgress::released`]): the steps' side
    /// effects happened, so only the same call may use the key again, and it resumes after them.
    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError>;

    /// Adds step `name` with `value` (its serialised `Ok` value) to `owner`'s in-progress record,
    /// replacing an earlier value of `name`, and keeps the record until `kept_until` at least
    /// ([`Steps::keep_until`]). One atomic write, fenced like `complete`.
    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError>;

    /// Moves `owner`'s lease deadline to `lease_until`. A released record (it holds steps and its
    /// lease ended: [`InProgress::is_released`]) is not renewed: [`StoreError::LeaseLost`], so
    /// that a renewal arriving after the release can't bring the lease back and lock the
    /// resuming retry out.
    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError>;

    /// Reads the record under `key`, live or not. `None` if there is none.
    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError>;

    /// Whether a record is stored under `key`, live or not, without reading it: what the
    /// engine asks for a call over its quota, to refuse a new key and let a used one go on.
    /// A refused flood then costs one small read per request, however large the records.
    ///
    /// The default reads the record ([`get`](Store::get)); a store overrides it with a
    /// key-only read (`EXISTS`, `SELECT 1`, a projection).
    async fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        Ok(self.get(key).await?.is_some())
    }

    /// Deletes the record under `key` whatever its state. An administrative escape hatch (see
    /// [`Idempotency::forget`](crate::Idempotency::forget)), never used by the protocol.
    async fn delete(&self, key: &Key) -> Result<(), StoreError>;

    /// Deletes the record under `key` only if it is still the record `expected` was read as
    /// ([`is_same_record`](crate::store::is_same_record): the same state, owner and fencing
    /// token in progress, the same fingerprint and expiry completed), in one atomic step:
    /// `Ok(true)` when it was deleted, `Ok(false)` when the key holds another record or none,
    /// left as it is. What an operator's delete uses
    /// ([`Idempotency::forget_unchanged`](crate::Idempotency::forget_unchanged)), so that a key
    /// reserved between the read and the delete keeps its record.
    ///
    /// The default refuses ([`StoreError::Rejected`]) rather than delete without the
    /// condition; every store of idem-stores implements it.
    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        let _ = (key, expected);
        Err(StoreError::rejected(format!(
            "the {} store cannot delete a record on condition that it is unchanged",
            self.name()
        )))
    }

    /// Returns once the record under `key` may have changed, or after `timeout`. Spurious
    /// returns are allowed: the caller reads again. Used by callers that wait for an in-flight
    /// duplicate.
    ///
    /// The default polls: it sleeps for the shorter of `timeout` and 25 ms. Stores that can be
    /// told of changes (the memory store wakes waiters on completion) override it.
    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        let _ = key;
        tokio::time::sleep(timeout.min(Duration::from_millis(25))).await;
        Ok(())
    }

    /// The store's name in metrics and traces (`memory`, `redis`, `dynamodb`, `postgres`):
    /// the `store` label of `idem_store_duration_seconds`. A store of your own names itself;
    /// the default is `custom`.
    fn name(&self) -> &'static str {
        "custom"
    }

    /// The store's listing of its records, for operators, or `None` (the default) for a store
    /// that can't list.
    fn inventory(&self) -> Option<&dyn Inventory> {
        None
    }

    /// What tells this store's records from another store's on the same backend (its key
    /// prefix, its table), bound into every sealed value with the stored key, so that a sealed
    /// record copied to another prefix or table does not open there. The same for every
    /// handle on the same records: the `idem` command opens what services sealed with it.
    ///
    /// The default is empty: a store of your own returns its prefix or table, as the stores of
    /// idem-stores do. Changing it leaves every sealed record unopenable (refused as corrupt).
    fn sealing_scope(&self) -> String {
        String::new()
    }
}

#[async_trait]
impl<S: Store + ?Sized> Store for Arc<S> {
    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        (**self).lookup(key, probe)
    }
    fn looks_up(&self) -> bool {
        (**self).looks_up()
    }
    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        (**self).reserve(key, claim).await
    }
    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        (**self).complete(key, owner, record).await
    }
    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        (**self).release(key, owner).await
    }
    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        (**self)
            .record_step(key, owner, name, value, kept_until)
            .await
    }
    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        (**self).renew(key, owner, lease_until).await
    }
    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        (**self).get(key).await
    }
    async fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        (**self).contains(key).await
    }
    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        (**self).delete(key).await
    }
    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        (**self).delete_if(key, expected).await
    }
    fn sealing_scope(&self) -> String {
        (**self).sealing_scope()
    }
    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        (**self).changed(key, timeout).await
    }
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn inventory(&self) -> Option<&dyn Inventory> {
        (**self).inventory()
    }
}
