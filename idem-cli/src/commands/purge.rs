//! `purge-expired`: deletes records that stopped counting, batch after batch.

use super::printer::{printed, Printer};
use crate::connect::Connected;
use crate::failure::Failure;

/// Deletes expired completed records and abandoned reservations under the store's `prefix`,
/// `batch` at a time, until a batch deletes fewer than `batch`; says what it is about to do
/// first (on stderr), then prints how many went. It needs no `--yes`: what it deletes no
/// longer counts, and it runs from cron.
pub(crate) async fn purge(
    connected: &Connected,
    prefix: Option<&str>,
    batch: u32,
    out: &dyn Printer,
) -> Result<(), Failure> {
    out.note(&format!(
        "purging the expired records and abandoned reservations {} of the store at {}, {batch} \
         per request; live records are kept",
        match prefix {
            Some(prefix) => format!("under the prefix `{prefix}`"),
            None => "without a prefix".to_owned(),
        },
        connected.store
    ));
    if let Some(mis_keyed) = connected.mis_keyed().await {
        return Err(mis_keyed);
    }
    let store = connected.idem.store();
    let Some(inventory) = store.inventory() else {
        let unsupported = idem_core::Error::Unsupported {
            store: store.name().to_owned(),
            what: "purge expired records",
        };
        return Err(Failure::from_error(unsupported, &connected.store));
    };
    let mut purged = 0u64;
    // Each batch goes on where the previous one stopped: no record is judged twice.
    let mut cursor: Option<String> = None;
    loop {
        let now = connected.idem.clock().now();
        let progress = match inventory
            .purge_expired_from(now, batch, cursor.as_deref())
            .await
        {
            Ok(progress) => progress,
            Err(error) => {
                if purged > 0 {
                    out.note(&format!(
                        "{purged} expired records were purged before the failure"
                    ));
                }
                return Err(Failure::from_store_error(&error, &connected.store));
            }
        };
        purged += progress.deleted;
        match progress.cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    printed(out.purged(purged))
}
