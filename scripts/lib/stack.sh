# shellcheck shell=bash
# Starting a whole jobwheel stack from a script: free ports, generated tokens and signing keys,
# PostgreSQL (a private cluster or a fresh database on the test server), the registry,
# dispatcher, scheduler, demo executors and console, readiness through their health checks,
# and cleanup on exit with the services' logs when the script failed. scripts/up and the
# stack tests (tests/console, tests/bench, tests/observability, tests/chaos) all start their
# stacks through it. Works under `set -euo pipefail` and without it.
#
#   . scripts/lib/stack.sh
#   stack_init my_check                  # a new temporary directory, removed on exit
#   stack_pick_ports PG_PORT REG SCHED   # free loopback ports into those variables
#   stack_make_secrets                   # tokens admin + executor, Ed25519 key pairs
#   stack_pg_private "$PG_PORT"          # or: stack_pg_test_db my_check
#   stack_start_registry registry "127.0.0.1:$REG" && stack_wait_ready registry
#   stack_start_ready scheduler scheduler "127.0.0.1:$SCHED" "$DISPATCHER"  # start + wait
#   ...                                  # the exit trap stops everything (stack_stop)
#
# Functions return non-zero instead of exiting, with the reason in STACK_ERROR (and details
# such as a log's last lines printed): each script decides whether that is a skip, a failure
# or an abort. Call them directly, not in $(...): they set variables. Each process has a
# name; its output goes to $STACK_LOGS/NAME.log (appended to, so a restart keeps the earlier
# lines).
#
# Variables the functions set, for the caller to read:
#   STACK_ROOT STACK_BIN   the repository and its bazel-bin
#   STACK_DIR              the stack's directory; STACK_LOGS (logs/), STACK_TOK (tokens/)
#   STACK_PG_PORT STACK_DSN  the database of the stack (libpq key=value DSN)
#   STACK_PID[NAME] STACK_ADDR[NAME]  each process's pid and listen address
#   STACK_REGISTRY STACK_SCHEDULER    the first registry's and scheduler's address (stack_ctl)
# Variables the caller may set:
#   STACK_KEEP_DIR=1         keep the temporary directory at exit (its path is printed)
#   STACK_KEEP_ON_FAILURE=1  keep it when the script exits with a failure (status not 0 or 77)
#   STACK_LOGS_ON_FAILURE=0  do not print the tail of every log when the script fails
#   STACK_STOP_GRACE=15      seconds between SIGTERM and SIGKILL in stack_stop
#   STACK_SAY_STOP=1         stack_stop prints "TAG: stopping" and "TAG: stopped"
#   STACK_PREFIX[NAME]="CMD ARGS"  words put before NAME's command at every start and restart
#                            (e.g. "ip netns exec NS": the process runs in that namespace; the
#                            prefix must exec the command, so its pid is the service's)

STACK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STACK_BIN="$STACK_ROOT/bazel-bin"
# shellcheck source=scripts/lib/pg.sh
. "$STACK_ROOT/scripts/lib/pg.sh"
# shellcheck source=scripts/lib/credentials.sh
. "$STACK_ROOT/scripts/lib/credentials.sh"
# shellcheck source=scripts/lib/ports.sh
. "$STACK_ROOT/scripts/lib/ports.sh"

STACK_TAG=stack
STACK_ERROR=""
STACK_DIR=""
STACK_LOGS=""
STACK_TOK=""
STACK_OWN_DIR=0       # 1: stack_init made STACK_DIR; stack_release_dir removes it
STACK_PG_PORT=""
STACK_DSN=""
STACK_PG_MODE=""      # private | test_db
STACK_TEST_DB=""
STACK_REGISTRY=""
STACK_SCHEDULER=""
STACK_STOPPED=0
STACK_ORDER=()        # names in the order they were first started
declare -A STACK_PID=() STACK_ADDR=() STACK_KIND=() STACK_CMD=()
declare -A STACK_PREFIX=()

# stack_say MESSAGE: one line prefixed with the script's tag.
stack_say() { echo "$STACK_TAG: $*"; }

# stack_init TAG [DIR]: where the stack lives. Without DIR, a new temporary directory (removed
# by stack_stop); with DIR, that directory, kept (scripts/up: .data). Sets the exit trap
# (stack_stop, with the logs when the script failed) and makes INT and TERM exit 130; a script
# may set its own INT/TERM trap afterwards, the EXIT trap still runs.
stack_init() {
  STACK_TAG=$1
  if [ -n "${2:-}" ]; then
    STACK_DIR=$2
    mkdir -p "$STACK_DIR" || { STACK_ERROR="cannot make $STACK_DIR"; return 1; }
    STACK_OWN_DIR=0
  else
    STACK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/jobwheel-$STACK_TAG.XXXXXX")" ||
      { STACK_ERROR="cannot make a temporary directory"; return 1; }
    # As root the PostgreSQL server runs as `postgres` and must reach its directory.
    chmod 755 "$STACK_DIR"
    STACK_OWN_DIR=1
  fi
  STACK_LOGS=$STACK_DIR/logs
  STACK_TOK=$STACK_DIR/tokens
  mkdir -p "$STACK_LOGS" || { STACK_ERROR="cannot make $STACK_LOGS"; return 1; }
  trap '_stack_on_exit $?' EXIT
  trap 'exit 130' INT TERM
}

# stack_need_bins PATH...: every PATH (relative to bazel-bin) is built; else prints the
# missing ones and returns 1.
stack_need_bins() {
  local b missing=()
  for b in "$@"; do [ -x "$STACK_BIN/$b" ] || missing+=("bazel-bin/$b"); done
  [ ${#missing[@]} = 0 ] && return 0
  STACK_ERROR="not built: ${missing[*]}"
  return 1
}

# stack_pick_ports VAR...: a free loopback port into each variable, all distinct (the sockets
# are held open together while picking).
stack_pick_ports() {
  local _sp_ports
  _sp_ports=$(free_loopback_ports "$#") || { STACK_ERROR="could not pick free ports"; return 1; }
  local -a _sp_p
  read -r -a _sp_p <<<"$_sp_ports"
  [ ${#_sp_p[@]} = $# ] || { STACK_ERROR="could not pick free ports"; return 1; }
  local _sp_i=0 _sp_v
  for _sp_v in "$@"; do
    printf -v "$_sp_v" '%s' "${_sp_p[$_sp_i]}"
    _sp_i=$((_sp_i + 1))
  done
}

# stack_make_secrets [TOKEN...]: random tokens (default: admin executor) and the scheduler's
# and dispatchers' Ed25519 key pairs in $STACK_TOK (0700, files 0600); existing files are
# kept, so a persistent stack reuses them.
stack_make_secrets() {
  make_credentials "$STACK_TOK" "$@" ||
    { STACK_ERROR="cannot make the tokens and keys in $STACK_TOK"; return 1; }
}

# stack_pg_private PORT [PGPASS_FILE]: a private PostgreSQL in $STACK_DIR/pg on 127.0.0.1:PORT
# (initialized on first use) with a database `jobwheel`. With PGPASS_FILE, TCP needs the
# password generated into it (pg_secure) and PGPASSFILE is exported for every process.
stack_pg_private() {
  local port=$1 pgpass=${2:-}
  STACK_PG_PORT=$port
  STACK_PG_MODE=private
  if ! pg_start "$STACK_DIR/pg" "$port" >>"$STACK_LOGS/pg_start.log" 2>&1; then
    tail -n 20 "$STACK_LOGS/pg_start.log"
    STACK_ERROR="PostgreSQL did not start in $STACK_DIR/pg on port $port"
    return 1
  fi
  if [ -n "$pgpass" ]; then
    pg_secure "$STACK_DIR/pg" "$port" "$pgpass" >>"$STACK_LOGS/pg_start.log" 2>&1 ||
      { tail -n 5 "$STACK_LOGS/pg_start.log"; STACK_ERROR="cannot set the PostgreSQL password"
        return 1; }
    export PGPASSFILE=$pgpass
  fi
  pg_ensure_db "$port" jobwheel >>"$STACK_LOGS/pg_start.log" 2>&1 ||
    { tail -n 5 "$STACK_LOGS/pg_start.log"; STACK_ERROR="cannot create the database jobwheel"
      return 1; }
  STACK_DSN="host=127.0.0.1 port=$port user=postgres dbname=jobwheel"
}

# stack_pg_test_db PREFIX: a fresh database PREFIX_<pid>_<time> on the test PostgreSQL
# (JOBWHEEL_TEST_PG_DSN, else scripts/test-pg starts it), dropped by stack_stop.
stack_pg_test_db() {
  if [ -z "${JOBWHEEL_TEST_PG_DSN:-}" ]; then
    local exports
    exports=$("$STACK_ROOT/scripts/test-pg" start) ||
      { STACK_ERROR="cannot start the test PostgreSQL"; return 1; }
    eval "$exports"
  fi
  local host port user
  host=$(sed -n 's/.*host=\([^ ]*\).*/\1/p' <<<"$JOBWHEEL_TEST_PG_DSN")
  port=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$JOBWHEEL_TEST_PG_DSN")
  user=$(sed -n 's/.*user=\([^ ]*\).*/\1/p' <<<"$JOBWHEEL_TEST_PG_DSN")
  STACK_PG_PORT=${port:-55432}
  local server="host=${host:-127.0.0.1} port=$STACK_PG_PORT user=${user:-postgres}"
  STACK_TEST_DB="$1_$$_$(date +%s)"
  psql "$server dbname=postgres" -qAtX -c "CREATE DATABASE $STACK_TEST_DB" >/dev/null ||
    { STACK_TEST_DB=""; STACK_ERROR="cannot create a database on the test PostgreSQL"; return 1; }
  STACK_PG_MODE=test_db
  STACK_DSN="$server dbname=$STACK_TEST_DB"
}

# stack_sql SQL: runs SQL on the stack's database; prints the rows unaligned, '|'-separated.
stack_sql() { psql "$STACK_DSN" -qtAX -v ON_ERROR_STOP=1 -c "$1"; }

# _stack_has_flag FLAG ARGS...: whether ARGS set --FLAG.
_stack_has_flag() {
  local f=$1 a
  shift
  for a in "$@"; do
    case $a in "--$f" | "--$f="*) return 0 ;; esac
  done
  return 1
}

# _stack_token_flag FLAG FILE: prints --FLAG=$STACK_TOK/FILE when that file exists.
_stack_token_flag() { [ ! -s "$STACK_TOK/$2" ] || echo "--$1=$STACK_TOK/$2"; }

# stack_spawn NAME KIND ADDR COMMAND...: starts COMMAND in the background, output appended to
# $STACK_LOGS/NAME.log (nothing else is written there, so a --log_json log stays JSON), and
# remembers it for stack_wait_ready, stack_restart and stack_stop. KIND says how readiness is
# checked: grpc (grpc.health.v1), http (GET /readyz) or other (the port accepts).
stack_spawn() {
  local name=$1 kind=$2 addr=$3
  shift 3
  [ -n "${STACK_PID[$name]:-}" ] || STACK_ORDER+=("$name")
  STACK_KIND[$name]=$kind
  STACK_ADDR[$name]=$addr
  if [ -n "${STACK_PREFIX[$name]:-}" ]; then
    local -a _ss_prefix
    read -r -a _ss_prefix <<<"${STACK_PREFIX[$name]}"
    set -- "${_ss_prefix[@]}" "$@"
  fi
  STACK_CMD[$name]=$(printf '%q ' "$@")
  "$@" >>"$STACK_LOGS/$name.log" 2>&1 &
  STACK_PID[$name]=$!
}

# stack_track NAME PID: a process the script started itself (stopped by stack_stop too).
stack_track() {
  [ -n "${STACK_PID[$1]:-}" ] || STACK_ORDER+=("$1")
  STACK_KIND[$1]=other
  STACK_PID[$1]=$2
}

# stack_restart NAME: starts NAME again with the command it was started with (JOBWHEEL_*
# variables given for the first start only are not repeated), after a line
# "=== TAG: restart TIME" in its log.
stack_restart() {
  local name=$1
  [ -n "${STACK_CMD[$name]:-}" ] ||
    { STACK_ERROR="stack_restart: $name was never started"; return 1; }
  echo "=== $STACK_TAG: restart $(date -u +%FT%T.%3NZ)" >>"$STACK_LOGS/$name.log"
  eval "${STACK_CMD[$name]}" '>>"$STACK_LOGS/$name.log" 2>&1 &'
  STACK_PID[$name]=$!
}

# The services. Each takes the process's NAME, its listen address, the addresses it needs,
# then any further flags, which are passed on (--metrics_address=HOST:PORT serves metrics; by
# default metrics are off, unless JOBWHEEL_METRICS_ADDRESS is in the environment). Token and
# key files come from $STACK_TOK; the executor token only where stack_make_secrets made one.
# Services read flags from JOBWHEEL_<FLAG> variables too: `JOBWHEEL_LOG_JSON=true
# stack_start_registry ...` passes one to that process only.

# _stack_metrics_default ARGS...: prints --metrics_address= unless ARGS or the environment set it.
_stack_metrics_default() {
  _stack_has_flag metrics_address "$@" || [ -n "${JOBWHEEL_METRICS_ADDRESS+x}" ] ||
    echo "--metrics_address="
}

# stack_start_registry NAME LISTEN [FLAG...]
stack_start_registry() {
  local name=$1 listen=$2
  shift 2
  local -a flags
  mapfile -t flags < <(_stack_metrics_default "$@"; _stack_token_flag executor_token_file executor)
  stack_spawn "$name" grpc "$listen" "$STACK_BIN/services/registry/registry" --listen="$listen" \
    --db_dsn="$STACK_DSN" --dispatcher_public_key_file="$STACK_TOK/dispatcher.pub" \
    --admin_token_file="$STACK_TOK/admin" "${flags[@]}" "$@"
  [ -n "$STACK_REGISTRY" ] || STACK_REGISTRY=$listen
}

# stack_start_dispatcher NAME LISTEN REGISTRY_TARGET [FLAG...]
stack_start_dispatcher() {
  local name=$1 listen=$2 registry=$3
  shift 3
  local -a flags
  mapfile -t flags < <(_stack_metrics_default "$@"; _stack_token_flag executor_token_file executor)
  stack_spawn "$name" grpc "$listen" "$STACK_BIN/services/dispatcher/dispatcher" \
    --listen="$listen" --db_dsn="$STACK_DSN" --registry_target="$registry" \
    --signing_key_file="$STACK_TOK/dispatcher.key" \
    --scheduler_public_key_file="$STACK_TOK/scheduler.pub" "${flags[@]}" "$@"
}

# stack_start_scheduler NAME LISTEN DISPATCHER_TARGET [FLAG...]
stack_start_scheduler() {
  local name=$1 listen=$2 dispatcher=$3
  shift 3
  local -a flags
  mapfile -t flags < <(_stack_metrics_default "$@")
  stack_spawn "$name" grpc "$listen" "$STACK_BIN/services/scheduler/scheduler" \
    --listen="$listen" --db_dsn="$STACK_DSN" --dispatcher_target="$dispatcher" \
    --admin_token_file="$STACK_TOK/admin" --signing_key_file="$STACK_TOK/scheduler.key" \
    "${flags[@]}" "$@"
  [ -n "$STACK_SCHEDULER" ] || STACK_SCHEDULER=$listen
}

# stack_start_executor NAME LISTEN APP REGISTRY_TARGET DISPATCHER_TARGET [FLAG...]: the demo
# executor (sdk/examples). Its run logs and result spool default to
# $STACK_DIR/executors/NAME/{logs,spool} (--log_dir, --spool_dir override).
stack_start_executor() { _stack_start_sdk_executor sdk/examples/demo_executor "$@"; }

# _stack_start_sdk_executor BINARY NAME LISTEN APP REGISTRY_TARGET DISPATCHER_TARGET [FLAG...]:
# an executor built on the C++ SDK (bazel-bin/BINARY), with the flags every one of them takes.
_stack_start_sdk_executor() {
  local binary=$1 name=$2 listen=$3 app=$4 registry=$5 dispatcher=$6
  shift 6
  stack_ensure_app "$app" || return 1
  local -a flags
  mapfile -t flags < <(_stack_metrics_default "$@"
    _stack_has_flag log_dir "$@" || echo "--log_dir=$STACK_DIR/executors/$name/logs"
    _stack_has_flag spool_dir "$@" || echo "--spool_dir=$STACK_DIR/executors/$name/spool")
  stack_spawn "$name" grpc "$listen" "$STACK_BIN/$binary" \
    --listen="$listen" --app="$app" --registry_target="$registry" \
    --dispatcher_target="$dispatcher" --executor_token_file="$STACK_TOK/executor" \
    --dispatcher_public_key_file="$STACK_TOK/dispatcher.pub" \
    --scheduler_public_key_file="$STACK_TOK/scheduler.pub" "${flags[@]}" "$@"
}

# stack_ensure_app APP: creates the app (admins create apps: an executor's registration
# never does), announced to the registry replicas as AppAdminService announces it. Needs the
# schema, so a registry must have started. An app that exists already is left as it is.
stack_ensure_app() {
  local app=$1
  for _ in $(seq 1 100); do
    if stack_sql "WITH ins AS (INSERT INTO apps (name) VALUES ('${app//\'/\'\'}')
        ON CONFLICT (name) DO NOTHING RETURNING name)
      SELECT pg_notify('jobwheel_executors', 'a|' ||
        (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT || '|' || name) FROM ins" \
        >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1  # The registry is still applying the schema.
  done
  STACK_ERROR="cannot create app $app in $STACK_DSN"
  return 1
}

# stack_start_xxl_gateway NAME LISTEN_HTTP PORTS REGISTRY_TARGET DISPATCHER_TARGET [FLAG...]:
# the XXL-JOB gateway (services/xxl_gateway; docs/xxl-job.md). XXL executors find the admin at
# http://LISTEN_HTTP/xxl-job-admin (or /); PORTS (FROM-TO) are the gRPC ports standing for
# them. Its state defaults to $STACK_DIR/xxl_gateway/NAME (--state_dir overrides).
stack_start_xxl_gateway() {
  local name=$1 listen=$2 ports=$3 registry=$4 dispatcher=$5
  shift 5
  local -a flags
  mapfile -t flags < <(_stack_metrics_default "$@"
    _stack_has_flag state_dir "$@" || echo "--state_dir=$STACK_DIR/xxl_gateway/$name")
  stack_spawn "$name" http "$listen" "$STACK_BIN/services/xxl_gateway/xxl_gateway" \
    --listen_http="$listen" --executor_ports="$ports" --registry_target="$registry" \
    --dispatcher_target="$dispatcher" --dispatcher_public_key_file="$STACK_TOK/dispatcher.pub" \
    --scheduler_public_key_file="$STACK_TOK/scheduler.pub" "${flags[@]}" "$@"
}

# stack_start_xxl_executor NAME PORT APP ADMIN_URL TOKEN_FILE [FLAG...]: the XXL-JOB-protocol
# test executor (tests/xxl/xxl_test_executor.py) of APP on 127.0.0.1:PORT, registering with
# ADMIN_URL (the gateway) with the EXECUTOR token in TOKEN_FILE. Creates the app first. Its run
# logs and callback spool go to $STACK_DIR/executors/NAME/{logs,spool}.
stack_start_xxl_executor() {
  local name=$1 port=$2 app=$3 admin=$4 token_file=$5
  shift 5
  stack_ensure_app "$app" || return 1
  stack_spawn "$name" other "127.0.0.1:$port" /usr/bin/python3 \
    "$STACK_ROOT/tests/xxl/xxl_test_executor.py" --port="$port" --app="$app" --admin="$admin" \
    --token_file="$token_file" --log_dir="$STACK_DIR/executors/$name/logs" \
    --spool_dir="$STACK_DIR/executors/$name/spool" "$@"
}

# stack_app_token APP: an EXECUTOR API token scoped to APP alone, made once through
# TokenAdminService (the scheduler must serve) into $STACK_TOK/executor-APP (0600); its path is
# left in STACK_APP_TOKEN. An executor given it may register and report for APP only.
stack_app_token() {
  # shellcheck disable=SC2034  # Read by the caller.
  STACK_APP_TOKEN="$STACK_TOK/executor-$1"
  _stack_token_once "$STACK_APP_TOKEN" "an executor token for app $1" \
    --name="executor-$1" --role=executor --apps="$1"
}

# _stack_token_once FILE WHAT FLAG...: an API token made once through TokenAdminService
# (`jobwheelctl tokens create FLAG...`) into FILE (0600); kept when FILE exists.
_stack_token_once() {
  local file=$1 what=$2
  shift 2
  [ -s "$file" ] && return 0
  if ! (umask 077 && stack_ctl tokens create "$@" >"$file.new" \
      2>>"$STACK_LOGS/jobwheelctl.log") || [ ! -s "$file.new" ]; then
    rm -f "$file.new"
    STACK_ERROR="cannot create $what (see $STACK_LOGS/jobwheelctl.log)"
    return 1
  fi
  mv "$file.new" "$file"
}

# stack_start_console NAME LISTEN SCHEDULER_TARGET REGISTRY_TARGET [FLAG...]: the web console
# (it holds no token: every browser or Connect client sends its own).
stack_start_console() {
  local name=$1 listen=$2 scheduler=$3 registry=$4
  shift 4
  local -a flags
  mapfile -t flags < <(_stack_metrics_default "$@")
  stack_spawn "$name" http "$listen" "$STACK_BIN/services/console/console" --listen="$listen" \
    --scheduler_target="$scheduler" --registry_target="$registry" "${flags[@]}" "$@"
}

# stack_start_python_executor NAME LISTEN APP REGISTRY_TARGET DISPATCHER_TARGET [FLAG...]: the
# Python demo executor (sdk/python/examples/demo_executor.py) on Debian's /usr/bin/python3
# (JOBWHEEL_PYTHON overrides; another python3 on PATH may lack grpcio), with its gRPC stubs
# generated from proto/ into $STACK_DIR/pystubs at every start (docs/sdk-python.md). Creates
# the app first (stack_ensure_app). Run logs and the result spool
# default to $STACK_DIR/executors/NAME/{logs,spool}.
stack_start_python_executor() {
  local name=$1 listen=$2 app=$3 registry=$4 dispatcher=$5
  shift 5
  local py=${JOBWHEEL_PYTHON:-/usr/bin/python3}
  "$py" -c 'import grpc, google.protobuf, cryptography' 2>/dev/null || {
    STACK_ERROR="$py lacks grpcio, protobuf or cryptography (Debian: python3-grpcio python3-protobuf python3-cryptography)"
    return 1
  }
  stack_ensure_app "$app" || return 1
  "$py" "$STACK_ROOT/sdk/python/gen_stubs.py" "$STACK_DIR/pystubs" >>"$STACK_LOGS/$name.log" 2>&1 ||
    { STACK_ERROR="cannot generate the Python stubs; see $STACK_LOGS/$name.log"; return 1; }
  local -a flags
  mapfile -t flags < <(
    _stack_has_flag log_dir "$@" || echo "--log_dir=$STACK_DIR/executors/$name/logs"
    _stack_has_flag spool_dir "$@" || echo "--spool_dir=$STACK_DIR/executors/$name/spool")
  stack_spawn "$name" grpc "$listen" "$py" "$STACK_ROOT/sdk/python/examples/demo_executor.py" \
    --listen="$listen" --app="$app" --registry_target="$registry" \
    --dispatcher_target="$dispatcher" --executor_token_file="$STACK_TOK/executor" \
    --dispatcher_public_key_file="$STACK_TOK/dispatcher.pub" \
    --scheduler_public_key_file="$STACK_TOK/scheduler.pub" --stubs_dir="$STACK_DIR/pystubs" \
    "${flags[@]}" "$@"
}

# stack_start_http_executor NAME LISTEN APP REGISTRY_TARGET DISPATCHER_TARGET [FLAG...]: the
# HTTP executor (services/http_executor, handler `http`; docs/http-jobs.md). Creates the app
# first. Run logs and the result spool default to $STACK_DIR/executors/NAME/{logs,spool}.
# Its outbound policy comes from the flags (--allow_hosts, --allow_cidrs, --allow_ports):
# loopback, private, link-local and metadata targets are refused unless allow-listed.
stack_start_http_executor() {
  _stack_start_sdk_executor services/http_executor/http_executor "$@"
}

# stack_start_http_demo_endpoint NAME LISTEN DIR: the HTTP jobs' demo endpoint, Python's
# http.server on LISTEN serving DIR/www, where it writes ping.txt; waits until it accepts.
stack_start_http_demo_endpoint() {
  local name=$1 listen=$2 dir=$3
  mkdir -p "$dir/www" && echo "pong from the jobwheel demo endpoint" >"$dir/www/ping.txt" ||
    { STACK_ERROR="cannot write $dir/www/ping.txt"; return 1; }
  stack_spawn "$name" other "$listen" /usr/bin/python3 -m http.server --bind "${listen%:*}" \
    --directory "$dir/www" "${listen##*:}"
  stack_wait_ready "$name"
}

# stack_http_demo_jobs ENDPOINT DIR: creates (or keeps) the HTTP demo jobs of app http, their
# JSON written to DIR: http-ping (GET http://ENDPOINT/ping.txt every 10 s) and
# http-metadata-refused (GET http://169.254.169.254/..., disabled and unscheduled: a trigger
# shows the outbound policy refusing it, rule "metadata").
stack_http_demo_jobs() {
  local endpoint=$1 dir=$2 f
  mkdir -p "$dir" || { STACK_ERROR="cannot create $dir"; return 1; }
  cat >"$dir/http-ping.json" <<EOT
{"app": "http", "name": "http-ping", "description": "GET the local demo endpoint every 10 s",
 "handler": "http", "param": "{\\"url\\": \\"http://$endpoint/ping.txt\\", \\"timeout\\": \\"5s\\"}",
 "schedule": {"fixRate": {"intervalSeconds": "10"}}, "routingStrategy": "ROUTING_STRATEGY_FIRST",
 "enabled": true}
EOT
  cat >"$dir/http-metadata-refused.json" <<'EOT'
{"app": "http", "name": "http-metadata-refused",
 "description": "Aimed at the cloud metadata address: refused by the outbound policy",
 "handler": "http", "param": "{\"url\": \"http://169.254.169.254/latest/meta-data/\"}",
 "schedule": {"none": {}}, "routingStrategy": "ROUTING_STRATEGY_FIRST", "enabled": false}
EOT
  for f in http-ping http-metadata-refused; do
    stack_ctl jobs ensure --file="$dir/$f.json" >>"$STACK_LOGS/jobwheelctl.log" 2>&1 ||
      { tail -n 5 "$STACK_LOGS/jobwheelctl.log"; STACK_ERROR="jobs ensure $dir/$f.json failed"; return 1; }
  done
}

# stack_console_proxy_token: the console's own token, a VIEWER of no app (it reads nothing), in
# $STACK_TOK/console_proxy, made once through the first scheduler and kept (a persistent stack
# reuses it). Pass --proxy_token_file="$STACK_TOK/console_proxy" to stack_start_console: the
# console then names each caller's IP to the scheduler and registry, which limit failed
# authentications per console client (docs/security.md, "One hostile client at the console").
stack_console_proxy_token() {
  _stack_token_once "$STACK_TOK/console_proxy" "the console's proxy token" \
    --name=console-proxy --role=viewer
}

# stack_grpc_serving HOST:PORT: whether grpc.health.v1.Health/Check (service "") answers
# SERVING. Speaks gRPC over cleartext HTTP/2 with curl: the request is an empty message (a
# 5-byte frame header), the SERVING answer the frame 00 00000002 08 01.
stack_grpc_serving() {
  local body
  body=$(printf '\0\0\0\0\0' | curl -sS --max-time 2 --http2-prior-knowledge -X POST \
    -H 'content-type: application/grpc' -H 'te: trailers' --data-binary @- \
    "http://$1/grpc.health.v1.Health/Check" 2>/dev/null | od -An -tx1 | tr -d ' \n') || true
  [ "$body" = 00000000020801 ]
}

# stack_http_ready HOST:PORT: whether GET /readyz answers 200 (the console: its backends serve).
stack_http_ready() { curl -fsS --max-time 2 -o /dev/null "http://$1/readyz" 2>/dev/null; }

# stack_port_open HOST:PORT: whether something accepts TCP connections there.
stack_port_open() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }

# stack_ready NAME: one readiness check of NAME by its kind.
stack_ready() {
  local addr=${STACK_ADDR[$1]:-}
  case ${STACK_KIND[$1]:-} in
    grpc) stack_grpc_serving "$addr" ;;
    http) stack_http_ready "$addr" ;;
    *) stack_port_open "$addr" ;;
  esac
}

# stack_wait_ready NAME [SECONDS]: polls NAME's health check until it is ready (default 20 s).
# Returns 1 at once if the process exited, after printing the last lines of its log.
stack_wait_ready() {
  local name=$1 deadline=$((SECONDS + ${2:-20}))
  while [ "$SECONDS" -lt "$deadline" ]; do
    stack_ready "$name" && return 0
    stack_alive "$name" || break
    sleep 0.1
  done
  if stack_alive "$name"; then
    STACK_ERROR="$name is not ready on ${STACK_ADDR[$name]:-?} after ${2:-20} s"
  else
    STACK_ERROR="$name exited before it was ready"
  fi
  stack_say "$STACK_ERROR; last lines of $STACK_LOGS/$name.log:"
  tail -n 20 "$STACK_LOGS/$name.log" | sed 's/^/  /'
  return 1
}

# stack_start_ready KIND NAME ARGS...: stack_start_KIND NAME ARGS..., then stack_wait_ready NAME.
stack_start_ready() {
  local kind=$1 name=$2
  shift
  "stack_start_$kind" "$@" && stack_wait_ready "$name"
}

# stack_alive NAME: whether NAME's process is running.
stack_alive() { [ -n "${STACK_PID[$1]:-}" ] && kill -0 "${STACK_PID[$1]}" 2>/dev/null; }

# stack_dead: prints the names of the started processes that are no longer running.
stack_dead() {
  local n
  for n in "${STACK_ORDER[@]}"; do stack_alive "$n" || echo "$n"; done
}

# stack_ctl ARGS...: jobwheelctl against the first scheduler and registry, as admin.
stack_ctl() {
  "$STACK_BIN/tools/jobwheelctl/jobwheelctl" --scheduler="$STACK_SCHEDULER" \
    --registry="$STACK_REGISTRY" --token_file="$STACK_TOK/admin" "$@"
}

# stack_demo_jobs: creates (or updates) the demo jobs of scripts/demo/*.json (app demo);
# jobwheelctl's output goes to $STACK_LOGS/jobwheelctl.log.
stack_demo_jobs() {
  local f
  for f in "$STACK_ROOT"/scripts/demo/*.json; do
    stack_ctl jobs ensure --file="$f" >>"$STACK_LOGS/jobwheelctl.log" 2>&1 ||
      { tail -n 5 "$STACK_LOGS/jobwheelctl.log"; STACK_ERROR="jobs ensure $f failed"; return 1; }
  done
}

# stack_dump_logs [LINES]: the last LINES (15) lines of every log.
stack_dump_logs() {
  local l
  for l in "$STACK_LOGS"/*.log; do
    [ -e "$l" ] || continue
    echo "== $l"
    tail -n "${1:-15}" "$l"
  done
}

# stack_stop: stops every process in reverse start order (the executors first, so they
# deregister while the registry is there): SIGTERM and SIGCONT (in case one was stopped), then
# SIGKILL for any still running STACK_STOP_GRACE (15) seconds later (an executor lets its
# in-flight runs finish for up to --grace_period, 10 s by default). Then PostgreSQL: the
# private cluster is stopped, the test server's database dropped. Runs once; the exit trap
# calls it (and then stack_release_dir).
stack_stop() {
  [ "$STACK_STOPPED" = 1 ] && return 0
  STACK_STOPPED=1
  [ -z "${STACK_SAY_STOP:-}" ] || stack_say "stopping"
  local i n p
  for ((i = ${#STACK_ORDER[@]} - 1; i >= 0; i--)); do
    p=${STACK_PID[${STACK_ORDER[$i]}]:-}
    [ -n "$p" ] || continue
    kill -TERM "$p" 2>/dev/null || true
    kill -CONT "$p" 2>/dev/null || true
  done
  for ((i = ${#STACK_ORDER[@]} - 1; i >= 0; i--)); do
    n=${STACK_ORDER[$i]}
    p=${STACK_PID[$n]:-}
    [ -n "$p" ] || continue
    for _ in $(seq 1 $((${STACK_STOP_GRACE:-15} * 10))); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$p" 2>/dev/null; then
      stack_say "$n (pid $p) still runs ${STACK_STOP_GRACE:-15} s after SIGTERM: SIGKILL"
      kill -KILL "$p" 2>/dev/null || true
    fi
    wait "$p" 2>/dev/null || true
  done
  case $STACK_PG_MODE in
    private) pg_stop "$STACK_DIR/pg" ;;
    test_db)
      psql "${STACK_DSN% dbname=*} dbname=postgres" -qAtX \
        -c "DROP DATABASE IF EXISTS $STACK_TEST_DB WITH (FORCE)" >/dev/null 2>&1 || true ;;
  esac
  [ -z "${STACK_SAY_STOP:-}" ] || stack_say "stopped"
  return 0
}

# stack_remove_dir: removes the temporary directory (and the PostgreSQL data kept under
# /var/tmp for it, see pg_start); a directory given to stack_init is never removed.
stack_remove_dir() {
  [ "$STACK_OWN_DIR" = 1 ] && [ -d "$STACK_DIR" ] || return 0
  if [ -L "$STACK_DIR/pg" ]; then rm -rf "$(readlink "$STACK_DIR/pg")"; fi
  rm -rf "$STACK_DIR"
}

# stack_release_dir FAILED: after stack_stop, removes the temporary directory, or keeps it
# (and says where) when STACK_KEEP_DIR is set or FAILED is 1 and STACK_KEEP_ON_FAILURE is
# set. Runs once; the exit trap calls it with FAILED from the exit status.
STACK_RELEASED=0
stack_release_dir() {
  [ "$STACK_RELEASED" = 0 ] && [ "$STACK_OWN_DIR" = 1 ] || return 0
  STACK_RELEASED=1
  if [ -n "${STACK_KEEP_DIR:-}" ] || { [ "$1" = 1 ] && [ -n "${STACK_KEEP_ON_FAILURE:-}" ]; }; then
    stack_say "logs and data kept in $STACK_DIR"
  else
    stack_remove_dir
  fi
}

_stack_on_exit() {
  local rc=$1 failed=0
  trap - EXIT INT TERM
  case $rc in 0 | 77) ;; *) failed=1 ;; esac
  if [ "$failed" = 1 ] && [ "${STACK_LOGS_ON_FAILURE:-1}" = 1 ] && [ -d "$STACK_LOGS" ]; then
    stack_say "exit status $rc; last lines of the logs:"
    stack_dump_logs 15
  fi
  stack_stop
  stack_release_dir "$failed"
  exit "$rc"
}
