#!/usr/bin/env bash
# Packages every published crate as `cargo publish` would, and builds each package from its
# own sources: idem-macros, idem-core and idem-stores, in dependency order, the later ones
# against the earlier ones' packages rather than crates.io. Then checks that every store
# feature builds on its own, without features that other workspace members turn on.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo package -p idem-macros -p idem-core -p idem-stores "$@"

for feature in memory redis redis-cluster dynamodb postgres; do
    cargo check -p idem-stores --no-default-features --features "$feature"
done
cargo check -p idem-core --no-default-features
