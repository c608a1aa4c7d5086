//! What [`ScopeQuota`](super::ScopeQuota) counts: each scope's running calls and stored
//! outcomes, and their totals across every scope.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::store::Timestamp;

/// How often, at most, scopes that no call came back to are swept out of the counts.
pub(super) const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// A key, as its hash.
pub(super) type KeyHash = u64;

/// A scope, as the key encodes it; `None` for keys without one.
pub(super) type Scope = Option<String>;

/// Every scope's usage, and their sum.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) scopes: HashMap<Scope, Usage>,
    /// Records (running and stored) of every scope together.
    pub(super) records: usize,
    /// Bytes stored by every scope together.
    pub(super) bytes: u64,
    /// Calls running in every scope together.
    running: usize,
    /// Each scope's first expiry, so that the first of all is found without a scan.
    first_expiries: BTreeSet<(Timestamp, Scope)>,
    next_sweep: Timestamp,
}

impl Counts {
    /// Drops the expired outcomes of every scope, and the scopes left empty, at most once per
    /// [`SWEEP_EVERY`]: a scope no call comes back to would otherwise stay counted forever.
    pub(super) fn sweep(&mut self, now: Timestamp) {
        if now < self.next_sweep {
            return;
        }
        self.next_sweep = now + SWEEP_EVERY;
        let Counts {
            scopes,
            records,
            bytes,
            first_expiries,
            ..
        } = self;
        scopes.retain(|scope, usage| {
            let before = usage.size();
            let first_before = usage.first_expiry();
            usage.expire(now);
            add_change(records, bytes, before, usage.size());
            moved_first(first_expiries, scope, first_before, usage.first_expiry());
            !usage.is_empty()
        });
    }

    /// Changes `scope`'s usage with `change`, keeping the totals in step, and drops the scope
    /// if it is left empty.
    pub(super) fn change<R>(&mut self, scope: &Scope, change: impl FnOnce(&mut Usage) -> R) -> R {
        let usage = self.scopes.entry(scope.clone()).or_default();
        let (before, running_before, first_before) =
            (usage.size(), usage.running, usage.first_expiry());
        let result = change(usage);
        let (after, running_after, first_after) =
            (usage.size(), usage.running, usage.first_expiry());
        let empty = usage.is_empty();
        add_change(&mut self.records, &mut self.bytes, before, after);
        self.running = self.running - running_before + running_after;
        moved_first(&mut self.first_expiries, scope, first_before, first_after);
        if empty {
            self.scopes.remove(scope);
        }
        result
    }

    /// When the first outcome of any scope expires.
    pub(super) fn first_expiry(&self) -> Option<Timestamp> {
        self.first_expiries.first().map(|(at, _)| *at)
    }

    /// Whether a call of any scope is running.
    pub(super) fn any_running(&self) -> bool {
        self.running > 0
    }
}

/// `scope`'s first expiry moved from `before` to `after` in `first_expiries`.
fn moved_first(
    first_expiries: &mut BTreeSet<(Timestamp, Scope)>,
    scope: &Scope,
    before: Option<Timestamp>,
    after: Option<Timestamp>,
) {
    if before == after {
        return;
    }
    if let Some(at) = before {
        first_expiries.remove(&(at, scope.clone()));
    }
    if let Some(at) = after {
        first_expiries.insert((at, scope.clone()));
    }
}

/// `records` and `bytes` moved from one scope's `before` size to its `after`.
fn add_change(records: &mut usize, bytes: &mut u64, before: (usize, u64), after: (usize, u64)) {
    *records = *records - before.0 + after.0;
    *bytes = *bytes - before.1 + after.1;
}

/// One scope's calls running and outcomes stored.
#[derive(Debug, Default)]
pub(super) struct Usage {
    pub(super) running: usize,
    /// How many of the running calls have each key.
    pub(super) running_keys: HashMap<KeyHash, usize>,
    pub(super) bytes: u64,
    /// Each stored key's expiry and size.
    stored: HashMap<KeyHash, (Timestamp, u64)>,
    by_expiry: BTreeSet<(Timestamp, KeyHash)>,
}

impl Usage {
    pub(super) fn records(&self) -> usize {
        self.running + self.stored.len()
    }

    fn size(&self) -> (usize, u64) {
        (self.records(), self.bytes)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.running == 0 && self.stored.is_empty()
    }

    pub(super) fn first_expiry(&self) -> Option<Timestamp> {
        self.by_expiry.first().map(|(at, _)| *at)
    }

    pub(super) fn store(&mut self, key: KeyHash, bytes: u64, expires_at: Timestamp) {
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

    /// Drops the outcomes expired at `now`. Each turn takes its entry off `by_expiry` itself,
    /// so that the loop ends whatever the bookkeeping of `stored` says.
    pub(super) fn expire(&mut self, now: Timestamp) {
        while let Some(&(at, key)) = self.by_expiry.first() {
            if at > now {
                break;
            }
            self.by_expiry.pop_first();
            if let Some((_, bytes)) = self.stored.remove(&key) {
                self.bytes -= bytes;
            }
        }
    }

    /// Counts one more running call with `key`.
    pub(super) fn start(&mut self, key: KeyHash) {
        self.running += 1;
        *self.running_keys.entry(key).or_default() += 1;
    }

    /// Counts one running call with `key` fewer.
    fn end(&mut self, key: KeyHash) {
        self.running -= 1;
        if let Some(same_key) = self.running_keys.get_mut(&key) {
            *same_key -= 1;
            if *same_key == 0 {
                self.running_keys.remove(&key);
            }
        }
    }
}

/// A running call's record, given back when its permit is dropped.
pub(super) struct Running {
    pub(super) counts: Arc<Mutex<Counts>>,
    pub(super) scope: Scope,
    pub(super) key: KeyHash,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        if counts.scopes.contains_key(&self.scope) {
            counts.change(&self.scope, |usage| usage.end(self.key));
        }
    }
}

/// The counts, even after a panic elsewhere while they were locked: each change is a few
/// field updates that a panic cannot leave half done.
pub(super) fn lock(counts: &Mutex<Counts>) -> MutexGuard<'_, Counts> {
    counts
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
