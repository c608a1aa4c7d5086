//! What a statement sent to PostgreSQL can fail with.

use std::fmt;

use idem_core::StoreError;

/// A statement sent to PostgreSQL failed: the pool had no connection in time, the server could
/// not be reached or broke the connection, or it answered with an error (a statement timeout,
/// a missing table). Found as the source of [`StoreError::Backend`] and of
/// [`Error::Store`](idem_core::Error::Store); its own [`source`](std::error::Error::source) is
/// sqlx's error.
#[derive(Debug)]
pub struct RequestFailed {
    operation: &'static str,
    table: String,
    source: sqlx::Error,
}

impl RequestFailed {
    pub(crate) fn new(operation: &'static str, table: &str, source: sqlx::Error) -> Self {
        RequestFailed {
            operation,
            table: table.to_owned(),
            source,
        }
    }

    /// What the store was doing: `reserve`, `complete`, `release`, `record step`, `renew`,
    /// `get`, `delete`, `purge`, `migrate` or `complete in transaction`.
    pub fn operation(&self) -> &str {
        self.operation
    }

    /// sqlx's error.
    pub fn sqlx_error(&self) -> &sqlx::Error {
        &self.source
    }
}

impl fmt::Display for RequestFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PostgreSQL {} on table {} failed",
            self.operation, self.table
        )
    }
}

impl std::error::Error for RequestFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl From<RequestFailed> for StoreError {
    fn from(error: RequestFailed) -> Self {
        StoreError::backend(error)
    }
}
