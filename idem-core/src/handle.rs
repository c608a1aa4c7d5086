//! The `Idempotency` handle: a store, a clock and a namespace.

use std::fmt;
use std::sync::Arc;

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
    /// The store as the engine sees it: timed, then through sealing when it is on.
    pub(crate) store: Arc<dyn Store>,
    /// The store as [`store`](Idempotency::store) shows it: through sealing, untimed, so
    /// that a handle built on it times each operation once.
    pub(crate) view: Arc<dyn Store>,
    /// The store as given, and timed.
    #[cfg(feature = "seal")]
    pub(crate) given: Arc<dyn Store>,
    #[cfg(feature = "seal")]
    pub(crate) unsealed: Arc<dyn Store>,
    #[cfg(feature = "seal")]
    pub(crate) sealing: crate::seal::Sealing,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) namespace: Arc<str>,
    pub(crate) replay_cache: Option<Arc<ReplayCache>>,
    pub(crate) quota: Option<Arc<dyn Quota>>,
}

impl Idempotency {
    /// A handle on `store`, in namespace `"idem"`, on the system clock.
    pub fn new(store: impl Store) -> Self {
        Self::from_arc(Arc::new(store))
    }

    /// A handle on a store that is already shared.
    pub fn from_arc(store: Arc<dyn Store>) -> Self {
        let timed: Arc<dyn Store> = Arc::new(crate::telemetry::MeteredStore::new(store.clone()));
        Idempotency {
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
        }
    }

    /// Puts every key of this handle in `namespace`, so that several services can share one
    /// store without sharing records.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into().into();
        self
    }

    /// Reads time from `clock` instead of the system clock (a [`ManualClock`](crate::ManualClock)
    /// in tests).
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
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
        self.replay_cache = Some(Arc::new(cache));
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
        self.quota = Some(Arc::new(quota));
        self
    }

    /// The quota, if [`with_quota`](Idempotency::with_quota) set one.
    pub fn quota(&self) -> Option<&dyn Quota> {
        self.quota.as_deref()
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
    pub fn hide_clear_keys(mut self) -> Self {
        // The store does not depend on it: only what calls are named by does.
        self.sealing.hide_clear_keys = true;
        self
    }

    /// Whether this handle names keys by their digest rather than in clear
    /// ([`hide_clear_keys`](Idempotency::hide_clear_keys) with a digest secret): front ends
    /// built on the handle (idem-http, idem-lambda) then leave the client's key out of their
    /// logs too.
    pub fn hides_clear_keys(&self) -> bool {
        #[cfg(feature = "seal")]
        return self.sealing.hide_clear_keys && self.sealing.digest.is_some();
        #[cfg(not(feature = "seal"))]
        false
    }

    /// The same handle with its sealing changed by `change`, and the store seen through it.
    #[cfg(feature = "seal")]
    fn resealed(mut self, change: impl FnOnce(&mut crate::seal::Sealing)) -> Self {
        change(&mut self.sealing);
        self.store = self.sealing.wrap(self.unsealed.clone());
        self.view = self.sealing.wrap(self.given.clone());
        self
    }

    /// `key` as the store keeps it: the same key, or its digest under
    /// [`with_key_digest`](Idempotency::with_key_digest). For reading the store with its own
    /// client, or a store of the handle's without its sealing.
    pub fn stored_key(&self, key: &Key) -> Key {
        #[cfg(feature = "seal")]
        return self.sealing.stored_key(key);
        #[cfg(not(feature = "seal"))]
        key.clone()
    }

    /// `call` with its fingerprint keyed by the digest secret, when there is one, and its key
    /// shown by its digest when clear keys are hidden.
    pub(crate) fn stored_call(&self, call: crate::call::Call) -> crate::call::Call {
        #[cfg(feature = "seal")]
        if let Some(digest) = &self.sealing.digest {
            let mut call = call;
            let stored_key = digest.digest(&call.key);
            // Keyed by the secret, so that no one who reads the store can test a guess of a
            // call's arguments against it, and by the key, so that equal arguments under two
            // keys do not show as such.
            call.fingerprint = digest.fingerprint(&call.fingerprint, &stored_key);
            if self.sealing.hide_clear_keys {
                call.clear_scope = call.key.scope().map(str::to_owned);
                call.key = stored_key;
            }
            return call;
        }
        call
    }

    /// What the store keeps of a call under `key`: its stored key and the sealing of its
    /// outcome, for the call's context.
    pub(crate) fn stored_form(&self, key: &Key) -> crate::call::context::StoredForm {
        crate::call::context::StoredForm {
            key: self.stored_key(key),
            #[cfg(feature = "seal")]
            sealing: self.sealing.clone(),
        }
    }

    /// The key a completed record is cached under: its stored form, so that `forget` finds
    /// it from the key in clear or from its digest. Borrowed when that is the key itself.
    pub(crate) fn cache_key<'a>(&self, key: &'a Key) -> std::borrow::Cow<'a, Key> {
        #[cfg(feature = "seal")]
        if self.sealing.digest.is_some() {
            return std::borrow::Cow::Owned(self.sealing.stored_key(key));
        }
        std::borrow::Cow::Borrowed(key)
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
        &self.view
    }

    /// The namespace every key of this handle lives in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The clock leases and expiry are read from.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The replay cache, if [`with_replay_cache`](Idempotency::with_replay_cache) set one.
    pub fn replay_cache(&self) -> Option<&ReplayCache> {
        self.replay_cache.as_deref()
    }

    /// Starts the key of a call to the function called `name`. Finish it with
    /// [`scope`](KeyBuilder::scope), [`part`](KeyBuilder::part) and
    /// [`finish`](KeyBuilder::finish).
    pub fn key(&self, name: &str) -> KeyBuilder {
        KeyBuilder::new(&self.namespace, name)
    }

    /// Deletes the record under `key` whatever its state, for an operator unblocking a key whose
    /// record is corrupt. The next call with that key runs the function again.
    ///
    /// This handle's [`ReplayCache`] drops the key too; other processes' caches keep replaying
    /// it for at most their [`max_age`](ReplayCache::max_age).
    pub async fn forget(&self, key: &Key) -> Result<(), Error> {
        let deleted = self
            .store
            .delete(key)
            .await
            .map_err(|e| e.into_error(key.as_str()));
        // After the delete: evicting first would let a replay running meanwhile refill the
        // entry from the record about to go.
        if let Some(cache) = &self.replay_cache {
            cache.remove(&self.cache_key(key));
        }
        deleted
    }
}

impl fmt::Debug for Idempotency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotency")
            .field("namespace", &self.namespace)
            .field("replay_cache", &self.replay_cache)
            .field("quota", &self.quota.is_some())
            .finish_non_exhaustive()
    }
}
