#!/usr/bin/env bash
# The XXL gateway's bench line (scripts/bench runs it; not a check: scripts/test does not): a
# stack through scripts/lib/stack.sh (private PostgreSQL, registry, dispatcher, scheduler, the
# XXL gateway) on free ports with two XXL-protocol executors (app bench-xxl, each recording when
# every /run reached it): tests/xxl/xxl_bench_executor.cc, which keeps up with 1000 runs/s (the
# Python test executor of the functional tests serves ~150/s here; XXLB_EXECUTOR=python runs
# tests/xxl/xxl_test_executor.py instead), then tests/xxl/bench_xxl.py:
#
#   tests/xxl/bench_xxl.sh [--rate=1000] [--duration=20] [--warmup=8] ...
#   xxl: executors=2 rate_per_s=1000 achieved_per_s=... p99_ms=... lost=0 dup=0 ...
#
# XXLB_GATEWAY_FLAG, XXLB_DISPATCHER_FLAG: one more flag for the gateway or the dispatcher
# (e.g. --metrics_address=127.0.0.1:9190).
# Needs the binaries built. Exit 0 when nothing was lost or doubled, 1 otherwise, 77 when it
# cannot run.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
PY=${JOBWHEEL_PYTHON:-/usr/bin/python3}
"$PY" -c 'import grpc, google.protobuf' 2>/dev/null ||
  { echo "xxl: skipped: $PY lacks grpcio or protobuf"; exit 77; }
command -v psql >/dev/null 2>&1 || { echo "xxl: skipped: psql not found"; exit 77; }

# shellcheck source=scripts/lib/stack.sh disable=SC2153
. "$ROOT/scripts/lib/stack.sh"
stack_need_bins services/registry/registry services/dispatcher/dispatcher \
  services/scheduler/scheduler services/xxl_gateway/xxl_gateway tools/jobwheelctl/jobwheelctl \
  tests/xxl/xxl_bench_executor ||
  { echo "xxl: skipped: $STACK_ERROR"; exit 77; }
stack_init xxl_bench || exit 1
stack_pick_ports PG REG DISP SCHED GW XPORT X0 X1 || { echo "$STACK_ERROR"; exit 1; }
stack_make_secrets admin executor || { echo "$STACK_ERROR"; exit 1; }
stack_pg_private "$PG" || { echo "$STACK_ERROR"; exit 1; }
stack_start_ready registry registry "127.0.0.1:$REG" || exit 1
stack_start_ready dispatcher dispatcher "127.0.0.1:$DISP" "127.0.0.1:$REG" \
  ${XXLB_DISPATCHER_FLAG:+"$XXLB_DISPATCHER_FLAG"} || exit 1
stack_start_ready scheduler scheduler "127.0.0.1:$SCHED" "127.0.0.1:$DISP" || exit 1
WORK=$STACK_DIR/xxl-bench
mkdir -p "$WORK"
stack_ensure_app bench-xxl || { echo "$STACK_ERROR"; exit 1; }
stack_app_token bench-xxl || { echo "$STACK_ERROR"; exit 1; }
# The executors' gRPC ports: XPORT (free when picked) and the eight after it; the gateway
# skips a port of the range it cannot bind.
stack_start_ready xxl_gateway xxl_gateway "127.0.0.1:$GW" "$XPORT-$((XPORT + 8))" \
  "127.0.0.1:$REG" "127.0.0.1:$DISP" --app_handlers="bench-xxl=echo" --log_level=warn \
  ${XXLB_GATEWAY_FLAG:+"$XXLB_GATEWAY_FLAG"} ||
  { echo "$STACK_ERROR"; exit 1; }
ADMIN_URL="http://127.0.0.1:$GW/xxl-job-admin"
for i in 0 1; do
  port_var="X$i"
  if [ "${XXLB_EXECUTOR:-cc}" = python ]; then
    stack_start_xxl_executor "xxl_$i" "${!port_var}" bench-xxl "$ADMIN_URL" \
      "$STACK_APP_TOKEN" --envelope=2 --arrivals_file="$WORK/arrivals-$i" ||
      { echo "$STACK_ERROR"; exit 1; }
  else
    stack_spawn "xxl_$i" other "127.0.0.1:${!port_var}" "$STACK_BIN/tests/xxl/xxl_bench_executor" \
      --port="${!port_var}" --app=bench-xxl --admin="$ADMIN_URL" \
      --token_file="$STACK_APP_TOKEN" --envelope=2 --arrivals_file="$WORK/arrivals-$i"
  fi
done
"$PY" sdk/python/gen_stubs.py "$WORK/stubs" >/dev/null || exit 1
export STACK_TOK STACK_DSN XXLB_WORK=$WORK XXLB_REGISTRY=127.0.0.1:$REG
export XXLB_SCHEDULER=127.0.0.1:$SCHED
export PYTHONPATH=$WORK/stubs PYTHONDONTWRITEBYTECODE=1
"$PY" tests/xxl/bench_xxl.py "$@"
