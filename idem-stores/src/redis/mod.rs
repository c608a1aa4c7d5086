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
//! | fresh key: reserve, then complete | 2 |
//! | replay of a completed call | 1 |
//! | duplicate while the first runs (`Error::InProgress`) | 1 |
//! | `Err` that releases the key: reserve, then release | 2 |
//! | takeover after a lease passed | 1, like a fresh reserve; the recorded steps come with it |
//! | each [`step`](idem_core::step) that runs | 1 more (`record_step`) |
//! | each step replayed from the record | none |
//! | `Err` after a step: reserve, steps, then release (keeps the record) | 2, plus 1 per step |
//! | with [`wait_for_replicas`](RedisStoreBuilder::wait_for_replicas) | one `WAIT` more after each reserve, recorded step and complete |

//! | with [`read_before_reserve`](RedisStoreBuilder::read_before_reserve) | a replay is one plain `HGETALL` and runs no script; every other reserve is one `HGETALL` more |
//!
//! Scripts are sent by SHA-1 (`EVALSHA`); the first time a server sees one (after a restart,
//! say) it answers `NOSCRIPT` and the store sends the source with `EVAL`, one extra round trip
//! per script and server. [`RedisStore::round_trips`] counts every request.
//!
//! # Record layout
//!
//! A record is one hash under the store's prefix and the key, delimited so that no prefix and
//! key pair can equal another ([`Key::with_prefix`](idem_core::Key::with_prefix)), with the
//! empty hash tag `{}` between them ([`RedisStore::redis_key`]): the prefix `billing` gives
//! `billing|{}idem|payments::charge|-|order-42`, no prefix gives
//! `|{}idem|payments::charge|-|order-42`. Every operation touches that one key only, so the
//! store works on a Redis Cluster.
//!
//! | field | in progress | completed | content |
//! |---|---|---|---|
//! | `state` | `in_progress` | `completed` | |
//! | `fingerprint` | ✓ | ✓ | SHA-256 of the arguments, 64 lower-case hex digits |
//! | `owner` | ✓ | ✓ | the owner token; kept on completion so a repeated completion is recognised |
//! | `lease_until` | ✓ | | lease deadline, decimal milliseconds since the Unix epoch |
//! | `fencing_token` | ✓ | | the reservation's fencing token, decimal (below 2^53) |
//! | `attempt` | ✓ | | 1, one more per takeover by the same call |
//! | `clock_offset` | ✓ | | the caller's clock minus Redis's clock (`TIME`) at reservation, in ms |
//! | `outcome` | | ✓ | `ok`, `err` or `aborted` |
//! | `body` | | ✓ | the serialised value (JSON bytes); empty when aborted |
//! | `expires_at` | | ✓ | end of the TTL, decimal milliseconds since the Unix epoch |
//! | `step:<name>` | once recorded | | the step's serialised `Ok` value (JSON bytes), one field per step |
//! | `steps_kept_until` | with steps | | until when the steps hold the key, decimal milliseconds since the Unix epoch |
//!
//! Times are the engine's (its [`Clock`](idem_core::Clock)), passed in by the caller; the
//! scripts compare them exactly, as decimal strings. The key also gets an expiry (`PEXPIRE`) so
//! that Redis cleans up on its own: the remaining TTL for a completed record, the remaining
//! lease plus [`LEASE_GRACE`] for an in-progress one, and never less than its
//! `steps_kept_until`. That expiry is only clean-up: every read
//! judges liveness against the caller's `now`, so a late Redis expiry never revives a record,
//! and a [`ManualClock`](idem_core::ManualClock) can expire records in tests. Where a script
//! knows no caller time (complete, renew, record_step), it turns the deadline into an expiry with the
//! `clock_offset` stored at reservation.
//!
//! # Scripts
//!
//! Every write is one Lua script, run atomically on the key's server. Each file starts with its
//! arguments and replies; the rules are the [`Store`](idem_core::Store) contract's, and the
//! files are the reference for how this store keeps them:
//!
//! | script | what it does |
//! |---|---|
//! | [`common.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/common.lua) | helpers prepended to every script: timestamps compared exactly as decimal strings, the owner check, the publication that wakes waiters |
//! | [`reserve.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/reserve.lua) | writes the in-progress record, takes over a passed lease or an expired record, or replies with the live record (a replay, a conflict and a mismatch each take this one round trip) |
//! | [`complete.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/complete.lua) | replaces the owner's in-progress record with the completed one |
//! | [`release.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/release.lua) | deletes the owner's record, or keeps one with steps with its lease ended |
//! | [`renew.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/renew.lua) | moves the owner's lease and the key's expiry |
//! | [`record_step.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/record_step.lua) | records a step and lengthens the key's expiry to cover it |
//! | [`purge.lua`](https://github.com/idem-rs/idem/blob/main/idem-stores/src/redis/lua/purge.lua) | for operators, not the protocol: deletes a record that stopped counting at the caller's `now` |
//!
//! A reply `{'corrupt', reason}`, or a key of another type, becomes
//! [`StoreError::Corrupt`](idem_core::StoreError::Corrupt); `{'lost'}` is
//! [`StoreError::LeaseLost`](idem_core::StoreError::LeaseLost).
//!
//! Reading a record without changing it ([`Store::get`](idem_core::Store::get)) is a plain
//! `HGETALL`; [`Store::delete`](idem_core::Store::delete) is `DEL`.
//!
//! Operators list and purge records through the store's
//! [`Inventory`](idem_core::store::Inventory) ([`Store::inventory`](idem_core::Store::inventory)):
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
//! callers wait on it). After subscribing, a waiter reads the record's state once (`HMGET`), so
//! a change just before the subscription is not missed; then it sleeps until woken, polling
//! the state every 1 to 5 s (jittered) only as a safety net should a publication be lost with
//! the connection. 100 callers waiting on one key cost the server one `SUBSCRIBE`, one `HMGET`
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
//! others go on. For at-most-once across failovers, pass
//! [`CallContext::key`](idem_core::CallContext::key) to the downstream provider as its own
//! idempotency key.

mod builder;
#[cfg(feature = "redis-cluster")]
mod cluster;
mod codec;
mod connection;
mod error;
mod inventory;
mod scripts;
mod store;
mod wake;

/// The `tracing` target of every event the Redis store emits.
const TARGET: &str = "idem::redis";

pub use builder::RedisStoreBuilder;
pub use error::{NotReplicated, RequestFailed};
pub use store::{RedisStore, LEASE_GRACE};

/// The `redis` crate this store is built on, for building clients and connection settings.
pub use ::redis as client;
