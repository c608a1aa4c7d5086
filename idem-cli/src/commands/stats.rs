//! `stats`: how many records each function has in each state, over the whole listing.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use super::printer::{printed, Printer};
use super::tally::Stats;
use crate::connect::Connected;
use crate::failure::Failure;
use crate::listing::{self, prefix};

/// Counts the records of `function` (or every record) by function and state.
pub(crate) async fn stats(
    connected: &Connected,
    namespace: &str,
    function: Option<&str>,
    out: &dyn Printer,
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
