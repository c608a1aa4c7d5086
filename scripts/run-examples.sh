#!/usr/bin/env bash
# Runs every example, so that their own assertions run too: the payment scenario and the axum,
# actix-web, poem and salvo servers on the memory store, then the Redis, DynamoDB, Lambda and PostgreSQL
# examples against a redis-server, a moto_server and a PostgreSQL cluster
# (scripts/lib/postgres.sh) started here on free loopback ports and stopped on exit. Needs what
# scripts/services.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."

services_dir="${IDEM_SERVICES_DIR:-$HOME/.cache/idem-services}"
source scripts/lib/postgres.sh
scratch=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    postgres_stop
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

# Built as the workspace's test command builds (every package, every feature), so that after
# `cargo test --workspace --all-features` only the examples' own binaries are compiled here.
cargo build -q --workspace --all-features --examples
examples_dir="${CARGO_TARGET_DIR:-target}/debug/examples"
example() { "$examples_dir/$1" "${@:2}"; }

echo "examples: payments (memory store)"
example payments
echo "examples: checkout_steps (memory store, a crash between two steps)"
example checkout_steps
echo "examples: axum_payments (memory store, real HTTP on loopback)"
example axum_payments
echo "examples: actix_payments (the layer as actix-web middleware, real HTTP on loopback)"
example actix_payments
echo "examples: poem_payments (the layer as poem middleware, real HTTP on loopback)"
example poem_payments
echo "examples: salvo_payments (the layer as a salvo hoop, real HTTP on loopback)"
example salvo_payments
echo "examples: axum_metrics (memory store, Prometheus text on /metrics)"
example axum_metrics
echo "examples: client_retries (idem-client through a lossy proxy, memory store)"
example client_retries

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$scratch" >"$scratch/redis.log" 2>&1 &
pids+=($!)
wait_for_port "$redis_port"
echo "examples: redis_orders (redis-server on port $redis_port)"
IDEM_REDIS_URL="redis://127.0.0.1:$redis_port" \
    example redis_orders
echo "examples: checkout_steps (redis-server on port $redis_port)"
IDEM_REDIS_URL="redis://127.0.0.1:$redis_port" \
    example checkout_steps

moto_port=$(free_port)
"$services_dir/venv/bin/moto_server" -H 127.0.0.1 -p "$moto_port" >"$scratch/moto.log" 2>&1 &
pids+=($!)
wait_for_port "$moto_port"
echo "examples: dynamodb_payments (moto_server on port $moto_port)"
IDEM_DYNAMODB_ENDPOINT="http://127.0.0.1:$moto_port" \
    example dynamodb_payments
echo "examples: lambda_orders (an idempotent Lambda handler, moto_server on port $moto_port)"
IDEM_DYNAMODB_ENDPOINT="http://127.0.0.1:$moto_port" \
    example lambda_orders
echo "examples: sqs_batch (an SQS batch with a duplicate and a failure, moto_server on port $moto_port)"
IDEM_DYNAMODB_ENDPOINT="http://127.0.0.1:$moto_port" \
    example sqs_batch

# A whole Lambda function under cargo-lambda's emulator of the Lambda Runtime API: one event
# invoked twice runs the handler once, and the retry gets the first response.
lambda_port=$(free_port)
"$services_dir/venv/bin/cargo-lambda" lambda watch --only-lambda-apis \
    -A 127.0.0.1 -P "$lambda_port" >"$scratch/cargo-lambda.log" 2>&1 &
pids+=($!)
wait_for_port "$lambda_port"
echo "examples: lambda_function (cargo-lambda's Runtime API on port $lambda_port, moto_server on port $moto_port)"
AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:$lambda_port/.rt" AWS_LAMBDA_FUNCTION_NAME=orders \
    AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128 \
    IDEM_DYNAMODB_ENDPOINT="http://127.0.0.1:$moto_port" \
    "$examples_dir/lambda_function" \
    >"$scratch/lambda_function.log" 2>&1 &
pids+=($!)
python3 - "$lambda_port" <<'PY' || { cat "$scratch/lambda_function.log" "$scratch/cargo-lambda.log" >&2; exit 1; }
import json, sys, urllib.request

url = f"http://127.0.0.1:{sys.argv[1]}/2015-03-31/functions/_/invocations"

def invoke(order_id):
    event = {"body": json.dumps({"order_id": order_id})}
    request = urllib.request.Request(url, data=json.dumps(event).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(json.loads(response.read())["body"])

first, retry, other = invoke("o-1"), invoke("o-1"), invoke("o-2")
print(f"  first invocation:  {first}")
print(f"  the same event:    {retry}")
print(f"  another order:     {other}")
assert retry == first, "the retry replays the first response"
assert (first["run"], other["run"]) == (1, 2), "the handler ran once per order"
assert first["request_id"] != other["request_id"]
PY

postgres_start
echo "examples: postgres_orders (postgres at $postgres_server)"
IDEM_POSTGRES_URL="$postgres_server/postgres" \
    example postgres_orders
