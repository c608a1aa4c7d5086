//! Where a running body stands: its key, attempt, fencing token and lease.

use std::future::Future;
use std::sync::Arc;

use crate::call::downstream::Ordinals;
use crate::lease::Lease;
use crate::steps::journal::Journal;
use crate::{
    fingerprint::Fingerprint,
    key::Key,
    store::{Outcome, OwnerToken},
};

tokio::task_local! {
    static CURRENT: CallContext;
}

/// What a running idempotent body can know about its call, from [`context`].
///
/// ```
/// # async fn gateway_charge(_: &str, _: u64) -> Result<String, idem_core::Error> { Ok("ch_1".into()) }
/// # async fn demo(idem: idem_core::Idempotency) -> Result<(), idem_core::Error> {
/// use idem_core::{Call, Fingerprint};
/// let key = idem.key("payments.charge").part("order-42").finish()?;
/// let call = Call::new(key, Fingerprint::of(&("order-42", 1_000))?);
/// idem.run(call, async {
///     let ctx = idem_core::context().expect("inside an idempotent body");
///     // The provider deduplicates on a key derived from this call, even after a takeover.
///     gateway_charge(ctx.downstream_key("charge").as_str(), 1_000).await
/// })
/// .await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct CallContext {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    key: Key,
    /// What the handle's sealing makes of the key and of an outcome.
    stored: StoredForm,
    /// The call's fingerprint, as stored.
    fingerprint: Fingerprint,
    owner: OwnerToken,
    attempt: u32,
    fencing_token: u64,
    lease: Arc<Lease>,
    journal: Arc<Journal>,
    /// How many downstream keys each operation took in this attempt, outside steps.
    downstream: Ordinals,
}

impl CallContext {
    pub(crate) fn new(
        call: &crate::call::arguments::Resolved,
        stored: StoredForm,
        owner: OwnerToken,
        attempt: u32,
        fencing_token: u64,
        lease: Arc<Lease>,
        journal: Arc<Journal>,
    ) -> Self {
        CallContext {
            inner: Arc::new(Inner {
                key: call.key.clone(),
                stored,
                fingerprint: call.fingerprint,
                owner,
                attempt,
                fencing_token,
                lease,
                journal,
                downstream: Ordinals::default(),
            }),
        }
    }

    /// What the store keeps of this call, for its downstream keys (keyed by its digest secret).
    #[cfg(feature = "seal")]
    pub(crate) fn stored_form(&self) -> &StoredForm {
        &self.inner.stored
    }

    /// The uses of each downstream operation outside steps, in this attempt.
    pub(crate) fn downstream_ordinals(&self) -> &Ordinals {
        &self.inner.downstream
    }

    /// The call's steps, for [`step`](crate::step).
    pub(crate) fn journal(&self) -> &Journal {
        &self.inner.journal
    }

    /// The call's key: in clear, or its digest under
    /// [`name_keys_by_digest`](crate::Idempotency::name_keys_by_digest). To a downstream
    /// service (a card gateway, another team's API), send
    /// [`downstream_key`](CallContext::downstream_key) instead: the same in every attempt too,
    /// different per operation, and revealing nothing of this key.
    pub fn key(&self) -> &Key {
        &self.inner.key
    }

    /// The call's fingerprint, as stored: what the call was made with.
    pub(crate) fn fingerprint(&self) -> &Fingerprint {
        &self.inner.fingerprint
    }

    /// The key as the store keeps it: [`key`](CallContext::key), or its digest when the
    /// handle has [`with_key_digest`](crate::Idempotency::with_key_digest). What a store's own
    /// API (PostgreSQL's `complete_in_transaction`) writes under.
    pub fn stored_key(&self) -> Key {
        self.inner.stored.key.clone()
    }

    /// `outcome` as the store keeps it: sealed when the handle has
    /// [`with_sealing`](crate::Idempotency::with_sealing), as it is otherwise. What a store's
    /// own API writes.
    pub fn stored_outcome(&self, outcome: Outcome) -> Outcome {
        self.inner.stored.outcome(&self.inner.fingerprint, outcome)
    }

    /// The owner token of this call's reservation, as the store holds it. A store that
    /// completes the record inside the caller's own transaction conditions its write on it
    /// and on the [fencing token](CallContext::fencing_token), as every fenced write does.
    pub fn owner(&self) -> &OwnerToken {
        &self.inner.owner
    }

    /// 1 for the first reservation of this call's record, one more for each takeover by a retry
    /// with the same arguments (after the previous owner crashed, hung or held an aborted call).
    /// A body that sees `attempt() > 1` may check what an earlier attempt already did.
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// A number that strictly grows with every reservation of this key, on every store (while
    /// the callers' clocks agree, as leases assume). Hand it to a downstream system that
    /// refuses writes carrying a smaller token than one it has seen, so that a stale owner
    /// whose lease passed can never overwrite its successor's work.
    pub fn fencing_token(&self) -> u64 {
        self.inner.fencing_token
    }

    /// Tells the engine that the body wrote this call's outcome inside its own transaction,
    /// fenced by [`owner`](CallContext::owner) and
    /// [`fencing_token`](CallContext::fencing_token). A store's own API calls it once that
    /// write went through (PostgreSQL's `complete_in_transaction`); nothing else should. Once
    /// the transaction commits, a renewal that finds the record completed with this call's
    /// fingerprint knows it is this call's own completion, not a successor's, and the lease
    /// can no longer be lost: [`lease_lost`](CallContext::lease_lost) no longer resolves
    /// when its deadline passes.
    pub fn completed_in_transaction(&self) {
        self.inner.lease.completed_in_transaction();
    }

    /// Resolves when the engine learns the lease is gone: another caller took the key over
    /// (a renewal or a [step](crate::step)'s write was refused and the record read back shows
    /// another owner), or the lease passed by the caller's clock with no renewal through (a
    /// call [without renewal](crate::Call::without_renewal), a process paused past its
    /// lease, a store that did not answer in time). A long body can race its work against it
    /// and stop early; its outcome will not be recorded
    /// ([`Error::NotRecorded`](crate::Error::NotRecorded)) unless the store still accepts it.
    ///
    /// After an outage that outlasted the lease, renewals go on; when one gets through, no one
    /// took the key over meanwhile and [`is_lease_lost`](CallContext::is_lease_lost) is `false`
    /// again. A renewal that finds the record completed by this very call (in the caller's
    /// own transaction, [`completed_in_transaction`](CallContext::completed_in_transaction))
    /// is no loss, and the lease no longer passes.
    pub async fn lease_lost(&self) {
        self.inner.lease.lost_or_passed().await
    }

    /// Whether the lease is known to be lost now: taken over (for good), or passed by the
    /// caller's clock with no renewal through since, unless the record holds this call's
    /// own completion.
    pub fn is_lease_lost(&self) -> bool {
        self.inner.lease.known_lost()
    }

    /// Runs `body` with this call current, for work the body hands to another task: a task
    /// spawned on another thread's runtime (actix-web's `spawn_local`), a worker that serves
    /// the body's request. Inside it, [`context`], [`step`](crate::step) and the lease are the
    /// call's own, as they are in the body itself; without it a spawned task runs outside the
    /// call, and its steps record nothing.
    ///
    /// ```
    /// # use idem_core::{Call, Fingerprint, Idempotency};
    /// # use idem_conformance::ReferenceStore;
    /// # async fn demo() -> Result<(), idem_core::Error> {
    /// # let idem = Idempotency::new(ReferenceStore::new());
    /// let key = idem.key("shop.checkout").part("order-42").finish()?;
    /// let call = Call::new(key, Fingerprint::of(&"order-42")?);
    /// idem.run(call, async {
    ///     let call = idem_core::context().expect("inside an idempotent body");
    ///     let worker = tokio::spawn(call.scope(async {
    ///         idem_core::step("charge", async { Ok::<_, idem_core::Error>(1_000) }).await
    ///     }));
    ///     worker.await.expect("the worker ends")
    /// })
    /// .await?;
    /// # Ok(()) }
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(demo()).unwrap();
    /// ```
    pub fn scope<F: Future>(self, body: F) -> impl Future<Output = F::Output> {
        CURRENT.scope(self, body)
    }
}

/// A call's key as the store keeps it, and the sealing its outcome gets there: what a store's
/// own API needs to write the record the engine would.
#[derive(Clone)]
pub(crate) struct StoredForm {
    pub(crate) key: Key,
    #[cfg(feature = "seal")]
    pub(crate) sealing: crate::seal::Sealing,
}

impl StoredForm {
    /// `outcome` of the call fingerprinted `fingerprint` (as stored), as the store keeps it.
    pub(crate) fn outcome(&self, fingerprint: &Fingerprint, outcome: Outcome) -> Outcome {
        #[cfg(feature = "seal")]
        return self.sealing.stored_outcome(&self.key, fingerprint, outcome);
        #[cfg(not(feature = "seal"))]
        {
            let _ = fingerprint;
            outcome
        }
    }
}

impl std::fmt::Debug for StoredForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredForm")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// The context of the idempotent body being polled on this task, or `None` outside one.
///
/// Set while the engine polls the body (of `#[idempotent]` functions and of
/// [`Idempotency::run`](crate::Idempotency::run)), including every function the body awaits;
/// not inside tasks the body spawns, unless they run under [`CallContext::scope`].
pub fn context() -> Option<CallContext> {
    CURRENT.try_with(CallContext::clone).ok()
}
