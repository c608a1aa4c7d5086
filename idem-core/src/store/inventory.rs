//! What a store may offer operators beyond the protocol: listing its records, purging the
//! expired ones.

use async_trait::async_trait;

use crate::{
    error::StoreError,
    key::Key,
    store::{Record, Timestamp},
};

/// A store's listing of its records, for operators (the `idem` command,
/// [`Idempotency::list`](crate::Idempotency::list)). Optional: a store offers it through
/// [`Store::inventory`](crate::store::Store::inventory), and one that can't list says so by returning
/// `None` there.
///
/// Listing is a scan. It is not atomic with the protocol, and a page may hold fewer records
/// than asked (or none) while more remain: only [`ListPage::cursor`] being `None` says the
/// listing is over.
#[async_trait]
pub trait Inventory: Send + Sync {
    /// One page of the records whose keys start with [`ListQuery::prefix`].
    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError>;

    /// Deletes up to `batch` records that stopped counting before `now`: completed records past
    /// their expiry, in-progress records abandoned ([`InProgress::is_abandoned`](crate::store::InProgress::is_abandoned)).
    /// Each delete is conditional on the record still being expired, so a reservation that
    /// reused the key meanwhile is kept. Returns how many it deleted; fewer than `batch` means
    /// none is left. A store may delete more than `batch` at once where that costs nothing
    /// more (the memory store purges all its expired records under its shards' locks), and one
    /// whose backend expires records by itself may delete none.
    async fn purge_expired(&self, now: Timestamp, batch: u32) -> Result<u64, StoreError>;

    /// Like [`purge_expired`](Inventory::purge_expired), going on from where the previous call
    /// stopped: judges the store's records from `cursor` on (`None`: from the first), deletes
    /// up to `batch` of those that stopped counting before `now`, and says how many and where
    /// the next call goes on ([`PurgeProgress::cursor`], `None` once every record was judged).
    /// Calling it until the cursor is `None` judges each record once, where calling
    /// `purge_expired` until it deletes fewer than `batch` starts over on every batch: on a
    /// store whose purge scans (DynamoDB's `Scan`, paid per item read), a purge of many batches
    /// then reads the table once, not once per batch. A call may delete none while its cursor
    /// says more remain.
    ///
    /// The default calls `purge_expired`, which starts over on every call, and ignores
    /// `cursor`: its cursor is `Some("")` after a full batch and `None` after a short one.
    async fn purge_expired_from(
        &self,
        now: Timestamp,
        batch: u32,
        cursor: Option<&str>,
    ) -> Result<PurgeProgress, StoreError> {
        let _ = cursor;
        let deleted = self.purge_expired(now, batch).await?;
        Ok(PurgeProgress::of_batch(deleted, batch, Some(String::new())))
    }
}

/// How far a call of [`Inventory::purge_expired_from`] got.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PurgeProgress {
    /// How many records it deleted.
    pub deleted: u64,
    /// Where the next call goes on, or `None` when every record has been judged.
    pub cursor: Option<String>,
}

impl PurgeProgress {
    /// `deleted` records deleted; the next call goes on at `cursor`, if there is one.
    pub fn new(deleted: u64, cursor: Option<String>) -> Self {
        PurgeProgress { deleted, cursor }
    }

    /// `deleted` records deleted by a call that deletes up to `batch`: after a full batch the
    /// next call goes on at `cursor`; a short one means every record was judged (no cursor).
    pub fn of_batch(deleted: u64, batch: u32, cursor: Option<String>) -> Self {
        let full = deleted >= u64::from(batch);
        PurgeProgress::new(deleted, cursor.filter(|_| full))
    }
}

/// Which records a page of [`Inventory::list`] holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListQuery {
    /// Keys start with this text (as [`Key::as_str`] spells them, without the store's own
    /// prefix); empty for every key. [`Key::function_prefix`] gives one function's.
    pub prefix: String,
    /// Where the previous page ended; `None` for the first page.
    pub cursor: Option<String>,
    /// The most records a page holds.
    pub limit: u32,
}

impl ListQuery {
    /// The first page of up to `limit` records whose keys start with `prefix`.
    pub fn new(prefix: impl Into<String>, limit: u32) -> Self {
        ListQuery {
            prefix: prefix.into(),
            cursor: None,
            limit,
        }
    }

    /// The page that starts where `cursor` (a previous page's [`ListPage::cursor`]) says.
    pub fn after(mut self, cursor: Option<String>) -> Self {
        self.cursor = cursor;
        self
    }
}

/// One page of a listing.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct ListPage {
    /// The records of this page, each under its key; a record that could not be read is listed
    /// with the reason ([`StoreError::Corrupt`]), not skipped.
    pub records: Vec<(Key, Result<Record, StoreError>)>,
    /// Where the next page starts, or `None` when this page is the last.
    pub cursor: Option<String>,
    /// What this page found under the store's prefix and the query's whose stored key is no
    /// [`Key`] (not UTF-8, longer than [`MAX_KEY_LEN`](crate::MAX_KEY_LEN), without a `|`):
    /// listed too, so that nothing written under the prefix is hidden from operators. idem
    /// never writes such entries; they can't be read as records, nor named to the handle.
    pub unkeyed: Vec<UnkeyedEntry>,
}

impl ListPage {
    /// A page of `records`, followed by the page at `cursor` if there is one.
    pub fn new(records: Vec<(Key, Result<Record, StoreError>)>, cursor: Option<String>) -> Self {
        ListPage {
            records,
            cursor,
            unkeyed: Vec::new(),
        }
    }

    /// The same page, also listing `unkeyed` entries ([`ListPage::unkeyed`]).
    pub fn with_unkeyed(mut self, unkeyed: Vec<UnkeyedEntry>) -> Self {
        self.unkeyed = unkeyed;
        self
    }
}

/// An entry of a listing stored under a key that is no [`Key`] ([`ListPage::unkeyed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnkeyedEntry {
    /// The stored key after the store's own prefix, as its bytes (which need not be UTF-8).
    pub key: Vec<u8>,
    /// Why it is no [`Key`].
    pub reason: String,
}

impl UnkeyedEntry {
    /// The entry stored under `key` (after the store's prefix), which is no [`Key`] for
    /// `reason`.
    pub fn new(key: impl Into<Vec<u8>>, reason: impl Into<String>) -> Self {
        UnkeyedEntry {
            key: key.into(),
            reason: reason.into(),
        }
    }

    /// The [`Key`] stored as `key` (after the store's prefix), or the entry that lists it when
    /// it is none, with the reason.
    pub fn unless_key(key: &[u8]) -> Result<Key, Self> {
        let text = std::str::from_utf8(key).map_err(|error| {
            UnkeyedEntry::new(key, format!("the stored key is not UTF-8 ({error})"))
        })?;
        Key::parse(text).map_err(|error| UnkeyedEntry::new(key, error.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// An inventory with `left` expired records and a purge that starts over on every call.
    struct Rescanning {
        left: AtomicU64,
    }

    #[async_trait]
    impl Inventory for Rescanning {
        async fn list(&self, _: &ListQuery) -> Result<ListPage, StoreError> {
            Ok(ListPage::default())
        }

        async fn purge_expired(&self, _: Timestamp, batch: u32) -> Result<u64, StoreError> {
            let left = self.left.load(Ordering::SeqCst);
            let deleted = left.min(u64::from(batch));
            self.left.store(left - deleted, Ordering::SeqCst);
            Ok(deleted)
        }
    }

    #[tokio::test]
    async fn the_default_purge_from_a_cursor_goes_on_while_batches_are_full() {
        let inventory = Rescanning {
            left: AtomicU64::new(5),
        };
        let now = Timestamp::from_millis(0);
        let mut cursor = None;
        let mut batches = Vec::new();
        loop {
            let progress = inventory
                .purge_expired_from(now, 2, cursor.as_deref())
                .await
                .unwrap();
            batches.push(progress.deleted);
            match progress.cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(batches, [2, 2, 1]);
    }

    #[test]
    fn a_stored_key_that_is_no_key_is_an_unkeyed_entry_with_its_bytes() {
        assert_eq!(
            UnkeyedEntry::unless_key(b"idem|charge|-|o-1"),
            Ok(Key::parse("idem|charge|-|o-1").unwrap())
        );
        let not_utf8 = UnkeyedEntry::unless_key(b"idem|charge|-|\xff").unwrap_err();
        assert_eq!(not_utf8.key, b"idem|charge|-|\xff");
        assert!(not_utf8.reason.contains("UTF-8"), "{}", not_utf8.reason);
        let long = format!("idem|charge|-|{}", "a".repeat(2000));
        let too_long = UnkeyedEntry::unless_key(long.as_bytes()).unwrap_err();
        assert_eq!(too_long.key, long.as_bytes());
        assert!(too_long.reason.contains("1024"), "{}", too_long.reason);
        assert!(UnkeyedEntry::unless_key(b"no-bar").is_err());
    }
}
