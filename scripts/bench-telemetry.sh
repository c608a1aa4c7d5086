#!/usr/bin/env bash
# What metrics and spans cost a program that installs no recorder and no subscriber: the same
# bench (scripts/telemetry-overhead/main.rs) built twice from this tree, once as it is and once
# with `--cfg idem_no_telemetry` (metrics and spans compiled out of idem-core), run in
# alternation, and compared.
#
#   scripts/bench-telemetry.sh [ROUNDS]
#
# Prints a markdown table: each case's median nanoseconds per call for both builds (the median
# of ROUNDS runs, default 5), their ratio and its verdict against the goal (at most 1.05x):
# calls on the memory store, and on a redis-server this script starts on a free loopback port
# (when redis-server is installed).
set -euo pipefail

cd "$(dirname "$0")/.."
root="$(pwd)"
rounds="${1:-5}"
goal="1.05"
work="$(mktemp -d /tmp/idem-telemetry.XXXXXX)"
target="${CARGO_TARGET_DIR:-$root/target}/telemetry-overhead"
trap 'rm -rf "$work"' EXIT

# build NAME RUSTFLAGS: the bench against this tree's crates, in a target directory of its own
# (the flags differ, so the builds share nothing).
build() {
    mkdir -p "$work/$1/src"
    cp scripts/telemetry-overhead/main.rs "$work/$1/src/main.rs"
    cat >"$work/$1/Cargo.toml" <<TOML
[package]
name = "telemetry-overhead-$1"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
idem-core = { path = "$root/idem-core", default-features = false }
idem-stores = { path = "$root/idem-stores", default-features = false, features = ["memory", "redis"] }
tokio = { version = "1", features = ["rt"] }

[profile.release]
debug = false

[workspace]
TOML
    RUSTFLAGS="${RUSTFLAGS:-} $2" cargo build --release --quiet --manifest-path "$work/$1/Cargo.toml" \
        --target-dir "$target/$1" 2>&1 >&2
}

build without "--cfg idem_no_telemetry"
build with ""

if command -v redis-server >/dev/null 2>&1; then
    redis_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
    redis_pid=$!
    trap 'kill "$redis_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
    until (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null; do sleep 0.05; done
    export IDEM_REDIS_URL="redis://127.0.0.1:$redis_port"
fi

: >"$work/results"
for round in $(seq "$rounds"); do
    for build in without with; do
        "$target/$build/release/telemetry-overhead-$build" | sed "s/^/$build /" >>"$work/results"
    done
done

echo "| case | compiled out ns/call | compiled in, nothing installed ns/call | ratio |"
echo "|---|---|---|---|"
verdicts=""
for case in fresh replay cached_replay redis_fresh redis_replay; do
    median() { grep "^$1 $case " "$work/results" | awk '{ print $3 }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    before="$(median without)"
    after="$(median with)"
    [ -n "$before" ] || continue
    ratio="$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.2f", a / b }')"
    echo "| $case | $before | $after | ${ratio}× |"
    verdict="$(awk -v r="$ratio" -v g="$goal" 'BEGIN { if (r <= g) print "met"; else printf "short by %.2f×", r - g }')"
    verdicts="$verdicts| telemetry compiled in, nothing installed, $case, ≤ ${goal}× compiled out | ${ratio}× | $verdict |
"
done
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds"
echo
echo "#### Goals of telemetry"
echo
echo "| goal | measured | verdict |"
echo "|---|---|---|"
printf '%s' "$verdicts"
