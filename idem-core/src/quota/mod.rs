//! Quotas: how much of the store one scope (a principal, a tenant) may fill, so that no client
//! can deny the others by filling it.
//!
//! A [`Quota`] set with [`Idempotency::with_quota`](crate::Idempotency::with_quota) is asked
//! before every reservation. While it refuses a scope, that scope's calls with keys it has
//! already used are still answered (a replay, or "in progress"), and calls with new keys get
//! [`Error::QuotaExceeded`](crate::Error::QuotaExceeded) (HTTP 429 with `Retry-After`) without
//! running. [`ScopeQuota`] counts in the process; implement [`Quota`] to count elsewhere.

mod scope_quota;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use crate::{Key, Timestamp};

pub use scope_quota::ScopeQuota;

/// Decides whether a scope may reserve one more key, and learns what each one stored.
///
/// `scope` is the key's scope as encoded in it ([`Key::scope`]), `None` for keys without
/// one: every unscoped call counts against one shared allowance.
#[async_trait]
pub trait Quota: Send + Sync + 'static {
    /// Before a reservation in `scope` at `now`: a permit, held until the call ends, or why
    /// not. The permit is also taken for a call that turns out to be a replay; it then counts
    /// only while the call runs.
    async fn admit(
        &self,
        scope: Option<&str>,
        now: Timestamp,
    ) -> Result<QuotaPermit, QuotaExceeded>;

    /// `key`, in `scope`, now keeps an outcome of `bytes` bytes until `expires_at`. Called on
    /// the request path once the outcome is stored, before the call's permit is dropped.
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
}

impl QuotaExceeded {
    /// A refusal because of `reason` ("100 records kept", say), that may lift after
    /// `retry_after`.
    pub fn new(retry_after: Duration, reason: impl Into<String>) -> Self {
        QuotaExceeded {
            retry_after,
            reason: reason.into(),
        }
    }

    /// How long until the scope may have room again: fit for a `Retry-After` header.
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// What ran out, in words.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}
