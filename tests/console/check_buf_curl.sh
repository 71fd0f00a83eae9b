#!/usr/bin/env bash
# A third-party Connect client against the console: starts its own stack (a fresh database on
# the test PostgreSQL, registry, dispatcher, scheduler, console on random ports), creates a job
# with jobwheelctl, then runs `buf curl --protocol connect` (the Buf CLI from npm) through the
# console: with the admin token the job comes back; without a token the call is refused as
# unauthenticated. Exit 0: passed; 1: failed; 77: could not run (the reason on one line).
# Assumes `bazel build //services/... //sdk/examples:demo_executor //tools/jobwheelctl` ran.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/bazel-bin
BUF=(npx --yes --cache "$ROOT/.data/npm" @bufbuild/buf@1.75.0)

skip() { echo "check_buf_curl: cannot run: $*"; exit 77; }
fail() { echo "check_buf_curl: FAILED: $*"; exit 1; }
command -v npx >/dev/null || skip "npx is not installed (scripts/setup installs node/npm)"
command -v psql >/dev/null || skip "psql is not installed"
for b in services/console/console services/scheduler/scheduler services/registry/registry \
         services/dispatcher/dispatcher tools/jobwheelctl/jobwheelctl; do
  [ -x "$BIN/$b" ] || skip "$BIN/$b is not built (bazel build //services/... //tools/jobwheelctl)"
done
"${BUF[@]}" --version >/dev/null 2>&1 || skip "npx could not fetch @bufbuild/buf@1.75.0 (offline?)"

if [ -z "${JOBWHEEL_TEST_PG_DSN:-}" ]; then
  eval "$(scripts/test-pg start)" || skip "cannot start the test PostgreSQL"
fi
PG_PORT=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$JOBWHEEL_TEST_PG_DSN")
PG_HOST=$(sed -n 's/.*host=\([^ ]*\).*/\1/p' <<<"$JOBWHEEL_TEST_PG_DSN")
PG_USER=$(sed -n 's/.*user=\([^ ]*\).*/\1/p' <<<"$JOBWHEEL_TEST_PG_DSN")
PSQL=(psql -h "${PG_HOST:-127.0.0.1}" -p "${PG_PORT:-55432}" -U "${PG_USER:-postgres}" -qAt)
DB="console_buf_curl_$$_$(date +%s)"
"${PSQL[@]}" -c "CREATE DATABASE $DB" postgres >/dev/null ||
  skip "cannot create a database on the test PostgreSQL"
DSN="host=${PG_HOST:-127.0.0.1} port=${PG_PORT:-55432} user=${PG_USER:-postgres} dbname=$DB"

TMP=$(mktemp -d /tmp/jobwheel-buf-curl.XXXXXX)
pids=()
cleanup() {
  trap - EXIT INT TERM
  for ((i=${#pids[@]}-1; i>=0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "${PSQL[@]}" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" postgres >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

free_ports() {  # N free loopback ports, one per line
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
for s in socks: print(s.getsockname()[1])
PY
}
mapfile -t P < <(free_ports 4)
REGISTRY=127.0.0.1:${P[0]} DISPATCHER=127.0.0.1:${P[1]} SCHEDULER=127.0.0.1:${P[2]}
CONSOLE=127.0.0.1:${P[3]}

mkdir -p "$TMP/logs"
# shellcheck source=../../scripts/lib/credentials.sh
. "$ROOT/scripts/lib/credentials.sh"
make_credentials "$TMP/tokens" admin || fail "cannot make the tokens and keys"
TOK=$TMP/tokens
TOKEN=$(cat "$TOK/admin")

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
  tail -n 20 "$TMP/logs/$1.log"; fail "$1 did not start"
}
dump_logs() { for l in "$TMP"/logs/*.log; do echo "== $l"; tail -n 15 "$l"; done; }

start registry "$BIN/services/registry/registry" --listen="$REGISTRY" --db_dsn="$DSN" \
  --metrics_address= --dispatcher_public_key_file="$TOK/dispatcher.pub" \
  --admin_token_file="$TOK/admin"
wait_port registry "$REGISTRY"
start dispatcher "$BIN/services/dispatcher/dispatcher" --listen="$DISPATCHER" --db_dsn="$DSN" \
  --metrics_address= --registry_target="$REGISTRY" --signing_key_file="$TOK/dispatcher.key" \
  --scheduler_public_key_file="$TOK/scheduler.pub"
wait_port dispatcher "$DISPATCHER"
start scheduler "$BIN/services/scheduler/scheduler" --listen="$SCHEDULER" --db_dsn="$DSN" \
  --metrics_address= --dispatcher_target="$DISPATCHER" --admin_token_file="$TOK/admin" \
  --signing_key_file="$TOK/scheduler.key"
wait_port scheduler "$SCHEDULER"
start console "$BIN/services/console/console" --listen="$CONSOLE" --metrics_address= \
  --scheduler_target="$SCHEDULER" --registry_target="$REGISTRY" --log_json
wait_port console "$CONSOLE"

# A job made over gRPC (disabled: there is no executor), to be found through the console.
NAME="buf-curl-$$"
cat >"$TMP/job.json" <<EOT
{"app": "demo", "name": "$NAME", "handler": "echo",
 "schedule": {"cron": {"expression": "0 0 3 * * ?", "timeZone": "UTC"}},
 "routingStrategy": "ROUTING_STRATEGY_ROUND", "enabled": false}
EOT
"$BIN/tools/jobwheelctl/jobwheelctl" --scheduler="$SCHEDULER" --registry="$REGISTRY" \
  --token_file="$TOK/admin" jobs ensure \
  --file="$TMP/job.json" >>"$TMP/logs/jobwheelctl.log" 2>&1 ||
  { dump_logs; fail "jobwheelctl jobs ensure failed"; }

URL="http://$CONSOLE/jobwheel.v1.JobAdminService/ListJobs"
# --schema proto: the request and response types come from our .proto files (the console
# offers no reflection).
out=$("${BUF[@]}" curl --protocol connect --schema proto -H "Authorization: Bearer $TOKEN" \
      -d '{}' "$URL" 2>"$TMP/buf.err")
rc=$?
if [ "$rc" != 0 ] || ! grep -q "\"$NAME\"" <<<"$out"; then
  echo "$out"; cat "$TMP/buf.err"; dump_logs
  fail "buf curl ListJobs with the admin token (exit $rc) did not list job $NAME"
fi
echo "check_buf_curl: ok: buf curl --protocol connect lists job $NAME with the admin token"

"${BUF[@]}" curl --protocol connect --schema proto -d '{}' "$URL" >"$TMP/anon.out" 2>"$TMP/anon.err"
rc=$?
if [ "$rc" = 0 ] || ! grep -q "unauthenticated" "$TMP/anon.out" "$TMP/anon.err"; then
  cat "$TMP/anon.out" "$TMP/anon.err"; dump_logs
  fail "buf curl ListJobs without a token (exit $rc) was not refused as unauthenticated"
fi
echo "check_buf_curl: ok: without a token buf curl is refused as unauthenticated"

if grep -qF "$TOKEN" "$TMP/logs/console.log"; then fail "the admin token appears in the console log"; fi
echo "check_buf_curl: passed"
