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

/// Deletes expired completed records and abandoned reservations under the store's `prefix`,
/// `batch` at a time, until a batch deletes fewer than `batch`; says what it is about to do
/// first (on stderr), then prints how many went. It needs no `--yes`: what it deletes no
/// longer counts, and it runs from cron.
pub(crate) async fn purge(
    connected: &Connected,
    prefix: Option<&str>,
    batch: u32,
    out: &Output,
) -> Result<(), Failure> {
    note(&format!(
        "purging the expired records and abandoned reservations {} of the store at {}, {batch} \
         per request; live records are kept",
        match prefix {
            Some(prefix) => format!("under the prefix `{prefix}`"),
            None => "without a prefix".to_owned(),
        },
        connected.store
    ));
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
