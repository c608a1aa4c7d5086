#!/usr/bin/env bash
# Certifies every store, and each HTTP front end, with idem-certify: worker processes call
# idempotent functions (or serve an endpoint behind idem-http's layer, called through
# idem-client) while their processes are killed and stopped, and the checker reads the history.
#
#   scripts/certify.sh                       # 30 s per run, as CI runs it
#   scripts/certify.sh --write CERTIFICATION.md   # 60 s per run, and rewrite that file
#
# IDEM_CERTIFY_SECS sets the seconds per run, IDEM_CERTIFY_JOBS how many runs at once (2: a
# run mostly waits on its servers, its leases and its faults). The servers are started on
# loopback through the test harness (see scripts/services.sh), each run its own. Fails when any
# run shows an anomaly.
set -euo pipefail

cd "$(dirname "$0")/.."
source scripts/lib/certify-length.sh
write=""
seconds="${IDEM_CERTIFY_SECS:-$ci_certify_seconds}"
if [ "${1:-}" = "--write" ]; then
    write="${2:?--write needs a file}"
    seconds="${IDEM_CERTIFY_SECS:-60}"
fi
out="${CARGO_TARGET_DIR:-target}/certify"
rm -rf "$out"
# Built as the workspace's test command builds: every package, every feature, and with the
# examples, which turn the dev-dependencies' features on as tests do. After
# `cargo test --workspace --all-features`, which built this binary for its own tests, nothing
# is compiled here.
cargo build -q --workspace --all-features --bin idem-certify --examples
certify="${CARGO_TARGET_DIR:-target}/debug/idem-certify"
# Each run: its name (its directory and plots), then its options. The stores' own runs, then
# each HTTP front end (idem-http's layer under axum and under actix-web) on two stores and
# charging a downstream service, and the others (poem, salvo, a `lambda_http` function) on
# Redis.
runs=(
    "memory --store memory"
    "redis --store redis"
    "redis-cluster --store redis-cluster"
    "postgres --store postgres"
    "dynamodb --store dynamodb"
    "tower-redis --store redis --front tower"
    "tower-postgres --store postgres --front tower"
    "tower-downstream --store redis --front tower --downstream"
    "actix-redis --store redis --front actix"
    "actix-postgres --store postgres --front actix"
    "actix-downstream --store redis --front actix --downstream"
    "poem-redis --store redis --front poem"
    "salvo-redis --store redis --front salvo"
    "lambda-redis --store redis --front lambda"
)
at_once="${IDEM_CERTIFY_JOBS:-2}"
mkdir -p "$out"
# One run, its output kept beside its report and its exit status in a file: printed in the
# list's order once every run has ended, so that runs side by side do not interleave.
certify_one() {
    local name="$1" options="$2"
    # shellcheck disable=SC2086 # the options are words
    if "$certify" $options --seconds "$seconds" --out "$out/$name" >"$out/$name.log" 2>&1; then
        echo 0 >"$out/$name.status"
    else
        echo "$?" >"$out/$name.status"
    fi
}
for run in "${runs[@]}"; do
    read -r name options <<<"$run"
    while [ "$(jobs -rp | wc -l)" -ge "$at_once" ]; do
        wait -n || true
    done
    echo "== $name ($options), ${seconds}s: started at ${SECONDS} s"
    certify_one "$name" "$options" &
done
wait
status=0
for run in "${runs[@]}"; do
    read -r name options <<<"$run"
    echo "== $name ($options), ${seconds}s"
    cat "$out/$name.log"
    if [ "$(cat "$out/$name.status")" != 0 ]; then
        status=1
    fi
done

if [ -n "$write" ]; then
    plots="docs/certification"
    mkdir -p "$(dirname "$write")/$plots"
    {
        echo "# Certification"
        echo
        echo "The latest runs of \`IDEM_CERTIFY_SECS=${seconds} scripts/certify.sh --write CERTIFICATION.md\`:"
        echo "each store for ${seconds} s, four worker processes of four callers each (in-process workers for"
        echo "memory), a 1 s lease, and every fault the store allows, one every 0.3 to 1 s, every other"
        echo "one a stop aimed at a key's owner in a long pause, until a retry aimed at that key takes"
        echo "it over: workers killed (SIGKILL) and stopped (SIGSTOP past the lease), network faults between a worker"
        echo "and the store (latency, stalls, cut connections, dropped answers; not on the cluster,"
        echo "whose nodes redirect clients to their own addresses), the server restarted (Redis with"
        echo "its append-only file, PostgreSQL), the cluster resharded under load (\`redis-cli"
        echo "--cluster reshard\`, 200 to 1,500 slots at a time), and each worker's clock off by up"
        echo "to a quarter of the lease. See CONTRIBUTING.md and idem-certify's documentation for the"
        echo "workload and the anomaly classes. Then each HTTP front end: idem-http's layer under axum"
        echo "(\`tower\`) and under actix-web (\`actix\`) on Redis and on PostgreSQL, and charging a"
        echo "downstream service behind its own layer; under poem (\`poem\`) and salvo (\`salvo\`), and"
        echo "idem-lambda's around a \`lambda_http\` function polling cargo-lambda's Runtime API (\`lambda\`),"
        echo "on Redis: four server processes, eight callers sending through"
        echo "idem-client as three principals that share keys, servers killed, stopped and restarted, and"
        echo "network faults between callers and servers, servers and the store, servers and the"
        echo "downstream."
        if [ -f docs/certification/planted.md ]; then
            echo
            echo "## Its power: bugs planted in the stores and on the front ends' paths"
            echo
            cat docs/certification/planted.md
        fi
        for section in runs explained long-runs cluster-faults; do
            if [ -f "docs/certification/$section.md" ]; then
                echo
                cat "docs/certification/$section.md"
            fi
        done
        echo
        echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "- commit: $(git rev-parse --short HEAD)"
        echo "- machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
        for run in "${runs[@]}"; do
            name="${run%% *}"
            echo
            # Each run's report, its headings one level down, its plots beside the file.
            sed -e 's/^#/##/' -e 's#](\(calls\|latency\)\.svg)#]('"$plots/$name"'-\1.svg)#' \
                "$out/$name/report.md"
        done
    } >"$write"
    for run in "${runs[@]}"; do
        name="${run%% *}"
        for plot in calls latency; do
            cp "$out/$name/$plot.svg" "$(dirname "$write")/$plots/$name-$plot.svg"
        done
    done
    echo "wrote $write"
fi
exit "$status"
