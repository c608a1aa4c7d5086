#!/usr/bin/env bash
# idem next to the idempotency utility of Powertools for AWS Lambda (Python), on the same Redis:
# sequential first-call and replay latency (p50, p99), round trips per call and the Redis
# commands per call (INFO commandstats), as one markdown table.
#
#   scripts/compare-powertools.sh
#
# Starts its own redis-server on a free loopback port, installs aws-lambda-powertools (with its
# redis and boto3 dependencies) into a virtualenv in $IDEM_SERVICES_DIR/powertools (default
# ~/.cache/idem-services/powertools), and runs scripts/powertools_idempotency.py and
# `cargo bench -p idem-tests --features redis --bench redis_sequential` against that server.
# IDEM_BENCH_CALLS sets how many calls of each kind are timed (default 2 000).
set -euo pipefail

cd "$(dirname "$0")/.."
calls="${IDEM_BENCH_CALLS:-2000}"
powertools_version="${IDEM_POWERTOOLS_VERSION:-3.37.0}"
venv="${IDEM_SERVICES_DIR:-$HOME/.cache/idem-services}/powertools"
log="${IDEM_BENCH_LOG:-${CARGO_TARGET_DIR:-target}/compare-powertools.log}"
mkdir -p "$(dirname "$log")"
: >"$log"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q "aws-lambda-powertools[redis]==$powertools_version" boto3 >>"$log" 2>&1

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
dir="$(mktemp -d)"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    --maxmemory-policy noeviction >>"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
done

echo "Sequential calls, one caller, $calls of each kind, on Redis $(redis-server --version | cut -d" " -f3 | cut -d= -f2) at 127.0.0.1:$port;"
echo "Powertools $powertools_version on $("$venv/bin/python" --version), without its local cache."
echo
echo "Round trips: requests the client sent. Commands: what INFO commandstats counted, which"
echo "includes the commands a Lua script runs."
echo
echo "| library | call | p50 | p99 | round trips per call | Redis commands per call |"
echo "|---|---|---|---|---|---|"
"$venv/bin/python" scripts/powertools_idempotency.py 127.0.0.1 "$port" "$calls" 2>>"$log"
IDEM_REDIS_URL="redis://127.0.0.1:$port/" IDEM_BENCH_CALLS="$calls" \
    cargo bench -q -p idem-tests --features redis --bench redis_sequential 2>>"$log"
