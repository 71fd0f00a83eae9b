#!/usr/bin/env bash
# The chaos suite's database failover scenario (issue 25; `scripts/chaos --scenario=pg_failover`):
# the stack on a highly available PostgreSQL — three PostgreSQL members run by Patroni on etcd,
# synchronous_mode on, started and stopped through scripts/lib/patroni.sh, the helper
# tests/ha:pg_failover_test uses too — under CHAOS_PGF_JOBS (2,000) jobs firing every second.
# Faults: kill -9 of the primary's node (its Patroni and postmaster: a standby is promoted once
# the leader key expires, ttl 10 s), the node rejoining, then a planned `patronictl switchover`.
# Counted by tests/chaos/check.py --fired_only (a second stands only by a dispatched fire of its
# own: the schedulers run with --misfire_threshold=120s, longer than the outage, so a fire shed
# or skipped as a misfire counts as lost), with the executions counted on the executors' run
# logs. Ends with
#   pg_failover: mode=sync kills=1 switchovers=1 fires_per_s=N resume_s=S lost=0 executed_twice=0 results_lost=0 nonterminal=0
# (resume_s: the longest pause in hand-offs to the dispatcher around either fault). Exit status 0
# when every count is 0 and firing resumed within 30 s of each fault; 77 (skip) when Patroni or
# etcd is not installed (scripts/setup --test installs them).
#
# Topology on loopback: the Patroni cluster, 1 registry, 1 dispatcher, 2 schedulers, 2 demo
# executors (app "chaos"), all given the cluster's multi-host DSN (target_session_attrs=
# read-write). Knobs: CHAOS_PGF_JOBS (2000), CHAOS_PGF_STEADY (5 s of steady firing between
# faults), CHAOS_SETTLE (120 s), CHAOS_KEEP_TMP. Takes about 3 minutes.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
HERE="$ROOT/tests/chaos"
JOBS=${CHAOS_PGF_JOBS:-2000}
STEADY=${CHAOS_PGF_STEADY:-5}
SETTLE=${CHAOS_SETTLE:-120}
APP=chaos
START=$SECONDS

say() { printf '[%4ds %s] %s\n' "$((SECONDS - START))" "$(date -u +%T)" "$*"; }
die() { say "ABORT - $*"; echo "pg_failover: aborted: $*"; exit 1; }
FAILED=0
fail() { say "FAIL - $*"; FAILED=1; }

# shellcheck source=scripts/lib/patroni.sh
. "$ROOT/scripts/lib/patroni.sh"
# shellcheck source=scripts/lib/stack.sh
. "$ROOT/scripts/lib/stack.sh"
if ! patroni_available; then
  echo "pg_failover: skipped: $PATRONI_ERROR"
  exit 77
fi
stack_need_bins services/registry/registry services/dispatcher/dispatcher \
  services/scheduler/scheduler sdk/examples/demo_executor tools/jobwheelctl/jobwheelctl ||
  die "$STACK_ERROR: run scripts/chaos (it builds them)"

STACK_KEEP_ON_FAILURE=1
STACK_LOGS_ON_FAILURE=0
[ -z "${CHAOS_KEEP_TMP:-}" ] || STACK_KEEP_DIR=1
stack_init chaos_pgf || die "$STACK_ERROR"
TMP=$STACK_DIR
CLUSTER="$TMP/patroni"
# The stack stops first, then the cluster (stack.sh's own trap then finds nothing left).
CLUSTER_UP=0
stop_cluster() { [ "$CLUSTER_UP" = 0 ] || { patroni_stop "$CLUSTER"; CLUSTER_UP=0; }; }
trap 'rc=$?; stack_stop; stop_cluster; _stack_on_exit $rc' EXIT
trap 'say "interrupted"; echo "pg_failover: aborted: interrupted"; exit 130' INT TERM
stack_make_secrets admin executor || die "$STACK_ERROR"
stack_pick_ports REG DISP S1 S2 E1 E2 || die "$STACK_ERROR"

say "== a Patroni cluster: 3 members, synchronous_mode"
CLUSTER_UP=1
patroni_start "$CLUSTER" 3 sync || die "patroni: $PATRONI_ERROR"
# shellcheck disable=SC1091
. "$(_patroni_real_dir "$CLUSTER")/cluster.env"
STACK_DSN=$PATRONI_DSN
say "primary $(patroni_primary "$CLUSTER"), DSN: $STACK_DSN"
sql() { stack_sql "$1" 2>/dev/null; }

say "== the stack"
stack_start_ready registry registry "127.0.0.1:$REG" || die "$STACK_ERROR"
stack_start_ready dispatcher dispatcher "127.0.0.1:$DISP" "ipv4:127.0.0.1:$REG" ||
  die "$STACK_ERROR"
# A failover takes the database away for ~10 s: the fires due meanwhile go out late, and must
# still go out.
for s in 1 2; do
  port_var=S$s
  stack_start_ready scheduler "sched$s" "127.0.0.1:${!port_var}" "ipv4:127.0.0.1:$DISP" \
    --replica_id="sched$s" --misfire_threshold=120s || die "$STACK_ERROR"
done
for e in 1 2; do
  port_var=E$e
  stack_start_executor "exec$e" "127.0.0.1:${!port_var}" "$APP" "127.0.0.1:$REG" \
    "127.0.0.1:$DISP" || die "$STACK_ERROR"
  stack_wait_ready "exec$e" 30 || die "$STACK_ERROR"
done

leader_epoch() {  # the schedule lock's epoch (0 while no primary answers)
  local e
  e=$(sql "SELECT COALESCE(max(epoch), 0) FROM leadership")
  echo "${e:-0}"
}
await() {  # await SECONDS SQL: until SQL prints t; false at the deadline
  local deadline=$((SECONDS + $1))
  while [ "$SECONDS" -lt "$deadline" ]; do
    [ "$(sql "$2")" = t ] && return 0
    sleep 0.5
  done
  return 1
}
await_epoch_above() {  # await_epoch_above EPOCH: until a scheduler leads with a higher one (30 s)
  local deadline=$((SECONDS + 30))
  until [ "$(leader_epoch)" -gt "$1" ]; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}
ts() { date -u -d "@$1" '+%Y-%m-%d %H:%M:%S.%6N+00'; }
handed_off_after() {  # fires handed off after unix time $1 reach $2
  await 40 "SELECT count(*) >= $2 FROM fires WHERE status = 2 AND dispatch_time > '$(ts "$1")'"
}
resume_after() {  # seconds from unix time $1 to the first hand-off of a fire due after it
  local first
  await 60 "SELECT EXISTS (SELECT 1 FROM fires WHERE status = 2 AND scheduled_at > '$(ts "$1")')" ||
    { echo 60; return; }
  first=$(sql "SELECT EXTRACT(EPOCH FROM min(dispatch_time)) FROM fires WHERE status = 2 AND scheduled_at > '$(ts "$1")'")
  python3 -c "print(round($first - $1, 1))"
}
pause_around() {  # the longest gap between consecutive hand-offs from 1 s before $1 to 60 s after
  sql "SELECT COALESCE(round(EXTRACT(EPOCH FROM max(gap))::numeric, 1), 0) FROM (SELECT dispatch_time - lag(dispatch_time) OVER (ORDER BY dispatch_time) AS gap FROM fires WHERE status = 2 AND dispatch_time BETWEEN '$(ts "$(python3 -c "print($1 - 1)")")' AND '$(ts "$(python3 -c "print($1 + 60)")")') g"
}

await_epoch_above 0 || die "no scheduler leads within 30 s"
EPOCH0=$(leader_epoch)

say "== $JOBS jobs firing every second"
first=$(($(date +%s) + 3))
# Created one second before their first fire (check.py expects every second after creation).
sql "INSERT INTO jobs (app, name, schedule_kind, cron_expression, time_zone, handler, misfire_strategy, routing_strategy, enabled, next_fire_at, create_time) SELECT '$APP', 'pgf-' || g, 'CRON', '* * * * * ?', 'UTC', 'echo', 1, 3, true, to_timestamp($first), to_timestamp($first - 1) FROM generate_series(1, $JOBS) AS g" >/dev/null ||
  die "cannot create the jobs: $(stack_sql "SELECT 1" 2>&1 | tail -n 2)"
handed_off_after "$first" $((4 * JOBS)) || die "the schedule never reached steady firing"
await 30 "SELECT count(DISTINCT executor_address) = 2 FROM runs" || fail "the runs did not reach both executors"
sleep "$STEADY"

say "== kill -9 of the primary's node"
killed=$(patroni_kill_primary "$CLUSTER") || die "$PATRONI_ERROR"
killed_at=$(date +%s.%N)  # (finding the primary took a moment: the kill is now)
say "killed $killed"
resume_kill=$(resume_after "$killed_at")
say "fires due after the kill handed off $resume_kill s after it"
await_epoch_above "$EPOCH0" || fail "no scheduler leads with an epoch above $EPOCH0"
EPOCH1=$(leader_epoch)
patroni_start_member "$CLUSTER" "$killed"
steady=$(date +%s)
handed_off_after "$steady" $((3 * JOBS)) || fail "firing did not settle after the kill"
sleep "$STEADY"

say "== planned switchover"
switched_at=$(date +%s.%N)
new_primary=$(patroni_switchover "$CLUSTER") || die "$PATRONI_ERROR"
say "switched over to $new_primary"
resume_switch=$(resume_after "$switched_at")
say "fires due after the switchover began handed off $resume_switch s after it"
await_epoch_above "$EPOCH1" || fail "no scheduler leads with an epoch above $EPOCH1"
steady=$(date +%s)
handed_off_after "$steady" $((3 * JOBS)) || fail "firing did not settle after the switchover"
sleep "$STEADY"

CUT=$(date +%s.%N)
say "== cut: the jobs disabled"
sql "UPDATE jobs SET enabled = false WHERE app = '$APP'" >/dev/null || fail "cannot disable the jobs"
await "$SETTLE" "SELECT NOT EXISTS (SELECT 1 FROM fires WHERE status = 1) AND NOT EXISTS (SELECT 1 FROM runs WHERE status IN (1, 2))" ||
  say "not settled within $SETTLE s; counting anyway"
sleep 1  # The executors flush their run logs.
pause_kill=$(pause_around "$killed_at")
pause_switch=$(pause_around "$switched_at")
resume_s=$(python3 -c "print(max($pause_kill, $pause_switch))")
say "hand-offs paused $pause_kill s around the kill, $pause_switch s around the switchover; epochs $EPOCH0 -> $EPOCH1 -> $(leader_epoch)"
python3 -c "import sys; sys.exit(0 if max($resume_kill, $resume_switch, $resume_s) <= 30 else 1)" ||
  fail "firing resumed later than 30 s after a fault"

python3 "$HERE/check.py" --psql="$STACK_DSN" --app="$APP" --cut="$CUT" --fired_only \
  --exec_dirs="$TMP/executors/exec1,$TMP/executors/exec2" \
  --line="pg_failover: mode=sync kills=1 switchovers=1 fires_per_s=$JOBS resume_s=$resume_s" \
  >"$TMP/check.out" 2>&1
RESULT=$?
CHECK_OUT=$(cat "$TMP/check.out" 2>/dev/null)
stack_stop
stop_cluster
if [ "$RESULT" = 0 ] && [ "$FAILED" = 0 ]; then stack_release_dir 0; else stack_release_dir 1; fi
say "done in $((SECONDS - START)) s"
if [ -n "$CHECK_OUT" ]; then echo "$CHECK_OUT"; else echo "pg_failover: the checker produced no output"; fi
[ "$RESULT" = 0 ] && [ "$FAILED" = 0 ]
