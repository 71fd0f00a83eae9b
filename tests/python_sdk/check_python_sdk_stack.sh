#!/usr/bin/env bash
# Multi-process tests of the Python SDK against a real stack: PostgreSQL (a fresh database on
# the test server), the registry and the scheduler started through scripts/lib/stack.sh on
# free loopback ports; tests/python_sdk/stack_e2e_test.py (pytest, Debian's /usr/bin/python3)
# then starts the dispatcher and the executors itself (two Python demo executors, one Python
# and one C++ demo executor) and checks: register and run, kill, timeout, a shard broadcast
# over the Python and the C++ executor, a forged or missing caller token refused, results
# replayed from the spool after a dispatcher restart, kill -9 of a Python executor in a 30 s
# run -> LOST within 2 s and the retry on the other Python executor, each executed once.
# Needs the binaries built (bazel build //..., as scripts/test does). Exit 0 / 1 / 77.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
PY=${JOBWHEEL_PYTHON:-/usr/bin/python3}

CHECK_NAME=python_sdk_stack
# shellcheck source=scripts/lib/check.sh
. "$ROOT/scripts/lib/check.sh"
[ -x "$PY" ] || skip "$PY not found (Debian's python3, which python3-grpcio serves)"
missing=()
for mod in grpc google.protobuf cryptography pytest; do
  "$PY" -c "import $mod" 2>/dev/null || missing+=("$mod")
done
[ ${#missing[@]} = 0 ] || skip "$PY lacks the module(s) ${missing[*]} (scripts/setup installs them)"
for tool in /usr/bin/protoc /usr/bin/grpc_python_plugin psql curl; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done

# shellcheck source=scripts/lib/stack.sh disable=SC2153
. "$ROOT/scripts/lib/stack.sh"
stack_need_bins services/registry/registry services/dispatcher/dispatcher \
  services/scheduler/scheduler sdk/examples/demo_executor ||
  skip "$STACK_ERROR (run bazel build //... first)"
stack_init python_sdk_stack || { echo "FAIL - $STACK_ERROR"; exit 1; }
stack_pick_ports REG SCHED DISP PA PB PC PCPP MA MB MC PD ||
  { echo "FAIL - $STACK_ERROR"; exit 1; }
stack_make_secrets admin executor || { echo "FAIL - $STACK_ERROR"; exit 1; }
stack_pg_test_db pysdk || skip "$STACK_ERROR"
stack_start_ready registry registry "127.0.0.1:$REG" || { echo "FAIL - $STACK_ERROR"; exit 1; }
stack_start_ready scheduler scheduler "127.0.0.1:$SCHED" "127.0.0.1:$DISP" ||
  { echo "FAIL - $STACK_ERROR"; exit 1; }

# The stack's own way to start a Python executor (scripts/up uses it): served before the
# dispatcher is up; the driver checks it registers and runs once its app exists.
stack_start_ready python_executor py_stack "127.0.0.1:$PD" demo-py "127.0.0.1:$REG" \
  "127.0.0.1:$DISP" || { echo "FAIL - $STACK_ERROR"; exit 1; }

WORK=$STACK_DIR/pysdk
mkdir -p "$WORK"
"$PY" sdk/python/gen_stubs.py "$WORK/stubs" || { echo "FAIL - gen_stubs.py"; exit 1; }
export STACK_ROOT STACK_BIN STACK_TOK STACK_DSN
export PYSDK_WORK=$WORK PYSDK_REGISTRY=127.0.0.1:$REG PYSDK_SCHEDULER=127.0.0.1:$SCHED
export PYSDK_DISPATCHER=127.0.0.1:$DISP PYSDK_PORTS="$PA $PB $PC $PCPP $MA $MB $MC $PD"
export JOBWHEEL_PY_STUBS=$WORK/stubs PYTHONPATH=$ROOT/sdk/python:$WORK/stubs
export PYTHONDONTWRITEBYTECODE=1
if timeout 300 "$PY" -m pytest -q -p no:cacheprovider -x -s tests/python_sdk/stack_e2e_test.py; then
  echo "python_sdk_stack: all passed"
  exit 0
fi
echo "FAIL - tests/python_sdk/stack_e2e_test.py; the driver's process logs:"
for l in "$WORK"/*.log; do
  [ -e "$l" ] || continue
  echo "== $l"
  tail -n 20 "$l"
done
exit 1
