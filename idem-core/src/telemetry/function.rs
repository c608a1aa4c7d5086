//! Each function's metric keys, built once and kept for the life of the process: recording
//! then costs no allocation, and finding them no lock on a thread that calls one function
//! after another of the same name.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use metrics::{Key, Label};

use super::{
    CALLS_TOTAL, CALL_DURATION_SECONDS, OUTCOMES, REPLAY_CACHE_HITS_TOTAL,
    REPLAY_CACHE_MISSES_TOTAL, TAKEOVERS_TOTAL,
};

/// The most function names given labels of their own; a program that builds names at run
/// time must not grow the metrics without bound.
const MAX_FUNCTIONS: usize = 10_000;

/// The metric keys of one function.
pub(crate) struct FunctionMetrics {
    pub(crate) name: &'static str,
    pub(crate) calls: Vec<Key>,
    pub(crate) durations: Vec<Key>,
    pub(crate) takeovers: Key,
    pub(crate) cache_hits: Key,
    pub(crate) cache_misses: Key,
}

impl FunctionMetrics {
    fn new(name: &'static str) -> Self {
        let function = || Label::from_static_parts("function", name);
        let by_outcome = |metric: &'static str| -> Vec<Key> {
            OUTCOMES
                .iter()
                .map(|outcome| {
                    retained(Key::from_parts(
                        metric,
                        vec![function(), Label::new("outcome", *outcome)],
                    ))
                })
                .collect()
        };
        FunctionMetrics {
            name,
            calls: by_outcome(CALLS_TOTAL),
            durations: by_outcome(CALL_DURATION_SECONDS),
            takeovers: retained(Key::from_parts(TAKEOVERS_TOTAL, vec![function()])),
            cache_hits: retained(Key::from_parts(REPLAY_CACHE_HITS_TOTAL, vec![function()])),
            cache_misses: retained(Key::from_parts(REPLAY_CACHE_MISSES_TOTAL, vec![function()])),
        }
    }
}

/// `key` with its labels shared: a recorder that keeps the keys it is given (the Prometheus
/// exporter's does, at every registration) then takes a reference to them rather than a copy.
pub(crate) fn retained(key: Key) -> Key {
    key.to_retained()
}

/// The metric keys of the function called `name`, built at its first call.
pub(crate) fn function_metrics(name: &str) -> &'static FunctionMetrics {
    thread_local! {
        /// The function this thread asked for last.
        static LAST: Cell<Option<&'static FunctionMetrics>> = const { Cell::new(None) };
    }
    if let Some(last) = LAST.with(Cell::get).filter(|last| last.name == name) {
        return last;
    }
    let found = registered(name);
    LAST.with(|last| last.set(Some(found)));
    found
}

/// Every function's keys, leaked: at most [`MAX_FUNCTIONS`] of them and `other`, each a few
/// kilobytes (29 keys and their labels).
fn registered(name: &str) -> &'static FunctionMetrics {
    static FUNCTIONS: OnceLock<RwLock<HashMap<&'static str, &'static FunctionMetrics>>> =
        OnceLock::new();
    let functions = FUNCTIONS.get_or_init(Default::default);
    // Nothing panics while the lock is held, so a poisoned lock still holds whole entries.
    {
        let known = functions.read().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = known.get(name) {
            return found;
        }
        // Past the bound, names share `other` without the write lock.
        if let Some(other) = known.get("other").filter(|_| known.len() > MAX_FUNCTIONS) {
            return other;
        }
    }
    let mut functions = functions.write().unwrap_or_else(|e| e.into_inner());
    let name = if functions.len() >= MAX_FUNCTIONS && !functions.contains_key(name) {
        "other"
    } else {
        name
    };
    if let Some(known) = functions.get(name) {
        return known;
    }
    let name: &'static str = Box::leak(name.into());
    let metrics: &'static FunctionMetrics = Box::leak(Box::new(FunctionMetrics::new(name)));
    functions.insert(name, metrics);
    metrics
}
