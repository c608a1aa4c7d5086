//! `get`: one key's record.

use idem_core::Key;

use super::printed;
use crate::connect::Connected;
use crate::failure::Failure;
use crate::output::Output;

/// Prints the record under `key`.
pub(crate) async fn get(connected: &Connected, key: &Key, out: &Output) -> Result<(), Failure> {
    let inspection = connected
        .idem
        .inspect(key)
        .await
        .map_err(|error| Failure::from_error(error, &connected.store))?
        .ok_or_else(|| Failure::no_record(key))?;
    printed(out.record(&inspection))
}
