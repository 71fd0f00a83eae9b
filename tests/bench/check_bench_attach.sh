#!/usr/bin/env bash
# `scripts/bench --attach` never deletes or changes data it did not create. Starts a small
# stack (private PostgreSQL, registry, dispatcher, scheduler, demo executor) on free loopback
# ports in a temporary directory, lets a user's every-second job produce fires and runs,
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
BIN="$ROOT/bazel-bin"
START=$SECONDS

skip() { echo "check_bench_attach: skipped: $*"; exit 77; }
fail() { echo "check_bench_attach: FAIL: $*"; exit 1; }

for b in services/registry/registry services/dispatcher/dispatcher services/scheduler/scheduler \
         sdk/examples/demo_executor tools/jobwheelctl/jobwheelctl bench/bench \
         bench/bench_executor; do
  [ -x "$BIN/$b" ] || skip "bazel-bin/$b is missing (build it first)"
done
for tool in python3 psql; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed"
done
# shellcheck source=../../scripts/lib/pg.sh
. "$ROOT/scripts/lib/pg.sh"
# shellcheck source=../../scripts/lib/credentials.sh
. "$ROOT/scripts/lib/credentials.sh"
[ -x "$PG_BIN/initdb" ] || skip "PostgreSQL server binaries not found (PG_BIN=$PG_BIN)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/jobwheel-bench-attach.XXXXXX")" || skip "mktemp failed"
chmod 755 "$TMP"  # As root the PostgreSQL server runs as `postgres` and must reach it.
mkdir -p "$TMP/logs" "$TMP/tokens" "$TMP/executor" "$TMP/results"
chmod 700 "$TMP/tokens"
PIDS=()
cleanup() {
  trap - EXIT INT TERM
  local i p
  # The executor first, so it deregisters while the registry is still there.
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[$i]}" 2>/dev/null; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  pg_stop "$TMP/pg"
  if [ -n "${JOBWHEEL_CHECK_KEEP_TMP:-}" ]; then echo "kept $TMP"; return; fi
  if [ -L "$TMP/pg" ]; then rm -rf "$(readlink "$TMP/pg")"; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

read -r PG_PORT REG_PORT DISP_PORT DISP_MPORT SCHED_PORT SCHED_MPORT EXEC_PORT EXEC_MPORT \
  < <(python3 - <<'PY'
import socket
socks = []
for _ in range(8):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
)
[ -n "${EXEC_MPORT:-}" ] || skip "could not pick free ports"

pg_start "$TMP/pg" "$PG_PORT" >"$TMP/logs/pg_start.log" 2>&1 &&
  pg_ensure_db "$PG_PORT" jobwheel >>"$TMP/logs/pg_start.log" 2>&1 ||
  { cat "$TMP/logs/pg_start.log"; skip "a private PostgreSQL did not start"; }
DSN="host=127.0.0.1 port=$PG_PORT user=postgres dbname=jobwheel"
sql() { psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d jobwheel -qtAX -v ON_ERROR_STOP=1 -c "$1"; }

make_credentials "$TMP/tokens" admin executor || fail "cannot make the tokens and keys"
TOK="$TMP/tokens"

start() {  # start NAME PORT COMMAND...: runs COMMAND, waits until PORT accepts (20 s)
  local name=$1 port=$2; shift 2
  "$@" >"$TMP/logs/$name.log" 2>&1 &
  PIDS+=($!)
  local deadline=$((SECONDS + 20))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    kill -0 "${PIDS[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 20 "$TMP/logs/$name.log"
  fail "$name did not start"
}

start registry "$REG_PORT" "$BIN/services/registry/registry" --listen="127.0.0.1:$REG_PORT" \
  --db_dsn="$DSN" --metrics_address=127.0.0.1:0 --executor_token_file="$TOK/executor" \
  --dispatcher_public_key_file="$TOK/dispatcher.pub" --admin_token_file="$TOK/admin"
start dispatcher "$DISP_PORT" "$BIN/services/dispatcher/dispatcher" \
  --listen="127.0.0.1:$DISP_PORT" --db_dsn="$DSN" --metrics_address="127.0.0.1:$DISP_MPORT" \
  --registry_target="127.0.0.1:$REG_PORT" --executor_token_file="$TOK/executor" \
  --signing_key_file="$TOK/dispatcher.key" --scheduler_public_key_file="$TOK/scheduler.pub"
start scheduler "$SCHED_PORT" "$BIN/services/scheduler/scheduler" \
  --listen="127.0.0.1:$SCHED_PORT" --db_dsn="$DSN" --metrics_address="127.0.0.1:$SCHED_MPORT" \
  --dispatcher_target="127.0.0.1:$DISP_PORT" --admin_token_file="$TOK/admin" \
  --signing_key_file="$TOK/scheduler.key"
start demo_executor "$EXEC_PORT" "$BIN/sdk/examples/demo_executor" \
  --listen="127.0.0.1:$EXEC_PORT" --app=demo --registry_target="127.0.0.1:$REG_PORT" \
  --dispatcher_target="127.0.0.1:$DISP_PORT" --metrics_address="127.0.0.1:$EXEC_MPORT" \
  --log_dir="$TMP/executor/logs" --spool_dir="$TMP/executor/spool" \
  --executor_token_file="$TOK/executor" --dispatcher_public_key_file="$TOK/dispatcher.pub" \
  --scheduler_public_key_file="$TOK/scheduler.pub"

# The user's history: an every-second job on the demo executor.
cat >"$TMP/job.json" <<'JSON'
{"app": "demo", "name": "users-job", "handler": "echo", "param": "mine",
 "schedule": {"cron": {"expression": "* * * * * ?", "timeZone": "UTC"}},
 "routingStrategy": "ROUTING_STRATEGY_FIRST", "enabled": true}
JSON
"$BIN/tools/jobwheelctl/jobwheelctl" --scheduler="127.0.0.1:$SCHED_PORT" \
  --registry="127.0.0.1:$REG_PORT" --token_file="$TOK/admin" \
  jobs create --file="$TMP/job.json" \
  >"$TMP/logs/jobwheelctl.log" 2>&1 || { cat "$TMP/logs/jobwheelctl.log"; fail "could not create the user's job"; }
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
