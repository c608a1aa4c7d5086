//! `RedisStore`: the `Store` trait on one multiplexed, self-reconnecting connection.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idem_core::{
    store::{Claim, Completed, OwnerToken, Record, Reservation, Store, Timestamp},
    Key, StoreError,
};
use redis::aio::ConnectionManager;
use redis::{Client, Value};

use super::builder::RedisStoreBuilder;
use super::codec;
use super::connection::Connection;
use super::error::{is_connection_error, store_error, NotReplicated};
use super::replies::{self, Reply};
use super::scripts::{Counter, Script, SCRIPTS};
use super::wait::{Backoff, Wakeups, POLLING, SAFETY_NET};

/// How long an in-progress key outlives its lease in Redis: until it is abandoned. Within it,
/// an owner whose lease passed but who was not taken over can still complete or release;
/// liveness is judged by the caller's time, so the grace never extends a lease.
pub use idem_core::store::LEASE_GRACE;

/// The longest expiry set on a key: about 31 000 years.
pub(super) const MAX_EXPIRY_MS: u64 = 1_000_000_000_000_000;

/// Idempotency records in Redis 7 or later (or Valkey, or a Redis Cluster): one string per
/// key, reserved with a plain `SET ... NX GET` and changed otherwise only by Lua scripts that
/// check the owner token. See the [module docs](super) for the layout
/// and the scripts.
///
/// Cheap to clone: clones share one multiplexed connection that reconnects by itself after
/// the server restarts or the network drops.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use idem_stores::redis::RedisStore;
/// let store = RedisStore::connect("redis://127.0.0.1:6379").await?;
/// let idem = idem_core::Idempotency::new(store);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    pub(super) conn: Connection,
    prefix: Arc<str>,
    pub(super) counter: Arc<Counter>,
    /// Wake-ups for waiting callers; `None` on a connection given without its client.
    wakeups: Option<Arc<Wakeups>>,
    /// `WAIT` for this many replicas, this long, after each reservation and completion.
    pub(super) replicas: Option<(u32, Duration)>,
}

impl RedisStore {
    /// Connects to the server at `url` (`redis://[user:password@]host:port[/db]`,
    /// `rediss://` with TLS where the `redis` crate is built with it) with the default
    /// settings.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let client = Client::open(url).map_err(|error| store_error(error, "connect"))?;
        Self::builder(client).connect().await
    }

    /// Starts building a store on one server (or a proxy in front of several), reached
    /// through `client`.
    pub fn builder(client: Client) -> RedisStoreBuilder {
        RedisStoreBuilder::on_client(client)
    }

    /// Starts building a store on a connection you already have. Without the client it came
    /// from, the store cannot subscribe to wake-ups, so callers that wait for a duplicate poll
    /// the record (backing off from 10 ms to 500 ms); build the store with
    /// [`RedisStore::builder`] to have them woken instead.
    pub fn connection_builder(conn: ConnectionManager) -> RedisStoreBuilder {
        RedisStoreBuilder::on_connection(conn)
    }

    /// Connects to the Redis Cluster that `nodes` (URLs of some of its nodes) belong to, with
    /// the default settings. Every request touches one key, so it goes to the node that owns
    /// the key's slot.
    #[cfg(feature = "redis-cluster")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis-cluster")))]
    pub async fn connect_cluster(nodes: &[&str]) -> Result<Self, StoreError> {
        Self::cluster_builder(nodes).connect().await
    }

    /// Starts building a store on the Redis Cluster that `nodes` (URLs of some of its nodes)
    /// belong to.
    #[cfg(feature = "redis-cluster")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis-cluster")))]
    pub fn cluster_builder(nodes: &[&str]) -> RedisStoreBuilder {
        RedisStoreBuilder::on_cluster(nodes.iter().map(|node| (*node).to_owned()).collect())
    }

    /// Starts building a store on a Redis Cluster connection you already have. Callers that
    /// wait for a duplicate poll the record (see [`RedisStore::connection_builder`]). The
    /// store cannot connect again on its own: a connection that stalls stays stalled (see the
    /// [module docs](super)); prefer [`cluster_builder`](RedisStore::cluster_builder).
    #[cfg(feature = "redis-cluster")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis-cluster")))]
    pub fn cluster_connection_builder(
        conn: redis::cluster_async::ClusterConnection,
    ) -> RedisStoreBuilder {
        RedisStoreBuilder::on_cluster_connection(conn)
    }

    pub(crate) fn on(
        conn: Connection,
        wakeups: Option<Arc<Wakeups>>,
        prefix: String,
        replicas: Option<(u32, Duration)>,
    ) -> Self {
        RedisStore {
            conn,
            prefix: prefix.into(),
            counter: Arc::default(),
            wakeups,
            replicas,
        }
    }

    /// The prefix in front of every key.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The Redis key that holds the record of `key`: the prefix and the key, delimited so that
    /// no prefix and key pair can equal another ([`Key::with_prefix`]), with an empty hash tag
    /// `{}` between them. Redis Cluster hashes the part of a key between its first `{` and
    /// the next `}`, and the whole key when that part is empty: with `{}` before the key,
    /// braces in a key part (client input, say) never choose the slot; only a hash tag in the
    /// prefix does.
    pub fn redis_key(&self, key: &Key) -> String {
        let mut name = key.with_prefix(&self.prefix);
        name.insert_str(name.len() - key.as_str().len(), "{}");
        name
    }

    /// How many requests this store (and its clones) sent to the server so far: each is one
    /// round trip, including the `EVAL` that follows a `NOSCRIPT` and retries after a lost
    /// connection.
    pub fn round_trips(&self) -> u64 {
        self.counter.get()
    }

    /// Runs a script on the record of `key`, retrying once if the connection failed: every
    /// script is safe to repeat for the same owner.
    pub(super) async fn eval(
        &self,
        script: &Script,
        key: &Key,
        args: &[&[u8]],
    ) -> Result<Reply, StoreError> {
        self.eval_on(script, key, args)
            .await
            .map(|(reply, _)| reply)
    }

    /// [`eval`](Self::eval), with the connection the script ran on, for the `WAIT` after it.
    pub(super) async fn eval_on(
        &self,
        script: &Script,
        key: &Key,
        args: &[&[u8]],
    ) -> Result<(Reply, Connection), StoreError> {
        let redis_key = self.redis_key(key);
        let mut conn = self.conn.pinned();
        let mut result = self.counter.eval(&mut conn, script, &redis_key, args).await;
        if result.as_ref().is_err_and(is_connection_error) {
            // The store may have replaced a stalled connection meanwhile: retry on it.
            conn = self.conn.pinned();
            result = self.counter.eval(&mut conn, script, &redis_key, args).await;
        }
        let reply = result
            .map_err(|error| store_error(error, script.name()))
            .and_then(replies::reply)?;
        Ok((reply, conn))
    }

    /// With [`wait_for_replicas`](RedisStoreBuilder::wait_for_replicas), waits until enough
    /// replicas acknowledged the write just made to `key` on `conn`: on a cluster, the
    /// replicas of the primary that holds it, whatever other shards' replicas do.
    ///
    /// Never retried: `WAIT` counts only the writes of the connection it is sent on, so on
    /// another connection it would pass without the write replicated. A failure fails the
    /// request, and the write and its `WAIT` are made again.
    pub(super) async fn replicate(
        &self,
        conn: &mut Connection,
        key: &Key,
        what: &str,
    ) -> Result<(), StoreError> {
        let Some((replicas, timeout)) = self.replicas else {
            return Ok(());
        };
        let mut wait = redis::cmd("WAIT");
        wait.arg(replicas).arg(timeout.as_millis().max(1) as u64);
        let redis_key = self.redis_key(key);
        let reply = self
            .counter
            .wait_on_primary_of(conn, &wait, &redis_key)
            .await;
        let acked = match reply.map_err(|error| store_error(error, "WAIT"))? {
            Value::Int(acked) => acked,
            other => {
                return Err(StoreError::backend(format!(
                    "unexpected reply to WAIT: {other:?}"
                )))
            }
        };
        if acked < i64::from(replicas) {
            return Err(StoreError::backend(NotReplicated {
                what: what.to_owned(),
                acked,
                wanted: replicas,
            }));
        }
        Ok(())
    }

    /// The owner of the record under `redis_key` while it is in progress and not released (a
    /// record released with steps stays in progress with its lease ended: 0); `None` once it
    /// is not, or cannot be read.
    async fn running_owner(&self, redis_key: &str) -> Option<OwnerToken> {
        let read = self
            .query(redis::cmd("GET").arg(redis_key), "GET")
            .await
            .ok()?;
        match codec::decode(&replies::value(read).ok()??).ok()? {
            Record::InProgress(held) if held.lease_until() != Timestamp::EPOCH => {
                Some(held.owner().clone())
            }
            _ => None,
        }
    }

    /// Waits until the record under `redis_key` may have changed, or `timeout` passes: woken by
    /// its publication where a subscription can be had, else by polling `backoff`.
    async fn wait_for_change(&self, redis_key: &str, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        // Connecting the subscription counts against the wait: a server that doesn't answer
        // leaves the caller polling, not stuck.
        let interest = match &self.wakeups {
            Some(wakeups) => tokio::time::timeout(timeout, wakeups.subscribe(redis_key))
                .await
                .ok()
                .flatten(),
            None => None,
        };
        let backoff: Backoff = if interest.is_some() {
            SAFETY_NET
        } else {
            POLLING
        };
        let mut seen = None;
        for pause in backoff.pauses() {
            let notified = interest.as_ref().map(|i| i.notify.notified());
            tokio::pin!(notified);
            if let Some(notified) = notified.as_mut().as_pin_mut() {
                notified.enable();
            }
            // Read after subscribing: a change before it is seen here, one after it wakes us.
            let Some(owner) = self.running_owner(redis_key).await else {
                return;
            };
            match &seen {
                Some(before) if *before != owner => return,
                _ => seen = Some(owner),
            }
            let pause = pause.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            if pause.is_zero() {
                return;
            }
            let woken = async {
                match notified.as_pin_mut() {
                    Some(notified) => notified.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = woken => return,
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// Sends a plain command, retrying once if the connection failed.
    pub(super) async fn query(&self, cmd: &redis::Cmd, what: &str) -> Result<Value, StoreError> {
        let mut conn = self.conn.clone();
        let mut result = self.counter.query(&mut conn, cmd).await;
        if result.as_ref().is_err_and(is_connection_error) {
            result = self.counter.query(&mut conn, cmd).await;
        }
        result.map_err(|error| store_error(error, what))
    }
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .field("round_trips", &self.round_trips())
            .finish_non_exhaustive()
    }
}

pub(super) fn decimal(n: u64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// A point in time as the scripts take it: milliseconds since the epoch.
pub(super) fn time(at: Timestamp) -> Vec<u8> {
    decimal(at.as_millis())
}

#[async_trait]
impl Store for RedisStore {
    fn name(&self) -> &'static str {
        "redis"
    }

    /// Lists by `SCAN` and purges by a script per expired record: see the module docs.
    fn inventory(&self) -> Option<&dyn idem_core::store::Inventory> {
        Some(self)
    }

    /// One plain `SET ... NX GET`, and a script only for a record that may be taken over or
    /// reused: see the [module docs](super) on reserving.
    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        self.reserve_claim(key, claim).await
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        let (reply, mut conn) = self
            .eval_on(
                &SCRIPTS.complete,
                key,
                &[
                    owner.as_str().as_bytes(),
                    record.fingerprint().to_hex().as_bytes(),
                    replies::outcome_tag(record.outcome())?.as_bytes(),
                    record.outcome().body(),
                    &time(record.expires_at()),
                ],
            )
            .await?;
        replies::fenced(reply, "complete")?;
        self.replicate(&mut conn, key, "complete").await
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        let reply = self
            .eval(&SCRIPTS.release, key, &[owner.as_str().as_bytes()])
            .await?;
        replies::fenced(reply, "release")
    }

    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        let (reply, mut conn) = self
            .eval_on(
                &SCRIPTS.record_step,
                key,
                &[
                    owner.as_str().as_bytes(),
                    name.as_bytes(),
                    value,
                    &time(kept_until),
                ],
            )
            .await?;
        replies::fenced(reply, "record_step")?;
        self.replicate(&mut conn, key, "record_step").await
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        let reply = self
            .eval(
                &SCRIPTS.renew,
                key,
                &[
                    owner.as_str().as_bytes(),
                    &time(lease_until),
                    &decimal(idem_core::store::LEASE_GRACE_MS),
                ],
            )
            .await?;
        replies::fenced(reply, "renew")
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let value = self
            .query(redis::cmd("GET").arg(self.redis_key(key)), "GET")
            .await?;
        replies::value(value)?
            .map(|value| codec::decode(&value))
            .transpose()
    }

    /// The `delete_if` script: the record's state and what tells it from a later one are
    /// compared in the server, with the delete.
    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        let reply = match expected {
            Record::InProgress(held) => {
                self.eval(
                    &SCRIPTS.delete_if,
                    key,
                    &[
                        b"in_progress",
                        held.owner().as_str().as_bytes(),
                        &decimal(held.fencing_token()),
                    ],
                )
                .await?
            }
            Record::Completed(completed) => {
                self.eval(
                    &SCRIPTS.delete_if,
                    key,
                    &[
                        b"completed",
                        completed.fingerprint().to_hex().as_bytes(),
                        &time(completed.expires_at()),
                    ],
                )
                .await?
            }
            other => {
                return Err(StoreError::rejected(format!(
                    "the Redis store cannot tell whether {other:?} is unchanged"
                )))
            }
        };
        match reply {
            Reply::Ok => Ok(true),
            Reply::Lost => Ok(false),
            other => Err(StoreError::backend(format!(
                "unexpected reply to delete_if: {other:?}"
            ))),
        }
    }

    /// `redis|` and the key prefix: a record copied under another prefix does not open.
    fn sealing_scope(&self) -> String {
        format!("redis|{}", self.prefix)
    }

    /// `EXISTS`: the key alone, never the record.
    async fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        let reply = self
            .query(redis::cmd("EXISTS").arg(self.redis_key(key)), "EXISTS")
            .await?;
        match reply {
            redis::Value::Int(count) => Ok(count > 0),
            other => Err(StoreError::backend(format!(
                "unexpected reply to EXISTS: {other:?}"
            ))),
        }
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        self.query(redis::cmd("DEL").arg(self.redis_key(key)), "DEL")
            .await
            .map(drop)
    }

    /// Waits for the record's publication (complete, release, takeover) through the store's
    /// subscription, checking the record once after subscribing and then, as a safety net,
    /// every 1 to 5 s; without a subscription it polls the record's state, backing off from
    /// 10 ms to 500 ms. Every pause is jittered.
    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        self.wait_for_change(&self.redis_key(key), timeout).await;
        Ok(())
    }
}
