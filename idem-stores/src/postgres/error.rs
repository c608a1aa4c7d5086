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
    /// When the pool had no connection in time: how many it held then, and its maximum.
    exhausted: Option<PoolUse>,
}

/// How full a pool was.
#[derive(Clone, Copy, Debug)]
struct PoolUse {
    size: u32,
    idle: usize,
    max: u32,
}

impl RequestFailed {
    pub(crate) fn new(operation: &'static str, table: &str, source: sqlx::Error) -> Self {
        RequestFailed {
            operation,
            table: table.to_owned(),
            source,
            exhausted: None,
        }
    }

    /// The failure of a request sent through `pool`, which says how full the pool was when
    /// it had no connection in time.
    pub(crate) fn through(
        pool: &sqlx::PgPool,
        operation: &'static str,
        table: &str,
        source: sqlx::Error,
    ) -> Self {
        // sqlx also times out when it can't open a connection (the server is down): the pool
        // is only exhausted when every connection it may open is open and busy.
        let usage = PoolUse {
            size: pool.size(),
            idle: pool.num_idle(),
            max: pool.options().get_max_connections(),
        };
        let exhausted = (matches!(source, sqlx::Error::PoolTimedOut)
            && usage.size >= usage.max
            && usage.idle == 0)
            .then_some(usage);
        RequestFailed {
            exhausted,
            ..Self::new(operation, table, source)
        }
    }

    /// Whether the pool had no free connection within its acquire timeout while every
    /// connection it may open was open and in use. (A timeout with room in the pool means
    /// connections could not be opened: the server is unreachable.) A body that holds a connection (an open transaction) while it records a
    /// step keeps one of them; see the sizing rule in the
    /// [module docs](super#sizing-the-pool).
    pub fn is_pool_exhausted(&self) -> bool {
        self.exhausted.is_some()
    }

    /// What the store was doing: `reserve`, `complete`, `release`, `record step`, `renew`,
    /// `get`, `delete`, `list`, `purge`, `migrate` or `complete in transaction`.
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
        )?;
        if let Some(pool) = self.exhausted {
            write!(
                f,
                ": the pool had no free connection within its acquire timeout ({} of at most {} \
                 open, {} idle). Every connection is in use: a body that holds one (an open \
                 transaction) while it records a step waits for another that may never come. \
                 Give the store a pool of its own, or size the shared pool for a connection per \
                 running call plus one per idem statement in flight",
                pool.size, pool.max, pool.idle
            )?;
        }
        Ok(())
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
