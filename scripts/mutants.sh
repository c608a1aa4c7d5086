#!/usr/bin/env bash
# Mutation testing (cargo-mutants) over the files that hold a promise, each group of files
# with the tests that exercise it:
#
#   engine    the engine, the lease renewal and retries, the memory store
#             (idem-core's and idem-stores' tests)
#   steps     recovery points, the replay cache, the call context (the same tests)
#   http      idem-http's service, stored responses and fingerprint (idem-http's tests; the
#             canonical JSON it fingerprints is idem-core's, in the fingerprint group)
#   postgres  the PostgreSQL store's SQL paths (idem-stores' unit tests and the PostgreSQL
#             suites in tests/, against one cluster started here on a free loopback port)
#   quota     the quotas, and how the engine asks them (idem-core's unit, quota and metrics
#             tests, and idem-http's layer tests, whose quota tests answer 429 and 503)
#   seal      sealed records: the keyring, key digests, the sealed store (idem-core's tests
#             with `seal`, the tests crate's libtest ones, and the conformance suite through
#             sealing on the memory store)
#   fingerprint  the canonical encoding of arguments and the JSON number rule (idem-core's
#             unit tests)
#   keys      keys, scopes and what an HTTP request may name (idem-core's, idem-protocol's
#             and idem-http's tests)
#
#   scripts/mutants.sh                 # every group, about seven hours on two cores
#   scripts/mutants.sh quota seal      # some of them
#
# On two cores, roughly: engine, steps, http and postgres four hours together; quota 45 min
# (126 mutants, about 20 s each, measured when a mutant ran fewer of idem-core's and
# idem-http's tests than their whole binaries); seal 45 min (60 mutants, about 45 s each,
# measured when its tests included the Redis conformance run); fingerprint about 1 h 15 (278 mutants; its
# json/ files, 172 of them, took 37 min alone); keys 1 h (172 mutants, beside builds).
#
# Extra arguments for cargo-mutants go in IDEM_MUTANTS_ARGS (say `--shard 1/4`, or
# `-e idem-http/src/response/stored/mod.rs` or `--re NAME` to narrow a group). Results land in
# target/mutants/GROUP/mutants.out/: missed.txt and timeout.txt list the mutants no test
# caught, and each one is either killed by a new check or recorded in CONTRIBUTING.md as
# equivalent. The mutants are made in the source tree itself (so builds reuse target/): do not
# edit it while this runs. Needs cargo-mutants (`cargo install cargo-mutants --locked`) and,
# for postgres, what scripts/services.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."

groups=("$@")
if [ ${#groups[@]} -eq 0 ]; then groups=(engine steps http postgres quota seal fingerprint keys); fi
all_groups="engine, steps, http, postgres, quota, seal, fingerprint, keys"
read -r -a extra <<<"${IDEM_MUTANTS_ARGS:-}"

mutants() {
    local group=$1
    shift
    local out="${CARGO_TARGET_DIR:-target}/mutants/$group"
    echo "mutants: $group, results in $out/mutants.out"
    mkdir -p "$out"
    cargo mutants --in-place --output "$out" "${extra[@]}" "$@"
}

# The store's own unit tests (how a row and its step values are read) and the suites: built
# with the PostgreSQL features alone, the backend binary holds the PostgreSQL modules only
# (conformance, store, steps, transactions, corrupt records, concurrency, round trips, faults,
# crashes, inventory, the reserve table).
postgres_features=idem-stores/postgres,idem-tests/postgres
postgres_tests=(--test it_backend)

# The tests that seal: idem-core's unit tests and its integration tests (the `seal` and
# `sealed_step` modules among them, and the spans that must not name a digested key), the
# tests crate's (the sealed memory store's among them), and the conformance suite through
# sealing on the memory store (idem-stores' `sealed::` run).
seal_features=idem-core/seal,idem-tests/seal
seal_tests=(--test it_core --test telemetry_spans --test it_tests --test memory_conformance)

for group in "${groups[@]}"; do
    case "$group" in
    engine)
        # idem-core's tests and the memory store's; not broken_stores and conformance_suite,
        # which test the conformance suite itself (on deliberately broken stores) and take
        # two thirds of the time.
        engine_tests=(--lib --test it_core --test it_stores --test memory_conformance
            -- --skip broken_stores:: --skip conformance_suite::)
        # The baseline runs here too: cargo-mutants would run it on the mutated packages
        # alone, without idem-core's tests when a narrowed run mutates only the memory store.
        cargo test -p idem-core -p idem-stores "${engine_tests[@]}"
        mutants engine --baseline skip --timeout 90 \
            -f 'idem-core/src/engine/*.rs' -f idem-core/src/lease/renewal.rs \
            -f idem-core/src/lease/retry.rs -f 'idem-stores/src/memory/*.rs' \
            --test-package idem-core,idem-stores -- "${engine_tests[@]}"
        ;;
    steps)
        mutants steps --timeout 90 \
            -f idem-core/src/steps/step.rs -f idem-core/src/steps/mod.rs \
            -f idem-core/src/steps/journal.rs -f idem-core/src/replay_cache.rs \
            -f idem-core/src/call/context.rs \
            --test-package idem-core,idem-stores -- --tests
        ;;
    http)
        # A test waiting on something a mutant broke fails by name after 10 s, within the
        # timeout, instead of after the default minute.
        IDEM_TEST_HANG_SECS=10 mutants http --timeout 90 \
            -f idem-http/src/service.rs -f idem-http/src/response/stored/mod.rs \
            -f idem-http/src/request/fingerprint.rs \
            --test-package idem-http -- --tests
        ;;
    postgres)
        # cargo-mutants would run its baseline on the mutated package (idem-stores) alone,
        # which has none of the suites: the baseline runs here instead, on the same cluster.
        source scripts/lib/postgres.sh
        trap postgres_stop EXIT
        postgres_start
        export IDEM_POSTGRES_URL="$postgres_server" IDEM_REQUIRE_BACKENDS=1
        cargo test -p idem-stores -p idem-tests --features "$postgres_features" --lib \
            "${postgres_tests[@]}"
        mutants postgres --baseline skip --timeout 180 --build-timeout 600 \
            -f idem-stores/src/postgres/sql.rs -f idem-stores/src/postgres/store.rs \
            -f idem-stores/src/postgres/steps.rs -f idem-stores/src/postgres/transaction.rs \
            -f idem-stores/src/postgres/codec.rs \
            --test-package idem-stores,idem-tests --features "$postgres_features" \
            -- --lib "${postgres_tests[@]}"
        postgres_stop
        ;;
    quota)
        # The tests that set a quota: idem-core's unit tests, its quota and metrics tests,
        # and idem-http's layer tests (429 and 503 answers, floods of scopes). The baseline
        # runs here: cargo-mutants would run it on idem-core alone, which has no `layer`.
        quota_tests=(--lib --test it_core --test it_http)
        export IDEM_TEST_HANG_SECS=10
        cargo test -p idem-core -p idem-http "${quota_tests[@]}"
        mutants quota --baseline skip --timeout 90 \
            -f 'idem-core/src/quota/*.rs' -f idem-core/src/engine/quota.rs \
            --test-package idem-core,idem-http -- "${quota_tests[@]}"
        unset IDEM_TEST_HANG_SECS
        ;;
    seal)
        # The suites through sealing, on the memory store. The baseline runs here, as for
        # quota.
        export IDEM_REQUIRE_BACKENDS=1
        cargo test -p idem-core -p idem-stores -p idem-tests --features "$seal_features" --lib \
            "${seal_tests[@]}"
        mutants seal --baseline skip --timeout 120 \
            -f 'idem-core/src/seal/*.rs' \
            --test-package idem-core,idem-stores,idem-tests --features "$seal_features" \
            -- --lib "${seal_tests[@]}"
        ;;
    fingerprint)
        # The encoding and the number rule are unit tested in their modules.
        mutants fingerprint --timeout 90 \
            -f 'idem-core/src/fingerprint/*.rs' -f 'idem-core/src/json/*.rs' \
            --test-package idem-core -- --lib
        ;;
    keys)
        # The baseline runs here, as for quota.
        cargo test -p idem-core -p idem-protocol -p idem-http --lib --tests
        mutants keys --baseline skip --timeout 90 \
            -f 'idem-core/src/key/*.rs' -f idem-protocol/src/scope.rs \
            -f idem-protocol/src/key.rs -f idem-http/src/response/replay_limits.rs \
            --test-package idem-core,idem-protocol,idem-http -- --lib --tests
        ;;
    *)
        echo "mutants: unknown group '$group' ($all_groups)" >&2
        exit 2
        ;;
    esac
done
