# PostgreSQL helpers for scripts: a private server in a directory, on loopback.
# PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user.

PG_BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"

pg_as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# pg_start DIR PORT: initializes DIR/pgdata on first use, then starts the server.
pg_start() {
  local dir=$1 port=$2
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    chown postgres:postgres "$dir"
    # The server user must reach DIR; under a private home it cannot, so keep the files in
    # /var/tmp and leave a link where they are expected.
    if ! runuser -u postgres -- test -w "$dir"; then
      local alt="/var/tmp/jobwheel-pg-$(echo "$dir" | cksum | cut -d' ' -f1)"
      mkdir -p "$alt" && chown postgres:postgres "$alt"
      rmdir "$dir" 2>/dev/null || true
      ln -sfn "$alt" "$dir"
      dir=$alt
    fi
  fi
  if [ ! -f "$dir/pgdata/PG_VERSION" ]; then
    pg_as_owner "$PG_BIN/initdb" -D "$dir/pgdata" -U postgres --auth=trust -E UTF8 \
      --no-locale >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log"; return 1; }
  fi
  if pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/pgdata" status >/dev/null 2>&1; then
    return 0
  fi
  pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/pgdata" -l "$dir/postgres.log" -w -t 60 start \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=${PG_FSYNC:-on} -c shared_buffers=256MB ${PG_EXTRA_OPTS:-}" \
    >/dev/null || { tail -n 20 "$dir/postgres.log"; return 1; }
}

pg_stop() {
  local dir=$1
  [ -f "$dir/pgdata/PG_VERSION" ] || return 0
  pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/pgdata" -m fast -w stop >/dev/null 2>&1 || true
}

# pg_ensure_db PORT NAME
pg_ensure_db() {
  local port=$1 name=$2
  if ! psql -h 127.0.0.1 -p "$port" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$name'" postgres | grep -q 1; then
    psql -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE DATABASE $name" postgres
  fi
}

# pg_secure DIR PORT PGPASS_FILE: password authentication for a server that pg_start started:
# TCP connections need the `postgres` role's password (scram-sha-256), the Unix socket admits
# only the OS user `postgres` (peer). The password is generated once into PGPASS_FILE (libpq's
# password file format, created 0600 under umask 077); clients find it through
# PGPASSFILE=PGPASS_FILE, so it never appears on a command line or in a DSN. Idempotent; a
# server initialized with trust authentication (an older .data/) is converted in place.
pg_secure() {
  local dir=$1 port=$2 pgpass=$3
  if [ -L "$dir" ]; then dir=$(readlink "$dir"); fi
  local hba="$dir/pgdata/pg_hba.conf"
  if [ ! -s "$pgpass" ]; then
    local secret
    secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    (umask 077 && printf '127.0.0.1:%s:*:postgres:%s\n' "$port" "$secret" >"$pgpass")
  fi
  local secret_now
  secret_now=$(cut -d: -f5- "$pgpass")
  # While the server still trusts loopback (first run, or an older .data/), set the password.
  # On a secured server this connects with the password file instead.
  # (Hex digits only; sent on stdin by the printf builtin, never in a process's arguments.)
  printf "SET password_encryption = 'scram-sha-256';\nALTER ROLE postgres PASSWORD '%s';\n" \
    "$secret_now" | PGPASSFILE=$pgpass psql -h 127.0.0.1 -p "$port" -U postgres \
    -v ON_ERROR_STOP=1 -qAt postgres >/dev/null || return 1
  if ! grep -q '^host all all 127.0.0.1/32 scram-sha-256$' "$hba" 2>/dev/null ||
     grep -Eq '^(local|host)[[:space:]].*trust' "$hba"; then
    pg_as_owner sh -c "umask 077 && cat > '$hba'" <<'HBA'
# Written by scripts/lib/pg.sh (pg_secure): the socket admits only the OS user postgres, TCP
# needs the password from the password file.
local all all peer
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
HBA
    pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/pgdata" reload >/dev/null || return 1
  fi
}
