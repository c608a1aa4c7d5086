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

/// The partition key would be longer than DynamoDB allows (2048 bytes). Nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTooLong {
    /// The key's length with the store's prefix, in bytes.
    pub len: usize,
}

impl fmt::Display for KeyTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the partition key would be {} bytes long, more than DynamoDB's limit of {} bytes; \
             use a shorter key prefix",
            self.len,
            super::store::MAX_PARTITION_KEY_LEN
        )
    }
}

impl StdError for KeyTooLong {}
