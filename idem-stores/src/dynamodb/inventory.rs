//! The DynamoDB store's listing, for operators: a `Scan` a page, and a purge of the items that
//! stopped counting, each deleted on the condition that it still has.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use idem_core::store::{Inventory, ListPage, ListQuery, PurgeProgress, UnkeyedEntry};
use idem_core::{
    store::{Record, Timestamp, LEASE_GRACE_MS},
    Key, StoreError,
};

use super::codec::{self, Item, COMPLETED, IN_PROGRESS};
use super::pages::PageRequest;
use super::DynamoDbStore;

/// A listed row or item: a key and its record, or an entry stored under no key.
type Listed = Result<(Key, Result<Record, StoreError>), UnkeyedEntry>;

/// Where the store's log lines go.
const TARGET: &str = idem_protocol::log::DYNAMODB;

/// Whether an item stopped counting at `:now`: a completed record past its expiry, or an
/// in-progress record abandoned ([`InProgress::is_abandoned`](idem_core::store::InProgress::is_abandoned)):
/// its lease passed at or before `:abandoned` (now less the lease grace), and its steps, if it
/// has any, are kept no later than now. The expiry's type is checked first, as the reservation
/// checks it, so an ill-typed item never counts as expired; so does one with steps and no
/// kept-until instant, which the store reads as malformed.
const EXPIRED: &str = "(attribute_type(#lu, :number) AND (\
     (#st = :completed AND #lu <= :now) \
     OR (#st = :in_progress AND #lu <= :abandoned \
         AND (attribute_not_exists(#steps) OR size(#steps) = :zero OR #kept <= :now))))";

/// Pages in the table's order: each page is one consistent `Scan` (a `Query` of the one
/// partition when the sort key holds the records' keys) that reads up to the query's limit of
/// items and keeps those whose stored key starts with the store's prefix and the query's
/// (`begins_with`), so a page may hold fewer records than the limit, or none, while more
/// remain. The cursor is the stored key of the last item read (`LastEvaluatedKey`), where the
/// next page starts (`ExclusiveStartKey`).
#[async_trait]
impl Inventory for DynamoDbStore {
    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let store_prefix = self.stored_prefix();
        let page = self
            .page(PageRequest {
                prefix: format!("{store_prefix}{}", query.prefix),
                filter: None,
                names: HashMap::new(),
                values: Item::new(),
                start: self.start_key(query.cursor.as_deref()),
                limit: Some(query.limit),
                keys_only: false,
            })
            .await?;
        let mut records = Vec::new();
        let mut unkeyed = Vec::new();
        for item in page.items {
            match self.listed(&store_prefix, item) {
                Some(Ok(listed)) => records.push(listed),
                Some(Err(entry)) => unkeyed.push(entry),
                None => {}
            }
        }
        Ok(ListPage::new(records, self.stored_key(page.next.as_ref())).with_unkeyed(unkeyed))
    }

    /// Scans the store's items (those under its prefix) for expired ones and deletes each on
    /// the condition that it is still expired at `now`, so an item renewed, completed or
    /// reserved again since the scan read it is kept: a failed condition is no error and is
    /// not counted. Deletes one at a time until `batch` are deleted or the scan ends.
    async fn purge_expired(&self, now: Timestamp, batch: u32) -> Result<u64, StoreError> {
        let mut deleted = 0;
        let mut start = None;
        while deleted < u64::from(batch) {
            let page = self.expired_keys(now, start, None).await?;
            for key in page.keys {
                if deleted == u64::from(batch) {
                    break;
                }
                if self.delete_expired(key, now).await? {
                    deleted += 1;
                }
            }
            match page.next {
                Some(next) => start = Some(next),
                None => break,
            }
        }
        Ok(deleted)
    }

    /// One consistent `Scan` page that reads up to `batch` of the store's items from the
    /// partition key `cursor` on, and deletes the expired ones among them as
    /// [`purge_expired`](Inventory::purge_expired) does. A page reads no more items than the
    /// batch may delete, so the call never stops inside a page, and the cursor is where the
    /// page ended (`LastEvaluatedKey`): a purge that goes on from it reads each item once.
    async fn purge_expired_from(
        &self,
        now: Timestamp,
        batch: u32,
        cursor: Option<&str>,
    ) -> Result<PurgeProgress, StoreError> {
        let page = self
            .expired_keys(now, self.start_key(cursor), Some(batch))
            .await?;
        let mut deleted = 0;
        for key in page.keys {
            if self.delete_expired(key, now).await? {
                deleted += 1;
            }
        }
        Ok(PurgeProgress::new(
            deleted,
            self.stored_key(page.next.as_ref()),
        ))
    }
}

/// One page of the purge's scan.
struct ExpiredPage {
    /// The stored keys of the expired items it found.
    keys: Vec<String>,
    /// Where the next page starts, if there is one.
    next: Option<Item>,
}

impl DynamoDbStore {
    /// The text every partition key of this store starts with: its key prefix, escaped and
    /// delimited as [`Key::with_prefix`] writes it.
    fn stored_prefix(&self) -> String {
        let key = Key::parse("|").expect("`|` is a key");
        let mut stored = self.item_key(&key);
        stored.truncate(stored.len() - key.as_str().len());
        stored
    }

    /// The `ExclusiveStartKey` of a page that starts after the item `cursor` names.
    fn start_key(&self, cursor: Option<&str>) -> Option<Item> {
        cursor.map(|cursor| self.table_key().primary_key(cursor))
    }

    /// The stored key in `key` (an item, or a `LastEvaluatedKey` as a cursor).
    fn stored_key(&self, key: Option<&Item>) -> Option<String> {
        self.table_key().stored_key(key?)
    }

    /// The key and record of `item`; an [`UnkeyedEntry`] for an item that holds no idempotency
    /// key after the store's prefix (written by something else than idem, or too long), listed
    /// all the same; `None` for an item outside the prefix, which the scan's filter drops.
    fn listed(&self, store_prefix: &str, item: Item) -> Option<Listed> {
        let stored = self.stored_key(Some(&item))?;
        let text = stored.strip_prefix(store_prefix)?;
        Some(match UnkeyedEntry::unless_key(text.as_bytes()) {
            Ok(key) => Ok((key, self.decode(item))),
            Err(entry) => {
                tracing::warn!(target: TARGET, key = stored, reason = entry.reason, "an item that holds no idempotency key is listed without one");
                Err(entry)
            }
        })
    }

    /// One consistent page of the store's items expired at `now`, their stored keys only; a
    /// page reads at most `limit` items, when given.
    async fn expired_keys(
        &self,
        now: Timestamp,
        start: Option<Item>,
        limit: Option<u32>,
    ) -> Result<ExpiredPage, StoreError> {
        let page = self
            .page(PageRequest {
                prefix: self.stored_prefix(),
                filter: Some(EXPIRED.to_owned()),
                names: self.expired_names(),
                values: expired_values(now),
                start,
                limit,
                keys_only: true,
            })
            .await?;
        Ok(ExpiredPage {
            keys: page
                .items
                .iter()
                .filter_map(|item| self.stored_key(Some(item)))
                .collect(),
            next: page.next,
        })
    }

    /// Deletes the item under the stored key `key` if it is still expired at `now`: `false`
    /// when it is not (any more), or is gone.
    async fn delete_expired(&self, key: String, now: Timestamp) -> Result<bool, StoreError> {
        let result = self
            .client()
            .delete_item()
            .table_name(self.table())
            .set_key(Some(self.table_key().primary_key(&key)))
            .condition_expression(EXPIRED)
            .set_expression_attribute_names(Some(self.expired_names()))
            .set_expression_attribute_values(Some(expired_values(now)))
            .send()
            .await;
        self.deleted_or_failed(result)
    }

    /// The attribute names of [`EXPIRED`], as builders take them (extended by the page's
    /// own, since a request may name no attribute it does not use).
    fn expired_names(&self) -> HashMap<String, String> {
        let names = self.names();
        [
            ("#st", &names.state),
            ("#lu", &names.live_until),
            ("#steps", &names.steps),
            ("#kept", &names.steps_kept_until),
        ]
        .into_iter()
        .map(|(placeholder, name)| (placeholder.to_owned(), name.clone()))
        .collect()
    }
}

/// The values of [`EXPIRED`] at `now`. Before the lease grace has passed since the epoch
/// nothing is abandoned yet: the threshold is then -1, below every lease.
fn expired_values(now: Timestamp) -> Item {
    let abandoned = i128::from(now.as_millis()) - i128::from(LEASE_GRACE_MS);
    Item::from([
        (":completed".to_owned(), AttributeValue::S(COMPLETED.into())),
        (
            ":in_progress".to_owned(),
            AttributeValue::S(IN_PROGRESS.into()),
        ),
        (":number".to_owned(), AttributeValue::S("N".into())),
        (":now".to_owned(), codec::time(now)),
        (
            ":abandoned".to_owned(),
            AttributeValue::N(abandoned.max(-1).to_string()),
        ),
        (":zero".to_owned(), codec::number(0)),
    ])
}
