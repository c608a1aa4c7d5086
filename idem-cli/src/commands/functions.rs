//! `functions`: the names of the functions that have records, as `--function` takes them.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use serde::Serialize;

use super::printed;
use crate::connect::Connected;
use crate::failure::Failure;
use crate::listing;
use crate::output::{note, Output};

/// One function, as `functions --json` prints it.
#[derive(Debug, Serialize)]
struct Function {
    /// Its name, as keys spell it and `--function` takes it.
    function: String,
    /// How many records it has (corrupt ones included).
    records: u64,
}

/// Prints the name of every function that has a record, in order, one a line (`--json`: an
/// array of `{"function": F, "records": N}`). Keys stored as digests name no function: how
/// many there are is said on stderr.
pub(crate) async fn functions(connected: &Connected, out: &Output) -> Result<(), Failure> {
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
    if out.is_json() {
        let functions: Vec<Function> = counts
            .into_iter()
            .map(|(function, records)| Function { function, records })
            .collect();
        printed(out.document(&functions))?;
    } else {
        // Each name escaped on its own line: a name can't break the listing into two.
        let names: String = counts
            .keys()
            .map(|name| format!("{}\n", crate::output::visible(name)))
            .collect();
        printed(out.text(&names))?;
    }
    if nameless > 0 {
        let records = if nameless == 1 { "record" } else { "records" };
        note(&format!(
            "{nameless} {records} name no function (keys stored as digests, or entries stored \
             under no idempotency key)"
        ));
    }
    Ok(())
}
