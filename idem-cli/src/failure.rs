//! What went wrong, said so that the reader knows what to do, with the exit code it maps to.

use std::error::Error as StdError;
use std::fmt;

use idem_core::{Error, Key};

use crate::exit;

/// A command that did not end with [`exit::DONE`]: the message for stderr and the exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// [`exit::FAILED`]: the store failed, a record is corrupt, the store can't do it.
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self::new(exit::FAILED, message)
    }

    /// [`exit::USAGE`]: the command line, URL or environment is wrong.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(exit::USAGE, message)
    }

    /// [`exit::NO_RECORD`]: nothing under `key`.
    pub(crate) fn no_record(key: &Key) -> Self {
        Self::new(exit::NO_RECORD, format!("no record under {key}"))
    }

    /// [`exit::REFUSED`]: the record is not what the command needs; nothing was changed.
    pub(crate) fn refused(message: impl Into<String>) -> Self {
        Self::new(exit::REFUSED, message)
    }

    fn new(code: u8, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// The exit code.
    pub(crate) fn code(&self) -> u8 {
        self.code
    }

    /// `error`, returned by the store described as `store` (a URL without its password), said
    /// with what to do about it.
    pub(crate) fn from_error(error: Error, store: &str) -> Self {
        match &error {
            Error::Unsupported { store: name, what } => Self::failed(format!(
                "the `{name}` store at {store} can't {what} in this version of idem: `list`, \
                 `stats` and `purge-expired` need a store that can list its records; `get`, \
                 `forget` and `release` still work on every store"
            )),
            Error::CorruptRecord { key, reason } => Self::failed(format!(
                "the record under {key} is corrupt: {reason}. Calls with this key fail until \
                 it expires or is removed: check what the call did (its effect), then \
                 `idem forget {} --yes` deletes the record, and the next call runs again",
                shell_quoted(key)
            )),
            Error::InvalidKey(reason) => Self::usage(format!(
                "{reason}. Copy the key as idem prints it (in errors, logs, or `idem list`), \
                 quoted for the shell"
            )),
            // The engine words these for a call ("idempotency key … could not be checked");
            // the command says what the store said, of the key when there is one.
            Error::Store { key, source } | Error::Rejected { key, source } => {
                let refused = matches!(error, Error::Rejected { .. });
                let what = match (key.is_empty(), refused) {
                    (true, false) => "the store failed".to_owned(),
                    (true, true) => "the store refused the request".to_owned(),
                    (false, false) => format!("the store failed on {key}"),
                    (false, true) => format!("the store refused the request on {key}"),
                };
                Self::failed(format!(
                    "{what}: {}. {}",
                    chain(&**source),
                    what_to_check(store)
                ))
            }
            _ => Self::failed(chain(&error)),
        }
    }
}

impl Failure {
    /// `error`, returned by the store described as `store` while it purged, said with what
    /// to check.
    pub(crate) fn from_store_error(error: &idem_core::StoreError, store: &str) -> Self {
        Self::failed(format!("{}. {}", chain(error), what_to_check(store)))
    }
}

/// What to check when the store at `store` (its URL, shown) fails: that it is reachable, and
/// the options of its kind that must name what the service uses.
fn what_to_check(store: &str) -> String {
    let options = match store.split_once("://").map(|(scheme, _)| scheme) {
        Some("dynamodb") => "--region, --endpoint, --prefix, --attribute and --sort-key",
        Some("postgres" | "postgresql") => "--prefix, --table and --schema",
        _ => "--prefix",
    };
    format!("Check that the store at {store} is reachable and that {options} name what the service uses")
}

impl fmt::Display for Failure {
    /// The message, with what a terminal would obey in a key or a store's words escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::visible::visible_message(&self.message))
    }
}

/// `text` quoted for a shell so that pasting it passes `text` itself: in single quotes (a `'`
/// inside as `'\''`), or, when it holds a character a terminal would obey, as `$'...'` with
/// that character escaped (`\x1b`, `\u202e`), which bash, zsh and ksh read back as it.
pub(crate) fn shell_quoted(text: &str) -> String {
    if !text.chars().any(crate::visible::hostile) {
        return format!("'{}'", text.replace('\'', r"'\''"));
    }
    let mut quoted = String::from("$'");
    for c in text.chars() {
        match c {
            '\\' => quoted.push_str(r"\\"),
            '\'' => quoted.push_str(r"\'"),
            c if crate::visible::hostile(c) && u32::from(c) < 0x100 => {
                quoted.push_str(&format!("\\x{:02x}", u32::from(c)))
            }
            c if crate::visible::hostile(c) => quoted.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('\'');
    quoted
}

/// `error` and its sources, joined by `: `, each only when it adds something.
pub(crate) fn chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_failure_says_what_the_store_said_and_the_options_of_its_kind() {
        let failed = |key: &str, store: &str| {
            Failure::from_error(
                Error::Store {
                    key: key.to_owned(),
                    source: "connection refused".into(),
                },
                store,
            )
            .to_string()
        };
        let listing = failed("", "dynamodb://t");
        assert!(
            listing.starts_with("the store failed: connection refused."),
            "{listing}"
        );
        assert!(!listing.contains("idempotency key"), "{listing}");
        assert!(
            listing.contains("--sort-key") && !listing.contains("--schema"),
            "{listing}"
        );
        let get = failed("idem|f|-|o", "postgres://h/db");
        assert!(get.starts_with("the store failed on idem|f|-|o:"), "{get}");
        assert!(get.contains("--table and --schema"), "{get}");
        assert!(failed("", "redis://h").contains("that --prefix name"));
    }

    #[test]
    fn a_key_is_quoted_so_that_pasting_it_passes_it() {
        assert_eq!(shell_quoted("idem|f|-|o'1"), r"'idem|f|-|o'\''1'");
        assert_eq!(
            shell_quoted("idem|f|-|\u{1b}[32mgreen\\'\u{202e}"),
            r"$'idem|f|-|\x1b[32mgreen\\\'\u202e'"
        );
    }

    #[test]
    fn an_unsupported_listing_names_the_store_and_what_still_works() {
        let failure = Failure::from_error(
            Error::Unsupported {
                store: "redis".into(),
                what: "list its records",
            },
            "redis://127.0.0.1:6379/",
        );
        assert_eq!(failure.code(), exit::FAILED);
        let message = failure.to_string();
        assert!(
            message.contains("`redis` store at redis://127.0.0.1:6379/"),
            "{message}"
        );
        assert!(
            message.contains("`get`, `forget` and `release` still work"),
            "{message}"
        );
    }

    #[test]
    fn keys_are_quoted_for_the_shell() {
        assert_eq!(shell_quoted("idem|charge|-|o'1"), r"'idem|charge|-|o'\''1'");
    }

    #[test]
    fn a_bad_key_is_a_usage_error() {
        let error = Key::parse("no-bar").unwrap_err();
        assert_eq!(Failure::from_error(error, "x").code(), exit::USAGE);
    }
}
