#!/usr/bin/env bash
# Measures idem-certify's power on the bugs planted in idem-certify/planted: each patch is
# applied to a scratch copy of this working tree, idem-certify is built there once and run on
# the patch's store N times (a seed each), and how many runs caught the bug is tabled with the
# anomalies per run and the classes that caught it. A run catches a bug when it reports an
# anomaly of a class the patch expects (its `expect:` line): an anomaly of another class is
# tabled, but a false alarm must not pass for the bug. Fails when a planted bug is caught in
# fewer than 9 runs of 10 (with one run: when it goes uncaught).
#
#   scripts/certify-planted.sh                          # every patch, one run of 30 s each
#   scripts/certify-planted.sh redis-renewal postgres-  # the patches whose names contain these
#   scripts/certify-planted.sh --runs 10 --write docs/certification/planted.md
#
# 30 s is CI's length (scripts/lib/certify-length.sh): a bug that needs longer goes uncaught
# there.
# IDEM_PLANTED_SECS sets the seconds per run, IDEM_PLANTED_RUNS the runs (as --runs),
# IDEM_PLANTED_SEED the first run's seed (run i uses seed + i; default: from the clock; every
# seed is printed and tabled), IDEM_PLANTED_JOBS how many runs at once (default 1: runs side by
# side share the machine's cores, which shifts the timing they depend on). IDEM_PLANTED_WORK
# moves the work directory (default target/planted: the binaries, histories and reports), so
# that two measurements can run at once. Servers start on loopback as for scripts/certify.sh.
# The scratch copy builds into the shared target directory with the flags of the workspace's
# build (RUSTFLAGS as exported, every feature): the dependencies are this tree's, only the
# workspace's crates are compiled again, once for the scratch copy (about a minute) and then
# the crates a patch touches (3 to 25 s). Build nothing else in this tree meanwhile: the
# binary is copied from the target directory, where another build would put its own.
set -euo pipefail

cd "$(dirname "$0")/.."
root="$(pwd)"
write=""
runs="${IDEM_PLANTED_RUNS:-1}"
filters=()
while [ $# -gt 0 ]; do
    case "$1" in
        --write) write="${2:?--write needs a file}"; shift 2 ;;
        --runs) runs="${2:?--runs needs a count}"; shift 2 ;;
        *) filters+=("$1"); shift ;;
    esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "--runs needs a positive count, not $runs" >&2; exit 2; }
source scripts/lib/certify-length.sh
seconds="${IDEM_PLANTED_SECS:-$ci_certify_seconds}"
parallel="${IDEM_PLANTED_JOBS:-1}"
started="$(date +%s)"
# The code measured is the working tree as it stands now, committed or not: named by the commit
# it stood on, and whether it had changes besides.
measured="$(git rev-parse --short HEAD)"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    measured="$measured with uncommitted changes"
fi
target="${CARGO_TARGET_DIR:-$root/target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
work="${IDEM_PLANTED_WORK:-$target/planted}"
scratch="$work/tree"
rm -rf "$work"
mkdir -p "$scratch" "$work/runs" "$work/bin"
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

# A patch names, before its diff, the anomaly classes it must cause (`expect: StaleOwnerNotTold,
# ConcurrentBodies`), and may name options its run needs (`certify: --front actix`) and a
# longer run (`seconds: 60`). A store's bug needs neither: CI runs the default faults for
# CI's length.
extra_of() { sed -n 's/^certify: //p' "$root/idem-certify/planted/$1.patch" | head -n 1; }
expect_of() { sed -n 's/^expect: //p' "$root/idem-certify/planted/$1.patch" | head -n 1; }
for name in "${patches[@]}"; do
    [ -n "$(expect_of "$name")" ] || { echo "$name.patch has no expect: line" >&2; exit 2; }
done
seconds_of() {
    local own
    own="$(sed -n 's/^seconds: //p' "$root/idem-certify/planted/$1.patch" | head -n 1)"
    echo "${own:-$seconds}"
}

# Each patched tree is built once; its binary is kept, since the next build (or the main
# tree's) overwrites the one in the target directory.
for name in "${patches[@]}"; do
    patch="$root/idem-certify/planted/$name.patch"
    echo "== building $name"
    build_start="$(date +%s)"
    # The scratch copy lies inside this repository (under target/): without the ceiling, git
    # would apply the patch relative to this repository's root, outside the copy, and skip it.
    GIT_CEILING_DIRECTORIES="$work" git -C "$scratch" apply "$patch"
    git apply --numstat "$patch" | cut -f3 | while read -r path; do
        if cmp -s "$root/$path" "$scratch/$path"; then
            echo "$name did not change $path in the scratch copy" >&2
            exit 1
        fi
    done
    (cd "$scratch" && CARGO_TARGET_DIR="$target" \
        cargo build -q --workspace --all-features --bin idem-certify)
    cp "$target/debug/idem-certify" "$work/bin/$name"
    # A build of this tree in the meantime writes the same file: a binary without the scratch
    # copy's path in its debug information is not the patched one.
    if ! grep -q "$scratch" "$work/bin/$name"; then
        echo "another build overwrote $target/debug/idem-certify while $name built:" \
            "build nothing in this tree while the patches build" >&2
        exit 1
    fi
    GIT_CEILING_DIRECTORIES="$work" git -C "$scratch" apply -R "$patch"
    echo "   built in $(($(date +%s) - build_start)) s"
done

run_one() {
    local name="$1" run="$2" seed="$3" run_seconds="$4" extra
    read -r -a extra <<<"$(extra_of "$name")"
    "$work/bin/$name" --store "${name%%-*}" --seconds "$run_seconds" --seed "$seed" \
        --out "$work/runs/$name/$run" "${extra[@]}" >"$work/runs/$name/$run.log" 2>&1 || true
    python3 - "$work/runs/$name/$run/report.json" "$name, run $run" "$(expect_of "$name")" <<'EOF'
import json, re, sys
try:
    report = json.load(open(sys.argv[1]))
except OSError as error:
    print(f"   {sys.argv[2]}: no report ({error.strerror})")
    sys.exit()
expected = {re.sub(r"(?<!^)(?=[A-Z])", "_", name.strip()).lower() for name in sys.argv[3].split(",")}
found = {name: count for name, count in report["anomalies_by_class"].items() if count}
verdict = "caught" if expected & set(found) else "missed"
print(f"   {sys.argv[2]}: {verdict}, anomalies {report['anomalies']} ({found or 'none'})")
EOF
}

for name in "${patches[@]}"; do
    base="${IDEM_PLANTED_SEED:-$(date +%s%N | cut -c1-16)}"
    mkdir -p "$work/runs/$name"
    for run in $(seq 1 "$runs"); do
        seed=$((base + run - 1))
        echo "$seed" >"$work/runs/$name/$run.seed"
        echo "== $name, run $run of $runs: $(seconds_of "$name")s, seed $seed, $(extra_of "$name")"
        if [ "$parallel" -gt 1 ]; then
            while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
            run_one "$name" "$run" "$seed" "$(seconds_of "$name")" &
        else
            run_one "$name" "$run" "$seed" "$(seconds_of "$name")"
        fi
    done
done
wait

# The last build left a patched binary where the tree's own belongs: build the tree's again,
# as scripts/certify.sh builds it.
rm -rf "$scratch"
cargo build -q --workspace --all-features --bin idem-certify --examples
took="$(($(date +%s) - started))"

table="$work/table.md"
missed=0
{
    echo "| planted bug | store | faults | seconds | caught | anomalies per run (min / median / max) | classes that caught it (runs) | seeds |"
    echo "|---|---|---|---:|---:|---|---|---|"
    for name in "${patches[@]}"; do
        faults="$(extra_of "$name")"
        row="$(python3 - "$work/runs/$name" "$runs" "$(expect_of "$name")" <<'EOF'
import json, re, statistics, sys
from pathlib import Path
runs_dir, runs = Path(sys.argv[1]), int(sys.argv[2])
expected = {re.sub(r"(?<!^)(?=[A-Z])", "_", name.strip()).lower() for name in sys.argv[3].split(",")}
counts, classes, seeds, caught = [], {}, [], 0
for run in range(1, runs + 1):
    seeds.append((runs_dir / f"{run}.seed").read_text().strip())
    try:
        report = json.load(open(runs_dir / str(run) / "report.json"))
    except OSError:
        counts.append(None)
        continue
    counts.append(report["anomalies"])
    found = {name for name, count in report["anomalies_by_class"].items() if count}
    caught += bool(found & expected)
    for name in found:
        classes[name] = classes.get(name, 0) + 1
numbers = [count or 0 for count in counts]
spread = f"{min(numbers)} / {statistics.median_low(numbers)} / {max(numbers)}"
listed = ", ".join("-" if count is None else str(count) for count in counts)
found = ", ".join(
    f"`{name}` ({n})" + ("" if name in expected else ", not expected")
    for name, n in sorted(classes.items())
) or "none: missed"
first, last = seeds[0], seeds[-1]
print(f"{caught}\t{caught} of {runs}\t{spread}: {listed}\t{found}\t"
      + (first if runs == 1 else f"{first}..{last}"))
EOF
)"
        IFS=$'\t' read -r caught count spread found seeds <<<"$row"
        # Caught in at least 9 runs of 10: the goal at CI's length.
        if [ $((caught * 10)) -lt $((runs * 9)) ]; then
            missed=$((missed + 1))
        fi
        echo "| \`$name\` | ${name%%-*} | ${faults:-default faults} | $(seconds_of "$name") | $count | $spread | $found | $seeds |"
    done
} >"$table"

echo
cat "$table"
echo
echo "took $((took / 60)) min $((took % 60)) s ($runs run(s) per patch, $parallel at once)"
if [ -n "$write" ]; then
    {
        echo "Each planted bug of \`idem-certify/planted\` (see its README), run on its store $runs time(s)"
        echo "by \`scripts/certify-planted.sh --runs $runs\` ($(date -u '+%Y-%m-%d'), commit"
        echo "$measured, $(nproc) cores, $parallel run(s) at once; the whole measurement"
        echo "took $((took / 60)) min): ${seconds} s with every default fault, as CI runs scripts/certify.sh,"
        echo "with the options a patch names (see its README). A run is caught when it reports an"
        echo "anomaly of a class its patch expects (its \`expect:\` line); the goal is every bug caught"
        echo "in at least 9 runs of 10."
        echo
        cat "$table"
    } >"$write"
    echo "wrote $write"
fi
[ "$missed" -eq 0 ] || { echo "$missed planted bug(s) caught in fewer than 9 runs of 10" >&2; exit 1; }
