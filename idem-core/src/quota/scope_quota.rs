//! `ScopeQuota`: records and bytes per scope, counted in the process.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use super::{Quota, QuotaExceeded, QuotaPermit};
use crate::{Key, Timestamp};

/// How long a scope whose calls are still running is told to wait at most: each one that
/// ends without storing (an error, a replay, a duplicate) frees its room at once.
const BUSY_RETRY_AFTER: Duration = Duration::from_secs(1);

/// How often, at most, scopes that no call came back to are swept out of the counts.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// A [`Quota`] of records and bytes per scope, counted in this process.
///
/// A scope holds the outcomes it stored until they expire, and one record for each of its
/// calls still running (a duplicate of one running here counts, but is never refused). A call
/// with a new key is refused once the scope holds `max_records` (0 refuses every new key), or
/// once its stored outcomes reach `max_bytes`. Calls let in
/// before the bound was reached still store their outcomes (the function has run), so the
/// bytes kept may pass `max_bytes` by the answers of the calls running at that moment, at
/// most `max_records` of them: bound the answer's size too (idem-http's
/// `max_response_body`). Retry-After is when the scope's first outcome expires, or a second
/// while some of its calls are still running.
///
/// Keys without a scope count as one scope, unless
/// [`bound_unscoped(false)`](ScopeQuota::bound_unscoped) leaves them unbounded.
///
/// The counts live in this process: `n` processes behind one store let a scope fill up to
/// `n` times the bounds (divide them by the number of processes, or implement [`Quota`] over
/// a shared counter), and a restart starts them from zero. An outcome removed with
/// [`forget`](crate::Idempotency::forget) still counts until it would have expired. The
/// counts take a few dozen bytes per stored outcome, and nothing when no bound is set.
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
    bound_unscoped: bool,
    /// Keys are counted by a keyed hash of themselves, not a copy.
    hasher: RandomState,
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
            bound_unscoped: true,
            hasher: RandomState::new(),
            counts: Arc::default(),
        }
    }

    /// At most `max` records per scope: stored outcomes not yet expired, and running calls.
    pub fn max_records(mut self, max: usize) -> Self {
        self.max_records = max;
        self
    }

    /// At most `max` bytes of stored outcomes per scope, as above.
    pub fn max_bytes(mut self, max: u64) -> Self {
        self.max_bytes = max;
        self
    }

    /// Whether keys without a scope share one bounded allowance (`true`, the default) or are
    /// not bounded at all (`false`): for an application whose `#[idempotent]` functions take
    /// no scope, and whose HTTP layer does.
    pub fn bound_unscoped(mut self, bound: bool) -> Self {
        self.bound_unscoped = bound;
        self
    }

    fn bounds(&self, scope: Option<&str>) -> bool {
        let bounded = self.max_records != usize::MAX || self.max_bytes != u64::MAX;
        bounded && (scope.is_some() || self.bound_unscoped)
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
        key: &Key,
        now: Timestamp,
    ) -> Result<QuotaPermit, QuotaExceeded> {
        if !self.bounds(scope) {
            return Ok(QuotaPermit::free());
        }
        let key = self.hasher.hash_one(key.as_str());
        let mut counts = self.counts();
        counts.sweep(now);
        let usage = counts.scopes.entry(scope.map(str::to_owned)).or_default();
        usage.expire(now);
        // A duplicate of a call running here adds no record: refusing it would answer 429
        // for a key the client is already using.
        let duplicate = usage.running_keys.contains_key(&key);
        let refusal = if duplicate {
            None
        } else if usage.records() >= self.max_records {
            Some(format!("{} records", self.max_records))
        } else if usage.bytes >= self.max_bytes {
            Some(format!("{} bytes of answers", self.max_bytes))
        } else {
            None
        };
        if let Some(reason) = refusal {
            let first_expiry = usage
                .first_expiry()
                .map(|at| at.saturating_duration_since(now));
            let retry_after = match (first_expiry, usage.running) {
                (Some(expiry), 0) => expiry,
                (Some(expiry), _) => expiry.min(BUSY_RETRY_AFTER),
                (None, _) => BUSY_RETRY_AFTER,
            };
            return Err(QuotaExceeded::new(
                retry_after.max(Duration::from_millis(1)),
                reason,
            ));
        }
        usage.running += 1;
        *usage.running_keys.entry(key).or_default() += 1;
        Ok(QuotaPermit::holding(Running {
            counts: self.counts.clone(),
            scope: scope.map(str::to_owned),
            key,
        }))
    }

    fn stored(&self, scope: Option<&str>, key: &Key, bytes: usize, expires_at: Timestamp) {
        if !self.bounds(scope) {
            return;
        }
        let key = self.hasher.hash_one(key.as_str());
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

/// A key, as its hash.
type KeyHash = u64;

/// One scope's calls running and outcomes stored.
#[derive(Debug, Default)]
struct Usage {
    running: usize,
    /// How many of the running calls have each key.
    running_keys: HashMap<KeyHash, usize>,
    bytes: u64,
    /// Each stored key's expiry and size.
    stored: HashMap<KeyHash, (Timestamp, u64)>,
    by_expiry: BTreeSet<(Timestamp, KeyHash)>,
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

    fn store(&mut self, key: KeyHash, bytes: u64, expires_at: Timestamp) {
        self.forget(key);
        self.stored.insert(key, (expires_at, bytes));
        self.by_expiry.insert((expires_at, key));
        self.bytes += bytes;
    }

    fn forget(&mut self, key: KeyHash) {
        if let Some((expires_at, bytes)) = self.stored.remove(&key) {
            self.by_expiry.remove(&(expires_at, key));
            self.bytes -= bytes;
        }
    }

    /// Drops the outcomes expired at `now`.
    fn expire(&mut self, now: Timestamp) {
        while let Some(&(at, key)) = self.by_expiry.first() {
            if at > now {
                break;
            }
            self.forget(key);
        }
    }
}

/// A running call's record, given back when its permit is dropped.
struct Running {
    counts: Arc<Mutex<Counts>>,
    scope: Option<String>,
    key: KeyHash,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        if let Some(usage) = counts.scopes.get_mut(&self.scope) {
            usage.running -= 1;
            if let Some(same_key) = usage.running_keys.get_mut(&self.key) {
                *same_key -= 1;
                if *same_key == 0 {
                    usage.running_keys.remove(&self.key);
                }
            }
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
    const TTL: Duration = Duration::from_secs(600);

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
        // A key of its own, so that no call is a duplicate of another.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        quota
            .admit(Some(scope), &key(&format!("new-{n}")), now)
            .await
    }

    #[tokio::test]
    async fn records_are_counted_per_scope_until_they_expire() {
        let quota = ScopeQuota::new().max_records(2);
        for part in ["a", "b"] {
            let permit = admit(&quota, "mallory", NOW).await.unwrap();
            quota.stored(Some("mallory"), &key(part), 10, NOW + TTL);
            drop(permit);
        }
        let refused = admit(&quota, "mallory", NOW).await.unwrap_err();
        assert_eq!(refused.retry_after(), TTL);
        assert_eq!(refused.reason(), "2 records");
        assert!(admit(&quota, "alice", NOW).await.is_ok());
        assert!(quota.admit(None, &key("a"), NOW).await.is_ok());
        assert!(admit(&quota, "mallory", NOW + TTL).await.is_ok());
    }

    #[tokio::test]
    async fn running_calls_count_until_their_permit_drops_and_shorten_the_wait() {
        let quota = ScopeQuota::new().max_records(2);
        quota.stored(Some("mallory"), &key("a"), 10, NOW + TTL);
        let running = admit(&quota, "mallory", NOW).await.unwrap();
        let refused = admit(&quota, "mallory", NOW).await.unwrap_err();
        assert_eq!(refused.retry_after(), BUSY_RETRY_AFTER);
        drop(running);
        let refused_later = admit(&quota, "mallory", NOW).await;
        assert!(refused_later.is_ok(), "the running call's room is back");
    }

    #[tokio::test]
    async fn a_duplicate_of_a_running_call_is_let_in_and_counted() {
        let quota = ScopeQuota::new().max_records(1);
        let first = quota.admit(Some("s"), &key("k"), NOW).await.unwrap();
        let duplicate = quota.admit(Some("s"), &key("k"), NOW).await.unwrap();
        assert!(quota.admit(Some("s"), &key("other"), NOW).await.is_err());
        drop(first);
        assert!(
            quota.admit(Some("s"), &key("other"), NOW).await.is_err(),
            "the duplicate still counts"
        );
        drop(duplicate);
        assert!(quota.counts().scopes.is_empty());
    }

    #[tokio::test]
    async fn a_scope_left_empty_is_dropped() {
        let quota = ScopeQuota::new().max_records(1);
        let running = admit(&quota, "mallory", NOW).await.unwrap();
        drop(running);
        assert!(quota.counts().scopes.is_empty());
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
        assert_eq!(refused.reason(), "100 bytes of answers");
        assert_eq!(refused.retry_after(), Duration::from_secs(60));
    }

    #[tokio::test]
    async fn unscoped_keys_share_one_allowance_unless_left_unbounded() {
        let shared = ScopeQuota::new().max_records(0);
        assert!(shared.admit(None, &key("a"), NOW).await.is_err());
        let unbounded = ScopeQuota::new().max_records(0).bound_unscoped(false);
        assert!(unbounded.admit(None, &key("a"), NOW).await.is_ok());
        unbounded.stored(None, &key("a"), 10, NOW + TTL);
        assert!(unbounded.counts().scopes.is_empty(), "nothing counted");
        assert!(admit(&unbounded, "s", NOW).await.is_err());
    }

    #[tokio::test]
    async fn a_quota_without_bounds_counts_nothing() {
        let quota = ScopeQuota::new();
        let _permit = admit(&quota, "s", NOW).await.unwrap();
        quota.stored(Some("s"), &key("a"), 10, NOW + TTL);
        assert!(quota.counts().scopes.is_empty());
    }

    #[tokio::test]
    async fn scopes_nobody_comes_back_to_are_swept() {
        let quota = ScopeQuota::new().max_records(10);
        admit(&quota, "other", NOW).await.unwrap();
        quota.stored(Some("gone"), &key("a"), 1, NOW + Duration::from_secs(1));
        assert!(quota.counts().scopes.contains_key(&Some("gone".to_owned())));
        admit(&quota, "other", NOW + SWEEP_EVERY).await.unwrap();
        assert!(!quota.counts().scopes.contains_key(&Some("gone".to_owned())));
    }
}
