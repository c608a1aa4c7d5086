//! What a request to Redis can fail with.

use std::fmt;

use idem_core::StoreError;
use redis::RedisError;

/// A request to Redis failed: which one, and the `redis` crate's error as the
/// [`source`](std::error::Error::source). Found as the source of
/// [`StoreError::Backend`] and of [`Error::Store`](idem_core::Error::Store).
#[derive(Debug)]
pub struct RequestFailed {
    operation: String,
    source: RedisError,
}

impl RequestFailed {
    /// What was asked of Redis: a store operation (`reserve`, `complete`...), a plain
    /// command (`GET`, `DEL`) or `connect`.
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// The `redis` crate's error.
    pub fn redis_error(&self) -> &RedisError {
        &self.source
    }
}

impl fmt::Display for RequestFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redis {} failed", self.operation)
    }
}

impl std::error::Error for RequestFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Why a write was refused with
/// [`wait_for_replicas`](super::RedisStoreBuilder::wait_for_replicas): fewer replicas
/// acknowledged it in time than asked for.
#[derive(Debug)]
pub struct NotReplicated {
    pub(crate) what: String,
    pub(crate) acked: i64,
    pub(crate) wanted: u32,
}

impl fmt::Display for NotReplicated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Redis {}: {} of {} replicas acknowledged the write in time",
            self.what, self.acked, self.wanted
        )
    }
}

impl std::error::Error for NotReplicated {}

/// Whether `error` means the connection failed, so that the request may be sent once more.
pub(crate) fn is_connection_error(error: &RedisError) -> bool {
    error.is_io_error() || error.is_connection_dropped() || error.is_timeout()
}

/// The store error for a failed `operation`: a key of another type is a corrupt record, anything
/// else a backend failure.
pub(crate) fn store_error(error: RedisError, operation: &str) -> StoreError {
    if error.code() == Some("WRONGTYPE") {
        return StoreError::Corrupt(format!(
            "the key does not hold a record of this layout (an earlier layout's hash?): {error}"
        ));
    }
    StoreError::backend(RequestFailed {
        operation: operation.to_owned(),
        source: error,
    })
}

/// Whether the server refused a write before running it, whatever the key holds: out of
/// memory (`maxmemory` under `noeviction`), a failed snapshot (`stop-writes-on-bgsave-error`),
/// too few replicas (`min-replicas-to-write`), or a read-only replica.
pub(crate) fn refuses_writes(error: &RedisError) -> bool {
    matches!(
        error.code(),
        Some("OOM" | "MISCONF" | "NOREPLICAS" | "READONLY")
    )
}

/// The store error for a failed reservation (its `SET`): a server older than Redis 7.0 refuses `NX`
/// with `GET` as a syntax error, which says nothing of why; say it.
pub(crate) fn set_refused(error: RedisError) -> StoreError {
    if error.code() == Some("ERR") && error.to_string().contains("syntax error") {
        return StoreError::backend(format!(
            "Redis refused `SET ... NX GET`, which the Redis store reserves with: it needs Redis \
             7.0 or later, or Valkey ({error})"
        ));
    }
    store_error(error, "reserve")
}
