//! The `Idempotency` handle: what an application configures and calls. The protocol behind
//! each call is the engine's; what an operator does, `operator`'s.

mod begin;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde::{de::DeserializeOwned, Serialize};

use crate::call::codec::{JsonCodec, OutcomeCodec};
use crate::call::policy::{ErrorPolicy, ReleaseErrors, StoreErrorsWhen};
use crate::call::{Answered, Call};
use crate::engine::Engine;
use crate::operator::{Inspection, ReleaseReport};
use crate::store::{ListPage, ListQuery, PurgeProgress};
use crate::{
    clock::{Clock, SystemClock},
    error::Error,
    key::{Key, KeyBuilder},
    quota::Quota,
    replay_cache::ReplayCache,
    store::Store,
};

/// The namespace keys live in unless [`Idempotency::with_namespace`] says otherwise.
pub const DEFAULT_NAMESPACE: &str = "idem";

/// A handle on a store, shared by every idempotent call that uses it. Cheap to clone.
///
/// ```
/// # #[derive(Default)] struct MyStore;
/// # #[async_trait::async_trait] impl idem_core::store::Store for MyStore {
/// #   async fn reserve(&self, _: &idem_core::Key, _: &idem_core::store::Claim) -> Result<idem_core::store::Reservation, idem_core::StoreError> { unimplemented!() }
/// #   async fn complete(&self, _: &idem_core::Key, _: &idem_core::store::OwnerToken, _: &idem_core::store::Completed) -> Result<(), idem_core::StoreError> { unimplemented!() }
/// #   async fn release(&self, _: &idem_core::Key, _: &idem_core::store::OwnerToken) -> Result<(), idem_core::StoreError> { unimplemented!() }
/// #   async fn renew(&self, _: &idem_core::Key, _: &idem_core::store::OwnerToken, _: idem_core::store::Timestamp) -> Result<(), idem_core::StoreError> { unimplemented!() }
/// #   async fn record_step(&self, _: &idem_core::Key, _: &idem_core::store::OwnerToken, _: &str, _: &[u8], _: idem_core::store::Timestamp) -> Result<(), idem_core::StoreError> { unimplemented!() }
/// #   async fn get(&self, _: &idem_core::Key) -> Result<Option<idem_core::store::Record>, idem_core::StoreError> { unimplemented!() }
/// #   async fn delete(&self, _: &idem_core::Key) -> Result<(), idem_core::StoreError> { unimplemented!() }
/// # }
/// let idem = idem_core::Idempotency::new(MyStore::default()).with_namespace("billing");
/// idem_core::install(idem.clone()); // the default for every #[idempotent] fn
/// ```
#[derive(Clone)]
pub struct Idempotency {
    pub(crate) engine: Engine,
}

impl Idempotency {
    /// A handle on `store`, in namespace `"idem"`, on the system clock.
    pub fn new(store: impl Store) -> Self {
        Self::from_arc(Arc::new(store))
    }

    /// A handle on a store that is already shared.
    pub fn from_arc(store: Arc<dyn Store>) -> Self {
        let timed: Arc<dyn Store> = Arc::new(crate::telemetry::MeteredStore::new(store.clone()));
        let telemetry_probe = crate::telemetry::probe_key(store.name());
        Idempotency {
            engine: Engine {
                view: store.clone(),
                #[cfg(feature = "seal")]
                given: store,
                #[cfg(feature = "seal")]
                unsealed: timed.clone(),
                #[cfg(feature = "seal")]
                sealing: Default::default(),
                store: timed,
                clock: Arc::new(SystemClock),
                namespace: DEFAULT_NAMESPACE.into(),
                replay_cache: None,
                quota: None,
                telemetry_probe,
            },
        }
    }

    /// Puts every key of this handle in `namespace`, so that several services can share one
    /// store without sharing records.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.engine.namespace = namespace.into().into();
        self
    }

    /// Reads time from `clock` instead of the system clock (a [`ManualClock`](crate::ManualClock)
    /// in tests).
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.engine.clock = Arc::new(clock);
        self
    }

    /// Keeps completed records in `cache`, in this process, so that a replay of a cached key
    /// makes no store round trip. Off unless set; clones of this handle share the cache. See
    /// [`ReplayCache`] for what stays exact and how stale a `forget` from elsewhere can be.
    ///
    /// ```
    /// # fn demo(store: impl idem_core::store::Store) {
    /// use idem_core::{Idempotency, ReplayCache};
    /// let idem = Idempotency::new(store).with_replay_cache(ReplayCache::new(10_000, 16 << 20));
    /// # }
    /// ```
    pub fn with_replay_cache(mut self, cache: ReplayCache) -> Self {
        self.engine.replay_cache = Some(Arc::new(cache));
        self
    }

    /// Asks `quota` before every reservation, so that no scope (principal, tenant) can fill
    /// the store for the others: a call with a new key in a scope over its quota gets
    /// [`Error::QuotaExceeded`] without running, while a key that still has a record is
    /// answered as it would be without a quota (but runs only with room in the quota). Keys
    /// without a scope (an `#[idempotent]` function's, unless it sets `scope`) share one
    /// allowance, unless
    /// [`ScopeQuota::bound_unscoped`](crate::ScopeQuota::bound_unscoped) says otherwise. Off
    /// unless set; clones of this handle share the quota.
    ///
    /// ```
    /// # fn demo(store: impl idem_core::store::Store) {
    /// use idem_core::{Idempotency, ScopeQuota};
    /// let idem = Idempotency::new(store)
    ///     .with_quota(ScopeQuota::new().max_records(1_000).max_bytes(16 << 20));
    /// # }
    /// ```
    pub fn with_quota(mut self, quota: impl Quota) -> Self {
        self.engine.quota = Some(Arc::new(quota));
        self
    }

    /// The quota, if [`with_quota`](Idempotency::with_quota) set one.
    pub fn quota(&self) -> Option<&dyn Quota> {
        self.engine.quota.as_deref()
    }

    /// Seals every outcome and step value this handle stores under `keyring`'s current key,
    /// and opens what any of its keys sealed (see [`seal`](crate::seal)).
    #[cfg(feature = "seal")]
    #[cfg_attr(docsrs, doc(cfg(feature = "seal")))]
    pub fn with_sealing(self, keyring: crate::seal::Keyring) -> Self {
        self.resealed(|sealing| sealing.keyring = Some(Arc::new(keyring)))
    }

    /// Stores every key as its namespace and an HMAC-SHA256 of the whole key under
    /// `secret`, at least [`MIN_KEY_DIGEST_SECRET_BYTES`](crate::seal::MIN_KEY_DIGEST_SECRET_BYTES)
    /// (32) random bytes: a shorter one panics here. Changes every stored key (see
    /// [`seal`](crate::seal)).
    #[cfg(feature = "seal")]
    #[cfg_attr(docsrs, doc(cfg(feature = "seal")))]
    pub fn with_key_digest(self, secret: impl AsRef<[u8]>) -> Self {
        let digest = crate::seal::KeyDigest::new(secret.as_ref());
        self.resealed(|sealing| sealing.digest = Some(digest))
    }

    /// Names every call's key by its digest (see
    /// [`with_key_digest`](Idempotency::with_key_digest)) rather than in clear: in errors,
    /// in this crate's logs and traces, and in [`CallContext::key`](crate::CallContext::key).
    /// Quotas still count calls by the scope the key was built with. Without a digest
    /// secret, it does nothing.
    #[cfg(feature = "seal")]
    #[cfg_attr(docsrs, doc(cfg(feature = "seal")))]
    pub fn name_keys_by_digest(mut self) -> Self {
        // The store does not depend on it: only what calls are named by does.
        self.engine.sealing.name_keys_by_digest = true;
        self
    }

    /// Whether this handle names keys by their digest rather than in clear
    /// ([`name_keys_by_digest`](Idempotency::name_keys_by_digest) with a digest secret): front ends
    /// built on the handle (idem-http, idem-lambda) then leave the client's key out of their
    /// logs too.
    pub fn names_keys_by_digest(&self) -> bool {
        #[cfg(feature = "seal")]
        return self.engine.sealing.name_keys_by_digest && self.engine.sealing.digest.is_some();
        #[cfg(not(feature = "seal"))]
        false
    }

    /// The same handle with its sealing changed by `change`, and the store seen through it.
    #[cfg(feature = "seal")]
    fn resealed(mut self, change: impl FnOnce(&mut crate::seal::Sealing)) -> Self {
        change(&mut self.engine.sealing);
        self.engine.sealing.scope = self.engine.given.sealing_scope();
        self.engine.store = self.engine.sealing.wrap(self.engine.unsealed.clone());
        self.engine.view = self.engine.sealing.wrap(self.engine.given.clone());
        self
    }

    /// `key` as the store keeps it: the same key, or its digest under
    /// [`with_key_digest`](Idempotency::with_key_digest). For reading the store with its own
    /// client, or a store of the handle's without its sealing.
    pub fn stored_key(&self, key: &Key) -> Key {
        self.engine.stored_key(key)
    }

    /// The store, as calls see it: with sealing on, keys are digested and values opened on
    /// the way. To share a store between handles, give each the store itself and its own
    /// sealing: a handle built on this view seals through it, but what its calls' contexts
    /// tell a store's own API would not know it. Operations on this view are not timed into
    /// `idem_store_duration_seconds` (see [`telemetry`](crate::telemetry)): a handle built on
    /// it times its own, once each.
    // Not the engine's `store`, on purpose: that one is timed.
    #[allow(clippy::misnamed_getters)]
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.engine.view
    }

    /// The namespace every key of this handle lives in.
    pub fn namespace(&self) -> &str {
        &self.engine.namespace
    }

    /// The clock leases and expiry are read from.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.engine.clock
    }

    /// The replay cache, if [`with_replay_cache`](Idempotency::with_replay_cache) set one.
    pub fn replay_cache(&self) -> Option<&ReplayCache> {
        self.engine.replay_cache.as_deref()
    }

    /// Starts the key of a call to the function called `name`. Finish it with
    /// [`scope`](KeyBuilder::scope), [`part`](KeyBuilder::part) and
    /// [`finish`](KeyBuilder::finish).
    pub fn key(&self, name: &str) -> KeyBuilder {
        KeyBuilder::new(&self.engine.namespace, name)
    }

    /// Deletes the record under `key` whatever its state, for an operator unblocking a key whose
    /// record is corrupt. The next call with that key runs the function again.
    ///
    /// This handle's [`ReplayCache`] drops the key too; other processes' caches keep replaying
    /// it for at most their [`max_age`](ReplayCache::max_age).
    pub async fn forget(&self, key: &Key) -> Result<(), Error> {
        self.engine.forget(key).await
    }

    /// Deletes the record under `key` only if it is still the one `read` shows (read by
    /// [`inspect`](Self::inspect)): `Ok(true)` when it was deleted, `Ok(false)` when the key
    /// changed meanwhile (a call reserved it, took it over or completed it) and was left as it
    /// is. The operator's delete: unlike [`forget`](Self::forget), it never takes a record
    /// written after the read. Needs a store that implements
    /// [`Store::delete_if`](crate::store::Store::delete_if) (every store of idem-stores does);
    /// others refuse, saying so ([`Error::Rejected`]).
    pub async fn forget_unchanged(&self, key: &Key, read: &Inspection) -> Result<bool, Error> {
        self.engine.forget_unchanged(key, read).await
    }

    /// Runs `body` at most once for `call`'s key, releasing the key when it returns `Err`.
    ///
    /// - The key is free: it is reserved, `body` runs, its `Ok` value is stored and returned
    ///   with `replayed: false`.
    /// - A call with the same fingerprint completed earlier: `body` does not run; the stored value
    ///   is returned with `replayed: true`.
    /// - A call with the same fingerprint is running: [`Error::InProgress`], or with
    ///   [`Call::wait`] its outcome once it finishes.
    /// - The key was used with another fingerprint: [`Error::Mismatch`].
    ///
    /// `body` is a future, so nothing in it happens unless the key is reserved. While it runs,
    /// [`context`](crate::context) tells it its key, attempt and fencing token. If it panics or
    /// the returned future is dropped after `body` was first polled, [`Call::on_abort`] says
    /// what happens to the key (by default it is held until the lease passes); before that, the
    /// reservation is released.
    ///
    /// ```
    /// # async fn demo(idem: idem_core::Idempotency) -> Result<(), idem_core::Error> {
    /// use idem_core::{Call, Fingerprint};
    /// let key = idem.key("orders.create").part("order-42").finish()?;
    /// let call = Call::new(key, Fingerprint::of(&("order-42", 3))?);
    /// let created = idem.run(call, async { Ok::<_, idem_core::Error>(42u64) }).await?;
    /// println!("order {} (replayed: {})", created.value, created.replayed);
    /// # Ok(()) }
    /// ```
    pub async fn run<T, E, F>(&self, call: Call, body: F) -> Result<Answered<T>, E>
    where
        T: Serialize + DeserializeOwned,
        E: From<Error>,
        F: Future<Output = Result<T, E>>,
    {
        self.engine
            .run_with_codec(call, &ReleaseErrors, &JsonCodec, body)
            .await
    }

    /// Like [`run`](Idempotency::run), but an `Err` for which `store_err` returns `true` is
    /// stored and replayed to retries instead of releasing the key. Use it for failures that
    /// happen after an irreversible side effect.
    pub async fn run_storing_errors<T, E, P, F>(
        &self,
        call: Call,
        store_err: P,
        body: F,
    ) -> Result<Answered<T>, E>
    where
        T: Serialize + DeserializeOwned,
        E: From<Error> + Serialize + DeserializeOwned,
        P: Fn(&E) -> bool,
        F: Future<Output = Result<T, E>>,
    {
        self.engine
            .run_with_codec(call, &StoreErrorsWhen(store_err), &JsonCodec, body)
            .await
    }

    /// [`run`](Idempotency::run) with any [`ErrorPolicy`].
    pub async fn run_with_policy<T, E, P, F>(
        &self,
        call: Call,
        policy: &P,
        body: F,
    ) -> Result<Answered<T>, E>
    where
        T: Serialize + DeserializeOwned,
        E: From<Error>,
        P: ErrorPolicy<E>,
        F: Future<Output = Result<T, E>>,
    {
        self.engine
            .run_with_codec(call, policy, &JsonCodec, body)
            .await
    }

    /// [`run_with_policy`](Idempotency::run_with_policy), with the `Ok` value stored and
    /// replayed through `codec` rather than as JSON: for a value with a form of its own. A
    /// replay hands `codec` the stored bytes themselves, shared rather than copied; a stored
    /// outcome it cannot decode, or a value it cannot encode, fails as JSON's would
    /// ([`Error::Codec`]). Stored errors stay the policy's to encode.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use idem_core::store::{Outcome, Record};
    /// use idem_core::{BoxError, Call, Fingerprint, Idempotency, OutcomeCodec, ReleaseErrors};
    ///
    /// /// A receipt stored as its bytes, as they are.
    /// struct Raw;
    ///
    /// impl OutcomeCodec<Bytes> for Raw {
    ///     fn encode(&self, value: &Bytes) -> Result<Bytes, BoxError> {
    ///         Ok(value.clone())
    ///     }
    ///     fn decode(&self, outcome: Bytes) -> Result<Bytes, BoxError> {
    ///         Ok(outcome)
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), idem_core::Error> {
    /// let idem = Idempotency::new(idem_conformance::ReferenceStore::new());
    /// let key = idem.key("receipts.render").part("order-42").finish()?;
    /// for attempt in 0..2 {
    ///     let call = Call::new(key.clone(), Fingerprint::of(&"order-42")?);
    ///     let receipt = idem
    ///         .run_with_codec(call, &ReleaseErrors, &Raw, async {
    ///             Ok::<_, idem_core::Error>(Bytes::from_static(b"\x00receipt"))
    ///         })
    ///         .await?;
    ///     assert_eq!(receipt.value, &b"\x00receipt"[..]);
    ///     assert_eq!(receipt.replayed, attempt > 0);
    /// }
    /// // Stored as the codec wrote it: no JSON around it.
    /// let inspected = idem.inspect(&key).await?.expect("a record");
    /// let Record::Completed(stored) = inspected.record() else { panic!("completed") };
    /// assert_eq!(stored.outcome(), &Outcome::ok(&b"\x00receipt"[..]));
    /// # Ok(()) }
    /// ```
    pub async fn run_with_codec<T, E, P, C, F>(
        &self,
        call: Call,
        policy: &P,
        codec: &C,
        body: F,
    ) -> Result<Answered<T>, E>
    where
        E: From<Error>,
        P: ErrorPolicy<E>,
        C: OutcomeCodec<T>,
        F: Future<Output = Result<T, E>>,
    {
        self.engine.run_with_codec(call, policy, codec, body).await
    }

    /// The record under `key` as an operator sees it, or `None` if there is none. `key` is
    /// the key as idem prints it ([`Key::parse`]); under a key digest, the key in clear or its
    /// digest.
    pub async fn inspect(&self, key: &Key) -> Result<Option<Inspection>, Error> {
        self.engine.inspect(key).await
    }

    /// Frees `key` held by an in-progress call, for an operator who checked the call's
    /// effect: a deploy killed the process that held it, and the next retry should run rather
    /// than be told "in progress" until the lease passes. Fenced: only the owner read here is
    /// released, so a key that completed or changed hands meanwhile is left as it is
    /// ([`ReleaseReport::Changed`]). If that owner is in fact still running, it loses its lease
    /// and its outcome is not recorded ([`Error::NotRecorded`]), unless the record holds steps:
    /// then the record is kept with its lease ended, only a call with the same arguments may
    /// use the key (resuming after the steps), and the owner, which keeps its token, may still
    /// complete it.
    pub async fn release_held(&self, key: &Key) -> Result<ReleaseReport, Error> {
        self.engine.release_held(key).await
    }

    /// One page of the store's records whose keys start with `query`'s prefix, as stored
    /// (under a key digest, digests; with sealing on, values sealed).
    /// [`Error::Unsupported`] for a store that can't list.
    ///
    /// ```
    /// # async fn demo(idem: idem_core::Idempotency) -> Result<(), idem_core::Error> {
    /// use idem_core::{store::ListQuery, Key};
    /// let mut query = ListQuery::new(Key::function_prefix(idem.namespace(), "charge"), 100);
    /// loop {
    ///     let page = idem.list(&query).await?;
    ///     for (key, record) in &page.records {
    ///         println!("{key}: {record:?}");
    ///     }
    ///     let Some(cursor) = page.cursor else { break };
    ///     query = query.after(Some(cursor));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, query: &ListQuery) -> Result<ListPage, Error> {
        self.engine.list(query).await
    }

    /// Deletes up to `batch` records that stopped counting (see
    /// [`Inventory::purge_expired`](crate::store::Inventory::purge_expired)); returns how
    /// many. [`Error::Unsupported`] for a store that can't list.
    pub async fn purge_expired(&self, batch: u32) -> Result<u64, Error> {
        self.engine.purge_expired(batch).await
    }

    /// Like [`purge_expired`](Idempotency::purge_expired), going on from where the previous
    /// call stopped (see
    /// [`Inventory::purge_expired_from`](crate::store::Inventory::purge_expired_from)): deletes
    /// up to `batch` records that stopped counting, judging the store's records from `cursor`
    /// on (`None`: from the first), and says how many went and where the next call goes on.
    /// Calling it until the cursor is `None` judges each record once, where calling
    /// `purge_expired` until it deletes fewer than `batch` starts over on every batch. A call
    /// may delete none while its cursor says more remain. [`Error::Unsupported`] for a store
    /// that can't list.
    ///
    /// ```
    /// use idem_core::{Error, Idempotency};
    ///
    /// /// Purges every expired record, 1000 at a time; returns how many went.
    /// async fn purge_all(idem: &Idempotency) -> Result<u64, Error> {
    ///     let mut purged = 0;
    ///     let mut cursor = None;
    ///     loop {
    ///         let progress = idem.purge_expired_from(1000, cursor.as_deref()).await?;
    ///         purged += progress.deleted;
    ///         match progress.cursor {
    ///             Some(next) => cursor = Some(next),
    ///             None => return Ok(purged),
    ///         }
    ///     }
    /// }
    /// # // The reference store keeps no inventory: it says so.
    /// # let idem = Idempotency::new(idem_conformance::ReferenceStore::new());
    /// # let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # let refused = runtime.block_on(purge_all(&idem));
    /// # assert!(matches!(refused, Err(Error::Unsupported { .. })), "{refused:?}");
    /// ```
    pub async fn purge_expired_from(
        &self,
        batch: u32,
        cursor: Option<&str>,
    ) -> Result<PurgeProgress, Error> {
        self.engine.purge_expired_from(batch, cursor).await
    }
}

impl fmt::Debug for Idempotency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotency")
            .field("namespace", &self.engine.namespace)
            .field("replay_cache", &self.engine.replay_cache)
            .field("quota", &self.engine.quota.is_some())
            .finish_non_exhaustive()
    }
}
