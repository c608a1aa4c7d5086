# A throwaway PostgreSQL cluster on a free loopback port, for scripts that source this file:
#
#   source scripts/lib/postgres.sh
#   postgres_start            # sets postgres_server (postgres://postgres@127.0.0.1:PORT, no database)
#   ...
#   postgres_stop             # stops it and removes its data; safe to call twice
#
# initdb writes into a temporary directory; the server runs without fsync. PostgreSQL refuses
# to run as root: as root, it runs as the postgres user (or nobody). Needs what
# scripts/services.sh installs.

postgres_bin="${IDEM_POSTGRES_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
postgres_dir=""
postgres_server=""

# The user PostgreSQL runs as: this one, or as root the postgres user (or nobody).
postgres_user=""
if [ "$(id -u)" -eq 0 ]; then
    if id postgres >/dev/null 2>&1; then postgres_user=postgres; else postgres_user=nobody; fi
fi

as_postgres_user() {
    if [ -n "$postgres_user" ]; then runuser -u "$postgres_user" -- "$@"; else "$@"; fi
}

postgres_start() {
    postgres_dir=$(mktemp -d)
    if [ -n "$postgres_user" ]; then chown "$postgres_user" "$postgres_dir"; fi
    local port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_postgres_user "$postgres_bin/initdb" -D "$postgres_dir/data" -U postgres --auth=trust \
        --no-sync -E UTF8 --locale=C >"$postgres_dir/initdb.log" 2>&1
    as_postgres_user "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -l "$postgres_dir/postgres.log" -w -o \
        "-p $port -k $postgres_dir/data -c listen_addresses=127.0.0.1 -c fsync=off" \
        start >/dev/null
    postgres_server="postgres://postgres@127.0.0.1:$port"
}

postgres_stop() {
    if [ -n "$postgres_dir" ]; then
        as_postgres_user "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -m immediate stop \
            >/dev/null 2>&1 || true
        rm -rf "$postgres_dir"
        postgres_dir=""
    fi
}
