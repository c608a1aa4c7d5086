//! `stats`: how many records each function has in each state, over the whole listing.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use serde::Serialize;

use super::{prefix, printed};
use crate::connect::Connected;
use crate::failure::Failure;
use crate::listing::{self, Entry};
use crate::output::Output;

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
    fn add(&mut self, entry: &Entry, functions: &mut BTreeMap<Option<String>, FunctionStats>) {
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

/// Counts the records of `function` (or every record) by function and state.
pub(crate) async fn stats(
    connected: &Connected,
    namespace: &str,
    function: Option<&str>,
    out: &Output,
) -> Result<(), Failure> {
    let mut stats = Stats::default();
    let mut functions = BTreeMap::new();
    listing::each(connected, prefix(namespace, function), |entry| {
        stats.add(&entry, &mut functions);
        ControlFlow::Continue(())
    })
    .await?;
    if stats.total == stats.by_state.get("corrupt").copied().unwrap_or(0) {
        if let Some(misnamed) = connected.misnamed().await {
            return Err(misnamed);
        }
    }
    // Named functions in order, then digests (`None` sorts first in a map, so move it last).
    let digests = functions.remove(&None);
    stats.functions = functions.into_values().chain(digests).collect();
    printed(out.stats(&stats))
}
