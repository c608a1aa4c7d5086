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
/// idem_core::check_function_names().unwrap();
/// ```
///
/// Names are collected when the program starts (through the `inventory` crate), on the
/// platforms it supports: Linux, macOS, Windows, the BSDs, iOS, Android, WebAssembly and
/// others. Only functions in this program are seen: two programs that share a store and a
/// namespace must keep their names apart themselves.
pub fn check_function_names() -> Result<(), Error> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing::field::{Field, Visit};

    // Two functions named alike, and one place registered twice (one function).
    inventory::submit! { Registration::new("tests.shared", "a.rs", 1, 1) }
    inventory::submit! { Registration::new("tests.shared", "b.rs", 2, 1) }
    inventory::submit! { Registration::new("tests.once", "c.rs", 3, 1) }
    inventory::submit! { Registration::new("tests.once", "c.rs", 3, 1) }

    #[test]
    fn a_name_two_functions_share_is_refused_with_both_places() {
        match check("tests.shared") {
            Err(Error::DuplicateName { name, sites }) => {
                assert_eq!(name, "tests.shared");
                assert_eq!(sites, ["a.rs:1", "b.rs:2"]);
            }
            other => panic!("expected DuplicateName, got {other:?}"),
        }
        assert!(
            check("tests.once").is_ok(),
            "one place twice is one function"
        );
        assert!(check("tests.nowhere").is_ok());
    }

    #[test]
    fn the_program_wide_check_names_the_shared_name() {
        let refused = check_function_names().unwrap_err();
        assert!(
            matches!(&refused, Error::DuplicateName { name, .. } if name == "tests.shared"),
            "{refused:?}"
        );
    }

    /// The messages and `name` fields of the events logged while it runs.
    #[derive(Clone, Default)]
    struct Logged(Arc<Mutex<Vec<String>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Logged {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            struct Fields<'a>(&'a mut Vec<String>);
            impl Visit for Fields<'_> {
                fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                    self.0.push(format!("{}={value:?}", field.name()));
                }
                fn record_str(&mut self, field: &Field, value: &str) {
                    self.0.push(format!("{}={value}", field.name()));
                }
            }
            event.record(&mut Fields(&mut self.0.lock().unwrap()));
        }
    }

    #[test]
    fn every_shared_name_is_logged_with_its_places() {
        use tracing_subscriber::layer::SubscriberExt;
        let logged = Logged::default();
        let subscriber = tracing_subscriber::registry().with(logged.clone());
        tracing::subscriber::with_default(subscriber, log_duplicates);
        let fields = logged.0.lock().unwrap().clone();
        assert!(
            fields.contains(&"name=tests.shared".to_owned()),
            "{fields:?}"
        );
        assert!(
            fields.contains(&"sites=a.rs:1, b.rs:2".to_owned()),
            "{fields:?}"
        );
        assert!(
            !fields.iter().any(|f| f.contains("tests.once")),
            "{fields:?}"
        );
    }
}
