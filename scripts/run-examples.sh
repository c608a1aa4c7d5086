#!/usr/bin/env bash
# Runs every example, so that their own assertions run too: the payment scenario and the axum
# server on the memory store, then the Redis and DynamoDB examples against a redis-server and a
# moto_server started here on free loopback ports and stopped on exit. Needs what
# scripts/services.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."

services_dir="${IDEM_SERVICES_DIR:-$HOME/.cache/idem-services}"
scratch=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$scratch"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for_port() {
    for _ in $(seq 1 200); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "examples: nothing listens on port $1" >&2
    return 1
}

echo "examples: payments (memory store)"
cargo run -q -p idem-examples --all-features --example payments
echo "examples: axum_payments (memory store, real HTTP on loopback)"
cargo run -q -p idem-examples --all-features --example axum_payments

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$scratch" >"$scratch/redis.log" 2>&1 &
pids+=($!)
wait_for_port "$redis_port"
echo "examples: redis_orders (redis-server on port $redis_port)"
IDEM_REDIS_URL="redis://127.0.0.1:$redis_port" \
    cargo run -q -p idem-examples --all-features --example redis_orders

moto_port=$(free_port)
"$services_dir/venv/bin/moto_server" -H 127.0.0.1 -p "$moto_port" >"$scratch/moto.log" 2>&1 &
pids+=($!)
wait_for_port "$moto_port"
echo "examples: dynamodb_payments (moto_server on port $moto_port)"
IDEM_DYNAMODB_ENDPOINT="http://127.0.0.1:$moto_port" \
    cargo run -q -p idem-examples --all-features --example dynamodb_payments
