//! What the tests that run the command share: a scratch directory for a run's output, and
//! whether there is a redis-server to run it on.

use std::path::{Path, PathBuf};
use std::process::Command;

/// An empty directory for the output of the run called `name`.
pub fn out_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("certify")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Whether `redis-server` runs here; when it does not, and backends are not required, says
/// that `what` is skipped (with backends required, the run itself fails for the missing
/// server).
pub fn redis_installed(what: &str) -> bool {
    let found = Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok();
    if !found && !idem_test_servers::availability::backends_required() {
        eprintln!("skipped: no redis-server for {what} (scripts/services.sh installs it)");
        return false;
    }
    true
}
