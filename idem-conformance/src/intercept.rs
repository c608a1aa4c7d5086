//! One way to wrap a store: pass every call through to it, and change the ones a test picks.

use std::ops::Deref;
use std::time::Duration;

use async_trait::async_trait;

use idem_core::store::{
    Claim, Completed, Lookup, OwnerToken, Probe, Record, Reservation, Store, Timestamp,
};
use idem_core::{Key, StoreError};

/// Which [`Store`] method a call is, for [`Interceptor::before`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// [`Store::reserve`].
    Reserve,
    /// [`Store::complete`].
    Complete,
    /// [`Store::release`].
    Release,
    /// [`Store::record_step`].
    RecordStep,
    /// [`Store::renew`].
    Renew,
    /// [`Store::get`].
    Get,
    /// [`Store::delete`].
    Delete,
    /// [`Store::changed`].
    Changed,
    /// [`Store::lookup`], which does not wait: [`Intercepted`] hands it to
    /// [`Interceptor::lookup`] alone, never to the asynchronous
    /// [`before`](Interceptor::before). For an interceptor that serves lookups and keeps
    /// account of the operations it sees.
    Lookup,
}

/// A store that wraps [`inner`](Interceptor::inner): every method passes the call through
/// unless the implementation overrides it, after [`before`](Interceptor::before) had its say.
/// [`Intercepted`] makes one a [`Store`].
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
/// use idem_core::{store::Store, Key, StoreError};
///
/// /// Counts every call, and refuses reservations while `down` is set.
/// struct Flaky { inner: ReferenceStore, calls: AtomicUsize, down: bool }
///
/// #[async_trait::async_trait]
/// impl Interceptor for Flaky {
///     fn inner(&self) -> &dyn Store { &self.inner }
///     async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
///         self.calls.fetch_add(1, Ordering::SeqCst);
///         match operation {
///             Operation::Reserve if self.down => Err(StoreError::backend("connection refused")),
///             _ => Ok(()),
///         }
///     }
/// }
///
/// let store = Arc::new(Intercepted(Flaky { inner: ReferenceStore::new(), calls: AtomicUsize::new(0), down: true }));
/// let idem = idem_core::Idempotency::from_arc(store.clone());
/// ```
#[async_trait]
pub trait Interceptor: Send + Sync + 'static {
    /// The store every call goes to unless overridden.
    fn inner(&self) -> &dyn Store;

    /// Runs before every call; an error is the call's answer, and the call is not passed on.
    async fn before(&self, operation: Operation, key: &Key) -> Result<(), StoreError> {
        let _ = (operation, key);
        Ok(())
    }

    /// [`Store::lookup`]. The default misses rather than ask the inner store, so that every
    /// replay goes through [`reserve`](Interceptor::reserve), and through
    /// [`before`](Interceptor::before), as it did before stores looked records up: an
    /// interceptor that changes what a reservation answers keeps seeing every replay. One that
    /// wants the inner store's lookups passes them on itself.
    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        let _ = (key, probe);
        Ok(Lookup::Miss)
    }

    /// [`Store::looks_up`]: `false`, as [`lookup`](Interceptor::lookup) misses; an interceptor
    /// that overrides `lookup` says `true`.
    fn looks_up(&self) -> bool {
        false
    }

    /// [`Store::reserve`].
    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        self.inner().reserve(key, claim).await
    }

    /// [`Store::complete`].
    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        self.inner().complete(key, owner, record).await
    }

    /// [`Store::release`].
    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        self.inner().release(key, owner).await
    }

    /// [`Store::record_step`].
    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.inner()
            .record_step(key, owner, name, value, kept_until)
            .await
    }

    /// [`Store::renew`].
    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.inner().renew(key, owner, lease_until).await
    }

    /// [`Store::get`].
    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        self.inner().get(key).await
    }

    /// [`Store::contains`].
    async fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        self.inner().contains(key).await
    }

    /// [`Store::delete`].
    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        self.inner().delete(key).await
    }

    /// [`Store::delete_if`].
    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        self.inner().delete_if(key, expected).await
    }

    /// [`Store::changed`].
    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        self.inner().changed(key, timeout).await
    }

    /// [`Store::sealing_scope`].
    fn sealing_scope(&self) -> String {
        self.inner().sealing_scope()
    }
}

/// An [`Interceptor`] as a [`Store`]; it dereferences to the interceptor, so a test reads what
/// its interceptor saw through the store it handed out.
#[derive(Default)]
pub struct Intercepted<I>(pub I);

impl<I> Deref for Intercepted<I> {
    type Target = I;

    fn deref(&self) -> &I {
        &self.0
    }
}

#[async_trait]
impl<I: Interceptor> Store for Intercepted<I> {
    /// The interceptor's [`lookup`](Interceptor::lookup), without [`before`](Interceptor::before),
    /// which waits and a lookup may not.
    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        self.0.lookup(key, probe)
    }

    fn looks_up(&self) -> bool {
        self.0.looks_up()
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        self.0.before(Operation::Reserve, key).await?;
        self.0.reserve(key, claim).await
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        self.0.before(Operation::Complete, key).await?;
        self.0.complete(key, owner, record).await
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        self.0.before(Operation::Release, key).await?;
        self.0.release(key, owner).await
    }

    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.0.before(Operation::RecordStep, key).await?;
        self.0
            .record_step(key, owner, name, value, kept_until)
            .await
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.0.before(Operation::Renew, key).await?;
        self.0.renew(key, owner, lease_until).await
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        self.0.before(Operation::Get, key).await?;
        self.0.get(key).await
    }

    /// Intercepted as an [`Operation::Get`]: a read of the key.
    async fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        self.0.before(Operation::Get, key).await?;
        self.0.contains(key).await
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        self.0.before(Operation::Delete, key).await?;
        self.0.delete(key).await
    }

    /// Intercepted as a [`Operation::Delete`].
    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        self.0.before(Operation::Delete, key).await?;
        self.0.delete_if(key, expected).await
    }

    /// The inner store's name: a wrapped store is still that store in metrics.
    fn name(&self) -> &'static str {
        self.0.inner().name()
    }

    /// The inner store's listing, not intercepted.
    fn inventory(&self) -> Option<&dyn idem_core::store::Inventory> {
        self.0.inner().inventory()
    }

    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        self.0.before(Operation::Changed, key).await?;
        self.0.changed(key, timeout).await
    }

    fn sealing_scope(&self) -> String {
        self.0.sealing_scope()
    }
}
