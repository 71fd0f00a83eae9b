#!/usr/bin/env bash
# The HTTP demo of scripts/up on free ports, through scripts/lib/stack.sh: registry,
# dispatcher and scheduler on a fresh test database, the demo endpoint
# (stack_start_http_demo_endpoint), the HTTP executor of app http allowed to reach only that
# endpoint (stack_start_http_executor) and the demo jobs (stack_http_demo_jobs). Checks that
# http-ping SUCCEEDS with the endpoint's answer in its log, and that a trigger of
# http-metadata-refused FAILS naming rule "metadata". Needs the binaries built
# (bazel build //...). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1

CHECK_NAME=http_demo
# shellcheck source=scripts/lib/check.sh
. "$ROOT/scripts/lib/check.sh"
for tool in /usr/bin/python3 psql curl; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done
# shellcheck source=scripts/lib/stack.sh
. "$ROOT/scripts/lib/stack.sh"
stack_need_bins services/registry/registry services/dispatcher/dispatcher \
  services/scheduler/scheduler services/http_executor/http_executor tools/jobwheelctl/jobwheelctl ||
  skip "$STACK_ERROR (run bazel build //... first)"
stack_init http_demo || fail "$STACK_ERROR"
stack_pick_ports REG SCHED DISP HEXEC EPORT || fail "$STACK_ERROR"
stack_make_secrets admin executor || fail "$STACK_ERROR"
stack_pg_test_db http_demo || skip "$STACK_ERROR"
stack_start_ready registry registry "127.0.0.1:$REG" || fail "$STACK_ERROR"
stack_start_ready dispatcher dispatcher "127.0.0.1:$DISP" "127.0.0.1:$REG" || fail "$STACK_ERROR"
stack_start_ready scheduler scheduler "127.0.0.1:$SCHED" "127.0.0.1:$DISP" || fail "$STACK_ERROR"
stack_start_http_demo_endpoint http_demo_endpoint "127.0.0.1:$EPORT" "$STACK_DIR/http-demo" ||
  fail "$STACK_ERROR"
stack_start_ready http_executor http_executor "127.0.0.1:$HEXEC" http "127.0.0.1:$REG" \
  "127.0.0.1:$DISP" --allow_hosts="127.0.0.1:$EPORT" || fail "$STACK_ERROR"
stack_http_demo_jobs "127.0.0.1:$EPORT" "$STACK_DIR/http-demo" || fail "$STACK_ERROR"

# Run statuses (common/pg/sql_enums.h): 3 SUCCEEDED, 4 FAILED.
run=""
for _ in $(seq 1 100); do
  run=$(stack_sql "SELECT r.id FROM runs r JOIN jobs j ON j.id = r.job_id
    WHERE j.name = 'http-ping' AND r.status = 3 ORDER BY r.id LIMIT 1")
  [ -n "$run" ] && break
  sleep 0.2
done
[ -n "$run" ] || fail "no SUCCEEDED run of http-ping within 20 s"
log=$(stack_ctl runs log "$run" 2>&1) || fail "runs log $run: $log"
grep -q "HTTP 200 from http://127.0.0.1:$EPORT/ping.txt" <<<"$log" || fail "run $run's log: $log"
grep -q "| pong from the jobwheel demo endpoint" <<<"$log" || fail "run $run's log lacks the body: $log"
echo "ok   - http-ping run $run SUCCEEDED with the status and body in its log"

job=$(stack_sql "SELECT id FROM jobs WHERE name = 'http-metadata-refused'")
[ -n "$job" ] || fail "no job http-metadata-refused"
stack_ctl jobs trigger "$job" >/dev/null 2>&1 || fail "jobs trigger $job"
msg=""
for _ in $(seq 1 100); do
  msg=$(stack_sql "SELECT result_message FROM runs WHERE job_id = $job AND status = 4 LIMIT 1")
  [ -n "$msg" ] && break
  sleep 0.2
done
[ -n "$msg" ] || fail "no FAILED run of http-metadata-refused within 20 s"
grep -q 'refused by rule "metadata"' <<<"$msg" || fail "http-metadata-refused failed otherwise: $msg"
echo "ok   - http-metadata-refused FAILED: $msg"
echo "http_demo: all passed"
