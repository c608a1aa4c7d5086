//! Walking a store's listing page by page, as entries an operator reads.

use std::ops::ControlFlow;

use idem_core::store::ListQuery;
use idem_core::{Inspection, Key, StoreError};

use crate::connect::Connected;
use crate::failure::Failure;

/// How many records one page asks for.
const PAGE: u32 = 500;

/// One listed record: readable, or not (listed with the reason, never skipped).
#[derive(Debug)]
pub(crate) enum Entry {
    /// A record as of the time its page was read.
    Record(Inspection),
    /// A record the store could not read.
    Unreadable {
        /// Its key.
        key: Key,
        /// Why it could not be read.
        reason: String,
    },
}

impl Entry {
    /// The record's key.
    pub(crate) fn key(&self) -> &Key {
        match self {
            Entry::Record(inspection) => inspection.key(),
            Entry::Unreadable { key, .. } => key,
        }
    }

    /// The function's name, from the key (`None` under a key digest).
    pub(crate) fn function(&self) -> Option<&str> {
        self.key().function()
    }

    /// The state's name; `corrupt` for a record that could not be read.
    pub(crate) fn state(&self) -> &'static str {
        match self {
            Entry::Record(inspection) => inspection.state().as_str(),
            Entry::Unreadable { .. } => "corrupt",
        }
    }

    /// Whether the record is in progress; `None` for one that could not be read.
    pub(crate) fn is_in_progress(&self) -> Option<bool> {
        match self {
            Entry::Record(inspection) => Some(inspection.state().is_in_progress()),
            Entry::Unreadable { .. } => None,
        }
    }
}

/// Calls `visit` with every record whose key starts with `prefix`, page after page, until the
/// listing ends or `visit` breaks.
pub(crate) async fn each(
    connected: &Connected,
    prefix: String,
    mut visit: impl FnMut(Entry) -> ControlFlow<()>,
) -> Result<(), Failure> {
    let idem = &connected.idem;
    let mut query = ListQuery::new(prefix, PAGE);
    loop {
        let page = idem
            .list(&query)
            .await
            .map_err(|error| Failure::from_error(error, &connected.store))?;
        let now = idem.clock().now();
        for (key, record) in page.records {
            let entry = match record {
                Ok(record) => Entry::Record(Inspection::new(key, record, now)),
                Err(StoreError::Corrupt(reason)) => Entry::Unreadable { key, reason },
                Err(error) => Entry::Unreadable {
                    key,
                    reason: crate::failure::chain(&error),
                },
            };
            if visit(entry).is_break() {
                return Ok(());
            }
        }
        match page.cursor {
            Some(cursor) => query = query.after(Some(cursor)),
            None => return Ok(()),
        }
    }
}
