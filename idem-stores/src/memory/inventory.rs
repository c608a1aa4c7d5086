//! The memory store's listing, for operators in the same process.

use async_trait::async_trait;
use idem_core::store::{Inventory, ListPage, ListQuery};
use idem_core::{store::Timestamp, StoreError};

use super::MemoryStore;

/// Pages in key order: a cursor is the last key of the previous page.
#[async_trait]
impl Inventory for MemoryStore {
    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let limit = query.limit.max(1) as usize;
        // Each shard's first `limit + 1`: enough to fill the page and tell whether more remain.
        let mut records: Vec<_> = self
            .shards()
            .iter()
            .flat_map(|shard| shard.matching(&query.prefix, query.cursor.as_deref(), limit + 1))
            .collect();
        records.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
        let more = records.len() > limit;
        records.truncate(limit);
        let cursor = more
            .then(|| records.last().map(|(key, _)| key.as_str().to_owned()))
            .flatten();
        Ok(ListPage::new(
            records
                .into_iter()
                .map(|(key, record)| (key, Ok(record)))
                .collect(),
            cursor,
        ))
    }

    /// Purges every expired record, whatever `batch` says: the whole store is one lock per
    /// shard away.
    async fn purge_expired(&self, now: Timestamp, _batch: u32) -> Result<u64, StoreError> {
        Ok(MemoryStore::purge_expired(self, now) as u64)
    }
}
