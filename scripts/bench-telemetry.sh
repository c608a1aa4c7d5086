#!/usr/bin/env bash
# What metrics and spans cost a program that installs no recorder and no subscriber: the same
# bench (scripts/telemetry-overhead/main.rs) built against this tree and against BASE (a
# revision without telemetry, default 2784133^), run in alternation, and compared.
#
#   scripts/bench-telemetry.sh [BASE] [ROUNDS]
#
# Prints a markdown table: each case's median nanoseconds per call for both builds (the median
# of ROUNDS runs, default 5) and their ratio: calls on the memory store, and on a redis-server
# this script starts on a free loopback port (when redis-server is installed).
set -euo pipefail

cd "$(dirname "$0")/.."
root="$(pwd)"
base="${1:-2784133^}"
rounds="${2:-5}"
work="$(mktemp -d /tmp/idem-telemetry.XXXXXX)"
target="${CARGO_TARGET_DIR:-$root/target}/telemetry-overhead"
trap 'git -C "$root" worktree remove --force "$work/base-tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

git worktree add --detach --quiet "$work/base-tree" "$base"

# project NAME TREE: a one-file package of the bench against the idem crates in TREE.
project() {
    mkdir -p "$work/$1/src"
    cp scripts/telemetry-overhead/main.rs "$work/$1/src/main.rs"
    cat >"$work/$1/Cargo.toml" <<TOML
[package]
name = "telemetry-overhead-$1"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
idem-core = { path = "$2/idem-core", default-features = false }
idem-stores = { path = "$2/idem-stores", default-features = false, features = ["memory", "redis"] }
tokio = { version = "1", features = ["rt"] }

[profile.release]
debug = false

[workspace]
TOML
    cargo build --release --quiet --manifest-path "$work/$1/Cargo.toml" --target-dir "$target" 2>&1 >&2
}

project base "$work/base-tree"
project head "$root"

if command -v redis-server >/dev/null 2>&1; then
    redis_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
    redis_pid=$!
    trap 'kill "$redis_pid" 2>/dev/null || true; git -C "$root" worktree remove --force "$work/base-tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
    until (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null; do sleep 0.05; done
    export IDEM_REDIS_URL="redis://127.0.0.1:$redis_port"
fi

: >"$work/results"
for round in $(seq "$rounds"); do
    for build in base head; do
        "$target/release/telemetry-overhead-$build" | sed "s/^/$build /" >>"$work/results"
    done
done

echo "| case | without telemetry ($(git rev-parse --short "$base")) ns/call | with telemetry, nothing installed ns/call | ratio |"
echo "|---|---|---|---|"
for case in fresh replay cached_replay redis_fresh redis_replay; do
    median() { grep "^$1 $case " "$work/results" | awk '{ print $3 }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    before="$(median base)"
    after="$(median head)"
    [ -n "$before" ] || continue
    echo "| $case | $before | $after | $(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.3fx", a / b }') |"
done
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds"
