#!/usr/bin/env bash
# Differential test: services/scheduler/cron.cc against Quartz 2.3.2's
# CronExpression (Debian's libquartz2-java), on the cases gen_cases.py writes
# (every field form x IANA zones with DST gaps and overlaps x start instants).
# Same validity and the same next 12 fire times, or it prints the first
# differences.
#
#   tests/cron/check_cron_oracle.sh [SEED [COUNT]]
#
# Exit 0: no difference; 1: differences or an error; 77: could not run (no
# java/javac or no Quartz jar; says which).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seed="${1:-17}"
count="${2:-6000}"
# Must equal kCronMaxYear in services/scheduler/cron.h: Quartz's own limit is
# the current year + 100, pinned here so results do not depend on the date.
max_year=2099

jar="${QUARTZ_JAR:-/usr/share/java/quartz2.jar}"
for tool in java javac python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "cron-oracle: skipped: $tool not found (scripts/setup installs default-jdk-headless)"
    exit 77
  fi
done
if [[ ! -r "$jar" ]]; then
  echo "cron-oracle: skipped: $jar not found (scripts/setup installs libquartz2-java)"
  exit 77
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/cron-oracle.XXXXXX")"
trap 'rm -rf "$work"' EXIT

cd "$root" || exit 1
if ! bazel build //tests/cron:cron_oracle_cli >"$work/bazel.log" 2>&1; then
  cat "$work/bazel.log" >&2
  echo "cron-oracle: FAILED to build //tests/cron:cron_oracle_cli"
  exit 1
fi
cli="$(bazel info bazel-bin 2>/dev/null)/tests/cron/cron_oracle_cli"
if ! javac -nowarn -d "$work/classes" -cp "$jar" "$root/tests/cron/QuartzOracle.java" \
    >"$work/javac.log" 2>&1; then
  cat "$work/javac.log" >&2
  echo "cron-oracle: FAILED to compile QuartzOracle.java"
  exit 1
fi

python3 "$root/tests/cron/gen_cases.py" "$seed" "$count" >"$work/cases.txt" || exit 1
# A Gregorian default locale: Quartz takes one calendar from it (for W).
java -Duser.language=en -Duser.country=US -cp "$work/classes:$jar" QuartzOracle "$max_year" <"$work/cases.txt" >"$work/quartz.txt" \
  2>"$work/java.log" || { cat "$work/java.log" >&2; echo "cron-oracle: FAILED: java"; exit 1; }
"$cli" <"$work/cases.txt" >"$work/ours.txt" 2>"$work/cli.log" \
  || { cat "$work/cli.log" >&2; echo "cron-oracle: FAILED: cron_oracle_cli"; exit 1; }

python3 - "$work/cases.txt" "$work/quartz.txt" "$work/ours.txt" <<'PY'
import sys
def lines(path):  # Only "\n" ends a line: expressions may hold "\f".
    return [l for l in open(path, encoding="utf-8").read().split("\n") if l]
cases, quartz, ours = lines(sys.argv[1]), lines(sys.argv[2]), lines(sys.argv[3])
if not (len(cases) == len(quartz) == len(ours)):
    print("cron-oracle: FAILED: %d cases, %d Quartz answers, %d ours"
          % (len(cases), len(quartz), len(ours)))
    sys.exit(1)
diffs = [(c, q, o) for c, q, o in zip(cases, quartz, ours) if q != o]
invalid_agree = sum(1 for q, o in zip(quartz, ours) if q == o == "invalid")
print("cron-oracle: cases=%d invalid_agree=%d differences=%d"
      % (len(cases), invalid_agree, len(diffs)))
for c, q, o in diffs[:10]:
    expr, zone, start = c.split("\t")
    print("  expression %r zone %s start %s\n    quartz: %s\n    ours:   %s"
          % (expr, zone, start, q, o))
sys.exit(1 if diffs else 0)
PY
