#!/usr/bin/env bash
# The Python SDK's bench line (scripts/bench runs it; not a check: scripts/test does not):
# a stack through scripts/lib/stack.sh (private PostgreSQL, registry, dispatcher, scheduler) on
# free ports, then tests/python_sdk/bench_python_sdk.py with Python demo executors:
#
#   tests/python_sdk/bench_python_sdk.sh [--rate=1000] [--executors=4] [--duration=20] ...
#   python_sdk: rate_per_s=1000 achieved_per_s=... p99_ms=... lost=0 dup=0 ...
#
# Needs the binaries built. Exit 0 when nothing was lost or doubled, 1 otherwise, 77 when it
# cannot run.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
PY=${JOBWHEEL_PYTHON:-/usr/bin/python3}
"$PY" -c 'import grpc, google.protobuf, cryptography' 2>/dev/null ||
  { echo "python_sdk: skipped: $PY lacks grpcio, protobuf or cryptography"; exit 77; }

# shellcheck source=scripts/lib/stack.sh disable=SC2153
. "$ROOT/scripts/lib/stack.sh"
stack_need_bins services/registry/registry services/dispatcher/dispatcher \
  services/scheduler/scheduler || { echo "python_sdk: skipped: $STACK_ERROR"; exit 77; }
stack_init python_sdk_bench || exit 1
stack_pick_ports PG REG DISP SCHED E0 E1 E2 E3 E4 E5 E6 E7 || { echo "$STACK_ERROR"; exit 1; }
stack_make_secrets admin executor || { echo "$STACK_ERROR"; exit 1; }
stack_pg_private "$PG" || { echo "$STACK_ERROR"; exit 1; }
stack_start_ready registry registry "127.0.0.1:$REG" || exit 1
stack_start_ready dispatcher dispatcher "127.0.0.1:$DISP" "127.0.0.1:$REG" || exit 1
stack_start_ready scheduler scheduler "127.0.0.1:$SCHED" "127.0.0.1:$DISP" || exit 1
WORK=$STACK_DIR/pysdk
mkdir -p "$WORK"
"$PY" sdk/python/gen_stubs.py "$WORK/stubs" || exit 1
export STACK_ROOT STACK_TOK STACK_DSN PYSDK_WORK=$WORK JOBWHEEL_PY_STUBS=$WORK/stubs
export PYSDK_REGISTRY=127.0.0.1:$REG PYSDK_SCHEDULER=127.0.0.1:$SCHED
export PYSDK_DISPATCHER=127.0.0.1:$DISP PYSDK_PORTS="$E0 $E1 $E2 $E3 $E4 $E5 $E6 $E7"
export PYTHONPATH=$ROOT/sdk/python:$WORK/stubs PYTHONDONTWRITEBYTECODE=1
"$PY" tests/python_sdk/bench_python_sdk.py "$@"
