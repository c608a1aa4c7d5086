#!/usr/bin/env bash
# Runs the benchmarks one after another and prints one markdown report: the machine, the date,
# the load average before and after, each goal with its verdict, and each bench's tables of
# ratios (every ratio is measured side by side within one run).
#
#   scripts/bench.sh                      # print the report
#   scripts/bench.sh --update BENCHMARKS.md   # also replace the report section of that file
#
# The Redis and PostgreSQL benches start their own servers on loopback ports (see
# scripts/services.sh); a bench whose server cannot be started prints a note instead of its
# tables. Cargo's own output goes to $IDEM_BENCH_LOG (default target/bench.log).
# IDEM_BENCH_SECS, IDEM_BENCH_ROUNDS, IDEM_BENCH_CALLS, IDEM_BENCH_MILLIS, IDEM_BENCH_REPLAYS and
# IDEM_BENCH_BATCHES shorten or lengthen the phases; IDEM_BENCH_KEYS lists the live keys of the
# memory store's scaling table and IDEM_BENCH_CONNECTIONS the connections of the HTTP
# comparison (see each bench's docs).
set -euo pipefail

cd "$(dirname "$0")/.."
# The HTTP comparison holds up to 512 connections to each of several routers in one process,
# two open files each: past the soft limit many systems start with (1024). It reports a count
# of connections the limit cannot hold as not measured.
open_files="$(ulimit -Hn)"
if ! ulimit -Sn "$open_files" 2>/dev/null; then
    echo "bench.sh: could not raise the soft limit on open files to ${open_files}; it stays $(ulimit -Sn)" >&2
fi
# The HTTP comparison is a package of its own (benches/http-compare): it shares the target.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
update=""
if [ "${1:-}" = "--update" ]; then
    update="${2:?--update needs a file}"
fi
log="${IDEM_BENCH_LOG:-${CARGO_TARGET_DIR:-target}/bench.log}"
mkdir -p "$(dirname "$log")"
: >"$log"

machine() {
    local cpu memory
    cpu="$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)"
    memory="$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!*.md' 2>/dev/null || echo ' (with local changes)')"
    echo "- CPU: ${cpu:-unknown}, $(nproc) cores (nproc)"
    echo "- memory: ${memory}"
    echo "- $(rustc --version)"
    echo "- $(redis-server --version 2>/dev/null | head -n 1 || echo 'redis-server: not installed')"
}

load_average() {
    cut -d' ' -f1-3 /proc/loadavg
}

# bench TITLE CARGO-ARGS...: runs one bench and prints its output under TITLE.
bench() {
    local title="$1"
    shift
    echo "## ${title}"
    echo
    echo '```text'
    echo "cargo bench $*"
    echo '```'
    echo
    if ! cargo bench "$@" 2>>"$log"; then
        echo "(failed: see $log)"
    fi
    echo
}

report() {
    echo "## Machine"
    echo
    machine
    echo
    bench "Memory store" -p idem-stores --bench memory_report
    bench "Memory store: replays among many live keys" -p idem-stores --bench memory_scaling
    bench "Redis: replay, fresh call and raw round trips" -p idem-tests --features redis --bench redis_replay
    bench "DynamoDB: requests and latency per call" -p idem-tests --features dynamodb --bench dynamodb_calls
    bench "HTTP: the layer's own cost, in the process" -p idem-http --bench layer_overhead
    bench "HTTP: idem-http against axum-idempotent and no layer" --manifest-path benches/http-compare/Cargo.toml --bench http_compare
    bench "PostgreSQL and Redis replay latency" -p idem-tests --features redis,postgres --bench replay_latency
    bench "Sealing: fresh calls and replays with and without" -p idem-tests --features redis,seal --bench sealing
    bench "Stored size of an answer" -p idem-tests --features http,redis,postgres,dynamodb --bench stored_size
    echo "## Telemetry compiled in and compiled out, nothing installed"
    echo
    echo '```text'
    echo "scripts/bench-telemetry.sh"
    echo '```'
    echo
    if ! scripts/bench-telemetry.sh 2>>"$log"; then
        echo "(failed: see $log)"
    fi
    echo
}

started_load="$(load_average)"
benches="$(report)"
# Every goal row the benches printed ("| goal | measured | met" or "short by ..."), gathered.
verdicts="$(printf '%s\n' "$benches" | grep -E '^\| .* \| (met|short by [^|]*) \|$' || true)"
output="$(
    echo "## Goals"
    echo
    echo "Load average (1, 5, 15 min): $started_load before the run, $(load_average) after."
    echo
    echo "| goal | measured | verdict |"
    echo "|---|---|---|"
    printf '%s\n' "$verdicts"
    echo
    printf '%s\n' "$benches"
)"
printf '%s\n' "$output"

if [ -n "$update" ]; then
    begin='<!-- scripts/bench.sh output begins -->'
    end='<!-- scripts/bench.sh output ends -->'
    grep -qF "$begin" "$update" && grep -qF "$end" "$update" || {
        echo "bench.sh: $update has no '$begin' ... '$end' section" >&2
        exit 1
    }
    BENCH_OUTPUT="$output" awk -v begin="$begin" -v end="$end" '
        $0 == begin { print; print ""; print ENVIRON["BENCH_OUTPUT"]; print ""; skipping = 1; next }
        $0 == end { skipping = 0 }
        !skipping { print }
    ' "$update" >"$update.tmp"
    mv "$update.tmp" "$update"
fi
