//! `ScopeQuota`: records and bytes per scope, and in all, counted in the process.

use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use super::counts::{lock, Counts, Running, Usage};
use super::{Quota, QuotaExceeded, QuotaPermit};
use crate::{key::Key, store::Timestamp};

/// How long a scope whose calls are still running is told to wait at most: each one that
/// ends without storing (an error, a replay, a duplicate) frees its room at once.
const BUSY_RETRY_AFTER: Duration = Duration::from_secs(1);

/// A [`Quota`] of records and bytes per scope, and in all, counted in this process.
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
/// # The total
///
/// [`max_total_records`](ScopeQuota::max_total_records) and
/// [`max_total_bytes`](ScopeQuota::max_total_bytes) bound every scope together, so that no
/// number of scopes (made-up principals, many accounts) can fill the store. Once the total
/// is reached, a new key of a scope that keeps nothing yet is refused with
/// [`Error::StoreFull`](crate::Error::StoreFull) (HTTP 503, with Retry-After), while replays
/// of every key go on, and a scope that already keeps records goes on within its own bounds:
/// a flood of new scopes cannot take the room of the principals already served. So the store
/// holds at most the total plus what the scopes kept when it was reached may still add
/// within their own bounds; with no per-scope bound, the total is a bound for every scope.
///
/// Keys without a scope count as one scope, unless
/// [`bound_unscoped(false)`](ScopeQuota::bound_unscoped) leaves them unbounded (and out of
/// the total).
///
/// The counts live in this process: `n` processes behind one store let a scope fill up to
/// `n` times the bounds (divide them by the number of processes, or implement [`Quota`] over
/// a shared counter), and a restart starts them from zero. An outcome removed with
/// [`forget`](crate::Idempotency::forget) still counts until it would have expired. The
/// counts take a few dozen bytes per stored outcome, and nothing when no bound is set.
///
/// ```
/// use idem_core::{Idempotency, ScopeQuota};
/// # fn demo(store: impl idem_core::store::Store) {
/// let idem = Idempotency::new(store).with_quota(
///     ScopeQuota::new()
///         .max_records(1_000)
///         .max_bytes(16 << 20)
///         .max_total_records(1_000_000)
///         .max_total_bytes(4 << 30),
/// );
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ScopeQuota {
    max_records: usize,
    max_bytes: u64,
    max_total_records: usize,
    max_total_bytes: u64,
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
    /// A quota that bounds nothing until a `max_` setting says otherwise.
    pub fn new() -> Self {
        ScopeQuota {
            max_records: usize::MAX,
            max_bytes: u64::MAX,
            max_total_records: usize::MAX,
            max_total_bytes: u64::MAX,
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

    /// At most `max` records of every scope together, before scopes that keep nothing yet are
    /// refused new keys (see [the total](ScopeQuota#the-total)).
    pub fn max_total_records(mut self, max: usize) -> Self {
        self.max_total_records = max;
        self
    }

    /// At most `max` bytes of stored outcomes of every scope together, as above.
    pub fn max_total_bytes(mut self, max: u64) -> Self {
        self.max_total_bytes = max;
        self
    }

    /// Whether keys without a scope share one bounded allowance (`true`, the default) or are
    /// not bounded at all (`false`): for an application whose `#[idempotent]` functions take
    /// no scope, and whose HTTP layer does.
    pub fn bound_unscoped(mut self, bound: bool) -> Self {
        self.bound_unscoped = bound;
        self
    }

    /// Whether calls in `scope` are counted: some bound is set, and applies to it.
    fn counts_scope(&self, scope: Option<&str>) -> bool {
        let bounded = self.max_records != usize::MAX
            || self.max_bytes != u64::MAX
            || self.max_total_records != usize::MAX
            || self.max_total_bytes != u64::MAX;
        bounded && (scope.is_some() || self.bound_unscoped)
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        lock(&self.counts)
    }

    /// Why a new key of a scope using `usage` is refused by the scope's own bounds, if it is.
    fn scope_refusal(&self, usage: &Usage) -> Option<String> {
        if usage.records() >= self.max_records {
            Some(format!("{} records", self.max_records))
        } else if usage.bytes >= self.max_bytes {
            Some(format!("{} bytes of answers", self.max_bytes))
        } else {
            None
        }
    }

    /// Why a new key of a scope using `usage` is refused by the total, if it is: a scope that
    /// keeps records goes on within its own bound of what the total ran out of.
    fn total_refusal(&self, counts: &Counts, usage: &Usage) -> Option<String> {
        let kept = !usage.is_empty();
        if counts.records >= self.max_total_records && !(kept && self.max_records != usize::MAX) {
            Some(format!("{} records in all", self.max_total_records))
        } else if counts.bytes >= self.max_total_bytes && !(kept && self.max_bytes != u64::MAX) {
            Some(format!("{} bytes of answers in all", self.max_total_bytes))
        } else {
            None
        }
    }
}

/// When to try again: once the first outcome expires, or sooner while calls still running
/// may end without storing.
fn retry_after(first_expiry: Option<Timestamp>, running: bool, now: Timestamp) -> Duration {
    let first_expiry = first_expiry.map(|at| at.saturating_duration_since(now));
    let wait = match (first_expiry, running) {
        (Some(expiry), false) => expiry,
        (Some(expiry), true) => expiry.min(BUSY_RETRY_AFTER),
        (None, _) => BUSY_RETRY_AFTER,
    };
    wait.max(Duration::from_millis(1))
}

#[async_trait]
impl Quota for ScopeQuota {
    async fn admit(
        &self,
        scope: Option<&str>,
        key: &Key,
        now: Timestamp,
    ) -> Result<QuotaPermit, QuotaExceeded> {
        if !self.counts_scope(scope) {
            return Ok(QuotaPermit::free());
        }
        let key = self.hasher.hash_one(key.as_str());
        let scope = scope.map(str::to_owned);
        let mut counts = self.counts();
        counts.sweep(now);
        counts.change(&scope, |usage| usage.expire(now));
        let empty = Usage::default();
        let usage = counts.scopes.get(&scope).unwrap_or(&empty);
        // A duplicate of a call running here adds no record: refusing it would answer 429
        // for a key the client is already using.
        if !usage.running_keys.contains_key(&key) {
            if let Some(reason) = self.scope_refusal(usage) {
                let wait = retry_after(usage.first_expiry(), usage.running > 0, now);
                return Err(QuotaExceeded::new(wait, reason));
            }
            if let Some(reason) = self.total_refusal(&counts, usage) {
                let wait = retry_after(counts.first_expiry(), counts.any_running(), now);
                return Err(QuotaExceeded::store_full(wait, reason));
            }
        }
        counts.change(&scope, |usage| usage.start(key));
        Ok(QuotaPermit::holding(Running {
            counts: self.counts.clone(),
            scope,
            key,
        }))
    }

    fn stored(&self, scope: Option<&str>, key: &Key, bytes: usize, expires_at: Timestamp) {
        if !self.counts_scope(scope) {
            return;
        }
        let key = self.hasher.hash_one(key.as_str());
        let scope = scope.map(str::to_owned);
        self.counts()
            .change(&scope, |usage| usage.store(key, bytes as u64, expires_at));
    }
}

#[cfg(test)]
mod tests {
    use super::super::counts::SWEEP_EVERY;
    use super::*;

    const NOW: Timestamp = Timestamp::from_millis(1_700_000_000_000);
    const TTL: Duration = Duration::from_secs(600);

    fn key(part: &str) -> Key {
        crate::key::KeyBuilder::new("ns", "f")
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

    #[tokio::test]
    async fn the_total_refuses_new_scopes_and_lets_kept_ones_go_on_within_their_bounds() {
        let quota = ScopeQuota::new().max_records(2).max_total_records(3);
        for (scope, part) in [("alice", "a"), ("bob", "b"), ("carol", "c")] {
            let permit = admit(&quota, scope, NOW).await.unwrap();
            quota.stored(Some(scope), &key(part), 10, NOW + TTL);
            drop(permit);
        }
        let newcomer = admit(&quota, "mallory-1", NOW).await.unwrap_err();
        assert!(newcomer.is_store_full());
        assert_eq!(newcomer.reason(), "3 records in all");
        assert_eq!(newcomer.retry_after(), TTL);
        let alice = admit(&quota, "alice", NOW).await;
        assert!(alice.is_ok(), "a kept scope goes on within its own bound");
        quota.stored(Some("alice"), &key("a2"), 10, NOW + TTL);
        drop(alice);
        let over_her_own = admit(&quota, "alice", NOW).await.unwrap_err();
        assert!(!over_her_own.is_store_full(), "her own bound, a 429");
        assert!(admit(&quota, "mallory-2", NOW + TTL).await.is_ok());
    }

    #[tokio::test]
    async fn without_a_scope_bound_the_total_bounds_every_scope() {
        let quota = ScopeQuota::new().max_total_bytes(100);
        quota.stored(Some("alice"), &key("a"), 100, NOW + TTL);
        let alice = admit(&quota, "alice", NOW).await.unwrap_err();
        assert!(alice.is_store_full());
        assert_eq!(alice.reason(), "100 bytes of answers in all");
    }

    #[tokio::test]
    async fn the_totals_follow_every_change_back_to_nothing() {
        let quota = ScopeQuota::new().max_total_records(10);
        let running = admit(&quota, "alice", NOW).await.unwrap();
        quota.stored(Some("bob"), &key("b"), 40, NOW + Duration::from_secs(1));
        quota.stored(Some("bob"), &key("b"), 30, NOW + Duration::from_secs(1));
        {
            let counts = quota.counts();
            assert_eq!((counts.records, counts.bytes), (2, 30));
            assert_eq!(counts.first_expiry(), Some(NOW + Duration::from_secs(1)));
            assert!(counts.any_running());
        }
        drop(running);
        assert!(!quota.counts().any_running());
        admit(&quota, "carol", NOW + SWEEP_EVERY).await.unwrap();
        let counts = quota.counts();
        assert_eq!((counts.records, counts.bytes), (0, 0));
        assert_eq!(counts.first_expiry(), None, "swept with its scope");
        assert!(counts.scopes.is_empty());
    }

    #[tokio::test]
    async fn scopes_are_swept_at_most_once_a_minute() {
        // Sweeping walks every scope under the lock: once a minute bounds what a flood of
        // scopes costs each call.
        let quota = ScopeQuota::new().max_records(10);
        admit(&quota, "other", NOW).await.unwrap();
        quota.stored(Some("gone"), &key("a"), 1, NOW + Duration::from_secs(1));
        admit(&quota, "other", NOW + Duration::from_secs(2))
            .await
            .unwrap();
        assert!(
            quota.counts().scopes.contains_key(&Some("gone".to_owned())),
            "no sweep within the minute"
        );
        admit(&quota, "other", NOW + SWEEP_EVERY).await.unwrap();
        assert!(!quota.counts().scopes.contains_key(&Some("gone".to_owned())));
    }

    #[tokio::test]
    async fn over_the_total_a_call_running_anywhere_shortens_the_wait() {
        let quota = ScopeQuota::new().max_total_records(2);
        quota.stored(Some("alice"), &key("a"), 10, NOW + TTL);
        let running = admit(&quota, "bob", NOW).await.unwrap();
        let refused = admit(&quota, "carol", NOW).await.unwrap_err();
        assert!(refused.is_store_full());
        assert_eq!(
            refused.retry_after(),
            BUSY_RETRY_AFTER,
            "bob's call may end without storing"
        );
        drop(running);
        let refused = admit(&quota, "carol", NOW).await;
        assert!(refused.is_ok(), "bob's room is back");
    }

    #[tokio::test]
    async fn a_key_is_a_duplicate_while_a_call_of_it_runs_and_new_once_they_end() {
        let quota = ScopeQuota::new().max_records(2);
        quota.stored(Some("s"), &key("kept"), 10, NOW + TTL);
        let first = quota.admit(Some("s"), &key("k"), NOW).await.unwrap();
        let duplicate = quota.admit(Some("s"), &key("k"), NOW).await.unwrap();
        drop(first);
        let third = quota.admit(Some("s"), &key("k"), NOW).await;
        assert!(third.is_ok(), "a call of k still runs: a duplicate");
        drop((third, duplicate));
        quota.stored(Some("s"), &key("other"), 10, NOW + TTL);
        let again = quota.admit(Some("s"), &key("k"), NOW).await;
        assert!(
            again.is_err(),
            "no call of k runs: a new key, over the bound"
        );
    }

    #[tokio::test]
    async fn a_permit_shows_nothing_of_what_it_holds() {
        let quota = ScopeQuota::new().max_records(1);
        let permit = admit(&quota, "mallory", NOW).await.unwrap();
        assert_eq!(format!("{permit:?}"), "QuotaPermit(..)");
    }
}
