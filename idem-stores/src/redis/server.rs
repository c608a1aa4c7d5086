//! What the store asks of the server at connect: its version, and its eviction policy.

use idem_core::StoreError;
use redis::Value;

use super::replies;
use super::store::RedisStore;

impl RedisStore {
    /// The server's `maxmemory-policy`, or `None` where `CONFIG GET` is not allowed (some
    /// managed services). Anything but `noeviction` lets Redis evict a reservation under memory
    /// pressure, and then a duplicate runs the function again.
    pub async fn eviction_policy(&self) -> Result<Option<String>, StoreError> {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg("maxmemory-policy");
        let value = match self.query(&cmd, "CONFIG GET").await {
            Ok(value) => value,
            Err(error) => {
                tracing::debug!(target: super::TARGET, %error, "cannot read maxmemory-policy");
                return Ok(None);
            }
        };
        Ok(replies::pairs(value)?
            .into_iter()
            .next()
            .and_then(|(_, policy)| String::from_utf8(policy).ok()))
    }

    /// Refuses a server whose `INFO` says it is older than Redis 7.0: it would refuse every
    /// reservation. A server that doesn't answer `INFO` is taken as it is.
    pub(crate) async fn check_version(&self) -> Result<(), StoreError> {
        let mut info = redis::cmd("INFO");
        info.arg("server");
        // One server answers with its text; a cluster with each primary's, by node.
        let texts = match self.query(&info, "INFO").await {
            Ok(Value::Map(nodes)) => nodes.into_iter().map(|(_, text)| text).collect(),
            Ok(text) => vec![text],
            Err(_) => return Ok(()),
        };
        for text in texts {
            let text = match text {
                Value::BulkString(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Value::VerbatimString { text, .. } => text,
                _ => continue,
            };
            refuse_before_7(&text)?;
        }
        Ok(())
    }

    /// Warns through `tracing` when the server may evict records.
    pub(crate) async fn warn_unless_noeviction(&self) {
        if let Ok(Some(policy)) = self.eviction_policy().await {
            if policy != "noeviction" {
                tracing::warn!(target: super::TARGET, policy = policy.as_str(), "maxmemory-policy is not `noeviction`: under memory pressure Redis may evict a reservation, and a duplicate then runs the function again");
            }
        }
    }
}

/// Refuses a server whose `INFO server` text names a version older than Redis 7.0.
fn refuse_before_7(info: &str) -> Result<(), StoreError> {
    let version = info
        .lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .map(str::trim);
    match version.and_then(|v| v.split('.').next()?.parse::<u32>().ok()) {
        Some(major) if major < 7 => Err(StoreError::rejected(format!(
            "the Redis store needs Redis 7.0 or later, or Valkey (it reserves with `SET ... NX \
             GET`); this server is Redis {}",
            version.unwrap_or_default()
        ))),
        _ => Ok(()),
    }
}
