//! The Lua scripts, and calling them with `EVALSHA`, falling back to `EVAL` once per server.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

use redis::{Cmd, ErrorKind, RedisError, ServerErrorKind, Value};

use super::connection::Connection;

/// Helpers every script starts with.
const COMMON: &str = include_str!("lua/common.lua");

/// One script: its source and SHA-1.
pub(crate) struct Script {
    name: &'static str,
    source: String,
    sha: String,
}

impl Script {
    fn new(name: &'static str, body: &str) -> Self {
        let source = format!("{COMMON}{body}");
        let sha = redis::Script::new(&source).get_hash().to_owned();
        Script { name, source, sha }
    }

    /// The script's name, for error messages.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// The full source, as sent by `EVAL`.
    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    /// The SHA-1 the server knows the script by.
    pub(crate) fn sha(&self) -> &str {
        &self.sha
    }
}

/// The scripts of the protocol.
pub(crate) struct Scripts {
    pub(crate) reserve: Script,
    /// The plain `SET` of a reservation, for a call with a longest outcome.
    pub(crate) reserve_within: Script,
    /// A `GET` for a call with a longest outcome.
    pub(crate) read_within: Script,
    pub(crate) complete: Script,
    pub(crate) release: Script,
    pub(crate) renew: Script,
    pub(crate) record_step: Script,
    /// Not part of the protocol: the operators' purge of an expired record.
    pub(crate) purge: Script,
    /// Not part of the protocol: the operators' delete of the record they read.
    pub(crate) delete_if: Script,
}

/// Built once per process.
pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    reserve: Script::new("reserve", include_str!("lua/reserve.lua")),
    reserve_within: Script::new("reserve_within", include_str!("lua/reserve_within.lua")),
    read_within: Script::new("read_within", include_str!("lua/read_within.lua")),
    complete: Script::new("complete", include_str!("lua/complete.lua")),
    release: Script::new("release", include_str!("lua/release.lua")),
    renew: Script::new("renew", include_str!("lua/renew.lua")),
    record_step: Script::new("record_step", include_str!("lua/record_step.lua")),
    purge: Script::new("purge", include_str!("lua/purge.lua")),
    delete_if: Script::new("delete_if", include_str!("lua/delete_if.lua")),
});

/// Sends commands and counts them: every command sent is one round trip.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Sends one command.
    pub(crate) async fn query(
        &self,
        conn: &mut Connection,
        cmd: &Cmd,
    ) -> Result<Value, RedisError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        conn.query(cmd).await
    }

    /// Sends a keyless command to one node (see [`Connection::query_node`]).
    pub(crate) async fn query_node(
        &self,
        conn: &mut Connection,
        cmd: &Cmd,
        slot: Option<u16>,
    ) -> Result<Value, RedisError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        conn.query_node(cmd, slot).await
    }

    /// Sends a `WAIT` to the server that holds `key` (on a cluster, its slot's primary).
    pub(crate) async fn wait_on_primary_of(
        &self,
        conn: &mut Connection,
        cmd: &Cmd,
        key: &str,
    ) -> Result<Value, RedisError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        conn.wait_on_primary_of(cmd, key).await
    }

    /// Runs `script` on one key: `EVALSHA`, and if the server does not know the script yet
    /// (`NOSCRIPT`, after a restart or on a new server), `EVAL` with the source, which also
    /// caches it. One round trip when the script is known, two the first time.
    pub(crate) async fn eval(
        &self,
        conn: &mut Connection,
        script: &Script,
        key: &str,
        args: &[&[u8]],
    ) -> Result<Value, RedisError> {
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg(script.sha()).arg(1).arg(key);
        for arg in args {
            evalsha.arg(*arg);
        }
        match self.query(conn, &evalsha).await {
            Err(error) if error.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                tracing::debug!(target: super::TARGET, script = script.name(), "script not cached on the server; sending its source");
                let mut eval = redis::cmd("EVAL");
                eval.arg(script.source()).arg(1).arg(key);
                for arg in args {
                    eval.arg(*arg);
                }
                self.query(conn, &eval).await
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_differ_and_include_the_helpers() {
        let s = &*SCRIPTS;
        let shas = [
            s.reserve.sha(),
            s.complete.sha(),
            s.release.sha(),
            s.renew.sha(),
            s.record_step.sha(),
            s.purge.sha(),
        ];
        for (i, a) in shas.iter().enumerate() {
            assert_eq!(a.len(), 40);
            for b in &shas[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert!(s.release.source().contains("local function owned"));
    }
}
