#!/usr/bin/env bash
# Browser tests of the web console: starts its own stack (a fresh database on the test
# PostgreSQL, registry, dispatcher, scheduler, demo executor with scripts, console; demo jobs;
# see scripts/lib/stack.sh), then drives Debian's chromium headless over the DevTools protocol
# (puppeteer-core) through tests/console/browser/*.test.mjs. Exit 0: all passed; 1: a failure;
# 77: could not run.
# Assumes `bazel build //services/... //sdk/examples:demo_executor //tools/jobwheelctl` ran.
# JOBWHEEL_SCREENSHOTS=<dir> saves screenshots of every page there (docs/console/);
# JOBWHEEL_CASES=<text> runs only the cases whose name contains it; JOBWHEEL_CONSOLE_HOLD=1 starts
# the stack and keeps it up without running tests (for working on the pages); KEEP_TMP=1 keeps
# the logs.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
export CHROMIUM=${JOBWHEEL_CHROMIUM:-/usr/bin/chromium}

CHECK_NAME=check_browser
# shellcheck source=scripts/lib/check.sh
. "$ROOT/scripts/lib/check.sh"
# shellcheck source=scripts/lib/stack.sh
. "$ROOT/scripts/lib/stack.sh"
command -v node >/dev/null || skip "node is not installed (scripts/setup installs it)"
[ -x "$CHROMIUM" ] || skip "$CHROMIUM is missing (scripts/setup installs chromium)"
command -v psql >/dev/null || skip "psql is not installed"
command -v curl >/dev/null || skip "curl is not installed (scripts/setup installs it)"
stack_need_bins services/console/console services/scheduler/scheduler \
  services/registry/registry services/dispatcher/dispatcher sdk/examples/demo_executor \
  tools/jobwheelctl/jobwheelctl ||
  skip "$STACK_ERROR (bazel build //services/... //sdk/examples:demo_executor //tools/jobwheelctl)"
if [ ! -d tests/console/browser/node_modules/puppeteer-core ]; then
  (cd tests/console/browser && npm ci --no-audit --no-fund >/dev/null 2>&1) ||
    skip "npm ci in tests/console/browser failed (offline?)"
fi

STACK_KEEP_DIR=${KEEP_TMP:-}
[ "$STACK_KEEP_DIR" = 1 ] || STACK_KEEP_DIR=""
stack_init check_browser || skip "$STACK_ERROR"
stack_pg_test_db console_browser || skip "$STACK_ERROR"
stack_make_secrets admin executor || fail "$STACK_ERROR"
stack_pick_ports REG DISP SCHED EXEC CONSOLE || skip "$STACK_ERROR"
REGISTRY=127.0.0.1:$REG DISPATCHER=127.0.0.1:$DISP SCHEDULER=127.0.0.1:$SCHED
EXECUTOR=127.0.0.1:$EXEC CONSOLE=127.0.0.1:$CONSOLE

stack_start_ready registry registry "$REGISTRY" || fail "$STACK_ERROR"
stack_start_ready dispatcher dispatcher "$DISPATCHER" "$REGISTRY" || fail "$STACK_ERROR"
stack_start_ready scheduler scheduler "$SCHEDULER" "$DISPATCHER" || fail "$STACK_ERROR"
stack_start_ready executor demo_executor "$EXECUTOR" demo "$REGISTRY" "$DISPATCHER" \
  --allow_scripts || fail "$STACK_ERROR"
stack_start_ready console console "$CONSOLE" "$SCHEDULER" "$REGISTRY" \
  --web_root="$ROOT/services/console/web" || fail "$STACK_ERROR"
stack_demo_jobs || fail "$STACK_ERROR"

export JOBWHEEL_CONSOLE_URL="http://$CONSOLE/"
export JOBWHEEL_ADMIN_TOKEN_FILE="$STACK_TOK/admin"
export JOBWHEEL_SCREENSHOTS=${JOBWHEEL_SCREENSHOTS:-}
export JOBWHEEL_BROWSER_LOGS="$STACK_LOGS"
if [ -n "${JOBWHEEL_CONSOLE_HOLD:-}" ]; then  # For working on the pages: keep the stack up.
  echo "check_browser: console $JOBWHEEL_CONSOLE_URL admin token $STACK_TOK/admin scheduler $SCHEDULER; Ctrl-C stops"
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
# On a failure the exit trap prints the last lines of every service's log.
[ "$rc" = 1 ] && echo "check_browser: FAILED"
exit "$rc"
