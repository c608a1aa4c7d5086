//! `purge-expired`: deletes records that stopped counting, batch after batch.

use serde::Serialize;

use super::printed;
use crate::connect::Connected;
use crate::failure::Failure;
use crate::output::{note, Output};

/// What `purge-expired --json` prints.
#[derive(Debug, Serialize)]
struct Purged {
    /// How many records were deleted.
    purged: u64,
}

/// Deletes expired completed records and abandoned reservations, `batch` at a time, until a
/// batch deletes fewer than `batch`; prints how many went.
pub(crate) async fn purge(connected: &Connected, batch: u32, out: &Output) -> Result<(), Failure> {
    let mut purged = 0u64;
    loop {
        let deleted = match connected.idem.purge_expired(batch).await {
            Ok(deleted) => deleted,
            Err(error) => {
                if purged > 0 {
                    note(&format!(
                        "{purged} expired records were purged before the failure"
                    ));
                }
                return Err(Failure::from_error(error, &connected.store));
            }
        };
        purged += deleted;
        if deleted < u64::from(batch) {
            break;
        }
    }
    if out.is_json() {
        return printed(out.document(&Purged { purged }));
    }
    let records = if purged == 1 { "record" } else { "records" };
    printed(out.text(&format!("purged {purged} expired {records}\n")))
}
