//! The errors the DynamoDB store reports inside [`StoreError::Backend`] (the backend failed) and
//! [`StoreError::Rejected`] (a request that can never succeed).

use std::error::Error as StdError;
use std::fmt;

use idem_core::{BoxError, StoreError};

/// A request to DynamoDB failed: the endpoint could not be reached, it answered with an error
/// (throttling, a server error, a missing table), or its answer could not be read.
///
/// Carried by [`StoreError::Backend`], so a caller sees it as `idem_core::Error::Store`. Its
/// message has the SDK's whole error chain; [`source`](StdError::source) is the SDK error.
#[derive(Debug)]
pub struct RequestFailed {
    operation: &'static str,
    table: String,
    detail: String,
    source: BoxError,
}

impl RequestFailed {
    pub(crate) fn new<E>(operation: &'static str, table: &str, error: E) -> Self
    where
        E: StdError + Send + Sync + 'static,
    {
        RequestFailed {
            operation,
            table: table.to_owned(),
            detail: chain(&error),
            source: Box::new(error),
        }
    }

    /// The DynamoDB operation that failed, e.g. `PutItem`.
    pub fn operation(&self) -> &str {
        self.operation
    }
}

impl fmt::Display for RequestFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DynamoDB {} on table `{}` failed: {}",
            self.operation, self.table, self.detail
        )
    }
}

impl StdError for RequestFailed {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
}

impl From<RequestFailed> for StoreError {
    fn from(error: RequestFailed) -> Self {
        StoreError::backend(error)
    }
}

/// The messages of `error` and of each of its sources, joined by `: `, skipping a source whose
/// message its parent already contains.
fn chain(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let message = cause.to_string();
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = cause.source();
    }
    text
}

/// A completed record would not fit in one DynamoDB item (400 KB). Nothing was sent.
///
/// Carried by [`StoreError::Rejected`], so the engine does not retry it. Return a smaller value from the function (an id to look
/// the full result up by, for example).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemTooLarge {
    /// The item's size as DynamoDB counts it (an upper bound), in bytes.
    pub size: usize,
    /// The limit, in bytes.
    pub limit: usize,
}

impl fmt::Display for ItemTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the completed record would take {} bytes, more than DynamoDB's item limit of {} bytes; \
             return a smaller value (for example an id to look the result up by)",
            self.size, self.limit
        )
    }
}

impl StdError for ItemTooLarge {}

/// A step's value would not fit in the in-progress record's DynamoDB item (400 KB), alone or
/// with the steps recorded before it. Nothing was written.
///
/// Carried by [`StoreError::Rejected`], so the engine does not retry it. Return a smaller value
/// from the step (an id to look the full result up by, for example).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepTooLarge {
    /// The step's name.
    pub step: String,
    /// The size of the item with this step alone (an upper bound), in bytes, when that is
    /// already over the limit and the request was not sent; `None` when DynamoDB refused the
    /// step because of the steps recorded before it.
    pub size: Option<usize>,
    /// The limit, in bytes.
    pub limit: usize,
}

impl fmt::Display for StepTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.size {
            Some(size) => write!(
                f,
                "step `{}` would make the in-progress record take {size} bytes, more than \
                 DynamoDB's item limit of {} bytes",
                self.step, self.limit
            )?,
            None => write!(
                f,
                "step `{}` would make the in-progress record, with the steps recorded before \
                 it, larger than DynamoDB's item limit of {} bytes",
                self.step, self.limit
            )?,
        }
        f.write_str(
            "; return a smaller value from the step (for example an id to look the result up by)",
        )
    }
}

impl StdError for StepTooLarge {}

/// The record's key, with the store's prefix, would be longer than DynamoDB allows in the
/// attribute that holds it: 2048 bytes for a partition key, 1024 for a sort key. Nothing was
/// sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTooLong {
    /// The key's length with the store's prefix, in bytes.
    pub len: usize,
    /// DynamoDB's limit for the attribute that holds it, in bytes.
    pub limit: usize,
}

impl fmt::Display for KeyTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the stored key would be {} bytes long, more than DynamoDB's limit of {} bytes \
             for the attribute that holds it; use a shorter key prefix",
            self.len, self.limit
        )
    }
}

impl StdError for KeyTooLong {}

/// The table or the credentials are set up so that no request can succeed: retrying will not
/// help, fixing the setup will. [`DynamoDbStore::verify`](super::DynamoDbStore::verify) finds
/// these at start-up; a request that meets one at run time fails with it, not retried.
///
/// Carried by [`StoreError::Rejected`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Misconfigured {
    /// The table does not exist (or not in this account and region).
    MissingTable {
        /// The table's name.
        table: String,
    },
    /// The table's key is not the store's: another partition key, one that is not a string,
    /// or (as DynamoDB reports it at run time) a sort key.
    WrongKey {
        /// The table's name.
        table: String,
        /// The partition key the store needs: its attribute name, type `S`.
        expected: String,
        /// What the table has, or what DynamoDB said.
        found: String,
    },
    /// The table has a sort key and the store was built without one
    /// ([`DynamoDbStoreBuilder::sort_key`](super::DynamoDbStoreBuilder::sort_key)): its items
    /// have none, so no write can succeed.
    SortKey {
        /// The table's name.
        table: String,
        /// The sort key's attribute name, or DynamoDB's message.
        sort_key: String,
    },
    /// The store was built with a [`SortKey`](super::SortKey) the table does not have: the
    /// table has no sort key, another one, or one that is not a string.
    WrongSortKey {
        /// The table's name.
        table: String,
        /// The sort key the store needs: its attribute name, type `S`.
        expected: String,
        /// What the table has.
        found: String,
    },
    /// DynamoDB's TTL is not enabled on the store's TTL attribute: expired records would stay
    /// for ever (they are still treated as expired, but never removed).
    TtlDisabled {
        /// The table's name.
        table: String,
        /// The attribute TTL must be enabled on.
        attribute: String,
        /// The attribute TTL is enabled on instead, if any.
        enabled_on: Option<String>,
    },
    /// DynamoDB refused the credentials, or their permissions.
    Credentials {
        /// The table's name.
        table: String,
        /// DynamoDB's error code and message.
        detail: String,
    },
}

impl fmt::Display for Misconfigured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Misconfigured::MissingTable { table } => write!(
                f,
                "DynamoDB table `{table}` does not exist: create it (a string partition key and \
                 TTL enabled, see `DynamoDbStore::create_table`) or name the right one"
            ),
            Misconfigured::WrongKey {
                table,
                expected,
                found,
            } => write!(
                f,
                "DynamoDB table `{table}` does not match the store's key: the store needs a \
                 partition key `{expected}` of type string, and {found}; use such a table, or \
                 set `AttributeNames::key` to the table's partition key"
            ),
            Misconfigured::SortKey { table, sort_key } => write!(
                f,
                "DynamoDB table `{table}` has a sort key ({sort_key}) and the store has none: \
                 say where the record's key goes with `DynamoDbStoreBuilder::sort_key` (`idem \
                 --sort-key`), or use a table with a partition key only"
            ),
            Misconfigured::WrongSortKey {
                table,
                expected,
                found,
            } => write!(
                f,
                "DynamoDB table `{table}` does not match the store's sort key: the store needs \
                 a sort key `{expected}` of type string, and {found}; name the table's sort key \
                 in `SortKey`, or build the store without one for a table that has none"
            ),
            Misconfigured::TtlDisabled {
                table,
                attribute,
                enabled_on: None,
            } => write!(
                f,
                "DynamoDB table `{table}` has TTL disabled: enable it on attribute `{attribute}` \
                 (`DynamoDbStore::create_table` does), or expired records are never removed"
            ),
            Misconfigured::TtlDisabled {
                table,
                attribute,
                enabled_on: Some(other),
            } => write!(
                f,
                "DynamoDB table `{table}` has TTL on attribute `{other}`, not `{attribute}`: \
                 set `AttributeNames::ttl` to `{other}`, or expired records are never removed"
            ),
            Misconfigured::Credentials { table, detail } => write!(
                f,
                "DynamoDB refused the credentials for table `{table}`: {detail}; check the \
                 access key, region and the role's permissions on the table"
            ),
        }
    }
}

impl StdError for Misconfigured {}

impl From<Misconfigured> for StoreError {
    fn from(error: Misconfigured) -> Self {
        StoreError::rejected(error)
    }
}

/// The misconfiguration DynamoDB's error `code` (with `message`) reports on `table`, whose
/// partition key should be `key`, if it is one at run time: a missing table, or a key that does
/// not match the table. Refused credentials are not among them here: while an IAM policy or new
/// keys propagate they pass, so at run time they stay retryable ([`credentials_refused`] says
/// them at start-up).
pub(crate) fn misconfiguration(
    table: &str,
    key: &str,
    code: &str,
    message: &str,
) -> Option<Misconfigured> {
    let table = table.to_owned();
    match code {
        "ResourceNotFoundException" => Some(Misconfigured::MissingTable { table }),
        "ValidationException"
            if message.contains("key element does not match the schema")
                || message.contains("Missing the key")
                || message.contains("missed key schema element")
                || message.contains("Type mismatch for key") =>
        {
            Some(Misconfigured::WrongKey {
                table,
                expected: key.to_owned(),
                found: format!("DynamoDB says {code}: {message}"),
            })
        }
        _ => None,
    }
}

/// Whether DynamoDB's error `code` (with `message`) refuses the credentials or their
/// permissions on `table`.
pub(crate) fn credentials_refused(table: &str, code: &str, message: &str) -> Option<Misconfigured> {
    matches!(
        code,
        "UnrecognizedClientException"
            | "InvalidSignatureException"
            | "MissingAuthenticationTokenException"
            | "AccessDeniedException"
    )
    .then(|| Misconfigured::Credentials {
        table: table.to_owned(),
        detail: format!("{code}: {message}"),
    })
}
