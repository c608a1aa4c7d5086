#!/usr/bin/env bash
# Packages every published crate as `cargo publish` would, and builds each package from its
# own sources: idem-macros, idem-core and idem-stores, in dependency order, the later ones
# against the earlier ones' packages rather than crates.io.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo package -p idem-macros -p idem-core -p idem-stores "$@"
