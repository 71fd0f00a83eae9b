# shellcheck shell=bash
# ok / fail / skip for the test scripts that run many checks and end with the counts:
#
#   . "$ROOT/scripts/lib/tally.sh"
#   ok MESSAGE      prints "ok   - MESSAGE"; PASSED+1
#   fail MESSAGE    prints "FAIL - MESSAGE"; FAILED+1, MESSAGE appended to FAILURES
#   skip MESSAGE    prints "skip - MESSAGE"; SKIPPED+1 (a check that could not run)
#
# G_PASSED, G_FAILED and G_SKIPPED count the same for the current group of checks; a script
# with groups resets them when one begins. The caller decides the exit status from the counts.
# Lines go through tally_say, echo unless the caller defined its own before sourcing (the chaos
# suite's stamps each line with the time). Scripts that stop at the first failure use
# scripts/lib/check.sh instead.
# shellcheck disable=SC2034  # The counters are read by the scripts that source this file.
PASSED=0 FAILED=0 SKIPPED=0 G_PASSED=0 G_FAILED=0 G_SKIPPED=0
FAILURES=()
declare -F tally_say >/dev/null || tally_say() { echo "$*"; }

ok() {
  PASSED=$((PASSED + 1))
  G_PASSED=$((G_PASSED + 1))
  tally_say "ok   - $*"
}
fail() {
  FAILED=$((FAILED + 1))
  G_FAILED=$((G_FAILED + 1))
  FAILURES+=("$*")
  tally_say "FAIL - $*"
}
skip() {
  SKIPPED=$((SKIPPED + 1))
  G_SKIPPED=$((G_SKIPPED + 1))
  tally_say "skip - $*"
}
