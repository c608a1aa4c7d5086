//! The Redis store: idempotency records in Redis, Valkey or a Redis Cluster.
//!
//! Needs Redis 5 or later (or any Valkey): the scripts read the server's clock (`TIME`) before
//! writing, which older servers allow only with script effects replication.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use idem_stores::redis::RedisStore;
//!
//! let store = RedisStore::builder(redis::Client::open("redis://127.0.0.1:6379")?)
//!     .prefix("billing:")
//!     .connect()
//!     .await?;
//! let idem = idem_core::Idempotency::new(store);
//! idem_core::install(idem);
//! # Ok(()) }
//! ```
//!
//! On a Redis Cluster (feature `redis-cluster`), connect with
//! `RedisStore::connect_cluster`: every request touches one key and names it as the script's
//! only key, so the cluster client sends it to the node that owns the key's slot.
//!
//! The store runs on one multiplexed connection (a `redis::aio::ConnectionManager`): many
//! concurrent calls share it, and it reconnects by itself when the server restarts. A request
//! that fails because the connection dropped is sent once more on the new connection (every
//! script below is safe to repeat); if the server stays unreachable the call fails closed with
//! [`Error::Store`](idem_core::Error::Store) and the function does not run.
//!
//! # Round trips
//!
//! | call | requests |
//! |---|---|
//! | fresh key: reserve, then complete | 2 |
//! | replay of a completed call | 1 |
//! | duplicate while the first runs (`Error::InProgress`) | 1 |
//! | `Err` that releases the key: reserve, then release | 2 |
//!
//! Scripts are sent by SHA-1 (`EVALSHA`); the first time a server sees one (after a restart,
//! say) it answers `NOSCRIPT` and the store sends the source with `EVAL`, one extra round trip
//! per script and server. [`RedisStore::round_trips`] counts every request.
//!
//! # Record layout
//!
//! A record is one hash under `prefix + key` (the key as [`idem_core::Key`] encodes it, e.g.
//! `idem|payments::charge|-|order-42`). Every operation touches that one key only, so the
//! store works on a Redis Cluster.
//!
//! | field | in progress | completed | content |
//! |---|---|---|---|
//! | `state` | `in_progress` | `completed` | |
//! | `fingerprint` | ✓ | ✓ | SHA-256 of the arguments, 64 lower-case hex digits |
//! | `owner` | ✓ | ✓ | the owner token; kept on completion so a repeated completion is recognised |
//! | `lease_until` | ✓ | | lease deadline, decimal milliseconds since the Unix epoch |
//! | `clock_offset` | ✓ | | the caller's clock minus Redis's clock (`TIME`) at reservation, in ms |
//! | `outcome` | | ✓ | `ok` or `err` |
//! | `body` | | ✓ | the serialised value (JSON bytes) |
//! | `expires_at` | | ✓ | end of the TTL, decimal milliseconds since the Unix epoch |
//!
//! Times are the engine's (its [`Clock`](idem_core::Clock)), passed in by the caller; the
//! scripts compare them exactly, as decimal strings. The key also gets an expiry (`PEXPIRE`) so
//! that Redis cleans up on its own: the remaining TTL for a completed record, the remaining
//! lease plus [`LEASE_GRACE`] for an in-progress one. That expiry is only clean-up: every read
//! judges liveness against the caller's `now`, so a late Redis expiry never revives a record,
//! and a [`ManualClock`](idem_core::ManualClock) can expire records in tests. Where a script
//! knows no caller time (complete, renew), it turns the deadline into an expiry with the
//! `clock_offset` stored at reservation.
//!
//! # Scripts
//!
//! Each script starts with shared helpers (`lua/common.lua`) and replies with an array whose
//! first element says what happened; `{'corrupt', reason}` becomes
//! [`StoreError::Corrupt`](idem_core::StoreError::Corrupt), as does a key of another type.
//!
//! - **reserve** (`now, owner, fingerprint, lease_until, expiry, abandoned_before`): writes the
//!   in-progress record if the key is absent, holds a completed record with `expires_at <= now`,
//!   or holds an in-progress record whose `lease_until <= now` with the same fingerprint, or
//!   with any fingerprint once `lease_until <= abandoned_before` (`now` less
//!   [`LEASE_GRACE`]); a takeover replies with the previous owner. A record already owned by this owner (a retried request)
//!   counts as reserved. Otherwise it writes nothing and replies with the record's fields, so a
//!   replay, a conflict and a mismatch each take this one round trip.
//! - **complete** (`owner, fingerprint, outcome, body, expires_at`): replaces the owner's
//!   in-progress record with the completed one; `{'lost'}` if the key is absent, completed by
//!   someone else, or held by another owner. A record this owner already completed replies
//!   `{'ok'}` again.
//! - **release** (`owner`): deletes the owner's in-progress record, else `{'lost'}`.
//! - **renew** (`owner, lease_until, grace`): moves the owner's lease and the key's expiry,
//!   else `{'lost'}`.
//!
//! Reading a record without changing it ([`Store::get`](idem_core::Store::get)) is a plain
//! `HGETALL`; [`Store::delete`](idem_core::Store::delete) is `DEL`.

mod codec;
mod connection;
mod scripts;
mod store;

pub use store::{RedisStore, RedisStoreBuilder, LEASE_GRACE};

/// The `redis` crate this store is built on, for building clients and connection settings.
pub use ::redis as client;
