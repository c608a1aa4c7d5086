//! The keyring that opens sealed outcomes: from `--keyring-file`, else `IDEM_KEYRING`, read
//! by idem-core's own `Keyring::from_file` and `Keyring::from_env`, as services read theirs.
//! Never from an argument: other users of the machine see the command line.

use std::path::Path;

use idem_core::seal::Keyring;

use crate::failure::Failure;

/// The environment variable that holds the keyring's text.
pub(crate) const KEYRING_VAR: &str = "IDEM_KEYRING";

/// The keyring in `file`, else in [`KEYRING_VAR`] (unless unset or empty); `None` without
/// either. A keyring that can't be read is a usage failure that says why, without its keys.
pub(crate) fn load(file: Option<&Path>) -> Result<Option<Keyring>, Failure> {
    let ring = match file {
        Some(file) => Keyring::from_file(file),
        None if std::env::var_os(KEYRING_VAR).is_none_or(|text| text.is_empty()) => {
            return Ok(None)
        }
        None => Keyring::from_env(KEYRING_VAR),
    };
    ring.map(Some).map_err(|error| {
        Failure::usage(format!(
            "{error}. The keyring is the service's: one `ID=BASE64KEY` entry a line, the \
             current key first"
        ))
    })
}
