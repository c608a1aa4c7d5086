//! The Redis store's listing and purge, for operators: `SCAN` over the store's keys, on every
//! primary of a cluster.
//!
//! **Listing.** A page is one or more `SCAN`s (at most [`SCANS_PER_PAGE`]) with `MATCH` on
//! the store's prefix and the query's prefix, both glob-escaped, and `COUNT` the room left in
//! the page; then the records are read as [`Store::get`] reads them (one `GET` each, sent
//! together on the multiplexed connection). A page may therefore be short, or empty, while
//! more remain. The store writes nothing but records under its prefix (steps live in the
//! record, wake-ups are pub/sub channels, not keys), so every key found is a record; a
//! key that is not a string, or a value that does not decode, is listed as
//! [`StoreError::Corrupt`], and a Redis key under the prefix that holds no idempotency key
//! after it (not UTF-8, too long) as an [`UnkeyedEntry`]: nothing under the prefix is hidden.
//!
//! **Cursors.** `node/scan`: the index of the primary being scanned (0 on one server;
//! primaries ordered by the lowest slot they own) and its `SCAN` cursor, or `end` once every
//! primary was scanned; then, when a scan found more keys than the page had room for, `+` and
//! each Redis key left over (after the store's prefix), hex-encoded, listed first on the next
//! page. `SCAN`'s guarantees hold: a
//! key present for the whole listing is listed, once unless the keyspace shrinks (or, on a
//! cluster, slots move) between pages.
//!
//! **Purge.** Redis deletes each record by itself, once the expiry the scripts set passes (a
//! completed record's TTL; an in-progress record's lease plus [`LEASE_GRACE`](super::LEASE_GRACE),
//! and its steps' `steps_kept_until`). That expiry is set on Redis's clock from the caller's,
//! and Redis expires keys lazily, so a record may stand for a while after it stopped
//! counting. The purge scans the store's keys and runs `purge.lua` on each, which deletes the
//! record only if, at that moment, it stopped counting at the caller's `now`.
//!
//! **Purging from a cursor.** [`Inventory::purge_expired_from`] goes on from its cursor, the
//! listing's (one rule moves both on): it judges the keys the cursor carries, then `SCAN`s on
//! from the primary and `SCAN` cursor it names, at most [`SCANS_PER_PAGE`] scans a call, and
//! stops once `batch` records went. A `SCAN` cursor can't point inside a reply, and a reply
//! may hold more records than the batch has deletions left: those not judged yet are carried
//! in the cursor it returns (`+` and their hex-encoded keys), and the next call judges them
//! first. Each key is thus judged once in a pass, and a purge of many batches scans the
//! keyspace once, not once per batch. Its scans ask `COUNT` [`MAX_COUNT`], not the batch:
//! a small batch would otherwise take many small scans (one round trip each) for the same
//! pass, and a reply may hold more keys than its `COUNT` anyway (a hash bucket is returned
//! whole; a rehashing table gives both tables' buckets), so what a call stops inside must be
//! carried all the same. The price is a cursor that may carry up to a reply's keys. A record
//! reserved again between the scan and its `purge.lua` is kept: the script judges it then.
//! [`Inventory::purge_expired`] purges from the start the same way, until `batch` went.

use async_trait::async_trait;
use futures_util::future::join_all;
use idem_core::store::{Inventory, ListPage, ListQuery, PurgeProgress, UnkeyedEntry};
use idem_core::{
    store::{Store, Timestamp, LEASE_GRACE},
    Key, StoreError,
};
use redis::Value;

use super::error::{is_connection_error, store_error};
use super::replies::Reply;
use super::scripts::SCRIPTS;
use super::store::RedisStore;

/// The most `SCAN` requests one page sends before it returns, short or empty if it must.
const SCANS_PER_PAGE: usize = 16;

/// The largest `COUNT` of a scan.
const MAX_COUNT: usize = 1000;

/// How many records a purge judges at once.
const PURGE_AT_ONCE: u64 = 64;

#[async_trait]
impl Inventory for RedisStore {
    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let limit = query.limit.max(1) as usize;
        let mut cursor = match &query.cursor {
            Some(text) => Cursor::parse(text)?,
            None => Cursor::START,
        };
        let pattern = format!(
            "{}{}*",
            glob_escape(&self.record_prefix()),
            glob_escape(&query.prefix)
        );
        let take = cursor.pending.len().min(limit);
        let mut keys: Vec<Vec<u8>> = cursor.pending.drain(..take).collect();
        let primaries = match cursor.at {
            Some(_) if keys.len() < limit => self.primaries().await?,
            _ => Vec::new(),
        };
        for _ in 0..SCANS_PER_PAGE {
            if cursor.at.is_none() || keys.len() >= limit {
                break;
            }
            let room = limit - keys.len();
            let mut found = self
                .scan_on(&mut cursor, &primaries, &pattern, room)
                .await?;
            if found.len() > room {
                cursor.pending = found.split_off(room);
            }
            keys.extend(found);
        }
        let (keys, unkeyed): (Vec<_>, Vec<_>) = keys
            .iter()
            .map(|name| UnkeyedEntry::unless_key(name))
            .partition(Result::is_ok);
        let keys: Vec<Key> = keys.into_iter().filter_map(Result::ok).collect();
        let unkeyed: Vec<UnkeyedEntry> = unkeyed.into_iter().filter_map(Result::err).collect();
        let records = join_all(keys.iter().map(|key| Store::get(self, key))).await;
        let mut listed = Vec::with_capacity(keys.len());
        for (key, record) in keys.into_iter().zip(records) {
            match record {
                Ok(Some(record)) => listed.push((key, Ok(record))),
                // Deleted since the scan.
                Ok(None) => {}
                Err(corrupt @ StoreError::Corrupt(_)) => listed.push((key, Err(corrupt))),
                Err(error) => return Err(error),
            }
        }
        Ok(ListPage::new(listed, cursor.encode()).with_unkeyed(unkeyed))
    }

    /// Purges from the start ([`purge_expired_from`](Inventory::purge_expired_from) with no
    /// cursor) until `batch` records went or every key was judged.
    async fn purge_expired(&self, now: Timestamp, batch: u32) -> Result<u64, StoreError> {
        let mut purged = 0;
        let mut cursor = None;
        while purged < u64::from(batch) {
            let left = batch - u32::try_from(purged).unwrap_or(batch);
            let progress = self
                .purge_expired_from(now, left, cursor.as_deref())
                .await?;
            purged += progress.deleted;
            match progress.cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok(purged)
    }

    /// Goes on from `cursor` (a listing's cursor, or one this returned): judges the keys it
    /// carries, then `SCAN`s on from where it stands (at most 16 scans), and
    /// stops once `batch` records went, with the keys of the last scan it did not judge carried
    /// in the cursor it returns (see the module docs).
    async fn purge_expired_from(
        &self,
        now: Timestamp,
        batch: u32,
        cursor: Option<&str>,
    ) -> Result<PurgeProgress, StoreError> {
        let batch = u64::from(batch.max(1));
        let mut cursor = match cursor {
            Some(text) => Cursor::parse(text)?,
            None => Cursor::START,
        };
        let pattern = format!("{}*", glob_escape(&self.record_prefix()));
        let now_arg = now.as_millis().to_string();
        let abandoned_before = (now - LEASE_GRACE).as_millis().to_string();
        let args: [&[u8]; 2] = [now_arg.as_bytes(), abandoned_before.as_bytes()];
        let primaries = match cursor.at {
            Some(_) => self.primaries().await?,
            None => Vec::new(),
        };
        let mut purged = 0;
        let mut scans = 0;
        loop {
            // The keys a previous call or scan left unjudged come first.
            let mut unjudged = std::mem::take(&mut cursor.pending);
            if unjudged.is_empty() {
                if cursor.at.is_none() || scans == SCANS_PER_PAGE {
                    break;
                }
                scans += 1;
                unjudged = self
                    .scan_on(&mut cursor, &primaries, &pattern, MAX_COUNT)
                    .await?;
                // Only records are judged: what holds no key was not written by idem.
                unjudged.retain(|name| UnkeyedEntry::unless_key(name).is_ok());
            }
            let mut rest = unjudged.as_slice();
            while !rest.is_empty() && purged < batch {
                // Never more scripts than deletions left in the batch.
                let at_once = (batch - purged).min(PURGE_AT_ONCE) as usize;
                let (now_judged, later) = rest.split_at(rest.len().min(at_once));
                rest = later;
                let keys = now_judged
                    .iter()
                    .filter_map(|name| UnkeyedEntry::unless_key(name).ok())
                    .collect::<Vec<Key>>();
                let purges = keys.iter().map(|key| self.eval(&SCRIPTS.purge, key, &args));
                for reply in join_all(purges).await {
                    match reply? {
                        Reply::Ok => purged += 1,
                        Reply::Lost => {}
                        other => {
                            return Err(StoreError::backend(format!(
                                "unexpected reply to purge: {other:?}"
                            )))
                        }
                    }
                }
            }
            if purged == batch {
                cursor.pending = rest.to_vec();
                break;
            }
        }
        Ok(PurgeProgress::new(purged, cursor.encode()))
    }
}

impl RedisStore {
    /// What the Redis key of every record of this store starts with: the escaped prefix, its
    /// delimiter and the empty hash tag ([`RedisStore::redis_key`]).
    fn record_prefix(&self) -> String {
        let probe = Key::parse("|").expect("`|` is a key's text");
        let mut name = self.redis_key(&probe);
        name.pop();
        name
    }

    /// The slot of each primary to scan, in a stable order: on a cluster, the lowest slot each
    /// primary owns, by slot; on one server, the server (`None`).
    async fn primaries(&self) -> Result<Vec<Option<u16>>, StoreError> {
        if !self.conn.is_cluster() {
            return Ok(vec![None]);
        }
        let mut slots_cmd = redis::cmd("CLUSTER");
        slots_cmd.arg("SLOTS");
        let reply = self.query_node(&slots_cmd, None, "CLUSTER SLOTS").await?;
        primaries_of(reply)
    }

    /// One `SCAN` from where `cursor` stands, moving it on: to the next primary once this
    /// one's scan is over, to the end after the last. Returns the Redis keys it found (after
    /// the store's prefix), sorted. The one rule of a cursor's progress, for the listing and
    /// the purge alike.
    async fn scan_on(
        &self,
        cursor: &mut Cursor,
        primaries: &[Option<u16>],
        pattern: &str,
        count: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let Some((node, scan)) = cursor.at else {
            return Ok(Vec::new());
        };
        let Some(&slot) = primaries.get(node) else {
            return Err(StoreError::rejected(format!(
                "the cursor names primary {node}, and the cluster has {}: its primaries \
                 changed, start over",
                primaries.len()
            )));
        };
        let (next, mut found) = self.scan(slot, scan, pattern, count).await?;
        cursor.at = match next {
            0 if node + 1 < primaries.len() => Some((node + 1, 0)),
            0 => None,
            next => Some((node, next)),
        };
        found.sort_unstable();
        Ok(found)
    }

    /// One `SCAN` on the primary of `slot` from `scan`: the next cursor (0 at the end) and the
    /// Redis keys it found under this store's prefix, each without the prefix (a record's key,
    /// or bytes that are none).
    async fn scan(
        &self,
        slot: Option<u16>,
        scan: u64,
        pattern: &str,
        count: usize,
    ) -> Result<(u64, Vec<Vec<u8>>), StoreError> {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(scan)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count.clamp(1, MAX_COUNT));
        let reply = self.query_node(&cmd, slot, "SCAN").await?;
        let unexpected = || StoreError::backend(format!("unexpected reply to SCAN: {reply:?}"));
        let Value::Array(items) = &reply else {
            return Err(unexpected());
        };
        let (next, names) = match items.as_slice() {
            [Value::BulkString(next), Value::Array(names)] => (next, names),
            _ => return Err(unexpected()),
        };
        let next = std::str::from_utf8(next)
            .ok()
            .and_then(|next| next.parse().ok())
            .ok_or_else(unexpected)?;
        let prefix = self.record_prefix();
        let keys = names
            .iter()
            .filter_map(|name| match name {
                // A name outside the prefix is one `MATCH` should not have let through.
                Value::BulkString(name) => name.strip_prefix(prefix.as_bytes()).map(<[u8]>::to_vec),
                _ => None,
            })
            .collect();
        Ok((next, keys))
    }

    /// Sends a keyless command to the primary of `slot` (any node for `None`), retrying once
    /// if the connection failed.
    async fn query_node(
        &self,
        cmd: &redis::Cmd,
        slot: Option<u16>,
        what: &str,
    ) -> Result<Value, StoreError> {
        let mut conn = self.conn.clone();
        let mut result = self.counter.query_node(&mut conn, cmd, slot).await;
        if result.as_ref().is_err_and(is_connection_error) {
            result = self.counter.query_node(&mut conn, cmd, slot).await;
        }
        result.map_err(|error| store_error(error, what))
    }
}

/// `text` with the characters of Redis's glob patterns (`*?[]\`) escaped, to match literally.
fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// The lowest slot of each primary in a `CLUSTER SLOTS` reply, in order: entries
/// `[start, end, [host, port, ...], replicas...]`, a primary by its host and port.
fn primaries_of(reply: Value) -> Result<Vec<Option<u16>>, StoreError> {
    let unexpected = || StoreError::backend("unexpected reply to CLUSTER SLOTS");
    let Value::Array(ranges) = reply else {
        return Err(unexpected());
    };
    let mut lowest: Vec<(Vec<Value>, u16)> = Vec::new();
    for range in ranges {
        let Value::Array(range) = range else {
            return Err(unexpected());
        };
        let (Some(Value::Int(start)), Some(Value::Array(primary))) = (range.first(), range.get(2))
        else {
            return Err(unexpected());
        };
        let start = u16::try_from(*start).map_err(|_| unexpected())?;
        let node: Vec<Value> = primary.iter().take(2).cloned().collect();
        match lowest.iter_mut().find(|(known, _)| *known == node) {
            Some((_, slot)) => *slot = (*slot).min(start),
            None => lowest.push((node, start)),
        }
    }
    let mut slots: Vec<u16> = lowest.into_iter().map(|(_, slot)| slot).collect();
    slots.sort_unstable();
    Ok(slots.into_iter().map(Some).collect())
}

/// Where a listing, or a purge, stands.
#[derive(Debug, PartialEq, Eq)]
struct Cursor {
    /// The primary being scanned and its `SCAN` cursor; `None` once every one was.
    at: Option<(usize, u64)>,
    /// Redis keys (after the store's prefix) a scan found that did not fit in their page (or
    /// that a purge's batch left unjudged), listed (or judged) first on the next.
    pending: Vec<Vec<u8>>,
}

impl Cursor {
    /// A listing's (or a purge's) start: the first primary, from the beginning.
    const START: Cursor = Cursor {
        at: Some((0, 0)),
        pending: Vec::new(),
    };

    /// The cursor of the page that follows, or `None` when the listing is over.
    fn encode(&self) -> Option<String> {
        let mut text = match self.at {
            Some((node, scan)) => format!("{node}/{scan}"),
            None if self.pending.is_empty() => return None,
            None => "end".to_owned(),
        };
        for key in &self.pending {
            text.push('+');
            for byte in key {
                text.push_str(&format!("{byte:02x}"));
            }
        }
        Some(text)
    }

    /// Reads a cursor [`encode`](Self::encode) wrote.
    fn parse(text: &str) -> Result<Cursor, StoreError> {
        let invalid = || StoreError::rejected(format!("`{text}` is no cursor of a Redis listing"));
        let mut parts = text.split('+');
        let at = match parts.next().ok_or_else(invalid)? {
            "end" => None,
            position => {
                let (node, scan) = position.split_once('/').ok_or_else(invalid)?;
                Some((
                    node.parse().map_err(|_| invalid())?,
                    scan.parse().map_err(|_| invalid())?,
                ))
            }
        };
        let pending = parts
            .map(|hex| {
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(invalid)
            })
            .collect::<Result<_, _>>()?;
        Ok(Cursor { at, pending })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        let key = |text: &str| text.as_bytes().to_vec();
        for cursor in [
            Cursor::START,
            Cursor {
                at: Some((2, 123_456)),
                pending: vec![key("ns|f|-|a+b"), key("ns|f|-|ü\n*"), b"ns|\xff".to_vec()],
            },
            Cursor {
                at: None,
                pending: vec![key("ns|#00ff")],
            },
        ] {
            let text = cursor.encode().expect("more to list");
            assert_eq!(Cursor::parse(&text).unwrap(), cursor, "{text}");
        }
        let over = Cursor {
            at: None,
            pending: Vec::new(),
        };
        assert_eq!(over.encode(), None);
        for bad in ["", "x", "1/", "/2", "0/1+zz", "0/1+0", "0/1+abc"] {
            assert!(Cursor::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(
            glob_escape("a*b?c[d]e\\f{}|%"),
            "a\\*b\\?c\\[d\\]e\\\\f{}|%"
        );
    }

    #[test]
    fn each_primary_is_scanned_once_by_its_lowest_slot() {
        let node = |host: &str, port: i64| {
            Value::Array(vec![
                Value::BulkString(host.into()),
                Value::Int(port),
                Value::BulkString(format!("id-{port}").into()),
            ])
        };
        let range = |start: i64, end: i64, primary: Value| {
            Value::Array(vec![Value::Int(start), Value::Int(end), primary])
        };
        let reply = Value::Array(vec![
            range(10_923, 16_383, node("127.0.0.1", 7002)),
            range(100, 5_460, node("127.0.0.1", 7000)),
            range(5_461, 10_922, node("127.0.0.1", 7001)),
            range(0, 99, node("127.0.0.1", 7000)),
        ]);
        assert_eq!(
            primaries_of(reply).unwrap(),
            vec![Some(0), Some(5_461), Some(10_923)]
        );
        assert!(primaries_of(Value::Nil).is_err());
    }
}
