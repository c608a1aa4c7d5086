//! `list`: the records of a function, a state, or every one, up to a limit.

use std::ops::ControlFlow;

use idem_core::KeyBuilder;

use super::printer::{printed, Printer};
use crate::args::ListArgs;
use crate::connect::Connected;
use crate::failure::Failure;
use crate::listing::{self, prefix, Entry};

/// Lists the records `args` select, following the store's pages until `--limit` matched (or
/// every one, with `--all`). With `--state`, unreadable records are left out (their state is
/// unknown); without it, they are listed as `corrupt`. With `--scope`, only keys in that scope
/// (as `idem scope` prints it) are listed. When none is listed, or none could be
/// read, a DynamoDB table whose attributes are named otherwise is said to be so instead; when
/// none is listed from a DynamoDB partition that holds no item at all, that is said too.
pub(crate) async fn list(
    connected: &Connected,
    namespace: &str,
    args: &ListArgs,
    out: &dyn Printer,
) -> Result<(), Failure> {
    if args.envelope && !out.is_json() {
        return Err(Failure::usage(
            "--envelope shapes the JSON document: pass it with --json",
        ));
    }
    let limit = if args.all { u64::MAX } else { args.limit };
    let mut entries: Vec<Entry> = Vec::new();
    let mut more = false;
    let scope = args.scope.as_deref().map(encoded_scope).transpose()?;
    let mut prefix = prefix(namespace, args.function.as_deref());
    if let (Some(scope), Some(_)) = (&scope, &args.function) {
        // The scope is the slot after the function's: the store filters on it too.
        prefix.push('=');
        prefix.push_str(scope);
        prefix.push('|');
    }
    listing::each(connected, prefix, |entry| {
        let in_scope = match &scope {
            None => true,
            Some(scope) => entry.key().and_then(|key| key.scope()) == Some(scope.as_str()),
        };
        let admitted = in_scope
            && match (args.state, entry.is_in_progress()) {
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
        printed(out.envelope(&entries, more, (!args.all).then_some(args.limit)))?;
    } else {
        printed(out.entries(&entries))?;
    }
    // Also with --json: a script reading the bare array gets the warning on stderr.
    if more || !out.is_json() {
        out.note(&summary(entries.len(), more));
    }
    if entries.is_empty() {
        if let Some(empty) = connected.empty_partition().await {
            out.note(&empty);
        }
    }
    Ok(())
}

/// `scope` as keys encode it (`%` and `|` escaped), to compare with
/// [`Key::scope`](idem_core::Key::scope).
fn encoded_scope(scope: &str) -> Result<String, Failure> {
    let key = KeyBuilder::new(idem_core::DEFAULT_NAMESPACE, "scope")
        .scope(Some(scope))
        .finish()
        .map_err(|error| Failure::from_error(error, ""))?;
    Ok(key.scope().unwrap_or_default().to_owned())
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
