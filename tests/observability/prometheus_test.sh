#!/usr/bin/env bash
# End-to-end observability test: a real Prometheus server (Debian's `prometheus` package)
# scrapes every service of a running stack and the test asserts, through the Prometheus HTTP
# API, that the series of docs/metrics.md are present and moving, that `promtool check metrics`
# finds nothing to report in any /metrics body, and that every metric the Grafana dashboards
# in deploy/grafana/ query is scraped. It also checks two operability points: flags taken from
# JOBWHEEL_<FLAG> variables (the registry gets --metrics_address and --log_json that way) and
# `--log_json` writing one JSON object per line.
#
# Needs the binaries built (`bazel build //...`, as scripts/test does), PostgreSQL's server
# binaries, prometheus, promtool, curl and python3. Starts everything itself on free loopback
# ports in a temporary directory (scripts/lib/stack.sh) and removes it all on exit
# (JOBWHEEL_OBS_KEEP_TMP=1 keeps it); on a failure the services' last log lines are printed.
#
#   tests/observability/prometheus_test.sh     # one line per check, then "N passed, N failed"
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
BIN="$ROOT/bazel-bin"  # the stack's binaries (scripts/lib/stack.sh sets STACK_BIN the same)
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
PROMTOOL=${PROMTOOL:-/usr/bin/promtool}
# How long the whole test may take before every wait gives up (seconds).
BUDGET=${JOBWHEEL_OBS_TEST_BUDGET:-100}
START=$SECONDS

# ok / fail and the PASSED, FAILED counts.
# shellcheck source=scripts/lib/tally.sh
. "$ROOT/scripts/lib/tally.sh"
finish() {
  echo "$PASSED passed, $FAILED failed ($((SECONDS - START))s)"
  [ "$FAILED" -eq 0 ]
  exit
}
# abort MESSAGE: a failure the rest of the test cannot proceed without.
abort() { fail "$*"; finish; }
remaining() { echo $((BUDGET - (SECONDS - START))); }

for tool in "$PROMETHEUS" "$PROMTOOL" curl python3; do
  command -v "$tool" >/dev/null 2>&1 || abort "$tool is not installed (scripts/setup installs it)"
done
# shellcheck source=scripts/lib/stack.sh
. "$ROOT/scripts/lib/stack.sh"
stack_need_bins services/registry/registry services/dispatcher/dispatcher \
  services/scheduler/scheduler sdk/examples/demo_executor tools/jobwheelctl/jobwheelctl \
  services/console/console services/xxl_gateway/xxl_gateway ||
  abort "$STACK_ERROR: run bazel build //... first"
[ -x "$PG_BIN/initdb" ] || abort "PostgreSQL server binaries not found (PG_BIN=$PG_BIN)"

[ -n "${JOBWHEEL_OBS_KEEP_TMP:-}" ] && export STACK_KEEP_DIR=1
stack_init prometheus_test || abort "$STACK_ERROR"
TMP=$STACK_DIR
mkdir -p "$TMP/prometheus" "$TMP/metrics"
stack_pick_ports PG_PORT REG_PORT REG_MPORT DISP_PORT DISP_MPORT SCHED_PORT SCHED_MPORT \
  EXEC_PORT EXEC_MPORT PROM_PORT CONSOLE_PORT CONSOLE_MPORT XXL_PORT XXL_MPORT XXL_IDPORT ||
  abort "$STACK_ERROR"

############################################################################ the stack
if stack_pg_private "$PG_PORT"; then
  ok "private PostgreSQL on 127.0.0.1:$PG_PORT"
else
  abort "$STACK_ERROR"
fi
stack_make_secrets admin executor || abort "$STACK_ERROR"
TOK=$STACK_TOK

# The registry takes two flags from the environment (JOBWHEEL_<FLAG>) to prove that path works:
# if Prometheus scrapes it on $REG_MPORT, JOBWHEEL_METRICS_ADDRESS was honoured.
JOBWHEEL_METRICS_ADDRESS="127.0.0.1:$REG_MPORT" JOBWHEEL_LOG_JSON=true \
  stack_start_registry registry "127.0.0.1:$REG_PORT"
if stack_wait_ready registry; then ok "registry serves on 127.0.0.1:$REG_PORT (health SERVING)"
else abort "$STACK_ERROR"; fi
deadline=$((SECONDS + 10))
until stack_port_open "127.0.0.1:$REG_MPORT" || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.1; done
if stack_port_open "127.0.0.1:$REG_MPORT"; then
  ok "registry took --metrics_address and --log_json from JOBWHEEL_METRICS_ADDRESS/JOBWHEEL_LOG_JSON"
else
  fail "registry ignored JOBWHEEL_METRICS_ADDRESS (no metrics on 127.0.0.1:$REG_MPORT)"
fi

stack_start_dispatcher dispatcher "127.0.0.1:$DISP_PORT" "127.0.0.1:$REG_PORT" \
  --metrics_address="127.0.0.1:$DISP_MPORT" --log_json
if stack_wait_ready dispatcher; then ok "dispatcher serves on 127.0.0.1:$DISP_PORT (health SERVING)"
else abort "$STACK_ERROR"; fi

stack_start_scheduler scheduler "127.0.0.1:$SCHED_PORT" "127.0.0.1:$DISP_PORT" \
  --metrics_address="127.0.0.1:$SCHED_MPORT" --log_json
if stack_wait_ready scheduler; then ok "scheduler serves on 127.0.0.1:$SCHED_PORT (health SERVING)"
else abort "$STACK_ERROR"; fi

stack_start_executor demo_executor "127.0.0.1:$EXEC_PORT" demo "127.0.0.1:$REG_PORT" \
  "127.0.0.1:$DISP_PORT" --metrics_address="127.0.0.1:$EXEC_MPORT" --log_json
if stack_wait_ready demo_executor; then
  ok "demo executor serves on 127.0.0.1:$EXEC_PORT (health SERVING)"
else abort "$STACK_ERROR"; fi

stack_start_console console "127.0.0.1:$CONSOLE_PORT" "127.0.0.1:$SCHED_PORT" \
  "127.0.0.1:$REG_PORT" --metrics_address="127.0.0.1:$CONSOLE_MPORT" --log_json
if stack_wait_ready console; then ok "console serves on 127.0.0.1:$CONSOLE_PORT (/readyz)"
else abort "$STACK_ERROR"; fi

# The XXL gateway (no XXL executor registers with it here: its series exist from the start).
stack_start_xxl_gateway xxl_gateway "127.0.0.1:$XXL_PORT" "$XXL_IDPORT-$XXL_IDPORT" \
  "127.0.0.1:$REG_PORT" "127.0.0.1:$DISP_PORT" --metrics_address="127.0.0.1:$XXL_MPORT"
if stack_wait_ready xxl_gateway; then ok "xxl gateway serves on 127.0.0.1:$XXL_PORT (/readyz)"
else abort "$STACK_ERROR"; fi

# A job firing every second that succeeds, and one that always fails with a retry, so the
# success, failure and retry series all move.
cat >"$TMP/echo.json" <<'EOF'
{"app": "demo", "name": "obs-echo", "handler": "echo", "param": "scraped",
 "schedule": {"cron": {"expression": "* * * * * ?", "timeZone": "UTC"}},
 "routingStrategy": "ROUTING_STRATEGY_FIRST", "enabled": true}
EOF
cat >"$TMP/fail.json" <<'EOF'
{"app": "demo", "name": "obs-fail", "handler": "fail", "param": "failing for the metrics",
 "failRetryCount": 1,
 "schedule": {"cron": {"expression": "* * * * * ?", "timeZone": "UTC"}},
 "routingStrategy": "ROUTING_STRATEGY_FIRST", "enabled": true}
EOF
for j in echo fail; do
  if out="$(stack_ctl jobs create --file="$TMP/$j.json" 2>&1)"; then
    ok "jobwheelctl created job obs-$j"
  else
    echo "$out"; fail "jobwheelctl could not create job obs-$j"
  fi
done

############################################################################ Prometheus
cat >"$TMP/prometheus/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: scheduler
    static_configs: [{targets: ["127.0.0.1:$SCHED_MPORT"]}]
  - job_name: registry
    static_configs: [{targets: ["127.0.0.1:$REG_MPORT"]}]
  - job_name: dispatcher
    static_configs: [{targets: ["127.0.0.1:$DISP_MPORT"]}]
  - job_name: executor
    static_configs: [{targets: ["127.0.0.1:$EXEC_MPORT"]}]
  - job_name: console
    static_configs: [{targets: ["127.0.0.1:$CONSOLE_MPORT"]}]
  - job_name: xxl_gateway
    static_configs: [{targets: ["127.0.0.1:$XXL_MPORT"]}]
EOF
if "$PROMTOOL" check config "$TMP/prometheus/prometheus.yml" >"$TMP/logs/promtool-config.log" 2>&1; then
  ok "promtool check config accepts the generated configuration"
else
  cat "$TMP/logs/promtool-config.log"; abort "generated Prometheus configuration is invalid"
fi
"$PROMETHEUS" --config.file="$TMP/prometheus/prometheus.yml" \
  --storage.tsdb.path="$TMP/prometheus/data" --web.listen-address="127.0.0.1:$PROM_PORT" \
  --log.level=warn >"$TMP/logs/prometheus.log" 2>&1 &
stack_track prometheus $!
PROM_URL="http://127.0.0.1:$PROM_PORT"

# The assertions against the HTTP API, one helper with sub-commands; prints "ok   - ..." and
# "FAIL - ..." lines, exits non-zero when anything failed.
cat >"$TMP/promcheck.py" <<'PY'
import json, re, sys, time, urllib.parse, urllib.request

URL = sys.argv[1]
CMD = sys.argv[2]
DEADLINE = time.monotonic() + float(sys.argv[3])
failed = 0

def ok(m): print("ok   - " + m, flush=True)
def fail(m):
    global failed
    failed += 1
    print("FAIL - " + m, flush=True)

def api(path, **params):
    q = urllib.parse.urlencode(params)
    with urllib.request.urlopen(URL + path + ("?" + q if q else ""), timeout=5) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError("%s: %s" % (path, body))
    return body["data"]

def value(expr):
    """The single value of an instant query, or None when it returns no series."""
    res = api("/api/v1/query", query=expr)["result"]
    if not res:
        return None
    if len(res) != 1:
        raise RuntimeError("%s returned %d series" % (expr, len(res)))
    return float(res[0]["value"][1])

def poll(cond, timeout=20, interval=0.25):
    """Polls cond() until it is true, `timeout` seconds pass or the test's deadline passes;
    returns its last result. There is no event to wait for: Prometheus scrapes every second."""
    deadline = min(DEADLINE, time.monotonic() + timeout)
    while True:
        try:
            r = cond()
        except Exception:  # the server may still be starting
            r = None
        if r or time.monotonic() >= deadline:
            return r
        time.sleep(interval)

if CMD == "targets":
    want = {"scheduler", "registry", "dispatcher", "executor", "console", "xxl_gateway"}
    def all_up():
        ts = api("/api/v1/targets", state="active")["activeTargets"]
        up = {t["labels"]["job"] for t in ts if t["health"] == "up"}
        return want <= up and up
    if poll(all_up, timeout=30):
        ok("Prometheus scrapes all six targets (scheduler, registry, dispatcher, executor, console, xxl gateway) and they are up")
    else:
        try:
            ts = api("/api/v1/targets", state="active")["activeTargets"]
            fail("targets not all up: " + ", ".join(
                "%s=%s %s" % (t["labels"]["job"], t["health"], t.get("lastError", "")) for t in ts))
        except Exception as e:
            fail("Prometheus HTTP API unavailable: %s" % e)

elif CMD == "series":
    # Counters and histogram counts that must increase while the jobs fire every second. Their
    # baseline is taken first (once each has a sample) and checked last, after the other checks.
    moving = [
        'sum(jobwheel_scheduler_fires_total{trigger_type="cron",outcome="dispatched"})',
        "sum(jobwheel_scheduler_fire_lateness_seconds_count)",
        "sum(jobwheel_scheduler_dispatch_latency_seconds_count)",
        "sum(jobwheel_scheduler_retries_total)",
        'sum(jobwheel_scheduler_fires_total{trigger_type="retry",outcome="dispatched"})',
        "sum(jobwheel_scheduler_db_query_duration_seconds_count)",
        "sum(jobwheel_registry_beats_total)",
        "sum(jobwheel_registry_db_query_duration_seconds_count)",
        'sum(jobwheel_dispatcher_fires_total{outcome="dispatched"})',
        'sum(jobwheel_dispatcher_runs_triggered_total{outcome="started"})',
        "sum(jobwheel_dispatcher_trigger_latency_seconds_count)",
        'sum(jobwheel_dispatcher_runs_finished_total{status="succeeded"})',
        'sum(jobwheel_dispatcher_runs_finished_total{status="failed"})',
        'sum(jobwheel_dispatcher_results_total{outcome="recorded"})',
        "sum(jobwheel_dispatcher_db_query_duration_seconds_count)",
        'sum(jobwheel_executor_runs_total{status="succeeded"})',
        'sum(jobwheel_executor_runs_total{status="failed"})',
        "sum(jobwheel_executor_run_duration_seconds_count)",
        "sum(jobwheel_console_requests_total)",
        "sum(jobwheel_console_request_duration_seconds_count)",
        "sum(jobwheel_console_page_requests_total)",
    ]
    base = {}
    for expr in moving:
        poll(lambda: value(expr) is not None)
        try: base[expr] = value(expr)
        except Exception: base[expr] = None
    # Gauges with a known value in this stack: one leader, one demo executor online, ...
    exact = [
        ("sum(jobwheel_scheduler_is_leader)", 1, "exactly one scheduler replica is leader"),
        ("sum(jobwheel_scheduler_jobs)", 2, "scheduler counts the 2 enabled jobs"),
        ('sum(jobwheel_registry_executors_online{app="demo"})', 1, "registry: 1 executor online for app demo"),
        ("sum(jobwheel_registry_sessions_open)", 1, "registry: 1 heartbeat session open"),
        ("sum(jobwheel_dispatcher_executors_known)", 1, "dispatcher knows 1 executor"),
        ("sum(jobwheel_executor_heartbeat_connected)", 1, "executor: heartbeat stream connected"),
    ]
    for expr, want, desc in exact:
        if poll(lambda: value(expr) == want, timeout=10):
            ok("%s (%s == %g)" % (desc, expr, want))
        else:
            try: v = value(expr)
            except Exception as e: v = e
            fail("%s: %s is %s, want %g" % (desc, expr, v, want))
    at_least = [
        ("sum(jobwheel_registry_watchers)", 1, "registry: the dispatcher watches executors"),
        ('sum(jobwheel_registry_registrations_total{outcome="accepted"})', 1, "registry: the executor's registration was accepted"),
        ("sum(jobwheel_registry_notify_lag_seconds_count)", 1, "registry: executor changes seen through LISTEN/NOTIFY"),
        ("sum(jobwheel_scheduler_leader_changes_total)", 1, "scheduler: became leader once"),
    ]
    for expr, want, desc in at_least:
        if poll(lambda: (value(expr) or 0) >= want, timeout=10):
            ok("%s (%s >= %g)" % (desc, expr, want))
        else:
            fail("%s: %s below %g" % (desc, expr, want))
    # Series that must exist (possibly at 0) before their first event: every documented label
    # value, and the database metrics of each service. All targets have been scraped by now.
    present = [
        'jobwheel_scheduler_fires_total{trigger_type="manual",outcome="failed"}',
        'jobwheel_scheduler_misfires_total{strategy="fire_once_now"}',
        'jobwheel_scheduler_alarms_total{outcome="failed"}',
        "jobwheel_scheduler_lost_runs_total", "jobwheel_scheduler_child_fires_total",
        "jobwheel_scheduler_wheel_entries",
        'jobwheel_registry_offline_total{reason="lease_expired"}',
        'jobwheel_registry_registrations_total{outcome="rejected"}',
        'jobwheel_dispatcher_fires_total{outcome="duplicate"}',
        'jobwheel_dispatcher_runs_finished_total{status="lost"}',
        'jobwheel_dispatcher_runs_finished_total{status="discarded"}',
        'jobwheel_dispatcher_results_total{outcome="late"}',
        'jobwheel_dispatcher_results_refused_total{reason="bad_key"}',
        'jobwheel_dispatcher_lost_triggers_settled_total{presence="fenced"}',
        'jobwheel_scheduler_runs_lost_total{reason="executor_offline"}',
        'jobwheel_scheduler_lost_run_kills_total{outcome="gave_up"}',
        "jobwheel_scheduler_serving", "jobwheel_registry_serving", "jobwheel_dispatcher_serving",
        'jobwheel_dispatcher_pool_queue_depth{pool="slow"}',
        'jobwheel_dispatcher_trigger_latency_seconds_count{pool="slow"}',
        'jobwheel_executor_runs_total{status="killed"}',
        'jobwheel_executor_runs_total{status="timed_out"}',
        "jobwheel_executor_queue_depth", "jobwheel_executor_running", "jobwheel_executor_spool_size",
    ]
    for c in ("scheduler", "registry", "dispatcher"):
        present += ["jobwheel_%s_db_query_duration_seconds_count" % c,
                    "jobwheel_%s_db_errors_total" % c]
    for expr in present:
        q = "count(%s)" % expr
        if poll(lambda: (value(q) or 0) >= 1, timeout=3):
            ok("series present: " + expr)
        else:
            fail("series missing: " + expr)
    pending = [e for e in moving if base[e] is not None]
    for e in moving:
        if base[e] is None:
            fail("series missing, cannot move: " + e)
    def grown():
        for e in list(pending):
            v = value(e)
            if v is not None and v > base[e]:
                ok("moving: %s %g -> %g" % (e, base[e], v))
                pending.remove(e)
        return not pending
    poll(grown, timeout=30, interval=0.5)
    for e in pending:
        fail("not moving: %s stayed at %g" % (e, base[e]))

elif CMD == "docs":
    # Every metric of docs/metrics.md is scraped, with every label value the table lists in
    # parentheses (the doc promises those exist at 0 from start-up; runs_triggered_total is
    # its documented exception).
    names = set(api("/api/v1/label/__name__/values"))
    rows = 0
    for line in open(sys.argv[4], encoding="utf-8"):
        cells = line.split("|")
        if len(cells) < 5 or not re.fullmatch(r"\s*`jobwheel_[a-z0-9_]+`\s*", cells[1]):
            continue
        rows += 1
        name = cells[1].strip().strip("`")
        mtype = cells[2].strip()
        sample = name + "_count" if mtype == "histogram" else name
        if sample not in names:
            fail("documented metric not scraped: %s (%s)" % (name, mtype))
            continue
        missing = []
        if name != "jobwheel_dispatcher_runs_triggered_total":
            for label, values in re.findall(r"`([a-z_]+)` \(([^)]*)\)", cells[3]):
                got = {r["metric"].get(label) for r in
                       api("/api/v1/query", query="count by (%s) (%s)" % (label, sample))["result"]}
                missing += ["%s=%s" % (label, v.strip()) for v in values.split(",")
                            if v.strip() not in got]
        if missing:
            fail("documented metric %s lacks series %s" % (name, ", ".join(missing)))
        else:
            ok("documented metric scraped: %s (%s)" % (name, mtype))
    if rows == 0:
        fail("no metrics found in " + sys.argv[4])

elif CMD == "names":
    # Every metric the dashboards query must be scraped from the running stack.
    names = set(api("/api/v1/label/__name__/values"))
    wanted = set()
    for path in sys.argv[4:]:
        def walk(o):
            if isinstance(o, dict):
                for k, v in o.items():
                    if k in ("expr", "query", "definition") and isinstance(v, str):
                        wanted.update(re.findall(r"\bjobwheel_[a-z0-9_]+", v))
                    walk(v)
            elif isinstance(o, list):
                for v in o: walk(v)
        with open(path, encoding="utf-8") as f:
            walk(json.load(f))
    if not wanted:
        fail("no jobwheel_* metric found in the dashboards")
    for n in sorted(wanted):
        if n in names:
            ok("dashboard metric scraped: " + n)
            continue
        base = re.sub(r"_(bucket|sum|count)$", "", n)
        if base != n and (base + "_count") in names:
            ok("dashboard metric scraped: %s (histogram %s)" % (n, base))
        else:
            fail("dashboard metric not scraped from the running stack: " + n)

sys.exit(1 if failed else 0)
PY

# run_checks CMD [ARGS]: runs a promcheck.py sub-command and adds its lines to the totals.
run_checks() {
  local cmd=$1 budget out line
  shift
  budget=$(remaining)
  [ "$budget" -gt 5 ] || budget=5
  out="$(python3 "$TMP/promcheck.py" "$PROM_URL" "$cmd" "$budget" "$@" 2>&1)"
  while IFS= read -r line; do
    case "$line" in
      "ok   - "*) ok "${line#ok   - }" ;;
      "FAIL - "*) fail "${line#FAIL - }" ;;
      "") ;;
      *) echo "  $line" ;;
    esac
  done <<<"$out"
}

# Traffic through the console while the series are checked: a Connect call with the admin
# token (from a header file: never on a command line) and a page, twice a second.
printf 'Authorization: Bearer %s\n' "$(cat "$TOK/admin")" >"$TMP/tokens/console-header"
console_traffic() {
  while true; do
    curl -sS -o /dev/null --max-time 2 -H @"$TMP/tokens/console-header" \
      -H 'Content-Type: application/json' -d '{}' \
      "http://127.0.0.1:$CONSOLE_PORT/jobwheel.v1.LeadershipService/GetLeader" 2>/dev/null
    curl -sS -o /dev/null --max-time 2 "http://127.0.0.1:$CONSOLE_PORT/" 2>/dev/null
    sleep 0.5
  done
}
console_traffic &
stack_track console_traffic $!

before=$FAILED
run_checks targets
if [ "$FAILED" -ne "$before" ]; then
  echo "--- prometheus.log"; tail -n 20 "$TMP/logs/prometheus.log"
  abort "Prometheus does not scrape the stack"
fi

run_checks series
run_checks docs "$ROOT/docs/metrics.md"
run_checks names "$ROOT"/deploy/grafana/*.json

############################################################################ promtool lint
# promtool reads the exposition from stdin and prints one line per problem (lint warnings
# included); the contract is that it reports nothing for any service.
for target in scheduler:$SCHED_MPORT registry:$REG_MPORT dispatcher:$DISP_MPORT executor:$EXEC_MPORT \
              console:$CONSOLE_MPORT; do
  name=${target%%:*}
  body="$TMP/metrics/$name.txt"
  if ! curl -sS --max-time 5 -o "$body" "http://127.0.0.1:${target##*:}/metrics"; then
    fail "$name: GET /metrics failed"
    continue
  fi
  report="$("$PROMTOOL" check metrics <"$body" 2>&1)"; rc=$?
  if [ "$rc" -eq 0 ] && [ -z "$report" ]; then
    ok "promtool check metrics: $name reports nothing ($(grep -c '^jobwheel_' "$body") samples)"
  else
    fail "promtool check metrics: $name (exit $rc): $(tr '\n' ';' <<<"$report")"
  fi
done

############################################################################ --log_json
# json_lines FILE: prints "OK <n> lines" when every non-empty line of FILE is one JSON object
# with the keys time, level, component and msg, else "FAIL <why>".
json_lines() {
  python3 - "$1" <<'PY'
import json, sys
bad = []
n = 0
for i, line in enumerate(open(sys.argv[1], encoding="utf-8", errors="replace"), 1):
    line = line.rstrip("\n")
    if not line:
        continue
    n += 1
    try:
        o = json.loads(line)
        if not isinstance(o, dict) or not {"time", "level", "component", "msg"} <= o.keys():
            raise ValueError("not an object with time, level, component and msg")
    except ValueError as e:
        bad.append("line %d: %s: %r" % (i, e, line[:100]))
if bad:
    print("FAIL %d of %d lines are not JSON log objects; %s" % (len(bad), n, " | ".join(bad[:2])))
elif n == 0:
    print("FAIL no log lines")
else:
    print("OK %d lines" % n)
PY
}

# Everything each service of the stack wrote so far.
for name in registry dispatcher scheduler demo_executor console; do
  res="$(json_lines "$TMP/logs/$name.log")"
  case "$res" in
    OK*) ok "--log_json: $name logs one JSON object per line (${res#OK })" ;;
    *) fail "--log_json: $name: ${res#FAIL }" ;;
  esac
done
# A message with quotes and newlines (libpq's "connection to server at "127.0.0.1", port 1
# failed: ...\n\tIs the server running...") must still be one escaped JSON object per line:
# each service, pointed at a closed port, logs that error and exits.
for s in registry dispatcher scheduler; do
  timeout 20 "$BIN/services/$s/$s" --log_json --insecure_dev --metrics_address= \
    --listen=127.0.0.1:0 --db_dsn="host=127.0.0.1 port=1 user=postgres dbname=x connect_timeout=2" \
    >"$TMP/logs/$s-baddb.log" 2>&1
  rc=$?
  res="$(json_lines "$TMP/logs/$s-baddb.log")"
  if [ "$rc" -eq 124 ]; then
    fail "--log_json: $s did not exit with an unreachable database within 20 s"
  elif [ "$rc" -eq 0 ]; then
    fail "--log_json: $s exited 0 with an unreachable database"
  else
    case "$res" in
      OK*) ok "--log_json: $s escapes a PostgreSQL error with quotes and newlines (${res#OK })" ;;
      *) fail "--log_json: $s with an unreachable database: ${res#FAIL }" ;;
    esac
  fi
done

############################################################################ still running
for name in $(stack_dead); do
  fail "$name (pid ${STACK_PID[$name]}) exited during the test; see its log above"
done

finish
