//! What operators do with a handle: inspect a key, release a held one, list and purge records.

mod inspection;

pub use inspection::{Inspection, RecordState};

use crate::engine::Engine;
use crate::store::{ListPage, ListQuery, PurgeProgress};
use crate::{
    error::{Error, StoreError},
    key::Key,
    store::Record,
    TARGET,
};

/// What [`Idempotency::release_held`](crate::Idempotency::release_held) did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReleaseReport {
    /// The in-progress record was released; this is what it was. The next call with the key
    /// runs the function again (resuming after recorded steps, whose effects happened).
    Released(Inspection),
    /// Nothing was released: the key has no record, or a completed one (which
    /// [`forget`](crate::Idempotency::forget) deletes).
    NotHeld(Option<Inspection>),
    /// The key changed hands between the read and the release (another call took it over, or
    /// the owner finished): nothing was released; this is the record now. Check its effect
    /// again before releasing.
    Changed(Option<Inspection>),
}

impl Engine {
    /// See [`Idempotency::forget`](crate::Idempotency::forget).
    pub(crate) async fn forget(&self, key: &Key) -> Result<(), Error> {
        let deleted = self
            .store
            .delete(key)
            .await
            .map_err(|e| e.into_error(key.as_str()));
        // After the delete: evicting first would let a replay running meanwhile refill the
        // entry from the record about to go.
        if let Some(cache) = &self.replay_cache {
            cache.remove(&self.cache_key(key));
        }
        deleted
    }

    /// See [`Idempotency::forget_unchanged`](crate::Idempotency::forget_unchanged).
    pub(crate) async fn forget_unchanged(
        &self,
        key: &Key,
        read: &Inspection,
    ) -> Result<bool, Error> {
        let deleted = self
            .store
            .delete_if(key, read.record())
            .await
            .map_err(|e| e.into_error(key.as_str()))?;
        if deleted {
            if let Some(cache) = &self.replay_cache {
                cache.remove(&self.cache_key(key));
            }
        }
        Ok(deleted)
    }

    /// See [`Idempotency::inspect`](crate::Idempotency::inspect).
    pub(crate) async fn inspect(&self, key: &Key) -> Result<Option<Inspection>, Error> {
        let record = self
            .store
            .get(key)
            .await
            .map_err(|e| e.into_error(key.as_str()))?;
        Ok(record.map(|record| self.inspection(key, record)))
    }

    /// See [`Idempotency::release_held`](crate::Idempotency::release_held)(crate::Idempotency::release_held).
    pub(crate) async fn release_held(&self, key: &Key) -> Result<ReleaseReport, Error> {
        let Some(before) = self.inspect(key).await? else {
            return Ok(ReleaseReport::NotHeld(None));
        };
        let Record::InProgress(held) = before.record() else {
            return Ok(ReleaseReport::NotHeld(Some(before)));
        };
        match self.store.release(key, held.owner()).await {
            Ok(()) => {
                tracing::warn!(target: TARGET, key = key.as_str(), owner = held.owner().as_str(), attempt = held.attempt(), "released by an operator: the next call runs again");
                Ok(ReleaseReport::Released(before))
            }
            Err(StoreError::LeaseLost) => Ok(ReleaseReport::Changed(self.inspect(key).await?)),
            Err(error) => Err(error.into_error(key.as_str())),
        }
    }

    /// See [`Idempotency::list`](crate::Idempotency::list).
    pub(crate) async fn list(&self, query: &ListQuery) -> Result<ListPage, Error> {
        let inventory = self.inventory("list its records")?;
        inventory
            .list(query)
            .await
            .map_err(|e| e.into_error(&query.prefix))
    }

    /// See [`Idempotency::purge_expired`](crate::Idempotency::purge_expired).
    pub(crate) async fn purge_expired(&self, batch: u32) -> Result<u64, Error> {
        let inventory = self.inventory("purge expired records")?;
        inventory
            .purge_expired(self.clock.now(), batch)
            .await
            .map_err(|e| e.into_error(""))
    }

    /// See [`Idempotency::purge_expired_from`](crate::Idempotency::purge_expired_from).
    pub(crate) async fn purge_expired_from(
        &self,
        batch: u32,
        cursor: Option<&str>,
    ) -> Result<PurgeProgress, Error> {
        let inventory = self.inventory("purge expired records")?;
        inventory
            .purge_expired_from(self.clock.now(), batch, cursor)
            .await
            .map_err(|e| e.into_error(""))
    }

    /// `record`, read under `key`, as of now.
    pub(crate) fn inspection(&self, key: &Key, record: Record) -> Inspection {
        Inspection::new(key.clone(), record, self.clock.now())
    }

    fn inventory(&self, what: &'static str) -> Result<&dyn crate::store::Inventory, Error> {
        self.store.inventory().ok_or_else(|| Error::Unsupported {
            store: self.store.name().to_owned(),
            what,
        })
    }
}
