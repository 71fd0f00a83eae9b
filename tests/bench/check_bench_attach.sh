#!/usr/bin/env bash
# `scripts/bench --attach` never deletes or changes data it did not create. Starts a small
# stack (private PostgreSQL, registry, dispatcher, scheduler, demo executor) on free loopback
# ports in a temporary directory (scripts/lib/stack.sh), lets a user's every-second job produce fires and runs,
# records every fire and run row, runs `scripts/bench --attach` with a tiny throughput
# scenario against that stack, and checks that every earlier row is still there (finished
# ones byte for byte), the pending fires were not deleted (the user's job has a fire for every
# second, no gap), the user's job is untouched, and nothing of the bench's app is left.
#
# Exit 0 passed, 1 failed, 77 could not run (the reason is printed). Needs
# `bazel build //services/... //sdk/examples:demo_executor //tools/jobwheelctl //bench/...`.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 77
START=$SECONDS

CHECK_NAME=check_bench_attach
# shellcheck source=scripts/lib/check.sh
. "$ROOT/scripts/lib/check.sh"

# shellcheck source=scripts/lib/stack.sh
. "$ROOT/scripts/lib/stack.sh"
stack_need_bins services/registry/registry services/dispatcher/dispatcher \
  services/scheduler/scheduler sdk/examples/demo_executor tools/jobwheelctl/jobwheelctl \
  bench/bench bench/bench_executor || skip "$STACK_ERROR (build it first)"
for tool in python3 psql curl; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed"
done
[ -x "$PG_BIN/initdb" ] || skip "PostgreSQL server binaries not found (PG_BIN=$PG_BIN)"

[ -n "${JOBWHEEL_CHECK_KEEP_TMP:-}" ] && export STACK_KEEP_DIR=1
stack_init check_bench_attach || skip "$STACK_ERROR"
TMP=$STACK_DIR
mkdir -p "$TMP/results"
stack_pick_ports PG_PORT REG_PORT DISP_PORT DISP_MPORT SCHED_PORT EXEC_PORT || skip "$STACK_ERROR"
stack_pg_private "$PG_PORT" || skip "$STACK_ERROR"
DSN=$STACK_DSN
sql() { stack_sql "$1"; }
stack_make_secrets admin executor || fail "$STACK_ERROR"
TOK=$STACK_TOK

stack_start_ready registry registry "127.0.0.1:$REG_PORT" || fail "$STACK_ERROR"
stack_start_ready dispatcher dispatcher "127.0.0.1:$DISP_PORT" "127.0.0.1:$REG_PORT" \
  --metrics_address="127.0.0.1:$DISP_MPORT" || fail "$STACK_ERROR"
stack_start_ready scheduler scheduler "127.0.0.1:$SCHED_PORT" "127.0.0.1:$DISP_PORT" ||
  fail "$STACK_ERROR"
stack_start_ready executor demo_executor "127.0.0.1:$EXEC_PORT" demo "127.0.0.1:$REG_PORT" \
  "127.0.0.1:$DISP_PORT" || fail "$STACK_ERROR"

# The user's history: an every-second job on the demo executor.
cat >"$TMP/job.json" <<'JSON'
{"app": "demo", "name": "users-job", "handler": "echo", "param": "mine",
 "schedule": {"cron": {"expression": "* * * * * ?", "timeZone": "UTC"}},
 "routingStrategy": "ROUTING_STRATEGY_FIRST", "enabled": true}
JSON
stack_ctl jobs create --file="$TMP/job.json" >>"$TMP/logs/jobwheelctl.log" 2>&1 ||
  { cat "$TMP/logs/jobwheelctl.log"; fail "could not create the user's job"; }
USER_JOB=$(sql "SELECT id FROM jobs WHERE name = 'users-job'")
[ -n "$USER_JOB" ] || fail "the user's job is not in the database"

# Finished runs and fires still pending, both.
deadline=$((SECONDS + 20))
until [ "$(sql "SELECT count(*) FROM runs WHERE status = 3")" -ge 3 ] &&
      [ "$(sql "SELECT count(*) FROM fires WHERE status = 1")" -ge 1 ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "the user's job produced no finished runs and pending fires within 20s"
  sleep 0.2
done

# The snapshot: id, status and a digest of the whole row.
sql "SELECT id, status, md5(f::text) FROM fires f ORDER BY id" >"$TMP/fires.before"
sql "SELECT id, status, md5(r::text) FROM runs r ORDER BY id" >"$TMP/runs.before"
sql "SELECT md5(j::text) FROM (SELECT id, app, name, handler, param, schedule_kind, \
cron_expression, enabled FROM jobs ORDER BY id) j" >"$TMP/jobs.before"
FIRST_FIRE=$(sql "SELECT (EXTRACT(EPOCH FROM min(scheduled_at)))::BIGINT FROM fires WHERE job_id = $USER_JOB")
echo "check_bench_attach: before the bench: $(wc -l <"$TMP/fires.before") fires" \
  "($(awk -F'|' '$2 == 1' "$TMP/fires.before" | wc -l) pending), $(wc -l <"$TMP/runs.before") runs"

# The bench, attached to this stack, with a tiny load.
if ! JOBWHEEL_BENCH_NO_BUILD=1 JOBWHEEL_BENCH_DSN="$DSN" \
     JOBWHEEL_BENCH_REGISTRY="127.0.0.1:$REG_PORT" \
     JOBWHEEL_BENCH_DISPATCHER="127.0.0.1:$DISP_PORT" \
     JOBWHEEL_BENCH_DISPATCHER_METRICS_PORT="$DISP_MPORT" JOBWHEEL_BENCH_TOKEN_DIR="$TOK" \
     scripts/bench --attach --scenarios=throughput --jobs=20 --warmup=2s --duration=3s \
     --executors=1 --drain_timeout=20s --results_dir="$TMP/results" >"$TMP/logs/bench.log" 2>&1; then
  cat "$TMP/logs/bench.log"
  fail "scripts/bench --attach failed"
fi
grep '^throughput:' "$TMP/logs/bench.log" || fail "scripts/bench printed no throughput line"
sleep 1.5  # The user's job fires on; let its fires due during the bench finish.

failed=0
check() {  # check WHAT BEFORE_FILE AFTER_FILE OPEN_STATUS_TEST
  local what=$1 before=$2 after=$3 open=$4
  local missing changed
  missing=$(awk -F'|' 'NR == FNR { seen[$1] = 1; next } !($1 in seen)' "$after" "$before" | wc -l)
  # A row that had finished must be byte for byte the same; an open one may have moved on.
  changed=$(awk -F'|' -v open="$open" 'NR == FNR { now[$1] = $3; next }
    ($1 in now) && !($2 ~ open) && now[$1] != $3' "$after" "$before" | wc -l)
  if [ "$missing" -ne 0 ]; then echo "FAIL - $missing earlier $what rows are gone"; failed=1; fi
  if [ "$changed" -ne 0 ]; then echo "FAIL - $changed finished $what rows changed"; failed=1; fi
  if [ "$missing" -eq 0 ] && [ "$changed" -eq 0 ]; then
    echo "ok   - every earlier $what row is in place ($(wc -l <"$before"))"
  fi
}
sql "SELECT id, status, md5(f::text) FROM fires f ORDER BY id" >"$TMP/fires.after"
sql "SELECT id, status, md5(r::text) FROM runs r ORDER BY id" >"$TMP/runs.after"
check fire "$TMP/fires.before" "$TMP/fires.after" '^1$'
check run "$TMP/runs.before" "$TMP/runs.after" '^(1|2)$'

# Pending fires deleted under the scheduler would leave seconds without a fire.
LAST_FIRE=$(sql "SELECT (EXTRACT(EPOCH FROM max(scheduled_at)))::BIGINT FROM fires WHERE job_id = $USER_JOB AND status = 2")
DISTINCT=$(sql "SELECT count(DISTINCT scheduled_at) FROM fires WHERE job_id = $USER_JOB AND scheduled_at <= to_timestamp($LAST_FIRE)")
if [ "$DISTINCT" -eq $((LAST_FIRE - FIRST_FIRE + 1)) ]; then
  echo "ok   - the user's job has a fire for every second ($DISTINCT, through the bench)"
else
  echo "FAIL - the user's job has $DISTINCT fires over $((LAST_FIRE - FIRST_FIRE + 1)) seconds"
  failed=1
fi
sql "SELECT md5(j::text) FROM (SELECT id, app, name, handler, param, schedule_kind, \
cron_expression, enabled FROM jobs ORDER BY id) j" >"$TMP/jobs.after"
if cmp -s "$TMP/jobs.before" "$TMP/jobs.after"; then
  echo "ok   - the jobs are as before (the bench's own are gone)"
else
  echo "FAIL - the jobs table differs from before the bench"; failed=1
fi
LEFT=$(sql "SELECT (SELECT count(*) FROM jobs WHERE app LIKE 'bench-%') + \
(SELECT count(*) FROM fires f WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = f.job_id)) + \
(SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = r.job_id))")
if [ "$LEFT" -eq 0 ]; then echo "ok   - nothing of the bench's jobs is left"
else echo "FAIL - $LEFT rows of the bench's jobs are left"; failed=1; fi

REGS=$(sql "SELECT (SELECT count(*) FROM executors WHERE app LIKE 'bench-%') + \
(SELECT count(*) FROM apps WHERE name LIKE 'bench-%')")
if [ "$REGS" -eq 0 ]; then echo "ok   - no executor or app row of the bench's apps is left"
else echo "FAIL - $REGS executor/app rows of the bench's apps are left"; failed=1; fi

echo "check_bench_attach: $([ "$failed" = 0 ] && echo passed || echo FAILED) in $((SECONDS - START))s"
exit "$failed"
