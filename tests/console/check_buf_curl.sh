#!/usr/bin/env bash
# A third-party Connect client against the console: starts its own stack (a fresh database on
# the test PostgreSQL, registry, dispatcher, scheduler, console on free ports; see
# scripts/lib/stack.sh), creates a job with jobwheelctl, then runs `buf curl --protocol
# connect` (the Buf CLI from npm) through the console: with the admin token the job comes back;
# without a token the call is refused as unauthenticated. Exit 0: passed; 1: failed; 77: could
# not run (the reason on one line).
# Assumes `bazel build //services/... //sdk/examples:demo_executor //tools/jobwheelctl` ran.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
BUF=(npx --yes --cache "$ROOT/.data/npm" @bufbuild/buf@1.75.0)

CHECK_NAME=check_buf_curl
# shellcheck source=scripts/lib/check.sh
. "$ROOT/scripts/lib/check.sh"
# shellcheck source=scripts/lib/stack.sh
. "$ROOT/scripts/lib/stack.sh"
command -v npx >/dev/null || skip "npx is not installed (scripts/setup installs node/npm)"
command -v psql >/dev/null || skip "psql is not installed"
command -v curl >/dev/null || skip "curl is not installed (scripts/setup installs it)"
stack_need_bins services/console/console services/scheduler/scheduler \
  services/registry/registry services/dispatcher/dispatcher tools/jobwheelctl/jobwheelctl ||
  skip "$STACK_ERROR (bazel build //services/... //tools/jobwheelctl)"
"${BUF[@]}" --version >/dev/null 2>&1 || skip "npx could not fetch @bufbuild/buf@1.75.0 (offline?)"

stack_init check_buf_curl || skip "$STACK_ERROR"
stack_pg_test_db console_buf_curl || skip "$STACK_ERROR"
stack_make_secrets admin || fail "$STACK_ERROR"
stack_pick_ports REG DISP SCHED CONSOLE || skip "$STACK_ERROR"
REGISTRY=127.0.0.1:$REG DISPATCHER=127.0.0.1:$DISP SCHEDULER=127.0.0.1:$SCHED
CONSOLE=127.0.0.1:$CONSOLE
TOKEN=$(cat "$STACK_TOK/admin")

stack_start_ready registry registry "$REGISTRY" || fail "$STACK_ERROR"
stack_start_ready dispatcher dispatcher "$DISPATCHER" "$REGISTRY" || fail "$STACK_ERROR"
stack_start_ready scheduler scheduler "$SCHEDULER" "$DISPATCHER" || fail "$STACK_ERROR"
stack_start_ready console console "$CONSOLE" "$SCHEDULER" "$REGISTRY" --log_json ||
  fail "$STACK_ERROR"

# A job made over gRPC (disabled: there is no executor), to be found through the console.
NAME="buf-curl-$$"
cat >"$STACK_DIR/job.json" <<EOT
{"app": "demo", "name": "$NAME", "handler": "echo",
 "schedule": {"cron": {"expression": "0 0 3 * * ?", "timeZone": "UTC"}},
 "routingStrategy": "ROUTING_STRATEGY_ROUND", "enabled": false}
EOT
stack_ctl jobs ensure --file="$STACK_DIR/job.json" >>"$STACK_LOGS/jobwheelctl.log" 2>&1 ||
  fail "jobwheelctl jobs ensure failed"

URL="http://$CONSOLE/jobwheel.v1.JobAdminService/ListJobs"
# --schema proto: the request and response types come from our .proto files (the console
# offers no reflection).
out=$("${BUF[@]}" curl --protocol connect --schema proto -H "Authorization: Bearer $TOKEN" \
      -d '{}' "$URL" 2>"$STACK_DIR/buf.err")
rc=$?
if [ "$rc" != 0 ] || ! grep -q "\"$NAME\"" <<<"$out"; then
  echo "$out"; cat "$STACK_DIR/buf.err"
  fail "buf curl ListJobs with the admin token (exit $rc) did not list job $NAME"
fi
echo "check_buf_curl: ok: buf curl --protocol connect lists job $NAME with the admin token"

"${BUF[@]}" curl --protocol connect --schema proto -d '{}' "$URL" >"$STACK_DIR/anon.out" \
  2>"$STACK_DIR/anon.err"
rc=$?
if [ "$rc" = 0 ] || ! grep -q "unauthenticated" "$STACK_DIR/anon.out" "$STACK_DIR/anon.err"; then
  cat "$STACK_DIR/anon.out" "$STACK_DIR/anon.err"
  fail "buf curl ListJobs without a token (exit $rc) was not refused as unauthenticated"
fi
echo "check_buf_curl: ok: without a token buf curl is refused as unauthenticated"

if grep -qF "$TOKEN" "$STACK_LOGS/console.log"; then fail "the admin token appears in the console log"; fi
echo "check_buf_curl: passed"
