#!/usr/bin/env bash
# The HTTP jobs' bench line (scripts/bench runs it; not a check: scripts/test does not): a
# stack through scripts/lib/stack.sh (private PostgreSQL, registry, dispatcher, scheduler) on
# free ports, then tests/http_executor/bench_http_jobs.py, which starts the HTTP executor and
# the endpoint its jobs call:
#
#   tests/http_executor/bench_http_jobs.sh [--rate=500] [--duration=20] [--warmup=8] ...
#   http_jobs: rate_per_s=500 achieved_per_s=... p99_ms=... lost=0 dup=0 ...
#
# Needs the binaries built. Exit 0 when nothing was lost or doubled, 1 otherwise, 77 when it
# cannot run.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
PY=${JOBWHEEL_PYTHON:-/usr/bin/python3}
"$PY" -c 'import grpc, google.protobuf' 2>/dev/null ||
  { echo "http_jobs: skipped: $PY lacks grpcio or protobuf"; exit 77; }

# shellcheck source=scripts/lib/stack.sh disable=SC2153
. "$ROOT/scripts/lib/stack.sh"
stack_need_bins services/registry/registry services/dispatcher/dispatcher \
  services/scheduler/scheduler services/http_executor/http_executor ||
  { echo "http_jobs: skipped: $STACK_ERROR"; exit 77; }
stack_init http_jobs_bench || exit 1
stack_pick_ports PG REG DISP SCHED HEXEC || { echo "$STACK_ERROR"; exit 1; }
stack_make_secrets admin executor || { echo "$STACK_ERROR"; exit 1; }
stack_pg_private "$PG" || { echo "$STACK_ERROR"; exit 1; }
stack_start_ready registry registry "127.0.0.1:$REG" || exit 1
stack_start_ready dispatcher dispatcher "127.0.0.1:$DISP" "127.0.0.1:$REG" || exit 1
stack_start_ready scheduler scheduler "127.0.0.1:$SCHED" "127.0.0.1:$DISP" || exit 1
WORK=$STACK_DIR/http-bench
mkdir -p "$WORK"
"$PY" sdk/python/gen_stubs.py "$WORK/stubs" >/dev/null || exit 1
export STACK_BIN STACK_TOK STACK_DSN HTTPB_WORK=$WORK HTTPB_EXECUTOR_PORT=$HEXEC
export HTTPB_REGISTRY=127.0.0.1:$REG HTTPB_SCHEDULER=127.0.0.1:$SCHED
export HTTPB_DISPATCHER=127.0.0.1:$DISP
export PYTHONPATH=$WORK/stubs PYTHONDONTWRITEBYTECODE=1
"$PY" tests/http_executor/bench_http_jobs.py "$@"
