# shellcheck shell=bash
# skip / fail for a check script that stops at its first failure (tests/<area>/check_*.sh,
# exit 0 passed, 1 failed, 77 could not run):
#
#   CHECK_NAME=xxl_demo
#   . "$ROOT/scripts/lib/check.sh"
#   skip MESSAGE    prints "CHECK_NAME: skipped: MESSAGE" and exits 77: the check did not run,
#                   which scripts/test counts as a skip, never as a pass
#   fail MESSAGE    prints "CHECK_NAME: FAILED: MESSAGE" and exits 1
#
# Scripts that run many checks and end with the counts use scripts/lib/tally.sh instead.
: "${CHECK_NAME:?set CHECK_NAME before sourcing scripts/lib/check.sh}"

skip() {
  echo "$CHECK_NAME: skipped: $*"
  exit 77
}
fail() {
  echo "$CHECK_NAME: FAILED: $*"
  exit 1
}
