//! `ReferenceStore`: the store contract in its plainest form.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use idem_core::store::{check_outcome_len, judge_found, judge_reserve};
use idem_core::{
    store::{Claim, Completed, Lookup, OwnerToken, Probe, Record, Reservation, Store, Timestamp},
    Key, StoreError,
};

/// The [`Store`] contract in its plainest form: one map behind one mutex, nothing ever swept.
/// The conformance suite checks it like any other store, so it is both a test double for code
/// that needs a store without a backend and a reading aid for store authors. Not for
/// production: it never forgets a record.
#[derive(Debug, Default)]
pub struct ReferenceStore {
    records: Mutex<HashMap<Key, Record>>,
}

impl ReferenceStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn records(&self) -> MutexGuard<'_, HashMap<Key, Record>> {
        // Nothing panics while holding the lock, so a poisoned map is still consistent.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies `change` to the record under `key` if `owner` holds it in progress.
    fn owned(
        &self,
        key: &Key,
        owner: &OwnerToken,
        change: impl FnOnce(&mut HashMap<Key, Record>),
    ) -> Result<(), StoreError> {
        let mut records = self.records();
        match records.get(key) {
            Some(Record::InProgress(held)) if held.owner() == owner => {
                change(&mut records);
                Ok(())
            }
            _ => Err(StoreError::LeaseLost),
        }
    }
}

#[async_trait]
impl Store for ReferenceStore {
    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        let records = self.records();
        // Served: a completed record, live at the probe's time, within its longest outcome.
        Ok(match records.get(key) {
            Some(found @ Record::Completed(done))
                if found.is_live(probe.now())
                    && check_outcome_len(
                        done.outcome().body().len() as u64,
                        probe.max_outcome(),
                    )
                    .is_ok() =>
            {
                Lookup::Completed(done.clone())
            }
            _ => Lookup::Miss,
        })
    }

    fn looks_up(&self) -> bool {
        true
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        // What to do is idem-core's judgement; writing it under the lock is this store's part.
        let mut records = self.records();
        // Measured before the record is copied out (idem-core's size rule): another call's
        // record over the limit is answered without its outcome.
        if let Some(found) = records.get(key) {
            if let Some(unread) = judge_found(found, claim)? {
                return Ok(Reservation::Existing(unread));
            }
        }
        let judgement = judge_reserve(records.get(key).cloned(), claim);
        if let Some(written) = judgement.record_to_write(claim) {
            records.insert(key.clone(), Record::InProgress(written));
        }
        Ok(judgement.into_reservation(claim))
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        self.owned(key, owner, |records| {
            records.insert(key.clone(), Record::Completed(record.clone()));
        })
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        self.owned(key, owner, |records| match records.remove(key) {
            Some(Record::InProgress(held)) if !held.steps().is_empty() => {
                records.insert(key.clone(), Record::InProgress(held.released()));
            }
            _ => {}
        })
    }

    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.owned(key, owner, |records| {
            if let Some(Record::InProgress(held)) = records.get_mut(key) {
                held.steps_mut().insert(name, value.to_vec());
                held.steps_mut().keep_until(kept_until);
            }
        })
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        let mut records = self.records();
        match records.get_mut(key) {
            Some(Record::InProgress(held)) if held.owner() == owner && !held.is_released() => {
                held.set_lease_until(lease_until);
                Ok(())
            }
            _ => Err(StoreError::LeaseLost),
        }
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        Ok(self.records().get(key).cloned())
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        self.records().remove(key);
        Ok(())
    }

    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        let mut records = self.records();
        let unchanged = records
            .get(key)
            .is_some_and(|stored| idem_core::store::is_same_record(stored, expected));
        if unchanged {
            records.remove(key);
        }
        Ok(unchanged)
    }
}
