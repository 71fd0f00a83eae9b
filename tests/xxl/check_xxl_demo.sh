#!/usr/bin/env bash
# The XXL demo of scripts/up on free ports, through scripts/lib/stack.sh: the registry,
# dispatcher and scheduler on a fresh test database, the XXL gateway (stack_start_xxl_gateway)
# and the XXL-protocol test executor of app demo-xxl (stack_start_xxl_executor) with an
# EXECUTOR token of that app, and the demo job tests/xxl/demo-xxl-echo.json. Checks that the
# executor is listed online with its protocol, that its runs SUCCEED and that a run's log reads
# through `jobwheelctl runs log` (the gateway's /log). Needs the binaries built
# (bazel build //...). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1

CHECK_NAME=xxl_demo
# shellcheck source=scripts/lib/check.sh
. "$ROOT/scripts/lib/check.sh"
for tool in /usr/bin/python3 psql curl; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done
# shellcheck source=scripts/lib/stack.sh
. "$ROOT/scripts/lib/stack.sh"
stack_need_bins services/registry/registry services/dispatcher/dispatcher \
  services/scheduler/scheduler services/xxl_gateway/xxl_gateway tools/jobwheelctl/jobwheelctl ||
  skip "$STACK_ERROR (run bazel build //... first)"
stack_init xxl_demo || fail "$STACK_ERROR"
stack_pick_ports REG SCHED DISP GW XPORT XP || fail "$STACK_ERROR"
stack_make_secrets admin executor || fail "$STACK_ERROR"
stack_pg_test_db xxl_demo || skip "$STACK_ERROR"
stack_start_ready registry registry "127.0.0.1:$REG" || fail "$STACK_ERROR"
stack_start_ready dispatcher dispatcher "127.0.0.1:$DISP" "127.0.0.1:$REG" || fail "$STACK_ERROR"
stack_start_ready scheduler scheduler "127.0.0.1:$SCHED" "127.0.0.1:$DISP" || fail "$STACK_ERROR"

stack_ensure_app demo-xxl || fail "$STACK_ERROR"
(umask 077 && stack_ctl tokens create --name=xxl-demo --role=executor --apps=demo-xxl \
  >"$STACK_TOK/xxl-demo") || fail "jobwheelctl tokens create"
stack_start_ready xxl_gateway xxl_gateway "127.0.0.1:$GW" "$XPORT-$XPORT" "127.0.0.1:$REG" \
  "127.0.0.1:$DISP" --app_handlers="demo-xxl=echo" || fail "$STACK_ERROR"
stack_start_ready xxl_executor xxl_executor "$XP" demo-xxl "http://127.0.0.1:$GW/xxl-job-admin" \
  "$STACK_TOK/xxl-demo" --envelope=2 || fail "$STACK_ERROR"

online=""
for _ in $(seq 1 100); do
  online=$(stack_sql "SELECT labels->>'jobwheel.protocol' FROM executors
    WHERE app = 'demo-xxl' AND address = '127.0.0.1:$XPORT' AND online" 2>/dev/null || true)
  [ "$online" = "xxl-job" ] && break
  sleep 0.2
done
[ "$online" = "xxl-job" ] || fail "the demo XXL executor is not online as 127.0.0.1:$XPORT (protocol '$online')"
echo "ok   - demo-xxl executor online as 127.0.0.1:$XPORT, protocol xxl-job"

stack_ctl jobs ensure --file="$ROOT/tests/xxl/demo-xxl-echo.json" >/dev/null ||
  fail "jobs ensure tests/xxl/demo-xxl-echo.json"
run=""
for _ in $(seq 1 75); do
  run=$(stack_sql "SELECT id FROM runs WHERE app = 'demo-xxl' AND status = 3 ORDER BY id LIMIT 1")
  [ -n "$run" ] && break
  sleep 0.2
done
[ -n "$run" ] || fail "no SUCCEEDED run of the demo job within 15 s"
echo "ok   - run $run of the demo job SUCCEEDED"
log=$(stack_ctl runs log "$run" 2>&1) || fail "runs log $run: $log"
grep -q "hello from an XXL-JOB executor" <<<"$log" || fail "run $run's log lacks the param: $log"
echo "ok   - its log reads through the gateway"
echo "xxl_demo: all passed"
