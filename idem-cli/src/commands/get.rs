//! `get`: one key's record.

use idem_core::Key;

use super::printed;
use crate::connect::Connected;
use crate::failure::Failure;
use crate::output::Output;

/// Prints the record under `key`; when it can't be read from a DynamoDB table whose
/// attributes are named otherwise, says which `--attribute` is missing.
pub(crate) async fn get(connected: &Connected, key: &Key, out: &Output) -> Result<(), Failure> {
    let inspection = match connected.idem.inspect(key).await {
        Ok(Some(inspection)) => inspection,
        Ok(None) => return Err(Failure::no_record(key)),
        Err(error) => return Err(connected.failure(error).await),
    };
    printed(out.record(&inspection))
}
