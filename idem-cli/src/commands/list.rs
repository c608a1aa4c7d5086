//! `list`: the records of a function, a state, or every one, up to a limit.

use std::ops::ControlFlow;

use serde::Serialize;

use super::{prefix, printed};
use crate::args::ListArgs;
use crate::connect::Connected;
use crate::failure::Failure;
use crate::listing::{self, Entry};
use crate::output::json::RecordDoc;
use crate::output::{note, Output};

/// What `list --json --envelope` prints: the records, and whether more matched.
#[derive(Debug, Serialize)]
struct Envelope<'a> {
    /// The records listed, as `list --json` prints them.
    records: Vec<RecordDoc<'a>>,
    /// Whether more records matched than were listed (the limit was reached).
    truncated: bool,
    /// The limit the listing stopped at; `None` (`null`) with `--all`.
    limit: Option<u64>,
}

/// Lists the records `args` select, following the store's pages until `--limit` matched (or
/// every one, with `--all`). With `--state`, unreadable records are left out (their state is
/// unknown); without it, they are listed as `corrupt`. When none is listed, or none could be
/// read, a DynamoDB table whose attributes are named otherwise is said to be so instead.
pub(crate) async fn list(
    connected: &Connected,
    namespace: &str,
    args: &ListArgs,
    out: &Output,
) -> Result<(), Failure> {
    if args.envelope && !out.is_json() {
        return Err(Failure::usage(
            "--envelope shapes the JSON document: pass it with --json",
        ));
    }
    let limit = if args.all { u64::MAX } else { args.limit };
    let mut entries: Vec<Entry> = Vec::new();
    let mut more = false;
    let prefix = prefix(namespace, args.function.as_deref());
    listing::each(connected, prefix, |entry| {
        let admitted = match (args.state, entry.is_in_progress()) {
            (None, _) => true,
            (Some(filter), Some(in_progress)) => filter.admits(in_progress),
            (Some(_), None) => false,
        };
        if !admitted {
            return ControlFlow::Continue(());
        }
        if entries.len() as u64 == limit {
            more = true;
            return ControlFlow::Break(());
        }
        entries.push(entry);
        ControlFlow::Continue(())
    })
    .await?;
    if entries.iter().all(|entry| entry.is_in_progress().is_none()) {
        if let Some(misnamed) = connected.misnamed().await {
            return Err(misnamed);
        }
    }
    if args.envelope {
        printed(out.document(&Envelope {
            records: entries.iter().map(RecordDoc::of).collect(),
            truncated: more,
            limit: (!args.all).then_some(args.limit),
        }))?;
    } else {
        printed(out.entries(&entries))?;
    }
    // Also with --json: a script reading the bare array gets the warning on stderr.
    if more || !out.is_json() {
        note(&summary(entries.len(), more));
    }
    Ok(())
}

/// What the table showed, and whether more matched.
fn summary(shown: usize, more: bool) -> String {
    let records = if shown == 1 { "record" } else { "records" };
    if more {
        format!("{shown} {records} shown; more match: raise --limit, or pass --all")
    } else if shown == 0 {
        "no records match".to_owned()
    } else {
        format!("{shown} {records}")
    }
}
