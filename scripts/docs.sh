#!/usr/bin/env bash
# Builds the docs as docs.rs does (every feature, `--cfg docsrs`), so that each store and
# feature-gated item shows the feature that enables it. docs.rs builds with a nightly
# toolchain; RUSTC_BOOTSTRAP lets the stable one accept `feature(doc_cfg)` for this preview.
# A target directory of its own keeps the flag from invalidating the normal build.
# Usage: scripts/docs.sh [--open]
set -euo pipefail
cd "$(dirname "$0")/.."

RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="--cfg docsrs -D warnings" \
    cargo doc -p idem-core -p idem-macros -p idem-stores -p idem-http -p idem-client \
    -p idem-conformance -p idem-lambda \
    --all-features --no-deps \
    --target-dir target/docsrs "$@"
