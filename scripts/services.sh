#!/usr/bin/env bash
# Installs the server programs the backend tests start on loopback ports:
#   redis-server (Debian package redis-server)
#   moto_server  (PyPI moto[dynamodb,server], in a virtualenv)
#   initdb, postgres (Debian package postgresql, in /usr/lib/postgresql/<version>/bin)
#   cargo-lambda (PyPI cargo-lambda, in the same virtualenv: the examples' Lambda Runtime API)
# The tests start and stop their own server processes; this script only installs them.
# The virtualenv lives in $IDEM_SERVICES_DIR (default ~/.cache/idem-services), where the test
# harness looks for moto_server.
set -euo pipefail

services_dir="${IDEM_SERVICES_DIR:-$HOME/.cache/idem-services}"
moto_version="${IDEM_MOTO_VERSION:-5.2.5}"
cargo_lambda_version="${IDEM_CARGO_LAMBDA_VERSION:-1.9.2}"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v redis-server >/dev/null 2>&1; then
    echo "services: installing redis-server"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq redis-server redis-tools >/dev/null
fi
echo "services: $(redis-server --version | head -n 1)"

# Debian keeps PostgreSQL's programs off PATH, in /usr/lib/postgresql/<version>/bin, where the
# test harness looks for them (IDEM_POSTGRES_BIN overrides).
postgres_bin() {
    if [ -n "${IDEM_POSTGRES_BIN:-}" ]; then echo "$IDEM_POSTGRES_BIN"; return; fi
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}
if [ ! -x "$(postgres_bin)/initdb" ] && ! command -v initdb >/dev/null 2>&1; then
    echo "services: installing postgresql"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq postgresql >/dev/null
fi
if [ -x "$(postgres_bin)/postgres" ]; then
    echo "services: $("$(postgres_bin)/postgres" --version) at $(postgres_bin)"
else
    echo "services: $(postgres --version) on PATH"
fi

if [ ! -x "$services_dir/venv/bin/moto_server" ]; then
    echo "services: installing moto_server into $services_dir/venv"
    mkdir -p "$services_dir"
    python3 -m venv "$services_dir/venv"
    "$services_dir/venv/bin/pip" install --quiet --disable-pip-version-check "moto[dynamodb,server]==$moto_version"
fi
echo "services: moto $("$services_dir/venv/bin/python" -c 'import moto; print(moto.__version__)') at $services_dir/venv/bin/moto_server"

if [ ! -x "$services_dir/venv/bin/cargo-lambda" ]; then
    echo "services: installing cargo-lambda into $services_dir/venv"
    "$services_dir/venv/bin/pip" install --quiet --disable-pip-version-check "cargo-lambda==$cargo_lambda_version"
fi
echo "services: $("$services_dir/venv/bin/cargo-lambda" lambda --version) at $services_dir/venv/bin/cargo-lambda"
