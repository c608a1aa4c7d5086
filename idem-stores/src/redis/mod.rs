//! The Redis store: idempotency records in Redis, Valkey or a Redis Cluster.
//!
//! Needs Redis 7.0 or later (or Valkey): a reservation is one `SET ... NX GET`, which older
//! servers refuse. `connect` checks the server's version and says so.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use idem_stores::redis::RedisStore;
//!
//! let store = RedisStore::builder(redis::Client::open("redis://127.0.0.1:6379")?)
//!     .prefix("billing")
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
//! On a cluster:
//! - **Resharding** is safe: no script deletes a record to write it again (a slot being
//!   migrated refuses that second write), so a record survives its slot moving mid-call.
//! - **A stalled connection is replaced.** A request that times out makes the store connect
//!   to the cluster again for the requests that follow: under a reshard, the cluster
//!   connection can otherwise stay stuck with every request timing out.
//! - **Hash tags.** Redis hashes only the part of a key between its first `{` and the next
//!   `}`. A prefix such as `"{billing}:"` therefore puts every record on one slot, one node:
//!   set one only to keep the records next to other keys of yours, knowing it gives up
//!   spreading them. Braces in a key part choose nothing: every key starts, after the prefix,
//!   with an empty hash tag `{}`, which makes Redis hash the whole key, so client input such
//!   as `{hot}1` cannot pile records onto one slot.
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
//! | fresh key: reserve (`SET`), then complete | 2 |
//! | replay of a completed call (`SET` returns the record) | 1, no script |
//! | duplicate while the first runs (`Error::InProgress`), or a mismatch | 1, no script |
//! | `Err` that releases the key: reserve, then release | 2 |
//! | takeover after a lease passed, or reuse of an expired record: `SET` finds the record, the reserve script writes | 2; the recorded steps come with a takeover by the same call |
//! | each [`step`](idem_core::step) that runs | 1 more (`record_step`) |
//! | each step replayed from the record | none |
//! | `Err` after a step: reserve, steps, then release (keeps the record) | 2, plus 1 per step |
//! | with [`wait_for_replicas`](RedisStoreBuilder::wait_for_replicas) | one `WAIT` more after each reserve, recorded step and complete |
//!
//! Scripts are sent by SHA-1 (`EVALSHA`); the first time a server sees one (after a restart,
//! say) it answers `NOSCRIPT` and the store sends the source with `EVAL`, one extra round trip
//! per script and server. [`RedisStore::round_trips`] counts every request.
//!
//! # Reserving
//!
//! A reservation is one plain command, `SET key claim NX GET PX expiry`: on a free key it
//! writes the claim and its expiry at once, and exactly one of concurrent claims wins; on a
//! taken key it writes nothing and returns the record there, which the store judges by the
//! [`Store`](idem_core::store::Store) contract: the caller's own claim sent again (a lost reply) is
//! its reservation, a live record or another call's reservation that is not abandoned is
//! answered as it stands (a replay, `InProgress`, a mismatch). Only a record that may be
//! taken over or reused goes on to the reserve script, which judges again from what it reads
//! and writes atomically. A server that refuses writes refuses every `SET` before it looks at
//! the key (`OOM` at `maxmemory` under `noeviction`, `MISCONF` after a failed snapshot,
//! `NOREPLICAS` under `min-replicas-to-write`, `READONLY` on a replica); the store then reads
//! the record with `GET` and still answers replays and duplicates, and fails closed for the
//! rest.
//!
//! # Record layout
//!
//! A record is one string under the store's prefix and the key, delimited so that no prefix and
//! key pair can equal another ([`Key::with_prefix`](idem_core::Key::with_prefix)), with the
//! empty hash tag `{}` between them ([`RedisStore::redis_key`]): the prefix `billing` gives
//! `billing|{}idem|payments::charge|-|order-42`, no prefix gives
//! `|{}idem|payments::charge|-|order-42`. Every operation touches that one key only, so the
//! store works on a Redis Cluster.
//!
//! The value is `idm1` (the layout and its version), a state byte (`P` in progress, `C`
//! completed), then the fields in a fixed order, each as its length in decimal digits, `:`,
//! and its bytes, so any byte may appear in a value:
//!
//! | state | fields |
//! |---|---|
//! | `P` | fingerprint, owner, `lease_until`, fencing token, attempt, anchor, `steps_kept_until` (empty without steps), then each step's name and value |
//! | `C` | fingerprint, owner, outcome (`ok`, `err` or `aborted`), `expires_at`, body |
//!
//! - the fingerprint is the SHA-256 of the arguments, 64 lower-case hex digits;
//! - the owner is kept on completion, so a repeated completion is recognised;
//! - times are decimal milliseconds since the Unix epoch, `lease_until` 0 once released with
//!   steps; the fencing token stays below 2^53; the attempt is 1, one more per takeover by
//!   the same call;
//! - the anchor is when the key's Redis expiry falls, on the caller's clock;
//! - the body is the serialised value (JSON bytes, idem-http's binary frame, or a sealed
//!   value), empty when aborted;
//!   step values are the steps' serialised `Ok` values.
//!
//! A key holding anything else (a hash of an earlier layout, say) reads as
//! [`StoreError::Corrupt`](idem_core::StoreError::Corrupt), and the call fails closed: use a
//! new prefix, or flush the old one, when moving from an earlier layout.
//!
//! Times are the engine's (its [`Clock`](idem_core::Clock)), passed in by the caller; the
//! scripts compare them exactly, as decimal strings. The key also gets an expiry (`PX`) so
//! that Redis cleans up on its own: the remaining TTL for a completed record, the remaining
//! lease plus [`LEASE_GRACE`] for an in-progress one, and never less than its
//! `steps_kept_until`. That expiry is only clean-up: every read
//! judges liveness against the caller's `now`, so a late Redis expiry never revives a record,
//! and a [`ManualClock`](idem_core::ManualClock) can expire records in tests. Where a script
//! knows no caller time (complete, renew, record_step), it takes the anchor less the key's
//! remaining time (`PTTL`) as the caller's now. A key whose expiry an operator removed
//! (`PERSIST`) keeps none: the scripts then write it with `KEEPTTL` rather than guess the
//! caller's clock from the server's.
//!
//! # Scripts
//!
//! Every write but a reservation of a free key is one Lua script, run atomically on the key's
//! server. Each file starts with its arguments and replies; the rules are the
//! [`Store`](idem_core::store::Store) contract's, and the files are the reference for how this store
//! keeps them:
//!
//! | script | what it does |
//! |---|---|
//! | [`common.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/common.lua) | helpers prepended to every script: the layout read and written, timestamps compared exactly as decimal strings, the owner check |
//! | [`reserve.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/reserve.lua) | after a `SET` that found a record that may be taken over or reused: takes over a passed lease or reuses an expired record, or replies with the record as it now stands |
//! | [`complete.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/complete.lua) | replaces the owner's in-progress record with the completed one |
//! | [`release.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/release.lua) | deletes the owner's record, or keeps one with steps with its lease ended |
//! | [`renew.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/renew.lua) | moves the owner's lease and the key's expiry |
//! | [`record_step.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/record_step.lua) | records a step and lengthens the key's expiry to cover it |
//! | [`purge.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/purge.lua) | for operators, not the protocol: deletes a record that stopped counting at the caller's `now` |
//!
//! Scripts that end an in-progress record (complete, release, a takeover) publish on the
//! channel named like the key, which waiting callers subscribe to. A reply `{'corrupt',
//! reason}`, or a key of another type, becomes
//! [`StoreError::Corrupt`](idem_core::StoreError::Corrupt); `{'lost'}` is
//! [`StoreError::LeaseLost`](idem_core::StoreError::LeaseLost).
//!
//! Reading a record without changing it ([`Store::get`](idem_core::store::Store::get)) is a plain
//! `GET`; [`Store::delete`](idem_core::store::Store::delete) is `DEL`.
//!
//! Operators list and purge records through the store's
//! [`Inventory`](idem_core::store::Inventory) ([`Store::inventory`](idem_core::store::Store::inventory)):
//! a listing is `SCAN` with `MATCH` on the prefixes (on every primary of a cluster), a few scans
//! a page, so a page may be short or empty while more remain; a purge scans the store's keys
//! and runs `purge.lua` on each. Redis already deletes a record once the expiry above passes;
//! the purge takes those it has not deleted yet, each only if it still stopped counting.
//!
//! # Waiting for a duplicate
//!
//! A caller that waits for an in-flight duplicate (`wait = "10s"`) is woken by the
//! publication of the script that ends or releases the record, not by polling. Each store keeps one
//! subscription connection, opened on the first wait, subscribed to the channel of every key a
//! local caller waits on (the channel is named like the key; one `SUBSCRIBE` however many
//! callers wait on it). After subscribing, a waiter reads the record once (`GET`), so
//! a change just before the subscription is not missed; then it sleeps until woken, polling
//! the state every 1 to 5 s (jittered) only as a safety net should a publication be lost with
//! the connection. 100 callers waiting on one key cost the server one `SUBSCRIBE`, one `GET`
//! each, and one reserve each before and after the wake-up (`redis_waiting.rs` measures it).
//! A store made with [`RedisStore::connection_builder`] has no client to subscribe with; its
//! waiters poll the state with small reads, backing off from 10 ms to 500 ms with jitter. On a
//! Redis Cluster, publications reach every node, and the store subscribes on the first node
//! given to `RedisStore::cluster_builder`.
//!
//! # Eviction, replication and failover
//!
//! A reservation is a key like any other: a server whose `maxmemory-policy` lets it evict keys
//! may drop one under memory pressure, and a duplicate then runs the function again. The store
//! reads the policy at connect and warns through `tracing` unless it is `noeviction`
//! ([`RedisStore::eviction_policy`]).
//!
//! Redis replicates asynchronously. When a primary fails over, writes it acknowledged but had
//! not yet passed on are lost: a lost reservation lets a duplicate run at once, a lost outcome
//! lets a retry run the function again. Where a failover can happen (Sentinel, a managed
//! service, a cluster), [`RedisStoreBuilder::wait_for_replicas`] has each reservation, recorded
//! step and completion wait for replicas to acknowledge it (`WAIT`) and fails the call closed when they
//! don't; that narrows the window but does not close it, since a failover may still promote a
//! replica that missed the write. On a cluster the `WAIT` goes to the primary that holds the
//! key, one round trip: a shard that lost its replica fails its own calls closed, and the
//! others go on. For at-most-once across failovers, pass the call's
//! [downstream key](idem_core::downstream_key) to the downstream provider as its own
//! idempotency key.

mod builder;
#[cfg(feature = "redis-cluster")]
mod cluster;
mod codec;
mod connection;
mod error;
mod inventory;
mod replies;
mod reserve;
mod scripts;
mod server;
mod store;
mod wait;

/// The `tracing` target of every event the Redis store emits.
const TARGET: &str = idem_protocol::log::REDIS;

pub use builder::RedisStoreBuilder;
pub use error::{NotReplicated, RequestFailed};
pub use store::{RedisStore, LEASE_GRACE};

/// The `redis` crate this store is built on, for building clients and connection settings.
pub use ::redis as client;
