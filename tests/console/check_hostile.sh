#!/usr/bin/env bash
# One hostile client against the console (issue 27), with real processes: its own stack on free
# ports (a fresh database on the test PostgreSQL, registry, dispatcher, scheduler, console), then
# tests/console/hostile_client.py attacks from 127.0.0.1 while a second client on 127.0.0.2
# (loopback takes any 127/8 source) must still be served:
#   - log forging: paths with %0a and ESC stay escaped on one line of the console's log;
#   - 200 slow connections (a byte a second, reopened when closed) and gzip bombs (~100 KiB
#     inflating to 100 MiB) at once: /healthz and a signed-in ListJobs from the other client
#     answer 200 within 1 s every 200 ms for 10 s; the bombs are answered 415; the console's
#     peak memory (VmHWM) stays under 100 MB;
#   - 30 s of junk tokens through the console: a fresh token of the other client is accepted
#     mid-flood, no junk token is, and the console's and scheduler's logs grow under 100 KB.
# About 50 s. Exit 0: passed; 1: failed; 77: could not run (the reason on one line).
# Assumes `bazel build //services/... //tools/jobwheelctl` ran.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
PY=/usr/bin/python3

CHECK_NAME=check_hostile
# shellcheck source=scripts/lib/check.sh
. "$ROOT/scripts/lib/check.sh"
# shellcheck source=scripts/lib/stack.sh
. "$ROOT/scripts/lib/stack.sh"
[ -x "$PY" ] || skip "$PY is not installed"
command -v psql >/dev/null || skip "psql is not installed"
command -v curl >/dev/null || skip "curl is not installed"
[ -r /proc/self/status ] || skip "no /proc to read the console's memory from"
stack_need_bins services/console/console services/scheduler/scheduler \
  services/registry/registry services/dispatcher/dispatcher tools/jobwheelctl/jobwheelctl ||
  skip "$STACK_ERROR (bazel build //services/... //tools/jobwheelctl)"
"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null ||
  skip "cannot bind 127.0.0.2 (loopback is not 127.0.0.0/8 here)"

stack_init check_hostile || skip "$STACK_ERROR"
stack_pg_test_db console_hostile || skip "$STACK_ERROR"
stack_make_secrets admin || fail "$STACK_ERROR"
stack_pick_ports REG DISP SCHED CONSOLE || skip "$STACK_ERROR"
REGISTRY=127.0.0.1:$REG DISPATCHER=127.0.0.1:$DISP SCHEDULER=127.0.0.1:$SCHED
CONSOLE=127.0.0.1:$CONSOLE

stack_start_ready registry registry "$REGISTRY" || fail "$STACK_ERROR"
stack_start_ready dispatcher dispatcher "$DISPATCHER" "$REGISTRY" || fail "$STACK_ERROR"
stack_start_ready scheduler scheduler "$SCHEDULER" "$DISPATCHER" || fail "$STACK_ERROR"

# The console's own token (a viewer of no app: it can read nothing) names each call's client to
# the scheduler and registry; the fresh token is made now and used for the first time mid-flood.
stack_console_proxy_token || fail "$STACK_ERROR"
stack_ctl tokens create --name=fresh --role=viewer --apps=demo >"$STACK_TOK/fresh" \
  2>>"$STACK_LOGS/jobwheelctl.log" || fail "jobwheelctl tokens create fresh failed"
stack_start_ready console console "$CONSOLE" "$SCHEDULER" "$REGISTRY" \
  --proxy_token_file="$STACK_TOK/console_proxy" || fail "$STACK_ERROR"
PID=${STACK_PID[console]}
LOG=$STACK_LOGS/console.log

"$PY" tests/console/hostile_client.py forge "$CONSOLE" || fail "log forging phase"
if grep -q '^FORGED' "$LOG"; then fail "a request path started a line of the console's log"; fi
if grep -q $'\x1b' "$LOG"; then fail "an ESC byte from a request reached the console's log"; fi
grep -qF '\x0aFORGED-LINE\x1b[31m' "$LOG" ||
  fail "the forged path was not logged (escaped) at all: the check proves nothing"
echo "check_hostile: ok: a path with %0a and ESC is logged escaped on one line"

"$PY" tests/console/hostile_client.py siege "$CONSOLE" "$PID" "$STACK_TOK/admin" ||
  fail "slow connections and gzip bombs"
stack_alive console || fail "the console died"
echo "check_hostile: ok: 200 slow connections and gzip bombs did not stop another client"

console_before=$(stat -c %s "$LOG")
scheduler_before=$(stat -c %s "$STACK_LOGS/scheduler.log")
"$PY" tests/console/hostile_client.py flood "$CONSOLE" "$STACK_TOK/fresh" 30 ||
  fail "junk token flood"
console_grew=$(($(stat -c %s "$LOG") - console_before))
scheduler_grew=$(($(stat -c %s "$STACK_LOGS/scheduler.log") - scheduler_before))
echo "check_hostile: the 30 s junk flood added $console_grew bytes to the console's log and" \
  "$scheduler_grew to the scheduler's"
[ "$console_grew" -lt 102400 ] || fail "the console's log grew $console_grew bytes (>= 100 KB)"
[ "$scheduler_grew" -lt 102400 ] || fail "the scheduler's log grew $scheduler_grew bytes (>= 100 KB)"
for t in admin fresh console_proxy; do
  if grep -qF "$(cat "$STACK_TOK/$t")" "$STACK_LOGS"/*.log; then fail "token $t appears in a log"; fi
done
echo "check_hostile: ok: a junk flood did not stop a fresh token, and its log stayed small"
echo "check_hostile: passed"
