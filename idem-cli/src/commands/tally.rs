//! The counts `stats` makes: records by state, and by function and state, in the shape
//! `stats --json` prints.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::listing::Entry;

/// The counts, as `stats --json` prints them.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Stats {
    /// Every record listed.
    pub(crate) total: u64,
    /// Records by state name (`corrupt` for unreadable ones).
    pub(crate) by_state: BTreeMap<String, u64>,
    /// Records by function, ordered by name (keys stored as digests last, as `null`).
    pub(crate) functions: Vec<FunctionStats>,
}

/// One function's counts.
#[derive(Debug, Serialize)]
pub(crate) struct FunctionStats {
    /// The function's name as keys spell it; `null` for keys stored as digests.
    pub(crate) function: Option<String>,
    /// Its records.
    pub(crate) total: u64,
    /// Its records by state name.
    pub(crate) by_state: BTreeMap<String, u64>,
}

impl Stats {
    /// Counts `entry`.
    pub(crate) fn add(
        &mut self,
        entry: &Entry,
        functions: &mut BTreeMap<Option<String>, FunctionStats>,
    ) {
        let state = entry.state().to_owned();
        self.total += 1;
        *self.by_state.entry(state.clone()).or_default() += 1;
        let function = entry.function().map(str::to_owned);
        let counts = functions
            .entry(function.clone())
            .or_insert_with(|| FunctionStats {
                function,
                total: 0,
                by_state: BTreeMap::new(),
            });
        counts.total += 1;
        *counts.by_state.entry(state).or_default() += 1;
    }
}
