//! The PostgreSQL store (feature `postgres`): one row per key, each operation one statement,
//! and a completion that can commit in your own transaction.
//!
//! ```no_run
//! # async fn demo() -> Result<(), idem_core::BoxError> {
//! use idem_stores::postgres::PostgresStore;
//! // The pool is yours: URL, TLS (sqlx's `tls-*` features), size and timeouts.
//! let pool = sqlx::PgPool::connect("postgres://app@localhost/app").await?;
//! let store = PostgresStore::builder(pool).table("idempotency").build();
//! store.migrate().await?;
//! idem_core::install(idem_core::Idempotency::new(store));
//! # Ok(()) }
//! ```
//!
//! # The table
//!
//! [`PostgresStore::migrate`] creates it; teams that own their migrations run this instead
//! (shown for the defaults, `public.idem_records`):
//!
//! ```sql
//! CREATE TABLE IF NOT EXISTS "public"."idem_records" (
//!     key             text PRIMARY KEY,
//!     state           text NOT NULL,
//!     owner           text NOT NULL,
//!     fingerprint     text NOT NULL,
//!     live_until_ms   bigint NOT NULL,
//!     fencing_token   bigint,
//!     attempt         bigint,
//!     outcome         text,
//!     body            bytea,
//!     taken_over_from text,
//!     steps           jsonb,
//!     steps_kept_until bigint,
//!     created_at      timestamptz NOT NULL DEFAULT now(),
//!     updated_at      timestamptz NOT NULL DEFAULT now()
//! );
//! CREATE INDEX IF NOT EXISTS "idem_records_live_until_idx"
//!     ON "public"."idem_records" (live_until_ms);
//! ```
//!
//! Schema and table names are at most 63 bytes ([`MAX_NAME_BYTES`]), PostgreSQL's limit. The
//! index is `{table}_live_until_idx`, or, when that would pass 63 bytes, the table's first
//! bytes, `_`, a 16-digit hexadecimal digest of its whole name (64-bit FNV-1a) and
//! `_live_until_idx`, so that PostgreSQL never cuts it to the name of another relation.
//!
//! A table created before the step columns existed needs them added; `migrate` does it (only
//! when they are missing, since `ALTER TABLE` locks the table), teams that own their
//! migrations run:
//!
//! ```sql
//! ALTER TABLE "public"."idem_records"
//!     ADD COLUMN IF NOT EXISTS steps jsonb,
//!     ADD COLUMN IF NOT EXISTS steps_kept_until bigint;
//! ```
//!
//! | column | in-progress record | completed record |
//! |---|---|---|
//! | `key` | key prefix, `\|`, idempotency key ([`Key::with_prefix`](idem_core::Key::with_prefix)) | same |
//! | `state` | `in_progress` | `completed` |
//! | `owner` | owner token | the token of the owner that completed it |
//! | `fingerprint` | the arguments' SHA-256, hex | same |
//! | `live_until_ms` | lease deadline, ms since the epoch, from the caller's clock | expiry, same |
//! | `fencing_token`, `attempt` | the reservation's | kept from the reservation |
//! | `outcome`, `body` | null | `ok`, `err` or `aborted`; the serialised value (null when aborted) |
//! | `taken_over_from` | the owner it took the key over from, if any | kept |
//! | `steps` | null, or the recorded [steps](idem_core::step) by name: each value a JSON string of its text when it is ASCII, else `{"hex": "<its bytes>"}` | null |
//! | `steps_kept_until` | with `steps`: until when they hold the key, ms since the epoch | null |
//! | `created_at`, `updated_at` | server time, for operators | same |
//!
//! A record counts while `now < live_until_ms`, with `now` from the caller's clock, checked
//! in every statement; rows that stopped counting stay until [purged](#purging) or reused.
//!
//! # The statements
//!
//! Each operation is one statement, so one round trip, and atomic under READ COMMITTED (the
//! default isolation level):
//!
//! - **reserve**: `INSERT ... ON CONFLICT (key) DO UPDATE SET <the claim> WHERE <the row is
//!   free>` in a CTE, then `UNION ALL` the row as it stands, `SELECT ... FOR UPDATE`, when the
//!   upsert wrote nothing. The row is free when it is an expired completed record, or an
//!   in-progress record of another owner whose lease passed, with the claim's fingerprint or
//!   abandoned ([`LEASE_GRACE`](idem_core::store::LEASE_GRACE) past the lease, and no step kept past
//!   now). A takeover computes
//!   [`InProgress::taking_over`](idem_core::store::InProgress::taking_over) from the old row (the larger
//!   fencing token, the attempt counted on, the steps kept for the same fingerprint and
//!   cleared for another) and records the previous owner in `taken_over_from`; the row it
//!   returns carries the steps, so resuming costs no read. A replay, a conflict or a mismatch
//!   costs this one statement.
//!
//!   Why it is sound: PostgreSQL's `ON CONFLICT` does not read a snapshot. It either inserts
//!   or, finding a row with the key (waiting for an uncommitted one to commit or roll back),
//!   locks the row's *latest* version and judges the `WHERE` on it, so of concurrent claims on a
//!   free key exactly one writes and the others find its row. The upsert locks the row even
//!   when its `WHERE` is false, so the row cannot change before the statement ends, and the
//!   `FOR UPDATE` read returns it as it is now, not as the snapshot saw it. One case remains:
//!   a row *inserted* by a caller that committed after this statement's snapshot was taken is
//!   locked but invisible to the read, and the statement returns nothing. The store then
//!   sends a second form of the upsert, which updates the row it conflicts with in every case
//!   (to the claim when the row is free, to itself otherwise) and returns it, visible or not.
//!   That one can't come back empty, so a key whose row is deleted and inserted over and over
//!   (callers failing and releasing it in a loop) costs the loser of a race two statements,
//!   never an error. It is not the first choice because it writes a new version of the row
//!   even when it only reads it.
//! - **complete**: `UPDATE` to the completed record `WHERE owner = $owner AND state =
//!   'in_progress'`, or where the row is already this owner's completion of the same outcome
//!   (a completion retried after its answer was lost, or one made [in the caller's
//!   transaction](#completing-in-your-transaction)), whose expiry it then sets. The steps are
//!   cleared: they ended with the call.
//! - **release**: `DELETE ... WHERE owner = $owner AND state = 'in_progress'` for a row without
//!   steps; a row with steps is kept with `live_until_ms = 0`, so that only the same call may
//!   take it over (at once) until its steps expire. One statement: an `UPDATE` and a `DELETE`
//!   in two CTEs, of which exactly one matches.
//! - **record step**: `UPDATE` on the same condition, `steps = coalesce(steps, '{}') ||
//!   jsonb_build_object($name, $value)`, `steps_kept_until = greatest(steps_kept_until, $kept)`.
//! - **renew**: `UPDATE` of `live_until_ms` on the same condition.
//! - **get**, **delete**: by key.
//!
//! No row changed is [`StoreError::LeaseLost`](idem_core::StoreError::LeaseLost). A row with a
//! missing, ill-typed or out-of-range column is
//! [`StoreError::Corrupt`](idem_core::StoreError::Corrupt), naming the column. Any other
//! failure (no connection from the pool in time, the server unreachable or gone, a statement
//! timeout) is [`StoreError::Backend`](idem_core::StoreError::Backend) with a
//! [`RequestFailed`] inside, so the caller gets `idem_core::Error::Store` and the function does
//! not run.
//!
//! A call that runs the function costs two statements (reserve, then complete or release), a
//! replay, a conflict or a mismatch one, plus one renewal per third of the lease and one
//! statement per [step](idem_core::step) it records; a step replayed from the record costs
//! none. sqlx
//! prepares each statement once per connection, which costs one round trip more the first time
//! a connection sends it.
//!
//! The statements expect READ COMMITTED, PostgreSQL's default. A session whose
//! `default_transaction_isolation` is REPEATABLE READ or SERIALIZABLE turns some races on one
//! key into serialization failures, which are backend errors: the caller gets
//! `idem_core::Error::Store`, which is safe to retry, and no body runs twice.
//!
//! # Completing in your transaction
//!
//! When the function's side effect is rows in the same database, the record can be completed
//! in the same transaction, so that "done" and the rows commit or roll back together:
//! [`PostgresStore::complete_in_transaction`] marks the running call's row (found by the key
//! and fencing token of [`idem_core::context`]) completed with the value the body returns.
//!
//! ```no_run
//! # #[derive(serde::Serialize)] struct Receipt;
//! # async fn place(store: &idem_stores::postgres::PostgresStore, order: &str) -> Result<Receipt, idem_core::Error> {
//! # let db = |e: sqlx::Error| idem_core::Error::Codec(e.into());
//! // the body of `#[idempotent(key = "order", ttl = "24h")] async fn place(order: &str)`
//! let mut tx = store.pool().begin().await.map_err(db)?;
//! sqlx::query("INSERT INTO orders (id) VALUES ($1)")
//!     .bind(order)
//!     .execute(&mut *tx)
//!     .await
//!     .map_err(db)?;
//! let receipt = Receipt;
//! store
//!     .complete_in_transaction(&mut tx, &receipt, std::time::Duration::from_secs(24 * 3600))
//!     .await?;
//! tx.commit().await.map_err(db)?;
//! Ok(receipt)
//! # }
//! ```
//!
//! The engine does not know: after the body returns it completes the record as always. That
//! completion finds the row already completed by its owner with the same outcome, counts it as
//! done and sets the expiry it computed. So:
//!
//! - killed before the commit: the transaction rolls back, business rows and completion alike;
//!   the row stays in progress and a retry takes it over once the lease passes and runs the
//!   body again;
//! - killed after the commit: a retry replays the committed value;
//! - the body returns an `Err` after committing: the engine's release finds no in-progress row
//!   and changes nothing, so the committed `Ok` value is what retries get. Commit last.
//! - the body returns another value than the one it committed: the engine's completion finds a
//!   different outcome and the caller gets `Error::NotRecorded`; the committed one stands.
//!
//! The value is serialised as the engine does (`serde_json`); pass the call's TTL. The row is
//! found by the call's key, owner token and fencing token, so an owner whose key was taken
//! over changes nothing.
//!
//! A commit that takes a while (a deferred trigger, synchronous replication) holds the row
//! locked, and a lease renewal that arrives meanwhile waits for it, then finds the row
//! completed. That is no loss: the engine reads the record back, sees this call's completion,
//! stops renewing and reports the call as done; `lease_lost()` does not fire unless the lease
//! passed before the commit ended. Keep commits well inside the lease.
//!
//! # Sizing the pool
//!
//! Each statement of the store takes a connection from its pool for the statement's length.
//! A body that holds a connection from the same pool (an open transaction) while it records
//! a [step](idem_core::step) needs a second one at that moment, and the lease renewal of each
//! running call needs one every third of the lease. With a pool of one, or a pool exhausted by
//! bodies that each hold a transaction, those statements wait for a connection that only
//! their own caller can free: after the pool's acquire timeout the store fails with
//! [`RequestFailed::is_pool_exhausted`], whose message says so, and the step is
//! `Error::NotRecorded`. Give the store a pool of its own (the simplest), or size a shared
//! pool for one connection per running call that holds one, plus one per idem statement in
//! flight: twice the calls that run at once is a safe bound. `complete_in_transaction` uses
//! the caller's connection and needs none.
//!
//! # Listing
//!
//! The store offers operators its [`Inventory`](idem_core::store::Inventory)
//! ([`Idempotency::list`](idem_core::Idempotency::list), the `idem` command): rows whose keys
//! start with a prefix, in the order of the `key` column, a page per `SELECT ... WHERE key >
//! $cursor ORDER BY key LIMIT $n` (the cursor is the last row's stored key), after one read
//! of the catalog. Where the column's collation compares bytes (`C` or `POSIX`, the column's
//! or the database's), the prefix is a range of the primary key's index; under any other
//! collation, where keys that share a prefix need not sort together, the page walks the index
//! from the cursor and keeps the keys that `starts_with` the prefix. A row that cannot be
//! read is listed as [`StoreError::Corrupt`](idem_core::StoreError::Corrupt), not skipped,
//! and a row under the prefix whose key is no idempotency key after it (too long, no `|`) in
//! [`ListPage::unkeyed`](idem_core::store::ListPage::unkeyed). (A UTF-8 database holds no
//! key that is not UTF-8; under `SQL_ASCII`, a listing that meets one fails, naming the
//! `key` column.)
//!
//! # Purging
//!
//! Rows are not deleted when they stop counting. [`PostgresStore::purge_expired`] deletes
//! completed rows past their expiry and in-progress rows abandoned a
//! [`LEASE_GRACE`](idem_core::store::LEASE_GRACE) after their lease whose steps, if any, expired
//! too, at most `batch` per statement. It deletes the store's own rows only, those whose key
//! starts with its prefix (escaped and followed by `|`, as [`Key::with_prefix`](idem_core::Key::with_prefix)
//! writes it; `|` alone without a prefix): stores with other prefixes on the same table keep
//! theirs.
//!
//! It takes the rows it deletes with `FOR UPDATE SKIP LOCKED`, which skips a row that is
//! locked at that instant (a reservation, completion or renewal statement changing it, or a
//! caller's transaction that completed it and has not committed yet) and judges every other
//! row on its latest version, so a row renewed or reserved an instant earlier is kept. A
//! running call holds no lock between its statements: what keeps its row is its lease, which
//! it renews. An in-progress row is only deleted a grace after its lease passed, when any
//! caller may take it over; a call still running then finds its row gone, as it would find
//! it taken over, and its completion is refused (`Error::NotRecorded`).
//!
//! **From a cursor.** Each statement of [`PostgresStore::purge_expired`] starts over: it reads
//! the rows that look expired (under the plan the planner picks: the store's key range of the
//! primary key, the `live_until_ms` index, or the table) until it has taken `batch`, so the
//! rows it judged and kept (within the lease grace, held by their steps, locked at that
//! instant) are read again by every batch after, and, on a small table, the `DELETE` may
//! scan the whole table per batch. A purge of many batches thus reads the same rows batch
//! after batch. [`Inventory::purge_expired_from`](idem_core::store::Inventory::purge_expired_from)
//! goes on from a cursor instead, the last key it took: one statement walks the primary key
//! from there (`key > $cursor ... ORDER BY key LIMIT batch FOR UPDATE SKIP LOCKED`), deletes
//! what it took by `ctid` (the rows it holds locked), and returns how many went and the
//! greatest key taken; fewer than `batch` taken means the walk reached the end, and the
//! cursor is `None`. Called until then, it judges each row of the store once. It reads live
//! rows too, once each, where the statement above reads only what looks expired: for a
//! table of many live rows and few expired ones, one `purge_expired` is the cheaper; for a
//! purge of many batches, the cursor. A row skipped because it was locked is left for the
//! next purge.
//!
//! Run it every few minutes from a task:
//!
//! ```no_run
//! # async fn demo(store: idem_stores::postgres::PostgresStore) {
//! use idem_core::{Clock, SystemClock};
//! tokio::spawn(async move {
//!     let mut every = tokio::time::interval(std::time::Duration::from_secs(300));
//!     loop {
//!         every.tick().await;
//!         while let Ok(1000) = store.purge_expired(SystemClock.now(), 1000).await {}
//!     }
//! });
//! # }
//! ```
//!
//! or from cron, with the same statement in `psql` (times in ms since the epoch; 60 000 is the
//! lease grace):
//!
//! ```sql
//! DELETE FROM "public"."idem_records" WHERE key IN (
//!     SELECT key FROM "public"."idem_records"
//!     WHERE starts_with(key, 'PREFIX|')  -- the store's prefix; '|' for none
//!       AND ((state = 'completed' AND live_until_ms <= extract(epoch FROM now()) * 1000)
//!        OR (state = 'in_progress' AND live_until_ms <= extract(epoch FROM now()) * 1000 - 60000
//!            AND (coalesce(steps, '{}') = '{}'
//!                 OR coalesce(steps_kept_until, 0) <= extract(epoch FROM now()) * 1000)))
//!     LIMIT 1000 FOR UPDATE SKIP LOCKED);
//! ```

mod builder;
mod codec;
mod error;
mod inventory;
mod names;
mod sql;
mod steps;
mod store;
mod transaction;

pub use builder::{PostgresStoreBuilder, DEFAULT_SCHEMA, DEFAULT_TABLE};
pub use error::RequestFailed;
pub use names::MAX_NAME_BYTES;
pub use store::PostgresStore;
pub use transaction::OutsideIdempotentCall;
