#!/usr/bin/env bash
# shellcheck shell=bash
# A highly available PostgreSQL for tests: one etcd member and N PostgreSQL members (default
# 3), each run by its own Patroni, all on loopback ports under one directory. Synchronous
# replication by default (synchronous_mode: true), asynchronous on request. The multi-process
# failover test (tests/ha) and the chaos suite start and stop it through this file.
#
# As a library:   . scripts/lib/patroni.sh; patroni_start DIR [MEMBERS] [sync|async]
# As a command:   scripts/lib/patroni.sh start DIR [MEMBERS] [sync|async]   (prints the DSN)
#                 scripts/lib/patroni.sh stop|primary|kill-primary|switchover|wait DIR
#                 scripts/lib/patroni.sh start-member DIR NAME   (a killed member rejoins)
#
# patroni_start writes DIR/cluster.env (PATRONI_DSN, the multi-host DSN whose
# target_session_attrs=read-write lets libpq find the primary; the members' ports) and waits
# until a primary accepts writes and, in sync mode, a synchronous standby streams. The
# detection of a dead primary is bounded by the settings below: ttl 10 s (the leader key in
# etcd), loop_wait 1 s, retry_timeout 4 s.
#
# Everything runs as the OS user postgres when called as root (PostgreSQL refuses root); the
# directory is then kept under /var/tmp with a link at DIR when postgres cannot write DIR.

# Bazel tests run with PATH=/bin:/usr/bin:/usr/local/bin; runuser and setpriv may live in sbin.
PATH="$PATH:/usr/sbin:/sbin"
PATRONI_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/lib/pg.sh
. "$PATRONI_LIB_DIR/pg.sh"
# shellcheck source=scripts/lib/ports.sh
. "$PATRONI_LIB_DIR/ports.sh"

PATRONI_SCOPE=jobwheel
PATRONI_ERROR=""

# True when the packages are there (Debian: patroni, etcd-server, python3-etcd).
patroni_available() {
  local missing=()
  command -v patroni >/dev/null 2>&1 || missing+=(patroni)
  command -v patronictl >/dev/null 2>&1 || missing+=(patronictl)
  command -v etcd >/dev/null 2>&1 || missing+=(etcd)
  [ -x "$PG_BIN/postgres" ] || missing+=("PostgreSQL binaries ($PG_BIN)")
  /usr/bin/python3 -c 'import etcd, psycopg2' 2>/dev/null || missing+=(python3-etcd)
  if [ ${#missing[@]} -gt 0 ]; then
    PATRONI_ERROR="not installed: ${missing[*]} (scripts/setup installs them)"
    return 1
  fi
}

# The real directory behind DIR (the /var/tmp one when DIR is a link to it).
_patroni_real_dir() {
  if [ -L "$1" ]; then readlink "$1"; else echo "$1"; fi
}

_patroni_member_yaml() {  # DIR NAME PG_PORT API_PORT ETCD_PORT MODE
  local dir=$1 name=$2 pg_port=$3 api_port=$4 etcd_port=$5 mode=$6
  local sync=true
  [ "$mode" = async ] && sync=false
  cat <<YAML
scope: $PATRONI_SCOPE
name: $name
restapi:
  listen: 127.0.0.1:$api_port
  connect_address: 127.0.0.1:$api_port
etcd3:
  hosts: 127.0.0.1:$etcd_port
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: $sync
    synchronous_mode_strict: false
    postgresql:
      use_pg_rewind: true
      parameters:
        max_connections: 300
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 256MB
        wal_log_hints: "on"
        hot_standby: "on"
  initdb:
    - encoding: UTF8
    - no-locale
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$pg_port
  connect_address: 127.0.0.1:$pg_port
  data_dir: $dir/$name/data
  bin_dir: $PG_BIN
  pgpass: $dir/$name/pgpass
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: replicator
      password: replicator
    rewind:
      username: postgres
      password: postgres
  parameters:
    unix_socket_directories: $dir/$name
    shared_buffers: 64MB
    fsync: "off"
    synchronous_commit: "on"
tags:
  nofailover: false
  noloadbalance: false
YAML
}

# Runs "$@" as the cluster's owner in the background, detached, output to LOG; prints its pid.
_patroni_spawn() {
  local log=$1
  shift
  # From / : the caller's directory (a test's runfiles) may be closed to the postgres user.
  if [ "$(id -u)" = 0 ]; then
    # setpriv execs (runuser would stay the parent): the pid is the program's own.
    (cd / && HOME=/var/lib/postgresql exec setsid setpriv --reuid=postgres --regid=postgres \
      --init-groups "$@" >>"$log" 2>&1 </dev/null) &
  else
    (cd / && exec setsid "$@" >>"$log" 2>&1 </dev/null) &
  fi
  echo $!
}

_patroni_ctl() {  # DIR ARGS...
  local dir
  dir=$(_patroni_real_dir "$1")
  shift
  patronictl -c "$dir/patronictl.yml" "$@"
}

# patroni_start DIR [MEMBERS] [sync|async]
patroni_start() {
  local dir=$1 members=${2:-3} mode=${3:-sync}
  patroni_available || return 1
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    chown postgres:postgres "$dir"
    if ! runuser -u postgres -- test -w "$dir"; then
      local alt
      alt=$(mktemp -d /var/tmp/jobwheel-patroni.XXXXXX)
      chown postgres:postgres "$alt"
      rmdir "$dir" 2>/dev/null || rm -f "$dir"
      ln -sfn "$alt" "$dir"
    fi
  fi
  dir=$(_patroni_real_dir "$dir")
  local ports
  read -r -a ports <<<"$(free_loopback_ports $((2 + 2 * members)))"
  local etcd_port=${ports[0]} etcd_peer=${ports[1]}
  mkdir -p "$dir/etcd"
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$dir"
  local etcd_pid
  etcd_pid=$(_patroni_spawn "$dir/etcd.log" etcd --name jw-etcd --data-dir "$dir/etcd/data" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "jw-etcd=http://127.0.0.1:$etcd_peer" \
    --heartbeat-interval 100 --election-timeout 1000)
  echo "$etcd_pid" >"$dir/etcd.pid"
  local i
  for ((i = 0; i < 100; i++)); do
    if curl -fsS "http://127.0.0.1:$etcd_port/health" 2>/dev/null | grep -q true; then break; fi
    sleep 0.1
  done
  if ((i == 100)); then
    PATRONI_ERROR="etcd did not start: $(tail -n 5 "$dir/etcd.log")"
    return 1
  fi
  local hosts="" pg_ports="" names=()
  {
    echo "PATRONI_DIR='$dir'"
    echo "PATRONI_ETCD_PORT=$etcd_port"
    echo "PATRONI_MODE=$mode"
    echo "PATRONI_MEMBERS=$members"
  } >"$dir/cluster.env"
  for ((i = 1; i <= members; i++)); do
    local name="pg$i" pg_port=${ports[$((2 * i))]} api_port=${ports[$((2 * i + 1))]}
    names+=("$name")
    mkdir -p "$dir/$name"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir/$name"
    chmod 700 "$dir/$name"
    _patroni_member_yaml "$dir" "$name" "$pg_port" "$api_port" "$etcd_port" "$mode" \
      >"$dir/$name.yml"
    echo "PATRONI_PORT_$name=$pg_port" >>"$dir/cluster.env"
    echo "PATRONI_API_$name=$api_port" >>"$dir/cluster.env"
    hosts="${hosts:+$hosts,}127.0.0.1"
    pg_ports="${pg_ports:+$pg_ports,}$pg_port"
  done
  printf 'scope: %s\netcd3:\n  hosts: 127.0.0.1:%s\n' "$PATRONI_SCOPE" "$etcd_port" \
    >"$dir/patronictl.yml"
  local dsn="host=$hosts port=$pg_ports user=postgres dbname=postgres"
  dsn="$dsn target_session_attrs=read-write connect_timeout=2"
  echo "PATRONI_DSN='$dsn'" >>"$dir/cluster.env"
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$dir"
  # The first member bootstraps the cluster; the others then clone it.
  patroni_start_member "$dir" pg1 || return 1
  patroni_wait "$dir" 60 1 || return 1
  for ((i = 2; i <= members; i++)); do patroni_start_member "$dir" "pg$i" || return 1; done
  patroni_wait "$dir" 90 || return 1
}

# patroni_start_member DIR NAME: (re)starts one member's Patroni.
patroni_start_member() {
  local dir name=$2
  dir=$(_patroni_real_dir "$1")
  local pid
  pid=$(_patroni_spawn "$dir/$name/patroni.log" patroni "$dir/$name.yml")
  echo "$pid" >"$dir/$name.pid"
  rm -f "$dir/$name.pid.killed"
}

# patroni_primary DIR: prints the leader member's name (nothing when there is none).
patroni_primary() {
  local dir
  dir=$(_patroni_real_dir "$1")
  _patroni_ctl "$dir" list -f json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
for m in json.load(sys.stdin):
    if m.get("Role") == "Leader" and m.get("State") == "running":
        print(m["Member"])'
}

# patroni_wait DIR TIMEOUT_S [MIN_MEMBERS]: waits until a primary accepts writes and (sync
# mode) a synchronous standby streams — or, with MIN_MEMBERS=1, only for the primary.
patroni_wait() {
  local dir timeout=${2:-60} min=${3:-}
  dir=$(_patroni_real_dir "$1")
  # shellcheck disable=SC1091
  . "$dir/cluster.env"
  local deadline=$((SECONDS + timeout)) primary port
  while ((SECONDS < deadline)); do
    local f
    for f in "$dir"/pg*.pid; do
      if ! kill -0 "$(cat "$f")" 2>/dev/null && [ ! -f "$f.killed" ]; then
        PATRONI_ERROR="$(basename "$f" .pid) exited: $(tail -n 5 "${f%.pid}/patroni.log")"
        return 1
      fi
    done
    primary=$(patroni_primary "$dir")
    if [ -n "$primary" ]; then
      port_var="PATRONI_PORT_$primary"
      port=${!port_var}
      if [ "$min" = 1 ]; then
        psql -h 127.0.0.1 -p "$port" -U postgres -qAtc \
          "SELECT NOT pg_is_in_recovery()" postgres 2>/dev/null | grep -q t && return 0
      else
        local want="sync"
        [ "$PATRONI_MODE" = async ] && want="async"
        if psql -h 127.0.0.1 -p "$port" -U postgres -qAtc \
          "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND \
           sync_state = '$want'" postgres 2>/dev/null | grep -q '^[1-9]'; then
          return 0
        fi
      fi
    fi
    sleep 0.2
  done
  PATRONI_ERROR="no primary with a $PATRONI_MODE standby within ${timeout}s: $(_patroni_ctl \
    "$dir" list 2>&1 | tail -n 8)"
  return 1
}

# patroni_kill_primary DIR: the primary's node dies — kill -9 of its Patroni, then of its
# postmaster (Patroni alive would restart it in place). Prints the member's name.
patroni_kill_primary() {
  local dir primary
  dir=$(_patroni_real_dir "$1")
  primary=$(patroni_primary "$dir")
  if [ -z "$primary" ]; then
    PATRONI_ERROR="no primary to kill"
    return 1
  fi
  kill -9 "$(cat "$dir/$primary.pid")" 2>/dev/null || true
  touch "$dir/$primary.pid.killed"
  local postmaster
  postmaster=$(head -n 1 "$dir/$primary/data/postmaster.pid" 2>/dev/null)
  [ -n "$postmaster" ] && kill -9 "$postmaster" 2>/dev/null
  echo "$primary"
}

# patroni_switchover DIR: a planned switchover to the synchronous standby (waited for
# first; retried while Patroni refuses, e.g. a rejoining member not yet streaming), returns
# once the standby leads. Prints the new primary's name.
patroni_switchover() {
  local dir primary candidate out="" deadline=$((SECONDS + 60))
  dir=$(_patroni_real_dir "$1")
  while ((SECONDS < deadline)); do
    patroni_wait "$dir" 30 || return 1
    primary=$(patroni_primary "$dir")
    candidate=$(_patroni_ctl "$dir" list -f json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
for m in json.load(sys.stdin):
    if m.get("Role") == "Sync Standby" and m.get("State") in ("running", "streaming"):
        print(m["Member"])' | head -n 1)
    if [ -n "$candidate" ] &&
       out=$(_patroni_ctl "$dir" switchover "$PATRONI_SCOPE" --leader "$primary" \
         --candidate "$candidate" --force 2>&1) &&
       grep -q 'Successfully switched over' <<<"$out"; then
      break
    fi
    out="candidate [$candidate]: $out"
    sleep 1
  done
  if ! grep -q 'Successfully switched over' <<<"$out"; then
    PATRONI_ERROR="switchover from $primary failed: $(grep -v '^[|+]' <<<"$out" | tail -n 5)"
    return 1
  fi
  local now
  deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)); do
    now=$(patroni_primary "$dir")
    if [ -n "$now" ] && [ "$now" != "$primary" ]; then
      echo "$now"
      return 0
    fi
    sleep 0.2
  done
  PATRONI_ERROR="no new primary within 30 s of the switchover from $primary"
  return 1
}

# patroni_stop DIR: stops every member and etcd, and removes the data.
patroni_stop() {
  local dir
  dir=$(_patroni_real_dir "$1")
  [ -d "$dir" ] || return 0
  local f pid
  for f in "$dir"/pg*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || true
  done
  for f in "$dir"/pg*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  # Postmasters left by a killed Patroni.
  for f in "$dir"/pg*/data/postmaster.pid; do
    [ -f "$f" ] || continue
    pid=$(head -n 1 "$f")
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ -f "$dir/etcd.pid" ]; then kill -TERM "$(cat "$dir/etcd.pid")" 2>/dev/null || true; fi
  sleep 0.2
  case "$dir" in
    /var/tmp/jobwheel-patroni.*) rm -rf "$dir" ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  cmd=${1:-}
  shift || true
  case "$cmd" in
    start)
      if ! patroni_available; then echo "$PATRONI_ERROR" >&2; exit 77; fi
      patroni_start "$@" || { echo "patroni: $PATRONI_ERROR" >&2; exit 1; }
      # shellcheck disable=SC1091
      . "$(_patroni_real_dir "$1")/cluster.env"
      echo "$PATRONI_DSN"
      ;;
    stop) patroni_stop "$@" ;;
    primary) patroni_primary "$@" ;;
    kill-primary) patroni_kill_primary "$@" || { echo "$PATRONI_ERROR" >&2; exit 1; } ;;
    switchover) patroni_switchover "$@" || { echo "$PATRONI_ERROR" >&2; exit 1; } ;;
    start-member) patroni_start_member "$@" ;;
    wait) patroni_wait "$@" || { echo "$PATRONI_ERROR" >&2; exit 1; } ;;
    *)
      echo "usage: $0 start DIR [MEMBERS] [sync|async] | stop|primary|kill-primary|switchover|wait DIR | start-member DIR NAME" >&2
      exit 2
      ;;
  esac
fi
