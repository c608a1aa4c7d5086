//! Walking a store's listing page by page, as entries an operator reads.

use std::borrow::Cow;
use std::ops::ControlFlow;

use idem_core::store::ListQuery;
use idem_core::{Inspection, Key, StoreError};

use crate::connect::Connected;
use crate::failure::Failure;
use crate::visible::visible_bytes;

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
    /// Something stored under a key that is no idempotency key (not UTF-8, too long...):
    /// listed, never skipped, as `corrupt`, its key escaped.
    Unkeyed {
        /// The stored key after the store's prefix, as its bytes.
        key: Vec<u8>,
        /// Why it is no idempotency key.
        reason: String,
    },
}

impl Entry {
    /// The record's key, when it has one.
    pub(crate) fn key(&self) -> Option<&Key> {
        match self {
            Entry::Record(inspection) => Some(inspection.key()),
            Entry::Unreadable { key, .. } => Some(key),
            Entry::Unkeyed { .. } => None,
        }
    }

    /// The key as printed: the key's text, or a stored key that is none written escaped
    /// (bytes that are no UTF-8 as `\xNN`, see [`visible_bytes`]).
    pub(crate) fn key_text(&self) -> Cow<'_, str> {
        match (self, self.key()) {
            (_, Some(key)) => Cow::Borrowed(key.as_str()),
            (Entry::Unkeyed { key, .. }, None) => Cow::Owned(visible_bytes(key)),
            (_, None) => Cow::Borrowed(""),
        }
    }

    /// The function's name, from the key (`None` under a key digest). For a stored key that is
    /// no idempotency key, its second `|`-separated slot when it has the shape of one and that
    /// slot is UTF-8.
    pub(crate) fn function(&self) -> Option<&str> {
        match self {
            Entry::Unkeyed { key, .. } => {
                let mut slots = key.split(|byte| *byte == b'|');
                let name = slots.nth(1)?;
                slots.next()?;
                std::str::from_utf8(name).ok()
            }
            _ => self.key()?.function(),
        }
    }

    /// The state's name; `corrupt` for a record that could not be read, or that is stored
    /// under no idempotency key.
    pub(crate) fn state(&self) -> &'static str {
        match self {
            Entry::Record(inspection) => inspection.state().as_str(),
            Entry::Unreadable { .. } | Entry::Unkeyed { .. } => "corrupt",
        }
    }

    /// Whether the record is in progress; `None` for one that could not be read.
    pub(crate) fn is_in_progress(&self) -> Option<bool> {
        match self {
            Entry::Record(inspection) => Some(inspection.state().is_in_progress()),
            Entry::Unreadable { .. } | Entry::Unkeyed { .. } => None,
        }
    }
}

/// The listing prefix of `function` in `namespace`, or every key.
pub(crate) fn prefix(namespace: &str, function: Option<&str>) -> String {
    function
        .map(|function| Key::function_prefix(namespace, function))
        .unwrap_or_default()
}

/// Calls `visit` with every record whose key starts with `prefix`, page after page, until the
/// listing ends or `visit` breaks: each page's records, then what it found stored under no
/// idempotency key.
pub(crate) async fn each(
    connected: &Connected,
    prefix: String,
    mut visit: impl FnMut(Entry) -> ControlFlow<()>,
) -> Result<(), Failure> {
    if let Some(mis_keyed) = connected.mis_keyed().await {
        return Err(mis_keyed);
    }
    let idem = &connected.idem;
    let mut query = ListQuery::new(prefix, PAGE);
    loop {
        let page = match idem.list(&query).await {
            Ok(page) => page,
            Err(error) => return Err(connected.failure(error).await),
        };
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
        for unkeyed in page.unkeyed {
            let entry = Entry::Unkeyed {
                key: unkeyed.key,
                reason: format!(
                    "stored under no idempotency key ({}), shown escaped",
                    unkeyed.reason
                ),
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
