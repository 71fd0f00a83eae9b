#!/usr/bin/env bash
# The chaos suite (reliability): under steady load it kills, stops and restarts every
# kind of process and PostgreSQL itself, then counts invariants 1-4 of docs/DESIGN.md in the
# database against the schedule. See docs/chaos.md.
#
# Topology, all on loopback ports picked at start, in a temporary directory:
#   private PostgreSQL, 2 registries, 2 dispatchers, 2 schedulers, 3 demo executors (app
#   "chaos"), with token files. Load: CHAOS_JOBS (250) cron jobs `* * * * * ?` (handler echo,
#   routing ROUND/RANDOM/FAILOVER/LEAST_RECENTLY_USED, misfire DO_NOTHING/FIRE_ONCE_NOW
#   alternating) plus CHAOS_SLOW_JOBS (10) whose runs sleep CHAOS_SLOW_MS (1500 ms, block
#   strategy DISCARD_LATER), created through JobAdminService with jobwheelctl.
# Phases (each followed by CHAOS_GAP seconds of recovery under load):
#   1. kill -9 the leader scheduler (a standby must take over), restart it
#   2. kill -9 each dispatcher in turn, restart it
#   3. kill -9 each registry in turn, restart it
#   4. kill -9 an executor, restart it at once with the same spool and log directories; kill -9
#      another and keep it down longer than --lost_run_after before restarting it
#   5. PostgreSQL down (pg_ctl stop -m immediate) for CHAOS_PG_OUTAGE seconds: every service
#      must keep answering grpc.health.v1 and both registries must keep listing the executors
#      from memory; then start it again and every service must recover
#   6. SIGSTOP for 10 s, then SIGCONT: the leader scheduler, a dispatcher, an executor
# Then faults in the network namespaces every process runs in (tests/chaos/net.sh):
#   7. the leader scheduler partitioned from PostgreSQL (a standby must take over)
#   8. an executor partitioned from both dispatchers while it runs a job
#   9. a registry replica partitioned from the executors (they stay online through the other)
#  10. PostgreSQL slowed by 200 ms per packet (tc netem, or tests/chaos/delay_proxy)
#  11. an executor's spool directory full (its tmpfs filled up), then freed and the executor
#      restarted with SIGTERM
# Without namespaces (not root, no iproute2) the stack runs on loopback and faults 7-10 are
# skipped (reported; under CI=true a skip fails the run).
# Then: pause every job (the cut time is taken just before), wait for everything to settle
# (no PENDING fire, no PENDING/RUNNING run, empty spools; bounded by CHAOS_SETTLE), count with
# tests/chaos/check.py, and end with
#   chaos: expected=N recorded=N lost=0 doubled=0 nonterminal=0 results_lost=0 executed_twice=0 slow_lost=0 partitions=K
# Exit status 0 only when every invariant and every liveness check held.
#
# The stack is started, restarted and stopped through scripts/lib/stack.sh. Needs the binaries
# built (scripts/chaos builds them), PostgreSQL's server binaries, psql, curl and python3. Knobs (environment): CHAOS_JOBS (250), CHAOS_SLOW_JOBS (10), CHAOS_SLOW_MS (1500),
# CHAOS_GAP (12 s), CHAOS_WARMUP (15 s), CHAOS_PG_OUTAGE (12 s), CHAOS_STOP (10 s),
# CHAOS_SETTLE (150 s), CHAOS_LOST_RUN_AFTER (15, seconds), CHAOS_PARTITION (15 s, each
# partition), CHAOS_PG_SLOW (15 s), CHAOS_SPOOL_FULL (10 s), CHAOS_NO_NETNS (run on loopback,
# network faults skipped), CHAOS_KEEP_TMP (keep the directory even when everything passed).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
BIN="$ROOT/bazel-bin"
HERE="$ROOT/tests/chaos"

JOBS=${CHAOS_JOBS:-250}
SLOW_JOBS=${CHAOS_SLOW_JOBS:-10}
SLOW_MS=${CHAOS_SLOW_MS:-1500}
GAP=${CHAOS_GAP:-12}
WARMUP=${CHAOS_WARMUP:-15}
PG_OUTAGE=${CHAOS_PG_OUTAGE:-12}
STOP_FOR=${CHAOS_STOP:-10}
SETTLE=${CHAOS_SETTLE:-150}
LOST_RUN_AFTER=${CHAOS_LOST_RUN_AFTER:-15}
EXEC_DOWN=$((LOST_RUN_AFTER + 5))
PART_FOR=${CHAOS_PARTITION:-15}
PG_SLOW_FOR=${CHAOS_PG_SLOW:-15}
SPOOL_FULL_FOR=${CHAOS_SPOOL_FULL:-10}
APP=chaos
START=$SECONDS

say() { printf '[%4ds %s] %s\n' "$((SECONDS - START))" "$(date -u +%T)" "$*"; }
tally_say() { say "$@"; }
# shellcheck source=scripts/lib/tally.sh
. "$ROOT/scripts/lib/tally.sh"
die() { say "ABORT - $*"; echo "chaos: aborted: $*"; exit 1; }

# shellcheck source=scripts/lib/stack.sh
. "$ROOT/scripts/lib/stack.sh"
stack_need_bins services/registry/registry services/dispatcher/dispatcher \
  services/scheduler/scheduler sdk/examples/demo_executor tools/jobwheelctl/jobwheelctl \
  tests/chaos/health_probe tests/chaos/delay_proxy || die "$STACK_ERROR: run scripts/chaos (it builds them)"
for tool in psql python3 curl; do
  command -v "$tool" >/dev/null || die "$tool is not installed (scripts/setup installs it)"
done
[ -x "$PG_BIN/initdb" ] || die "PostgreSQL server binaries not found (PG_BIN=$PG_BIN)"

# The directory is kept after a failure (and with CHAOS_KEEP_TMP); the end of the output is
# the checker's, so the logs are not printed.
STACK_KEEP_ON_FAILURE=1
STACK_LOGS_ON_FAILURE=0
[ -z "${CHAOS_KEEP_TMP:-}" ] || STACK_KEEP_DIR=1
stack_init chaos || die "$STACK_ERROR"
TMP=$STACK_DIR
mkdir -p "$TMP/jobs"
stack_make_secrets admin executor || die "$STACK_ERROR"
TOK=$STACK_TOK
trap 'say "interrupted (time budget or signal)"; echo "chaos: aborted: interrupted"; exit 130' INT TERM

declare -A PORT
NAMES=(reg1 reg2 disp1 disp2 sched1 sched2 exec1 exec2 exec3)
stack_pick_ports PG_PORT p1 p2 p3 p4 p5 p6 p7 p8 p9 || die "$STACK_ERROR"
i=1
for n in "${NAMES[@]}"; do v=p$i; PORT[$n]=${!v}; i=$((i + 1)); done

# Network namespaces: one per process (and one for PostgreSQL), on a private bridge.
# shellcheck source=tests/chaos/net.sh
. "$HERE/net.sh"
NETNS=0
FAULTS_SKIPPED=()
PARTITIONS=0
SPOOL_MNT=""
KILLS="$TMP/kills.txt"
: >"$KILLS"
# The stack stops first, then the mount and the namespaces go (the EXIT trap of stack.sh then
# finds nothing left to stop).
trap 'rc=$?; stack_stop; [ -z "$SPOOL_MNT" ] || umount -l "$SPOOL_MNT" 2>/dev/null; net_cleanup; _stack_on_exit $rc' EXIT
if [ -n "${CHAOS_NO_NETNS:-}" ]; then
  NET_WHY="CHAOS_NO_NETNS is set"
elif net_usable; then
  if net_setup pg "${NAMES[@]}"; then NETNS=1; else net_cleanup; fi
fi
if [ "$NETNS" = 1 ]; then
  for n in "${NAMES[@]}"; do STACK_PREFIX[$n]=${NET_EXEC[$n]}; done
  STACK_PREFIX[pgproxy]=${NET_EXEC[pg]}
  addr() { echo "${NET_IP[$1]}:${PORT[$1]}"; }
  say "network namespaces: $NET_PREFIX.0/24, host side $NET_PREFIX.1, PostgreSQL ${NET_IP[pg]}"
else
  addr() { echo "127.0.0.1:${PORT[$1]}"; }
  FAULTS_SKIPPED+=(partition_leader_pg partition_executor_dispatchers
                   partition_registry_executors pg_slow)
  say "no network namespaces (${NET_WHY:-setup failed}): all on loopback; network faults skipped"
fi
REGS="$(addr reg1),$(addr reg2)"
DISPS="$(addr disp1),$(addr disp2)"

PGDATA_DIR="$TMP/pg/pgdata"
sql() { stack_sql "$1" 2>/dev/null; }
now() { date +%s.%N; }

# (bounded: a partitioned scheduler may not answer)
CTL_BASE=(timeout 5 "$BIN/tools/jobwheelctl/jobwheelctl" --registry="$(addr reg1)"
          --token_file="$TOK/admin")
ctl() {  # ctl SCHEDULER_NAME ARGS...
  local s=$1; shift
  "${CTL_BASE[@]}" --scheduler="$(addr "$s")" "$@"
}
probe() { "$BIN/tests/chaos/health_probe" --timeout=2s "$@"; }

launch() {  # launch NAME: the first start of a service with its fixed flags
  local n=$1
  case $n in
    reg*) stack_start_registry "$n" "$(addr "$n")" --replica_id="$n" ;;
    disp*) stack_start_dispatcher "$n" "$(addr "$n")" "ipv4:$REGS" --replica_id="$n" ;;
    sched*)
      stack_start_scheduler "$n" "$(addr "$n")" "ipv4:$DISPS" --replica_id="$n" \
        --lost_run_after="${LOST_RUN_AFTER}s" ;;
    # Run logs and spool in $TMP/executors/NAME, kept across restarts (check.py reads them).
    exec*) stack_start_executor "$n" "$(addr "$n")" "$APP" "$REGS" "$DISPS" ;;
  esac
}

# wait_serving NAME [SECONDS]: grpc.health.v1 SERVING within the bound (20 s).
wait_serving() { stack_wait_ready "$1" "${2:-20}"; }

kill9() {  # kill9 NAME (at a random moment within the next second: fires come on the second)
  local n=$1
  sleep "0.$((RANDOM % 10))"
  kill -KILL "${STACK_PID[$n]}" 2>/dev/null
  # An executor's kill time: its runs in flight must be terminal soon after (slow_lost).
  case $n in exec*) echo "$n $(addr "$n") $(now)" >>"$KILLS" ;; esac
  wait "${STACK_PID[$n]}" 2>/dev/null
  echo "=== chaos: kill -9 $(date -u +%FT%T.%3NZ)" >>"$STACK_LOGS/$n.log"
  say "kill -9 $n (pid ${STACK_PID[$n]})"
}

restart() {  # restart NAME: the same command again, and wait until it serves
  stack_restart "$1"
  if wait_serving "$1" 30; then say "restarted $1 (pid ${STACK_PID[$1]})"; else fail "$1 did not restart"; fi
}

# Every process must be alive, except the ones a phase killed on purpose (already restarted).
# A process that died by itself is a failure; it is restarted so the suite can go on.
check_alive() {  # check_alive WHEN
  local n
  for n in "${NAMES[@]}" ${STACK_PID[pgproxy]:+pgproxy}; do
    if ! stack_alive "$n"; then
      wait "${STACK_PID[$n]}" 2>/dev/null; local rc=$?
      fail "$n exited by itself (status $rc) $1; last log lines:"
      tail -n 8 "$STACK_LOGS/$n.log" | sed 's/^/         /'
      restart "$n"
    fi
  done
}

leader() {  # prints the scheduler name whose LeadershipService says is_leader, else nothing
  local s
  for s in sched1 sched2; do
    if ctl "$s" --json leader 2>/dev/null | grep -q '"isLeader": *true'; then echo "$s"; return; fi
  done
}

wait_leader() {  # wait_leader SECONDS [NOT_NAME]: prints the leader's name (not NOT_NAME)
  # Each scheduler is asked, not just the first that says it leads: a leader cut off from
  # PostgreSQL still answers is_leader from memory after a standby took the lock over.
  local deadline=$((SECONDS + $1)) s
  while [ "$SECONDS" -lt "$deadline" ]; do
    for s in sched1 sched2; do
      [ "$s" = "${2:-}" ] && continue
      if ctl "$s" --json leader 2>/dev/null | grep -q '"isLeader": *true'; then
        echo "$s"
        return 0
      fi
    done
    sleep 0.25
  done
  return 1
}

# fires_since T: CRON/MISFIRE fire rows recorded after unix time T (the leader is firing).
fires_since() { sql "SELECT count(*) FROM fires WHERE trigger_type IN (1, 4) AND create_time > to_timestamp($1)"; }
# results_since T: runs finished by an executor's result after T.
results_since() { sql "SELECT count(*) FROM runs WHERE status = 3 AND end_time > to_timestamp($1)"; }

# expect_progress WHAT SECONDS: fires recorded and runs succeeding again within the bound.
expect_progress() {
  local what=$1 deadline=$((SECONDS + $2)) t f r
  t=$(now)
  while [ "$SECONDS" -lt "$deadline" ]; do
    f=$(fires_since "$t"); r=$(results_since "$t")
    if [ "${f:-0}" -gt 0 ] && [ "${r:-0}" -gt 0 ]; then
      ok "$what: fires recorded and runs succeeding again within $((SECONDS - deadline + $2)) s"
      return 0
    fi
    sleep 0.5
  done
  fail "$what: no progress within $2 s (new fires: ${f:-?}, new successes: ${r:-?})"
}

observe() {  # observe SECONDS: load keeps running; prints the recent rates
  sleep "$1"
  local rates
  rates=$(sql "SELECT (SELECT count(*) FROM fires WHERE scheduled_at > now() - interval '6 s' AND scheduled_at <= now() - interval '1 s'), (SELECT count(*) FROM runs WHERE end_time > now() - interval '5 s' AND status = 3)")
  say "  last 5 s: ${rates%%|*} fires due, ${rates##*|} runs succeeded"
}

############################################################################ start the stack
say "chaos: temporary directory $TMP"
# pg_up: PostgreSQL started (initialized the first time). With namespaces it runs in its own
# (listening on that namespace's loopback) behind tests/chaos/delay_proxy on its address.
pg_up() {
  ip netns exec "${NET_NS[pg]}" bash -c '. "$1/scripts/lib/pg.sh" && pg_start "$2" "$3" &&
    pg_ensure_db "$3" jobwheel' _ "$ROOT" "$TMP/pg" "$PG_PORT" >>"$TMP/logs/pg_start.log" 2>&1
}
if [ "$NETNS" = 1 ]; then
  pg_up || { tail -n 20 "$TMP/logs/pg_start.log"; die "PostgreSQL did not start in its namespace"; }
  STACK_PG_MODE=private  # stack_stop stops it
  STACK_PG_PORT=$PG_PORT
  stack_spawn pgproxy other "${NET_IP[pg]}:$PG_PORT" "$BIN/tests/chaos/delay_proxy" \
    --listen="${NET_IP[pg]}:$PG_PORT" --upstream="127.0.0.1:$PG_PORT" --delay_ms=200
  stack_wait_ready pgproxy 10 || die "the PostgreSQL proxy did not start"
  STACK_DSN="host=${NET_IP[pg]} port=$PG_PORT user=postgres dbname=jobwheel"
else
  stack_pg_private "$PG_PORT" || die "$STACK_ERROR"
fi
CHECK_DSN=$STACK_DSN
# Every service's connections give up after 3 s while PostgreSQL is down (phase 5).
STACK_DSN="$STACK_DSN connect_timeout=3"
say "PostgreSQL on ${STACK_DSN%% user=*}"

for n in reg1 reg2; do launch "$n"; wait_serving "$n" || die "$n did not start"; done
for n in disp1 disp2; do launch "$n"; wait_serving "$n" || die "$n did not start"; done
for n in sched1 sched2; do launch "$n"; wait_serving "$n" || die "$n did not start"; done
# exec2's spool is a small tmpfs of its own, so phase 11 can fill it up.
if mkdir -p "$TMP/executors/exec2/spool" &&
   mount -t tmpfs -o size=16m,mode=0700 chaos-spool "$TMP/executors/exec2/spool" 2>/dev/null; then
  SPOOL_MNT="$TMP/executors/exec2/spool"
else
  FAULTS_SKIPPED+=(spool_full)
  say "cannot mount a tmpfs for exec2's spool: the spool-full fault is skipped"
fi
for n in exec1 exec2 exec3; do launch "$n"; wait_serving "$n" || die "$n did not start"; done
say "stack up: registries $REGS, dispatchers $DISPS, schedulers $(addr sched1),$(addr sched2), executors $(addr exec1),$(addr exec2),$(addr exec3)"
LEADER=$(wait_leader 15) || die "no scheduler became leader"
say "leader: $LEADER"
deadline=$((SECONDS + 20))
while [ "$(sql "SELECT count(*) FROM executors WHERE app = '$APP' AND online")" != 3 ]; do
  [ "$SECONDS" -lt "$deadline" ] || die "the 3 executors did not register"
  sleep 0.2
done

############################################################################ load
STRATEGIES=(ROUTING_STRATEGY_ROUND ROUTING_STRATEGY_RANDOM ROUTING_STRATEGY_FAILOVER
            ROUTING_STRATEGY_LEAST_RECENTLY_USED)
MISFIRES=(MISFIRE_STRATEGY_DO_NOTHING MISFIRE_STRATEGY_FIRE_ONCE_NOW)
for ((j = 0; j < JOBS; j++)); do
  printf '{"app": "%s", "name": "chaos-%04d", "handler": "echo", "param": "chaos %d",
 "schedule": {"cron": {"expression": "* * * * * ?", "timeZone": "UTC"}},
 "routingStrategy": "%s", "misfireStrategy": "%s", "enabled": true}\n' \
    "$APP" "$j" "$j" "${STRATEGIES[$((j % 4))]}" "${MISFIRES[$((j % 2))]}" >"$TMP/jobs/$j.json"
done
# A few jobs whose runs take SLOW_MS, so runs are in flight whenever an executor is killed or
# stopped (their fate is invariant 3: they must end LOST or otherwise terminal).
for ((j = 0; j < SLOW_JOBS; j++)); do
  printf '{"app": "%s", "name": "chaos-slow-%04d", "handler": "sleep", "param": "%d",
 "schedule": {"cron": {"expression": "* * * * * ?", "timeZone": "UTC"}},
 "routingStrategy": "ROUTING_STRATEGY_ROUND", "blockStrategy": "BLOCK_STRATEGY_DISCARD_LATER",
 "misfireStrategy": "%s", "enabled": true}\n' \
    "$APP" "$j" "$SLOW_MS" "${MISFIRES[$((j % 2))]}" >"$TMP/jobs/slow-$j.json"
done
TOTAL_JOBS=$((JOBS + SLOW_JOBS))
say "creating $TOTAL_JOBS jobs (* * * * * ?): $JOBS with handler echo, $SLOW_JOBS with handler sleep $SLOW_MS ms"
t0=$SECONDS
if ! (cd "$TMP/jobs" && ls | xargs -P 8 -I{} sh -c \
      '"$0" --registry="$1" --token_file="$2" --scheduler="$3" jobs create --file="{}" >/dev/null || echo "create {} failed" >&2' \
      "$BIN/tools/jobwheelctl/jobwheelctl" "$(addr reg1)" "$TOK/admin" "$(addr sched1)"); then
  :
fi
created=$(sql "SELECT count(*) FROM jobs WHERE app = '$APP' AND enabled")
[ "$created" = "$TOTAL_JOBS" ] || die "created $created of $TOTAL_JOBS jobs"
say "created $TOTAL_JOBS jobs in $((SECONDS - t0)) s"
observe "$WARMUP"

############################################################################ chaos
say "== phase 1: kill -9 the leader scheduler ($LEADER)"
OLD=$LEADER
kill9 "$OLD"
t_kill=$(now)
if NEW=$(wait_leader 15 "$OLD"); then
  ok "leader failover: $NEW leads $(python3 -c "print(round($(now) - $t_kill, 2))") s after kill -9 of $OLD"
  LEADER=$NEW
else
  fail "no standby became leader within 15 s of kill -9 of $OLD"
fi
expect_progress "after leader kill" 15
restart "$OLD"
observe "$GAP"
check_alive "after phase 1"

say "== phase 2: kill -9 each dispatcher in turn"
for d in disp1 disp2; do
  kill9 "$d"
  sleep 3
  expect_progress "with $d dead" 15
  restart "$d"
  observe "$GAP"
done
check_alive "after phase 2"

say "== phase 3: kill -9 each registry in turn"
for r in reg1 reg2; do
  kill9 "$r"
  sleep 3
  expect_progress "with $r dead" 15
  restart "$r"
  deadline=$((SECONDS + 15))
  until [ "$(sql "SELECT count(*) FROM executors WHERE app = '$APP' AND online")" = 3 ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then fail "executors not all online 15 s after $r restarted"; break; fi
    sleep 0.2
  done
  observe "$GAP"
done
check_alive "after phase 3"

say "== phase 4: kill -9 executors, restart them on the same address, spool and logs"
# exec2 comes back at once: its in-flight runs are RUNNING on an address that is online again.
kill9 exec2
sleep 3
restart exec2
observe "$GAP"
# exec1 stays down longer than --lost_run_after: its in-flight runs must become LOST.
kill9 exec1
sleep "$EXEC_DOWN"
restart exec1
observe "$GAP"
check_alive "after phase 4"

say "== phase 5: PostgreSQL down for $PG_OUTAGE s (pg_ctl stop -m immediate), then up"
t_down=$(now)
pg_as_owner "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >>"$TMP/logs/pg_start.log" 2>&1 ||
  fail "pg_ctl stop -m immediate failed"
say "PostgreSQL stopped"
sleep 2
# While the database is down: every service answers health checks, the registries list the
# executors from memory, and the processes stay up.
# Registries and dispatchers report readiness (service "": NOT_SERVING without their database)
# and liveness (service "liveness": SERVING while the process serves); the schedulers and
# executors answer "" for both.
targets=()
for n in sched1 sched2 exec1 exec2 exec3; do targets+=("$(addr "$n")"); done
live=()
for n in reg1 reg2 disp1 disp2; do live+=("$(addr "$n")"); done
if out=$(probe "${targets[@]}" 2>&1) && out2=$(probe --service=liveness "${live[@]}" 2>&1); then
  ok "PostgreSQL down: all 9 services answer grpc.health.v1 SERVING (registries and dispatchers: liveness)"
else
  fail "PostgreSQL down: health checks: $(tr '\n' ';' <<<"$out ${out2:-}")"
fi
for r in reg1 reg2; do
  out=$("${CTL_BASE[@]}" --registry="$(addr "$r")" --scheduler="$(addr sched1)" executors list --app="$APP" 2>&1)
  cnt=$(grep -c "^$APP " <<<"$out")
  if [ "$cnt" = 3 ]; then
    ok "PostgreSQL down: $r ListExecutors answers from memory with the 3 executors"
  else
    fail "PostgreSQL down: $r ListExecutors: $cnt executors: $(tr '\n' ';' <<<"$out")"
  fi
done
for s in sched1 sched2; do
  if out=$(ctl "$s" leader 2>&1); then say "  PostgreSQL down: $s GetLeader: $out"
  else say "  PostgreSQL down: $s GetLeader fails (reads the database): $(tr '\n' ' ' <<<"$out")"; fi
done
rest=$(python3 -c "print(max(0.0, $PG_OUTAGE - ($(now) - $t_down)))")
sleep "$rest"
check_alive "while PostgreSQL was down"
if [ "$NETNS" = 1 ]; then pg_up; else pg_start "$TMP/pg" "$PG_PORT" >>"$TMP/logs/pg_start.log" 2>&1; fi ||
  die "PostgreSQL did not start again"
t_up=$(now)
say "PostgreSQL up again after $(python3 -c "print(round($t_up - $t_down, 1))") s"
expect_progress "after PostgreSQL restart" 30
deadline=$((SECONDS + 30))
until [ "$(sql "SELECT count(*) FROM executors WHERE app = '$APP' AND online AND last_beat_time > to_timestamp($t_up)")" = 3 ]; do
  if [ "$SECONDS" -ge "$deadline" ]; then fail "registries did not renew the 3 executors' leases within 30 s of the restart"; break; fi
  sleep 0.5
done
[ "$SECONDS" -lt "$deadline" ] && ok "registries renew the 3 executors' leases again"
for s in sched1 sched2; do
  deadline=$((SECONDS + 20))
  until ctl "$s" jobs list --app="$APP" --limit=1 >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then fail "$s JobAdminService ListJobs still failing 20 s after the restart"; break; fi
    sleep 0.5
  done
  [ "$SECONDS" -lt "$deadline" ] && ok "$s serves JobAdminService reads again after the restart"
done
LEADER=$(wait_leader 15) || fail "no leader after the PostgreSQL restart"
say "leader: ${LEADER:-none}"
observe "$GAP"
check_alive "after phase 5"

say "== phase 6: SIGSTOP for $STOP_FOR s, then SIGCONT"
LEADER=$(leader)
for n in ${LEADER:-sched1} disp1 exec3; do
  before=$(sql "SELECT holder_id || ' epoch ' || epoch FROM leadership")
  kill -STOP "${STACK_PID[$n]}"  # (stack_stop sends SIGCONT, should the suite end here)
  say "SIGSTOP $n"
  sleep "$STOP_FOR"
  after=$(sql "SELECT holder_id || ' epoch ' || epoch FROM leadership")
  kill -CONT "${STACK_PID[$n]}"
  say "SIGCONT $n (schedule lock: $before before, $after at the end of the freeze)"
  expect_progress "after SIGCONT of $n" 20
  sleep 3
done
observe "$GAP"
check_alive "after phase 6"

# running_on NAME: ids of the runs RUNNING on NAME's address (space separated).
running_on() {
  sql "SELECT id FROM runs WHERE status = 2 AND executor_address = '$(addr "$1")' ORDER BY id" | tr '\n' ' '
}
# wait_terminal SECONDS IDS...: whether those runs are all terminal within the bound.
wait_terminal() {
  local deadline=$((SECONDS + $1)) list
  shift
  [ $# -gt 0 ] || return 0
  list=$(IFS=,; echo "$*")
  while [ "$SECONDS" -lt "$deadline" ]; do
    [ "$(sql "SELECT count(*) FROM runs WHERE id IN ($list) AND status IN (1, 2)")" = 0 ] && return 0
    sleep 0.5
  done
  return 1
}
statuses() {  # statuses IDS...: "STATUS xN, ..." of those runs
  [ $# -gt 0 ] || return 0
  sql "SELECT status, count(*) FROM runs WHERE id IN ($(IFS=,; echo "$*")) GROUP BY 1 ORDER BY 1" |
    python3 -c 'import sys; n={"1":"PENDING","2":"RUNNING","3":"SUCCEEDED","4":"FAILED","5":"TIMED_OUT","6":"KILLED","7":"LOST","8":"DISCARDED"}; print(", ".join("%s x%s" % (n.get(a, a), b) for a, b in (l.strip().split("|") for l in sys.stdin if l.strip())))'
}

if [ "$NETNS" = 1 ]; then
  say "== phase 7: the leader scheduler partitioned from PostgreSQL for $PART_FOR s"
  OLD=$(leader)
  if [ -z "$OLD" ]; then
    fail "phase 7: no leader to partition"
  else
    t_part=$(now)
    net_partition "$OLD" pg && PARTITIONS=$((PARTITIONS + 1))
    say "partition: $OLD | pg"
    if NEW=$(wait_leader "$((PART_FOR + 15))" "$OLD"); then
      ok "partition of $OLD from PostgreSQL: $NEW leads $(python3 -c "print(round($(now) - $t_part, 1))") s after the cut"
      LEADER=$NEW
      expect_progress "with $OLD partitioned from PostgreSQL" 15
    else
      fail "no standby became leader within $((PART_FOR + 15)) s of partitioning $OLD from PostgreSQL"
    fi
    rest=$(python3 -c "print(max(0.0, $PART_FOR - ($(now) - $t_part)))")
    sleep "$rest"
    net_heal
    say "healed: $OLD | pg ($(python3 -c "print(round($(now) - $t_part, 1))") s)"
    expect_progress "after healing $OLD | pg" 20
  fi
  observe "$GAP"
  check_alive "after phase 7"

  say "== phase 8: exec1 partitioned from both dispatchers for $PART_FOR s while it runs a job"
  deadline=$((SECONDS + 10))
  ids=$(running_on exec1)
  while [ -z "$ids" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; ids=$(running_on exec1); done
  t_part=$(now)
  net_partition exec1 disp1 disp2 && PARTITIONS=$((PARTITIONS + 1))
  read -r -a in_flight <<<"$ids"
  if [ ${#in_flight[@]} -gt 0 ]; then
    ok "exec1 partitioned from disp1 and disp2 with ${#in_flight[@]} run(s) RUNNING on it"
  else
    fail "exec1 partitioned from the dispatchers but no run was RUNNING on it (10 s)"
  fi
  sleep 3
  expect_progress "with exec1 partitioned from the dispatchers" 15
  sleep "$(python3 -c "print(max(0.0, $PART_FOR - ($(now) - $t_part)))")"
  net_heal
  say "healed: exec1 | disp1 disp2"
  if wait_terminal 30 "${in_flight[@]}"; then
    ok "the runs RUNNING on exec1 at the partition are terminal within 30 s of the heal: $(statuses "${in_flight[@]}")"
  else
    fail "runs RUNNING on exec1 at the partition still not terminal 30 s after the heal: $(statuses "${in_flight[@]}")"
  fi
  observe "$GAP"
  check_alive "after phase 8"

  say "== phase 9: reg1 partitioned from the 3 executors for $PART_FOR s"
  t_part=$(now)
  net_partition reg1 exec1 exec2 exec3 && PARTITIONS=$((PARTITIONS + 1))
  sleep "$PART_FOR"
  # The lease (10 s) ran out meanwhile: each executor must have renewed it through reg2.
  renewed=$(sql "SELECT count(*) FROM executors WHERE app = '$APP' AND online AND last_beat_time > to_timestamp($t_part + 3)")
  if [ "$renewed" = 3 ]; then
    ok "reg1 cut off from the executors: all 3 online, leases renewed through reg2"
  else
    fail "reg1 cut off from the executors: $renewed of 3 executors online with a lease renewed after the partition"
  fi
  expect_progress "with reg1 partitioned from the executors" 15
  net_heal
  say "healed: reg1 | exec1 exec2 exec3"
  observe "$GAP"
  check_alive "after phase 9"

  say "== phase 10: PostgreSQL slowed by 200 ms per packet for $PG_SLOW_FOR s"
  t0=$(now); sql "SELECT 1" >/dev/null; base=$(python3 -c "print(round($(now) - $t0, 3))")
  if net_has_netem && ip netns exec "${NET_NS[pg]}" tc qdisc add dev eth0 root netem delay 200ms; then
    how="tc netem on PostgreSQL's interface"
  else
    kill -USR1 "${STACK_PID[pgproxy]}"
    how="delay_proxy (this kernel has no netem qdisc)"
  fi
  sleep 1
  t_slow=$(now)
  t0=$(now); sql "SELECT 1" >/dev/null; slow=$(python3 -c "print(round($(now) - $t0, 3))")
  if python3 -c "import sys; sys.exit(0 if $slow >= 0.2 else 1)"; then
    ok "PostgreSQL slowed through $how: psql SELECT 1 takes $slow s (was $base s)"
  else
    fail "PostgreSQL slowdown through $how not in effect: psql SELECT 1 takes $slow s (was $base s)"
  fi
  expect_progress "with PostgreSQL slowed" "$PG_SLOW_FOR"
  rest=$(python3 -c "print(max(0.0, $PG_SLOW_FOR - ($(now) - $t_slow)))")
  sleep "$rest"
  ip netns exec "${NET_NS[pg]}" tc qdisc del dev eth0 root 2>/dev/null
  kill -USR2 "${STACK_PID[pgproxy]}"
  say "PostgreSQL at full speed again"
  expect_progress "after the PostgreSQL slowdown" 20
  observe "$GAP"
  check_alive "after phase 10"
fi

if [ -n "$SPOOL_MNT" ]; then
  say "== phase 11: exec2's spool directory full for $SPOOL_FULL_FOR s"
  before=$(grep -c "cannot spool result" "$STACK_LOGS/exec2.log")
  dd if=/dev/zero of="$SPOOL_MNT/chaos-filler" bs=64k >/dev/null 2>&1
  say "spool full: $(df -h --output=avail "$SPOOL_MNT" | tail -n 1 | tr -d ' ') left on $SPOOL_MNT"
  sleep "$SPOOL_FULL_FOR"
  expect_progress "with exec2's spool full" 10
  after=$(grep -c "cannot spool result" "$STACK_LOGS/exec2.log")
  rm -f "$SPOOL_MNT/chaos-filler"
  if [ "$((after - before))" -gt 0 ]; then
    ok "spool full: exec2 could not spool $((after - before)) result(s) (kept in memory) and stayed up"
  else
    fail "spool full had no effect: exec2 logged no 'cannot spool result'"
  fi
  # Tombstones that could not be written leave acknowledged results in the journal: a restart
  # sends them again (duplicates) and clears them. SIGTERM: in-flight runs finish first.
  kill -TERM "${STACK_PID[exec2]}"
  wait "${STACK_PID[exec2]}" 2>/dev/null
  say "exec2 stopped with SIGTERM"
  restart exec2
  observe "$GAP"
  check_alive "after phase 11"
fi

############################################################################ stop the load
CUT=$(now)
say "== cut at $(date -u -d "@${CUT%.*}" +%FT%TZ): pausing every job"
ids=$(sql "SELECT id FROM jobs WHERE app = '$APP' ORDER BY id")
if ! xargs -P 8 -I{} sh -c \
    'for i in 1 2 3; do "$0" --registry="$1" --token_file="$2" --scheduler="$3" jobs pause {} >/dev/null 2>&1 && exit 0; sleep 1; done; echo "pause {} failed" >&2; exit 1' \
    "$BIN/tools/jobwheelctl/jobwheelctl" "$(addr reg1)" "$TOK/admin" "$(addr sched2)" <<<"$ids"; then
  fail "some PauseJob calls failed"
fi
still=$(sql "SELECT count(*) FROM jobs WHERE app = '$APP' AND enabled")
[ "$still" = 0 ] || fail "$still jobs still enabled after pausing"
say "paused in $(python3 -c "print(round($(now) - $CUT, 1))") s"

say "== settling (bounded by $SETTLE s): no PENDING fire, no PENDING/RUNNING run, empty spools"
deadline=$((SECONDS + SETTLE))
calm=0
last_print=0
while [ "$SECONDS" -lt "$deadline" ]; do
  st=$(sql "SELECT (SELECT count(*) FROM fires WHERE status = 1), (SELECT count(*) FROM runs WHERE status = 1), (SELECT count(*) FROM runs WHERE status = 2)")
  spooled=$(python3 "$HERE/spool.py" "$TMP"/executors/*/spool)
  IFS='|' read -r pf pr rr <<<"$st"
  if [ "$pf" = 0 ] && [ "$pr" = 0 ] && [ "$rr" = 0 ] && [ "$spooled" = 0 ]; then
    calm=$((calm + 1))
    [ "$calm" -ge 2 ] && break
  else
    calm=0
  fi
  if [ $((SECONDS - last_print)) -ge 10 ]; then
    say "  pending fires $pf, pending runs $pr, running runs $rr, spooled results $spooled"
    last_print=$SECONDS
  fi
  sleep 1
done
if [ "$calm" -ge 2 ]; then ok "settled $((SECONDS - (deadline - SETTLE))) s after the cut"
else say "not settled within $SETTLE s (pending fires $pf, pending runs $pr, running runs $rr, spooled $spooled); counting anyway"; fi
check_alive "at the end"

############################################################################ count
python3 "$HERE/check.py" --psql="$CHECK_DSN" \
  --app="$APP" --cut="$CUT" --exec_dirs="$TMP/executors/exec1,$TMP/executors/exec2,$TMP/executors/exec3" \
  --kills="$KILLS" --partitions="$PARTITIONS" --faults_skipped="$(IFS=,; echo "${FAULTS_SKIPPED[*]}")" \
  >"$TMP/check.out" 2>&1
CHAOS_RESULT=$?
CHECK_OUT=$(cat "$TMP/check.out" 2>/dev/null)
stack_stop
if [ -n "$SPOOL_MNT" ]; then  # (its files are kept with the directory)
  cp -a "$SPOOL_MNT" "$SPOOL_MNT.tmpfs" 2>/dev/null
  umount -l "$SPOOL_MNT" && SPOOL_MNT=""
fi
net_cleanup
if [ "$CHAOS_RESULT" = 0 ] && [ "$FAILED" = 0 ]; then stack_release_dir 0; else stack_release_dir 1; fi
echo
echo "liveness checks: $PASSED passed, $FAILED failed"
for f in "${FAILURES[@]}"; do echo "  FAIL - $f"; done
say "done in $((SECONDS - START)) s"
if [ -n "$CHECK_OUT" ]; then echo "$CHECK_OUT"; else echo "chaos: the checker produced no output"; fi
[ "$CHAOS_RESULT" = 0 ] && [ "$FAILED" = 0 ]
