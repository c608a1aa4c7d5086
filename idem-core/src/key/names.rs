//! The names of the `#[idempotent]` functions linked into the program, collected at link time,
//! so that two functions with one name (two `name = "..."` alike, or two functions nested in
//! other functions of one module) are found before either shares the other's records.

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use crate::error::Error;

/// Where an `#[idempotent]` function is and what it is named; the attribute submits one for
/// each function it expands.
#[derive(Debug)]
pub struct Registration {
    name: &'static str,
    file: &'static str,
    line: u32,
    column: u32,
}

impl Registration {
    /// The function named `name` (its name without the types of a generic call) defined at
    /// `file`:`line`:`column`.
    pub const fn new(name: &'static str, file: &'static str, line: u32, column: u32) -> Self {
        Registration {
            name,
            file,
            line,
            column,
        }
    }
}

inventory::collect!(Registration);

/// The names registered at more than one place, with those places. One place registered twice
/// is one function: the same source compiled into two crates of the program (a module that a
/// binary and its library both declare, two copies of a crate), or expanded twice by one macro
/// call.
static DUPLICATES: LazyLock<HashMap<&'static str, Vec<String>>> = LazyLock::new(|| {
    let mut sites: HashMap<&'static str, BTreeSet<(&'static str, u32, u32)>> = HashMap::new();
    for registration in inventory::iter::<Registration> {
        sites.entry(registration.name).or_default().insert((
            registration.file,
            registration.line,
            registration.column,
        ));
    }
    sites
        .into_iter()
        .filter(|(_, sites)| sites.len() > 1)
        .map(|(name, sites)| {
            let sites = sites
                .into_iter()
                .map(|(file, line, _)| format!("{file}:{line}"))
                .collect();
            (name, sites)
        })
        .collect()
});

/// [`Error::DuplicateName`] if another function of the program has the name `name`.
pub(crate) fn check(name: &str) -> Result<(), Error> {
    match DUPLICATES.get(name) {
        Some(sites) => Err(Error::DuplicateName {
            name: name.to_owned(),
            sites: sites.clone(),
        }),
        None => Ok(()),
    }
}

/// Checks that no two `#[idempotent]` functions linked into this program share a name, which
/// would make them share records: [`Error::DuplicateName`] for the first name used twice.
///
/// Each function checks its own name on every call and refuses to run when it is shared, and
/// [`install`](crate::install) logs every shared name; call this from a test to find them
/// before they ship:
///
/// ```
/// // in a test: `#[test] fn idempotent_functions_have_names_of_their_own()`
/// idem_core::check_names().unwrap();
/// ```
///
/// Names are collected when the program starts (through the `inventory` crate), on the
/// platforms it supports: Linux, macOS, Windows, the BSDs, iOS, Android, WebAssembly and
/// others. Only functions in this program are seen: two programs that share a store and a
/// namespace must keep their names apart themselves.
pub fn check_names() -> Result<(), Error> {
    let mut shared: Vec<_> = DUPLICATES.iter().collect();
    shared.sort();
    match shared.first() {
        Some((name, sites)) => Err(Error::DuplicateName {
            name: (**name).to_owned(),
            sites: (*sites).clone(),
        }),
        None => Ok(()),
    }
}

/// Logs every name two functions share, once, for [`install`](crate::install).
pub(crate) fn log_duplicates() {
    for (name, sites) in DUPLICATES.iter() {
        tracing::error!(target: crate::TARGET, name, sites = sites.join(", "), "two `#[idempotent]` functions share a name, so neither runs: give each its own `name = \"...\"`");
    }
}
