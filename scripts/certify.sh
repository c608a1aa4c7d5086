#!/usr/bin/env bash
# Certifies every store with idem-certify: worker processes call idempotent functions while
# their processes are killed and stopped, and the checker reads the history.
#
#   scripts/certify.sh                       # 15 s per store, as CI runs it
#   scripts/certify.sh --write CERTIFICATION.md   # 60 s per store, and rewrite that file
#
# IDEM_CERTIFY_SECS sets the seconds per store. The servers are started on loopback through the
# test harness (see scripts/services.sh). Fails when any store shows an anomaly.
set -euo pipefail

cd "$(dirname "$0")/.."
write=""
seconds="${IDEM_CERTIFY_SECS:-15}"
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
status=0
for store in memory redis redis-cluster postgres dynamodb; do
    echo "== $store, ${seconds}s"
    if ! "$certify" --store "$store" --seconds "$seconds" --out "$out/$store"; then
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
        echo "memory), a 1 s lease, and every fault the store allows, one every 1 to 2.5 s: workers"
        echo "killed (SIGKILL) and stopped (SIGSTOP past the lease), network faults between a worker"
        echo "and the store (latency, stalls, cut connections, dropped answers; not on the cluster,"
        echo "whose nodes redirect clients to their own addresses), the server restarted (Redis with"
        echo "its append-only file, PostgreSQL), the cluster resharded under load (\`redis-cli"
        echo "--cluster reshard\`, 200 to 1,500 slots at a time), and each worker's clock off by up"
        echo "to a quarter of the lease. See CONTRIBUTING.md and idem-certify's documentation for the"
        echo "workload and the anomaly classes."
        if [ -f docs/certification/planted.md ]; then
            echo
            echo "## Its power: bugs planted in the stores"
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
        for store in memory redis redis-cluster postgres dynamodb; do
            echo
            # Each store's report, its headings one level down, its plots beside the file.
            sed -e 's/^#/##/' -e 's#](\(calls\|latency\)\.svg)#]('"$plots/$store"'-\1.svg)#' \
                "$out/$store/report.md"
        done
    } >"$write"
    for store in memory redis redis-cluster postgres dynamodb; do
        for plot in calls latency; do
            cp "$out/$store/$plot.svg" "$(dirname "$write")/$plots/$store-$plot.svg"
        done
    done
    echo "wrote $write"
fi
exit "$status"
