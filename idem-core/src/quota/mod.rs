//! Quotas: how much of the store one scope (a principal, a tenant) may fill, so that no client
//! can deny the others by filling it.
//!
//! A [`Quota`] set with [`Idempotency::with_quota`](crate::Idempotency::with_quota) is asked
//! before every reservation. While it refuses a scope, a call whose key still has a record
//! goes on for its answer as it would without a quota (a replay, "in progress", a wait, a
//! mismatch), and a call with a new key gets
//! [`Error::QuotaExceeded`](crate::Error::QuotaExceeded) (HTTP 429 with `Retry-After`)
//! without anything written or run. A call that would run the function (a takeover after a
//! crash, a waiter whose first call failed) is asked for again once it holds the key, and
//! releases it unrun when the quota still refuses. [`ScopeQuota`] counts in the process; implement [`Quota`]
//! to count elsewhere.

mod counts;
mod scope_quota;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use crate::{key::Key, store::Timestamp};

pub use scope_quota::ScopeQuota;

/// Decides whether a scope may reserve one more key, and learns what the calls it let in
/// stored.
///
/// `scope` is the key's scope as encoded in it ([`Key::scope`]), `None` for keys without
/// one. `stored` and the permit's drop are called on the request path and cannot wait: an
/// implementation over a shared counter (Redis, say) reads it in `admit` and sends its
/// updates from a task of its own.
///
/// What is not reported: an outcome stored by the task that settles a call whose future was
/// dropped mid-way, a recorded step's value, and a key held after a panic until its lease
/// passes. They are bounded by the calls let in, which the permits count while they run.
#[async_trait]
pub trait Quota: Send + Sync + 'static {
    /// Before `key` is reserved in `scope` at `now`: a permit, held until the call ends, or
    /// why not. The permit is also taken for a call that turns out to be a duplicate, or a
    /// replay its reservation answers; it then counts only while that call runs. A replay the
    /// replay cache or the store's [`lookup`](crate::store::Store::lookup) answers reserves
    /// nothing, and is not asked for.
    async fn admit(
        &self,
        scope: Option<&str>,
        key: &Key,
        now: Timestamp,
    ) -> Result<QuotaPermit, QuotaExceeded>;

    /// `key`, in `scope`, now keeps an outcome of `bytes` bytes until `expires_at`. Called
    /// once the outcome is stored, before the call's permit is dropped.
    fn stored(&self, scope: Option<&str>, key: &Key, bytes: usize, expires_at: Timestamp);
}

/// Counts an admitted call until it ends: what the permit holds is dropped with it.
pub struct QuotaPermit {
    _held: Option<Box<dyn Send + Sync>>,
}

impl QuotaPermit {
    /// A permit that holds `held` until the call ends, such as a guard whose `Drop` gives the
    /// scope's room back.
    pub fn holding(held: impl Send + Sync + 'static) -> Self {
        QuotaPermit {
            _held: Some(Box::new(held)),
        }
    }

    /// A permit that counts nothing.
    pub fn free() -> Self {
        QuotaPermit { _held: None }
    }
}

impl fmt::Debug for QuotaPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QuotaPermit(..)")
    }
}

/// A refusal of a [`Quota`]: what ran out, and when to try again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaExceeded {
    retry_after: Duration,
    reason: String,
    store_full: bool,
}

impl QuotaExceeded {
    /// A refusal because of `reason` (what the scope keeps: "100 records", say), that may
    /// lift after `retry_after`.
    pub fn new(retry_after: Duration, reason: impl Into<String>) -> Self {
        QuotaExceeded {
            retry_after,
            reason: reason.into(),
            store_full: false,
        }
    }

    /// A refusal because every scope together reached a bound of the whole store (`reason`:
    /// "100000 records", say), not because of anything the key's own scope did: the call
    /// gets [`Error::StoreFull`](crate::Error::StoreFull) (HTTP 503) rather than
    /// [`Error::QuotaExceeded`](crate::Error::QuotaExceeded) (429).
    pub fn store_full(retry_after: Duration, reason: impl Into<String>) -> Self {
        QuotaExceeded {
            store_full: true,
            ..QuotaExceeded::new(retry_after, reason)
        }
    }

    /// Whether the whole store, rather than the key's scope, reached its bound.
    pub fn is_store_full(&self) -> bool {
        self.store_full
    }

    /// How long until the scope may have room again: fit for a `Retry-After` header.
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// What the scope keeps that reached its bound, in words: "100 records".
    pub fn reason(&self) -> &str {
        &self.reason
    }
}
