//! `ScopeQuota`: records and bytes per scope, counted in the process.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use super::{Quota, QuotaExceeded, QuotaPermit};
use crate::{Key, Timestamp};

/// How long a scope full of running calls only is told to wait: they end within a lease.
const BUSY_RETRY_AFTER: Duration = Duration::from_secs(1);

/// How often, at most, scopes that no call came back to are swept out of the counts.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// A [`Quota`] of records and bytes per scope, counted in this process.
///
/// A scope holds the outcomes it stored until they expire, and one record for each of its
/// calls still running. A call with a new key is refused once the scope holds `max_records`,
/// or once its stored outcomes reach `max_bytes` (the outcome that crosses the bound is still
/// stored: the function has run). Retry-After is when the scope's first outcome expires.
///
/// Each process counts only the calls it ran, so `n` processes behind one store let a scope
/// fill up to `n` times the bounds; divide them by the number of processes, or implement
/// [`Quota`] over a shared counter. An outcome removed with
/// [`forget`](crate::Idempotency::forget) still counts until it would have expired.
///
/// ```
/// use idem_core::{Idempotency, ScopeQuota};
/// # fn demo(store: impl idem_core::Store) {
/// let idem = Idempotency::new(store)
///     .with_quota(ScopeQuota::new().max_records(1_000).max_bytes(16 << 20));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ScopeQuota {
    max_records: usize,
    max_bytes: u64,
    counts: Arc<Mutex<Counts>>,
}

impl Default for ScopeQuota {
    fn default() -> Self {
        ScopeQuota::new()
    }
}

impl ScopeQuota {
    /// A quota that bounds nothing until [`max_records`](ScopeQuota::max_records) or
    /// [`max_bytes`](ScopeQuota::max_bytes) says otherwise.
    pub fn new() -> Self {
        ScopeQuota {
            max_records: usize::MAX,
            max_bytes: u64::MAX,
            counts: Arc::default(),
        }
    }

    /// At most `max` records per scope: stored outcomes not yet expired, and running calls.
    pub fn max_records(mut self, max: usize) -> Self {
        self.max_records = max;
        self
    }

    /// At most `max` bytes of stored outcomes per scope.
    pub fn max_bytes(mut self, max: u64) -> Self {
        self.max_bytes = max;
        self
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        lock(&self.counts)
    }
}

#[async_trait]
impl Quota for ScopeQuota {
    async fn admit(
        &self,
        scope: Option<&str>,
        now: Timestamp,
    ) -> Result<QuotaPermit, QuotaExceeded> {
        let mut counts = self.counts();
        counts.sweep(now);
        let usage = counts.scopes.entry(scope.map(str::to_owned)).or_default();
        usage.expire(now);
        let refusal = if usage.records() >= self.max_records {
            Some(format!("{} records kept", self.max_records))
        } else if usage.bytes >= self.max_bytes {
            Some(format!("{} bytes of answers kept", self.max_bytes))
        } else {
            None
        };
        if let Some(reason) = refusal {
            let retry_after = usage
                .first_expiry()
                .map_or(BUSY_RETRY_AFTER, |at| at.saturating_duration_since(now));
            return Err(QuotaExceeded::new(
                retry_after.max(Duration::from_millis(1)),
                reason,
            ));
        }
        usage.running += 1;
        Ok(QuotaPermit::holding(Running {
            counts: self.counts.clone(),
            scope: scope.map(str::to_owned),
        }))
    }

    fn stored(&self, scope: Option<&str>, key: &Key, bytes: usize, expires_at: Timestamp) {
        let mut counts = self.counts();
        let usage = counts.scopes.entry(scope.map(str::to_owned)).or_default();
        usage.store(key, bytes as u64, expires_at);
    }
}

/// Every scope's usage.
#[derive(Debug, Default)]
struct Counts {
    scopes: HashMap<Option<String>, Usage>,
    next_sweep: Timestamp,
}

impl Counts {
    /// Drops the expired outcomes of every scope, and the scopes left empty, at most once per
    /// [`SWEEP_EVERY`]: a scope no call comes back to would otherwise stay counted forever.
    fn sweep(&mut self, now: Timestamp) {
        if now < self.next_sweep {
            return;
        }
        self.next_sweep = now + SWEEP_EVERY;
        self.scopes.retain(|_, usage| {
            usage.expire(now);
            !usage.is_empty()
        });
    }
}

/// One scope's calls running and outcomes stored.
#[derive(Debug, Default)]
struct Usage {
    running: usize,
    bytes: u64,
    /// Each stored key's expiry and size.
    stored: HashMap<Key, (Timestamp, u64)>,
    by_expiry: BTreeSet<(Timestamp, Key)>,
}

impl Usage {
    fn records(&self) -> usize {
        self.running + self.stored.len()
    }

    fn is_empty(&self) -> bool {
        self.running == 0 && self.stored.is_empty()
    }

    fn first_expiry(&self) -> Option<Timestamp> {
        self.by_expiry.first().map(|(at, _)| *at)
    }

    fn store(&mut self, key: &Key, bytes: u64, expires_at: Timestamp) {
        self.forget(key);
        self.stored.insert(key.clone(), (expires_at, bytes));
        self.by_expiry.insert((expires_at, key.clone()));
        self.bytes += bytes;
    }

    fn forget(&mut self, key: &Key) {
        if let Some((expires_at, bytes)) = self.stored.remove(key) {
            self.by_expiry.remove(&(expires_at, key.clone()));
            self.bytes -= bytes;
        }
    }

    /// Drops the outcomes expired at `now`.
    fn expire(&mut self, now: Timestamp) {
        while let Some((at, key)) = self.by_expiry.first().cloned() {
            if at > now {
                break;
            }
            self.forget(&key);
        }
    }
}

/// A running call's record, given back when its permit is dropped.
struct Running {
    counts: Arc<Mutex<Counts>>,
    scope: Option<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        if let Some(usage) = counts.scopes.get_mut(&self.scope) {
            usage.running -= 1;
            if usage.is_empty() {
                counts.scopes.remove(&self.scope);
            }
        }
    }
}

/// The counts, even after a panic elsewhere while they were locked: each change is a few
/// field updates that a panic cannot leave half done.
fn lock(counts: &Mutex<Counts>) -> MutexGuard<'_, Counts> {
    counts
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_millis(1_700_000_000_000);

    fn key(part: &str) -> Key {
        crate::KeyBuilder::new("ns", "f")
            .part(part)
            .finish()
            .unwrap()
    }

    async fn admit(
        quota: &ScopeQuota,
        scope: &str,
        now: Timestamp,
    ) -> Result<QuotaPermit, QuotaExceeded> {
        quota.admit(Some(scope), now).await
    }

    #[tokio::test]
    async fn records_are_counted_per_scope_until_they_expire() {
        let quota = ScopeQuota::new().max_records(2);
        let ttl = Duration::from_secs(600);
        for part in ["a", "b"] {
            let permit = admit(&quota, "mallory", NOW).await.unwrap();
            quota.stored(Some("mallory"), &key(part), 10, NOW + ttl);
            drop(permit);
        }
        let refused = admit(&quota, "mallory", NOW).await.unwrap_err();
        assert_eq!(refused.retry_after(), ttl);
        assert_eq!(refused.reason(), "2 records kept");
        assert!(admit(&quota, "alice", NOW).await.is_ok());
        assert!(quota.admit(None, NOW).await.is_ok());
        assert!(admit(&quota, "mallory", NOW + ttl).await.is_ok());
    }

    #[tokio::test]
    async fn running_calls_count_until_their_permit_drops() {
        let quota = ScopeQuota::new().max_records(1);
        let running = admit(&quota, "mallory", NOW).await.unwrap();
        let refused = admit(&quota, "mallory", NOW).await.unwrap_err();
        assert_eq!(refused.retry_after(), BUSY_RETRY_AFTER);
        drop(running);
        assert!(admit(&quota, "mallory", NOW).await.is_ok());
        assert!(
            quota.counts().scopes.is_empty(),
            "a scope left empty is dropped"
        );
    }

    #[tokio::test]
    async fn bytes_refuse_once_reached_and_a_key_stored_again_counts_once() {
        let quota = ScopeQuota::new().max_bytes(100);
        let later = NOW + Duration::from_secs(60);
        quota.stored(Some("s"), &key("a"), 60, later);
        quota.stored(Some("s"), &key("a"), 60, later);
        assert!(admit(&quota, "s", NOW).await.is_ok());
        quota.stored(Some("s"), &key("b"), 40, later + Duration::from_secs(1));
        let refused = admit(&quota, "s", NOW).await.unwrap_err();
        assert_eq!(refused.reason(), "100 bytes of answers kept");
        assert_eq!(refused.retry_after(), Duration::from_secs(60));
    }

    #[tokio::test]
    async fn scopes_nobody_comes_back_to_are_swept() {
        let quota = ScopeQuota::new();
        quota.stored(Some("gone"), &key("a"), 1, NOW + Duration::from_secs(1));
        admit(&quota, "other", NOW + SWEEP_EVERY).await.unwrap();
        assert!(!quota.counts().scopes.contains_key(&Some("gone".to_owned())));
    }
}
