#!/usr/bin/env bash
# Measures idem-certify's power on the bugs planted in idem-certify/planted: each patch is
# applied to a scratch copy of this working tree, idem-certify is built there and run on the
# patch's store for a fixed time, and the anomaly classes it reported are tabled. Fails when a
# planted bug goes uncaught.
#
#   scripts/certify-planted.sh                          # every patch, 60 s each
#   scripts/certify-planted.sh redis-renewal postgres-  # the patches whose names contain these
#   scripts/certify-planted.sh --write docs/certification/planted.md
#
# IDEM_PLANTED_SECS sets the seconds per run, IDEM_PLANTED_SEED a fixed seed (default: one per
# run, printed). Servers start on loopback as for scripts/certify.sh. The scratch copy builds
# into the shared target directory: only the crates a patch touches are compiled again.
set -euo pipefail

cd "$(dirname "$0")/.."
root="$(pwd)"
write=""
filters=()
while [ $# -gt 0 ]; do
    case "$1" in
        --write) write="${2:?--write needs a file}"; shift 2 ;;
        *) filters+=("$1"); shift ;;
    esac
done
seconds="${IDEM_PLANTED_SECS:-60}"
target="${CARGO_TARGET_DIR:-$root/target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
work="$target/planted"
scratch="$work/tree"
rm -rf "$work"
mkdir -p "$scratch" "$work/runs"
# The scratch copy shares this tree's build artifacts, and Cargo then watches its files: once
# it is gone, the next build here compiles from this tree again, even after an interruption.
trap 'rm -rf "$scratch"' EXIT

# The working tree as it stands, committed or not, without build output.
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -C "$scratch" -xf -

patches=()
for patch in idem-certify/planted/*.patch; do
    name="$(basename "$patch" .patch)"
    if [ ${#filters[@]} -eq 0 ]; then
        patches+=("$name")
        continue
    fi
    for filter in "${filters[@]}"; do
        if [[ "$name" == *"$filter"* ]]; then
            patches+=("$name")
            break
        fi
    done
done
[ ${#patches[@]} -gt 0 ] || { echo "no patch matches ${filters[*]}" >&2; exit 2; }

table="$work/table.md"
{
    echo "| planted bug | store | faults | seconds | anomalies | classes that caught it | seed |"
    echo "|---|---|---|---:|---:|---|---:|"
} >"$table"
missed=0
for name in "${patches[@]}"; do
    store="${name%%-*}"
    patch="$root/idem-certify/planted/$name.patch"
    seed="${IDEM_PLANTED_SEED:-$(date +%s%N | cut -c1-16)}"
    # A patch may name, before its diff, the faults that provoke its bug (`certify: --faults
    # stop`) and a longer run (`seconds: 180`) when they provoke it rarely.
    read -r -a extra <<<"$(sed -n 's/^certify: //p' "$patch" | head -n 1)"
    faults="${extra[*]:-default faults}"
    run_seconds="$(sed -n 's/^seconds: //p' "$patch" | head -n 1)"
    run_seconds="${run_seconds:-$seconds}"
    echo "== $name: $store, ${run_seconds}s, seed $seed, ${faults}"
    (cd "$scratch" && git apply "$patch")
    (cd "$scratch" && CARGO_TARGET_DIR="$target" cargo build -q -p idem-certify)
    # The binary is run at once: the next build (or the main tree's) overwrites it.
    "$target/debug/idem-certify" --store "$store" --seconds "$run_seconds" --seed "$seed" \
        --out "$work/runs/$name" "${extra[@]}" >"$work/runs/$name.log" 2>&1 || true
    (cd "$scratch" && git apply -R "$patch")
    row="$(python3 - "$work/runs/$name/report.json" <<'EOF'
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except OSError as error:
    print(f"0\tno report ({error.strerror})")
    sys.exit()
found = {name: count for name, count in report["anomalies_by_class"].items() if count}
classes = ", ".join(f"`{name}` {count}" for name, count in sorted(found.items()))
print(f"{report['anomalies']}\t{classes or 'none: missed'}")
EOF
)"
    anomalies="${row%%$'\t'*}"
    classes="${row#*$'\t'}"
    echo "   anomalies: $anomalies ($classes)"
    echo "| \`$name\` | $store | ${faults#--faults } | $run_seconds | $anomalies | $classes | $seed |" >>"$table"
    if [ "$anomalies" = "0" ]; then
        missed=$((missed + 1))
        tail -n 5 "$work/runs/$name.log" | sed 's/^/   /'
    fi
done

# The last build left a patched binary where the tree's own belongs: build the tree's again.
rm -rf "$scratch"
cargo build -q -p idem-certify

echo
cat "$table"
if [ -n "$write" ]; then
    {
        echo "Each planted bug of \`idem-certify/planted\` (see its README), run on its store by"
        echo "\`scripts/certify-planted.sh\` ($(date -u '+%Y-%m-%d'), commit $(git rev-parse --short HEAD)):"
        echo "${seconds} s with every default fault, unless the patch names the faults that provoke its"
        echo "bug and a longer run. A run with a planted bug is caught when it reports any anomaly."
        echo
        cat "$table"
    } >"$write"
    echo "wrote $write"
fi
[ "$missed" -eq 0 ] || { echo "$missed planted bug(s) went uncaught" >&2; exit 1; }
