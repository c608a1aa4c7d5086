//! The names of the `#[idempotent]` functions linked into the program, collected at link time,
//! so that two functions with one name (two `name = "..."` alike, or two functions nested in
//! other functions of one module) are found before either shares the other's records.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::Error;

/// Where an `#[idempotent]` function is and what it is named; the attribute submits one for
/// each function it expands.
#[derive(Debug)]
pub struct Registration {
    name: &'static str,
    file: &'static str,
    line: u32,
}

impl Registration {
    /// The function named `name` (its name without the types of a generic call) defined at
    /// `file`:`line`.
    pub const fn new(name: &'static str, file: &'static str, line: u32) -> Self {
        Registration { name, file, line }
    }
}

inventory::collect!(Registration);

/// The names registered more than once, with where each function using them is.
static DUPLICATES: LazyLock<HashMap<&'static str, Vec<String>>> = LazyLock::new(|| {
    let mut sites: HashMap<&'static str, Vec<String>> = HashMap::new();
    for registration in inventory::iter::<Registration> {
        sites
            .entry(registration.name)
            .or_default()
            .push(format!("{}:{}", registration.file, registration.line));
    }
    sites.retain(|_, sites| sites.len() > 1);
    for sites in sites.values_mut() {
        sites.sort();
    }
    sites
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
