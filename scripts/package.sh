#!/usr/bin/env bash
# Packages every published crate as `cargo publish` would, and builds each package from its
# own sources: idem-protocol, idem-macros, idem-core, idem-conformance, idem-stores, idem-http,
# idem-client, idem-cli and idem-lambda, in dependency order, the later ones against the earlier ones'
# packages rather than crates.io. Then checks that every store feature builds on its own,
# without features that other workspace members turn on.
set -euo pipefail
cd "$(dirname "$0")/.."

# Cargo verifies each package against a local registry of the ones before it, unpacked under
# $CARGO_HOME/registry/src/-<hash of the registry's path>/, and never unpacks a name and version
# it finds there again: a second run from the same path would verify the first run's sources.
# Remove those unpacked copies (local registries only; crates.io's directory is not touched).
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
rm -rf "$cargo_home"/registry/src/-*/idem-*
# Cargo also takes a registry crate's sources as never changing, so a target directory that
# verified an earlier run's packages would link their builds, not these: forget them too.
rm -rf "${CARGO_TARGET_DIR:-target}"/debug/.fingerprint/idem-*

cargo package -p idem-protocol -p idem-macros -p idem-core -p idem-conformance -p idem-stores -p idem-http \
    -p idem-client -p idem-cli -p idem-lambda "$@"

for feature in memory redis redis-cluster dynamodb postgres; do
    cargo check -p idem-stores --no-default-features --features "$feature"
done
cargo check -p idem-core --no-default-features
cargo check -p idem-core --no-default-features --features seal
