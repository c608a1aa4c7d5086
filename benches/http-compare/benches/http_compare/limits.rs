//! Whether the process may open the sockets a number of connections needs. Each connection is
//! two sockets of this process (the client's end and the router's), so 512 connections to each
//! of three routers need over 3 000 open files, past the soft limit many systems start with
//! (1 024). `scripts/bench.sh` raises the soft limit to the hard one.

/// Files the process holds besides the connections: listeners, the runtimes' event queues, the
/// Redis client, the standard streams.
const OTHER_FILES: usize = 128;

/// The soft limit on the process's open files, when `/proc/self/limits` gives a number.
fn open_files_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Why `connections` connections to each of `routers` routers cannot all be open at once, when
/// the soft limit on open files says so.
pub fn too_few_files(routers: usize, connections: usize) -> Option<String> {
    let needed = routers * connections * 2 + OTHER_FILES;
    let limit = open_files_limit()?;
    (limit < needed).then(|| {
        format!(
            "{connections} connections to each of {routers} routers need about {needed} open \
             files and the soft limit is {limit}: raise it (`ulimit -n {needed}` or more; \
             scripts/bench.sh raises it to the hard limit)"
        )
    })
}
