//! What a store may offer operators beyond the protocol: listing its records, purging the
//! expired ones.

use async_trait::async_trait;

use crate::{Key, Record, StoreError, Timestamp};

/// A store's listing of its records, for operators (the `idem` command,
/// [`Idempotency::list`](crate::Idempotency::list)). Optional: a store offers it through
/// [`Store::inventory`](crate::Store::inventory), and one that can't list says so by returning
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
    /// their expiry, in-progress records abandoned ([`InProgress::is_abandoned`](crate::InProgress::is_abandoned)).
    /// Each delete is conditional on the record still being expired, so a reservation that
    /// reused the key meanwhile is kept. Returns how many it deleted; fewer than `batch` means
    /// none is left. A store may delete more than `batch` at once where that costs nothing
    /// more (the memory store purges all its expired records under its shards' locks), and one
    /// whose backend expires records by itself may delete none.
    async fn purge_expired(&self, now: Timestamp, batch: u32) -> Result<u64, StoreError>;
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
}

impl ListPage {
    /// A page of `records`, followed by the page at `cursor` if there is one.
    pub fn new(records: Vec<(Key, Result<Record, StoreError>)>, cursor: Option<String>) -> Self {
        ListPage { records, cursor }
    }
}
