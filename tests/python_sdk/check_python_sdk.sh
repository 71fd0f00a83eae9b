#!/usr/bin/env bash
# The Python SDK's own checks: generates the jobwheel.v1 stubs from proto/ (protoc +
# grpc_python_plugin) into a temporary directory, runs the pytest unit tests of sdk/python/tests
# with Debian's interpreter (/usr/bin/python3, the one python3-grpcio serves), checks that
# `pip install --no-index` of sdk/python works offline, and runs black --check and flake8 on
# sdk/python and tests/python_sdk. Exit 0 pass, 1 fail, 77 skip (a missing tool or module,
# named).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
PY=${JOBWHEEL_PYTHON:-/usr/bin/python3}

CHECK_NAME=python_sdk
# shellcheck source=scripts/lib/check.sh
. "$ROOT/scripts/lib/check.sh"
[ -x "$PY" ] || skip "$PY not found (Debian's python3, which python3-grpcio serves)"
missing=()
for mod in grpc google.protobuf cryptography pytest; do
  "$PY" -c "import $mod" 2>/dev/null || missing+=("$mod")
done
[ ${#missing[@]} = 0 ] ||
  skip "$PY lacks the module(s) ${missing[*]} (Debian: python3-grpcio python3-protobuf python3-cryptography python3-pytest; scripts/setup installs them)"
for tool in /usr/bin/protoc /usr/bin/grpc_python_plugin black flake8; do
  command -v "$tool" >/dev/null 2>&1 ||
    skip "$tool not found (Debian: protobuf-compiler, protobuf-compiler-grpc, black, flake8)"
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/jobwheel-pysdk.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
failed=0
skipped=0
export PYTHONDONTWRITEBYTECODE=1
step() { echo "python_sdk: $*"; }

step "generating the stubs"
"$PY" sdk/python/gen_stubs.py "$TMP/stubs" || { echo "FAIL - gen_stubs.py"; exit 1; }

step "pytest sdk/python/tests"
if ! (cd sdk/python && JOBWHEEL_PY_STUBS="$TMP/stubs" "$PY" -m pytest -q -p no:cacheprovider \
    tests); then
  echo "FAIL - pytest sdk/python/tests"
  failed=1
fi

step "pip install --no-index (offline) and import"
if "$PY" -m pip --version >/dev/null 2>&1; then
  if "$PY" -m pip install -q --no-index --no-deps --no-cache-dir --target "$TMP/site" \
      ./sdk/python >"$TMP/pip.log" 2>&1 &&
     (cd "$TMP" && PYTHONPATH="$TMP/site" "$PY" -c \
       'import jobwheel, jobwheel.v1.executor_pb2 as e; assert jobwheel.SDK_VERSION.startswith("jobwheel-python/"); e.RunRequest(app="a")'); then
    echo "ok   - pip install ./sdk/python works offline"
  else
    tail -n 20 "$TMP/pip.log"
    echo "FAIL - pip install ./sdk/python"
    failed=1
  fi
  rm -rf sdk/python/build sdk/python/jobwheel.egg-info
else
  echo "skip - pip is not installed for $PY (python3-pip); the install check did not run"
  skipped=1
fi

step "promtool check metrics on the exposition"
if command -v promtool >/dev/null 2>&1; then
  if (cd sdk/python && PYTHONPATH="$TMP/stubs" "$PY" -c '
from jobwheel.metrics import ExecutorMetrics
m = ExecutorMetrics()
m.run_finished("succeeded")
m.observe_duration(0.2)
m.set("spool_size", 3)
print(m.exposition(), end="")') >"$TMP/metrics.txt" &&
     promtool check metrics <"$TMP/metrics.txt"; then
    echo "ok   - the /metrics text passes promtool check metrics"
  else
    echo "FAIL - promtool check metrics"
    failed=1
  fi
else
  echo "skip - promtool is not installed (prometheus); the exposition check did not run"
  skipped=1
fi

step "black --check and flake8"
if ! black -q --check -l 100 sdk/python tests/python_sdk; then
  black --check -l 100 sdk/python tests/python_sdk 2>&1 | tail -n 20
  echo "FAIL - black --check -l 100 sdk/python tests/python_sdk"
  failed=1
fi
if ! flake8 --max-line-length 100 --extend-ignore E203 sdk/python tests/python_sdk; then
  echo "FAIL - flake8 sdk/python tests/python_sdk"
  failed=1
fi
[ "$failed" = 0 ] || exit 1
[ "$skipped" = 0 ] || skip "a part of the check could not run (see the skip lines above)"
echo "python_sdk: all passed"
