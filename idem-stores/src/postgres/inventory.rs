//! The PostgreSQL store's listing, for operators: its rows in the order of the primary key,
//! one statement a page, and its purge.

use async_trait::async_trait;
use idem_core::store::{Inventory, ListPage, ListQuery, PurgeProgress, UnkeyedEntry};
use idem_core::{
    store::{Record, Timestamp},
    Key, StoreError,
};
use sqlx::postgres::PgRow;
use sqlx::Row;

use super::codec;
use super::store::abandoned_before;
use super::PostgresStore;

/// A listed row or item: a key and its record, or an entry stored under no key.
type Listed = Result<(Key, Result<Record, StoreError>), UnkeyedEntry>;

/// Where the store's log lines go.
const TARGET: &str = idem_protocol::log::POSTGRES;

/// Pages in the order of the `key` column, under its collation: a cursor is the stored key
/// (store prefix included) of the last row of the previous page, and the next page starts after
/// it. Where that collation compares bytes (`C`, as the test clusters and many deployments
/// have it), a page is a range of the primary key's index; under any other (`en_US.UTF-8`,
/// ICU), where the keys with one prefix need not sort together, a page walks the index from
/// the cursor and keeps the keys that start with the prefix (`starts_with`, which compares
/// bytes, so `%`, `_` and `\` in a key are plain characters).
#[async_trait]
impl Inventory for PostgresStore {
    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let store_prefix = self.stored_prefix();
        let prefix = format!("{store_prefix}{}", query.prefix);
        let limit = query.limit.max(1);
        let rows = self
            .page_rows(&prefix, query.cursor.as_deref().unwrap_or(""), limit)
            .await?;
        let more = rows.len() > limit as usize;
        let mut records = Vec::with_capacity(rows.len().min(limit as usize));
        let mut unkeyed = Vec::new();
        let mut last = None;
        for row in rows.iter().take(limit as usize) {
            let stored: String = row
                .try_get("key")
                .map_err(|error| StoreError::Corrupt(format!("column `key`: {error}")))?;
            match listed(&store_prefix, &stored, row) {
                Some(Ok(listed)) => records.push(listed),
                Some(Err(entry)) => unkeyed.push(entry),
                None => {}
            }
            last = Some(stored);
        }
        Ok(ListPage::new(records, last.filter(|_| more)).with_unkeyed(unkeyed))
    }

    /// [`PostgresStore::purge_expired`]: one statement, whose `DELETE` judges each row on its
    /// latest version, so a row renewed, completed or reserved again since it expired is kept.
    /// It covers the store's own rows only, those whose key starts with its prefix.
    async fn purge_expired(&self, now: Timestamp, batch: u32) -> Result<u64, StoreError> {
        PostgresStore::purge_expired(self, now, batch).await
    }

    /// One statement that judges the store's rows in the order of the primary key from the
    /// key `cursor` names on, and deletes up to `batch` that stopped counting, as
    /// [`purge_expired`](Inventory::purge_expired) does; the cursor it returns is the greatest
    /// key it took, every row before it having been judged. See the module docs.
    async fn purge_expired_from(
        &self,
        now: Timestamp,
        batch: u32,
        cursor: Option<&str>,
    ) -> Result<PurgeProgress, StoreError> {
        self.usable()?;
        let batch = batch.max(1);
        let query = sqlx::query_as::<_, (i64, Option<String>)>(&self.statements.purge_from)
            .bind(codec::millis(now))
            .bind(abandoned_before(now))
            .bind(i64::from(batch))
            .bind(self.stored_prefix())
            .bind(cursor.unwrap_or(""));
        self.count_round_trip();
        let (deleted, last) = query
            .fetch_one(self.pool())
            .await
            .map_err(|error| self.failed("purge", error))?;
        let deleted = u64::try_from(deleted).unwrap_or(0);
        // Fewer rows taken than the batch: the walk reached the end of the prefix.
        Ok(PurgeProgress::of_batch(deleted, batch, last))
    }
}

impl PostgresStore {
    /// The text every row key of this store starts with: its key prefix, escaped and delimited
    /// as [`Key::with_prefix`] writes it.
    pub(super) fn stored_prefix(&self) -> String {
        let key = Key::parse("|").expect("`|` is a key");
        let mut stored = self.row_key(&key);
        stored.truncate(stored.len() - key.as_str().len());
        stored
    }

    /// Up to `limit` rows and one more, whose keys start with `prefix` and sort after `after`.
    async fn page_rows(
        &self,
        prefix: &str,
        after: &str,
        limit: u32,
    ) -> Result<Vec<PgRow>, StoreError> {
        let fetch = i64::from(limit) + 1;
        let query = match (self.sorts_bytewise().await?, upper_bound(prefix)) {
            (true, Some(upper)) => sqlx::query(&self.statements.list_range)
                .bind(after)
                .bind(prefix)
                .bind(upper)
                .bind(fetch),
            _ => sqlx::query(&self.statements.list_walk)
                .bind(after)
                .bind(prefix)
                .bind(fetch),
        };
        self.count_round_trip();
        query
            .fetch_all(self.pool())
            .await
            .map_err(|error| self.failed("list", error))
    }

    /// Whether the `key` column compares text byte by byte, read from the catalog; `false`
    /// for a table the catalog does not know (the listing then fails on it, named).
    async fn sorts_bytewise(&self) -> Result<bool, StoreError> {
        self.usable()?;
        self.count_round_trip();
        let bytewise = sqlx::query_scalar::<_, Option<bool>>(&self.statements.list_bytewise)
            .bind(self.table())
            .fetch_optional(self.pool())
            .await
            .map_err(|error| self.failed("list", error))?;
        Ok(bytewise.flatten().unwrap_or(false))
    }
}

/// The key and record of a row whose key is `stored`; an [`UnkeyedEntry`] for a row that
/// holds no idempotency key after the store's prefix (written by something else than idem, or
/// too long), listed all the same; `None` for a row outside the prefix, which the statement
/// does not select.
fn listed(store_prefix: &str, stored: &str, row: &PgRow) -> Option<Listed> {
    let text = stored.strip_prefix(store_prefix)?;
    Some(match UnkeyedEntry::unless_key(text.as_bytes()) {
        Ok(key) => Ok((key, codec::decode(row).map(|decoded| decoded.record))),
        Err(entry) => {
            tracing::warn!(target: TARGET, key = stored, reason = entry.reason, "a row that holds no idempotency key is listed without one");
            Err(entry)
        }
    })
}

/// The least text above every text that starts with `prefix`, in the order of code points
/// (which UTF-8's byte order is): `prefix` cut after its last character that has a successor,
/// that character moved to its successor. `None` when no character has one (the prefix is
/// empty or all U+10FFFF), as nothing bounds such a prefix's texts from above.
fn upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last {
            // The surrogates are no characters: the one after U+D7FF is U+E000.
            '\u{D7FF}' => Some('\u{E000}'),
            last => char::from_u32(u32::from(last) + 1),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::upper_bound;

    /// Every text of `inside` starts with `prefix` and sorts below the bound; every text of
    /// `outside` does neither or sorts at or above it.
    fn bounds(prefix: &str, inside: &[&str], outside: &[&str]) {
        let upper = upper_bound(prefix).expect("a bound");
        for text in inside {
            assert!(
                text.starts_with(prefix) && *text < upper.as_str(),
                "{text:?}"
            );
        }
        for text in outside {
            assert!(
                *text < prefix || *text >= upper.as_str(),
                "{text:?} is in [{prefix:?}, {upper:?})"
            );
        }
    }

    #[test]
    fn the_bound_follows_the_last_character() {
        assert_eq!(upper_bound("idem|").as_deref(), Some("idem}"));
        assert_eq!(upper_bound("a%").as_deref(), Some("a&"));
        bounds(
            "|idem|",
            &["|idem|", "|idem|x", "|idem|\u{10FFFF}"],
            &["|idem}", "|idem"],
        );
        bounds("é", &["é", "éa", "é\u{10FFFF}"], &["ê", "e", "f"]);
    }

    #[test]
    fn the_last_characters_without_successor_are_dropped() {
        assert_eq!(upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(upper_bound("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        bounds(
            "a\u{10FFFF}",
            &["a\u{10FFFF}", "a\u{10FFFF}z"],
            &["b", "a", "az"],
        );
        assert_eq!(upper_bound("\u{10FFFF}\u{10FFFF}"), None);
        assert_eq!(upper_bound(""), None);
    }
}
