#!/usr/bin/env bash
# Browser tests of the web console: starts its own stack (a fresh database on the test
# PostgreSQL, registry, dispatcher, scheduler, demo executor with scripts, console; demo jobs),
# then drives Debian's chromium headless over the DevTools protocol (puppeteer-core) through
# tests/console/browser/*.test.mjs. Exit 0: all passed; 1: a failure; 77: could not run.
# Assumes `bazel build //services/... //sdk/examples:demo_executor //tools/jobwheelctl` ran.
# JOBWHEEL_SCREENSHOTS=<dir> saves screenshots of every page there (docs/console/);
# JOBWHEEL_CASES=<text> runs only the cases whose name contains it; JOBWHEEL_CONSOLE_HOLD=1 starts
# the stack and keeps it up without running tests (for working on the pages).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
BIN=$ROOT/bazel-bin
export CHROMIUM=${JOBWHEEL_CHROMIUM:-/usr/bin/chromium}

skip() { echo "check_browser: cannot run: $*"; exit 77; }
command -v node >/dev/null || skip "node is not installed (scripts/setup installs it)"
[ -x "$CHROMIUM" ] || skip "$CHROMIUM is missing (scripts/setup installs chromium)"
command -v psql >/dev/null || skip "psql is not installed"
for b in services/console/console services/scheduler/scheduler services/registry/registry \
         services/dispatcher/dispatcher sdk/examples/demo_executor tools/jobwheelctl/jobwheelctl; do
  [ -x "$BIN/$b" ] || skip "$BIN/$b is not built (bazel build //services/... //sdk/examples:demo_executor //tools/jobwheelctl)"
done
if [ ! -d tests/console/browser/node_modules/puppeteer-core ]; then
  (cd tests/console/browser && npm ci --no-audit --no-fund >/dev/null 2>&1) ||
    skip "npm ci in tests/console/browser failed (offline?)"
fi

if [ -z "${JOBWHEEL_TEST_PG_DSN:-}" ]; then
  eval "$(scripts/test-pg start)" || skip "cannot start the test PostgreSQL"
fi
PG_PORT=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$JOBWHEEL_TEST_PG_DSN")
PG_HOST=$(sed -n 's/.*host=\([^ ]*\).*/\1/p' <<<"$JOBWHEEL_TEST_PG_DSN")
PG_USER=$(sed -n 's/.*user=\([^ ]*\).*/\1/p' <<<"$JOBWHEEL_TEST_PG_DSN")
PSQL=(psql -h "${PG_HOST:-127.0.0.1}" -p "${PG_PORT:-55432}" -U "${PG_USER:-postgres}" -qAt)
DB="console_browser_$$_$(date +%s)"
"${PSQL[@]}" -c "CREATE DATABASE $DB" postgres >/dev/null || skip "cannot create a database on the test PostgreSQL"
DSN="host=${PG_HOST:-127.0.0.1} port=${PG_PORT:-55432} user=${PG_USER:-postgres} dbname=$DB"

TMP=$(mktemp -d /tmp/jobwheel-console-browser.XXXXXX)
pids=()
cleanup() {
  trap - EXIT INT TERM
  for ((i=${#pids[@]}-1; i>=0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "${PSQL[@]}" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" postgres >/dev/null 2>&1 || true
  if [ "${KEEP_TMP:-0}" = 1 ]; then echo "check_browser: logs kept in $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT INT TERM

# Free loopback ports, one per line.
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
for s in socks: print(s.getsockname()[1])
PY
}
mapfile -t P < <(free_ports 10)
REGISTRY=127.0.0.1:${P[0]} DISPATCHER=127.0.0.1:${P[1]} SCHEDULER=127.0.0.1:${P[2]}
EXECUTOR=127.0.0.1:${P[3]} CONSOLE=127.0.0.1:${P[4]}

mkdir -p "$TMP/logs"
# shellcheck source=../../scripts/lib/credentials.sh
. "$ROOT/scripts/lib/credentials.sh"
make_credentials "$TMP/tokens" admin executor || { echo "check_browser: cannot make the keys"; exit 1; }
TOK=$TMP/tokens

start() {  # start NAME BINARY ARGS...
  local name=$1; shift
  "$@" >>"$TMP/logs/$name.log" 2>&1 &
  pids+=($!)
}
wait_port() {  # wait_port NAME HOST:PORT
  for _ in $(seq 1 150); do
    if (exec 3<>"/dev/tcp/${2%:*}/${2##*:}") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "check_browser: $1 did not start:"; tail -n 20 "$TMP/logs/$1.log"; exit 1
}

start registry "$BIN/services/registry/registry" --listen="$REGISTRY" --db_dsn="$DSN" \
  --metrics_address="127.0.0.1:${P[5]}" --executor_token_file="$TOK/executor" \
  --dispatcher_public_key_file="$TOK/dispatcher.pub" --admin_token_file="$TOK/admin"
wait_port registry "$REGISTRY"
start dispatcher "$BIN/services/dispatcher/dispatcher" --listen="$DISPATCHER" --db_dsn="$DSN" \
  --metrics_address="127.0.0.1:${P[6]}" --registry_target="$REGISTRY" \
  --executor_token_file="$TOK/executor" --signing_key_file="$TOK/dispatcher.key" \
  --scheduler_public_key_file="$TOK/scheduler.pub"
wait_port dispatcher "$DISPATCHER"
start scheduler "$BIN/services/scheduler/scheduler" --listen="$SCHEDULER" --db_dsn="$DSN" \
  --metrics_address="127.0.0.1:${P[7]}" --dispatcher_target="$DISPATCHER" \
  --admin_token_file="$TOK/admin" --signing_key_file="$TOK/scheduler.key"
wait_port scheduler "$SCHEDULER"
start demo_executor "$BIN/sdk/examples/demo_executor" --listen="$EXECUTOR" --app=demo \
  --registry_target="$REGISTRY" --dispatcher_target="$DISPATCHER" \
  --metrics_address="127.0.0.1:${P[8]}" --log_dir="$TMP/executor/logs" \
  --spool_dir="$TMP/executor/spool" --executor_token_file="$TOK/executor" \
  --dispatcher_public_key_file="$TOK/dispatcher.pub" \
  --scheduler_public_key_file="$TOK/scheduler.pub" --allow_scripts
wait_port demo_executor "$EXECUTOR"
start console "$BIN/services/console/console" --listen="$CONSOLE" \
  --metrics_address="127.0.0.1:${P[9]}" --scheduler_target="$SCHEDULER" \
  --registry_target="$REGISTRY" --web_root="$ROOT/services/console/web"
wait_port console "$CONSOLE"

CTL=("$BIN/tools/jobwheelctl/jobwheelctl" --scheduler="$SCHEDULER" --registry="$REGISTRY"
     --token_file="$TOK/admin")
for f in scripts/demo/*.json; do
  "${CTL[@]}" jobs ensure --file="$f" >>"$TMP/logs/jobwheelctl.log" 2>&1 ||
    { echo "check_browser: jobs ensure $f failed:"; tail -n 5 "$TMP/logs/jobwheelctl.log"; exit 1; }
done

export JOBWHEEL_CONSOLE_URL="http://$CONSOLE/"
export JOBWHEEL_ADMIN_TOKEN_FILE="$TOK/admin"
export JOBWHEEL_SCREENSHOTS=${JOBWHEEL_SCREENSHOTS:-}
export JOBWHEEL_BROWSER_LOGS="$TMP/logs"
if [ -n "${JOBWHEEL_CONSOLE_HOLD:-}" ]; then  # For working on the pages: keep the stack up.
  echo "check_browser: console $JOBWHEEL_CONSOLE_URL admin token $TOK/admin scheduler $SCHEDULER; Ctrl-C stops"
  while sleep 1; do :; done
fi
cd tests/console/browser || exit 1
rc=0
for t in *.test.mjs; do
  node "$t"
  case $? in
    0) ;;
    77) [ "$rc" = 0 ] && rc=77 ;;
    *) rc=1 ;;
  esac
done
if [ "$rc" = 1 ]; then
  echo "check_browser: FAILED; service logs:"
  for l in "$TMP"/logs/*.log; do echo "== $l"; tail -n 15 "$l"; done
fi
exit "$rc"
