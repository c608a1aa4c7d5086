//! `functions`: the names of the functions that have records, as `--function` takes them.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use super::printer::{printed, Printer};
use crate::connect::Connected;
use crate::failure::Failure;
use crate::listing;

/// Prints the name of every function that has a record, in order, one a line (`--json`: an
/// array of `{"function": F, "records": N}`). Keys stored as digests name no function: how
/// many there are is said on stderr.
pub(crate) async fn functions(connected: &Connected, out: &dyn Printer) -> Result<(), Failure> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut nameless = 0u64;
    listing::each(connected, String::new(), |entry| {
        match entry.function() {
            Some(function) => *counts.entry(function.to_owned()).or_default() += 1,
            None => nameless += 1,
        }
        ControlFlow::Continue(())
    })
    .await?;
    if counts.is_empty() && nameless == 0 {
        if let Some(misnamed) = connected.misnamed().await {
            return Err(misnamed);
        }
    }
    printed(out.functions(&counts))?;
    if nameless > 0 {
        let records = if nameless == 1 { "record" } else { "records" };
        out.note(&format!(
            "{nameless} {records} name no function (keys stored as digests, or entries stored \
             under no idempotency key)"
        ));
    }
    Ok(())
}
