//! What operators do with a handle: inspect a key, release a held one, list and purge records.

mod inspection;

pub use inspection::{Inspection, RecordState};

use crate::store::{ListPage, ListQuery, PurgeProgress};
use crate::{
    error::{Error, StoreError},
    handle::Idempotency,
    key::Key,
    store::Record,
    TARGET,
};

/// What [`Idempotency::release_held`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeldRelease {
    /// The in-progress record was released; this is what it was. The next call with the key
    /// runs the function again (resuming after recorded steps, whose effects happened).
    Released(Inspection),
    /// Nothing was released: the key has no record, or a completed one (which
    /// [`forget`](Idempotency::forget) deletes).
    NotHeld(Option<Inspection>),
    /// The key changed hands between the read and the release (another call took it over, or
    /// the owner finished): nothing was released; this is the record now. Check its effect
    /// again before releasing.
    Changed(Option<Inspection>),
}

impl Idempotency {
    /// The record under `key` as an operator sees it, or `None` if there is none. `key` is
    /// the key as idem prints it ([`Key::parse`]); under a key digest, the key in clear or its
    /// digest.
    pub async fn inspect(&self, key: &Key) -> Result<Option<Inspection>, Error> {
        let record = self
            .store
            .get(key)
            .await
            .map_err(|e| e.into_error(key.as_str()))?;
        Ok(record.map(|record| self.inspection(key, record)))
    }

    /// Frees `key` held by an in-progress call, for an operator who checked the call's
    /// effect: a deploy killed the process that held it, and the next retry should run rather
    /// than be told "in progress" until the lease passes. Fenced: only the owner read here is
    /// released, so a key that completed or changed hands meanwhile is left as it is
    /// ([`HeldRelease::Changed`]). If that owner is in fact still running, it loses its lease
    /// and its outcome is not recorded ([`Error::NotRecorded`]), unless the record holds steps:
    /// then the record is kept with its lease ended, only a call with the same arguments may
    /// use the key (resuming after the steps), and the owner, which keeps its token, may still
    /// complete it.
    pub async fn release_held(&self, key: &Key) -> Result<HeldRelease, Error> {
        let Some(before) = self.inspect(key).await? else {
            return Ok(HeldRelease::NotHeld(None));
        };
        let Record::InProgress(held) = before.record() else {
            return Ok(HeldRelease::NotHeld(Some(before)));
        };
        match self.store.release(key, held.owner()).await {
            Ok(()) => {
                tracing::warn!(target: TARGET, key = key.as_str(), owner = held.owner().as_str(), attempt = held.attempt(), "released by an operator: the next call runs again");
                Ok(HeldRelease::Released(before))
            }
            Err(StoreError::LeaseLost) => Ok(HeldRelease::Changed(self.inspect(key).await?)),
            Err(error) => Err(error.into_error(key.as_str())),
        }
    }

    /// One page of the store's records whose keys start with `query`'s prefix, as stored
    /// (under a key digest, digests; with sealing on, values sealed).
    /// [`Error::Unsupported`] for a store that can't list.
    ///
    /// ```
    /// # async fn demo(idem: idem_core::Idempotency) -> Result<(), idem_core::Error> {
    /// use idem_core::{store::ListQuery, Key};
    /// let mut query = ListQuery::new(Key::function_prefix(idem.namespace(), "charge"), 100);
    /// loop {
    ///     let page = idem.list(&query).await?;
    ///     for (key, record) in &page.records {
    ///         println!("{key}: {record:?}");
    ///     }
    ///     let Some(cursor) = page.cursor else { break };
    ///     query = query.after(Some(cursor));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, query: &ListQuery) -> Result<ListPage, Error> {
        let inventory = self.inventory("list its records")?;
        inventory
            .list(query)
            .await
            .map_err(|e| e.into_error(&query.prefix))
    }

    /// Deletes up to `batch` records that stopped counting (see
    /// [`Inventory::purge_expired`](crate::store::Inventory::purge_expired)); returns how
    /// many. [`Error::Unsupported`] for a store that can't list.
    pub async fn purge_expired(&self, batch: u32) -> Result<u64, Error> {
        let inventory = self.inventory("purge expired records")?;
        inventory
            .purge_expired(self.clock.now(), batch)
            .await
            .map_err(|e| e.into_error(""))
    }

    /// Like [`purge_expired`](Idempotency::purge_expired), going on from where the previous
    /// call stopped (see
    /// [`Inventory::purge_expired_from`](crate::store::Inventory::purge_expired_from)): deletes
    /// up to `batch` records that stopped counting, judging the store's records from `cursor`
    /// on (`None`: from the first), and says how many went and where the next call goes on.
    /// Calling it until the cursor is `None` judges each record once, where calling
    /// `purge_expired` until it deletes fewer than `batch` starts over on every batch. A call
    /// may delete none while its cursor says more remain. [`Error::Unsupported`] for a store
    /// that can't list.
    ///
    /// ```
    /// use idem_core::{Error, Idempotency};
    ///
    /// /// Purges every expired record, 1000 at a time; returns how many went.
    /// async fn purge_all(idem: &Idempotency) -> Result<u64, Error> {
    ///     let mut purged = 0;
    ///     let mut cursor = None;
    ///     loop {
    ///         let progress = idem.purge_expired_from(1000, cursor.as_deref()).await?;
    ///         purged += progress.deleted;
    ///         match progress.cursor {
    ///             Some(next) => cursor = Some(next),
    ///             None => return Ok(purged),
    ///         }
    ///     }
    /// }
    /// # // The reference store keeps no inventory: it says so.
    /// # let idem = Idempotency::new(idem_conformance::ReferenceStore::new());
    /// # let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # let refused = runtime.block_on(purge_all(&idem));
    /// # assert!(matches!(refused, Err(Error::Unsupported { .. })), "{refused:?}");
    /// ```
    pub async fn purge_expired_from(
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
