#!/usr/bin/env bash
# Offline checks of the deployment files: Helm chart layout and secure defaults, Grafana
# dashboards (valid JSON, ${datasource} variable, only metric names and labels from
# docs/metrics.md), chart copies of the dashboards identical to deploy/grafana/, Dockerfile
# and .dockerignore; then renders the chart with tools/chart-render (Go text/template + sprig,
# as Helm does; built from Debian's Go packages) for several value sets and checks every
# rendered object with tests/deploy/rendered_checks.py (python3-yaml). No helm, no cluster.
#
#   bash tests/deploy/test_chart.sh   # ends with "N passed, N failed, N skipped"
#
# Exit status: 1 when a check failed; 77 when nothing could run; 0 otherwise. A check that
# cannot run (no Go, no python3-yaml) is counted as skipped, never as passed; with CI=true a
# skipped check fails the run.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CHART="$ROOT/deploy/k8s/jobwheel"
GRAFANA="$ROOT/deploy/grafana"
METRICS_DOC="$ROOT/docs/metrics.md"
DASHBOARDS=(overview scheduler registry dispatcher executor)
# Labels Prometheus attaches to every scraped series (target labels), usable on any metric.
TARGET_LABELS=" namespace instance job pod service container endpoint "

# ok / fail / skip and the PASSED, FAILED, SKIPPED (and per-group G_*) counts.
# shellcheck source=scripts/lib/tally.sh
. "$ROOT/scripts/lib/tally.sh"
GROUP=""

check() { # check DESCRIPTION COMMAND...: passes when COMMAND succeeds
  local desc="$1"; shift
  if "$@" >/dev/null 2>&1; then ok "$desc"; else fail "$desc"; fi
}
group() {
  end_group
  GROUP="$1"; G_PASSED=0; G_FAILED=0; G_SKIPPED=0
  echo "== $GROUP"
}
end_group() {
  if [ -n "$GROUP" ]; then echo "== $GROUP: $G_PASSED passed, $G_FAILED failed, $G_SKIPPED skipped"; echo; fi
}

JSON_TOOL=""
if command -v python3 >/dev/null 2>&1; then JSON_TOOL=python3
elif command -v node >/dev/null 2>&1; then JSON_TOOL=node
fi

# dashboard_scan FILE: parses a Grafana dashboard; prints "EXPR<TAB>expression" for every
# PromQL expression and template-variable query, and "ERR<TAB>message" for structural problems.
# Exit status is non-zero when the file is not valid JSON.
dashboard_scan() {
  if [ "$JSON_TOOL" = python3 ]; then
    python3 - "$1" <<'PY'
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    d = json.load(f)
def err(m): print("ERR\t" + m)
if not isinstance(d, dict): err("top level is not an object"); sys.exit(0)
for k in ("title", "uid", "panels", "templating", "schemaVersion"):
    if k not in d: err("missing key " + k)
tv = [v for v in d.get("templating", {}).get("list", []) if v.get("name") == "datasource"]
if not tv or tv[0].get("type") != "datasource" or tv[0].get("query") != "prometheus":
    err("no template variable 'datasource' of type datasource/prometheus")
def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))
for p in panels(d.get("panels", [])):
    if p.get("type") == "row": continue
    title = p.get("title", "?")
    for t in [p] + p.get("targets", []):
        ds = t.get("datasource")
        if not isinstance(ds, dict) or ds.get("uid") != "${datasource}":
            err("panel %r: datasource is not ${datasource}" % title)
    if not p.get("targets"): err("panel %r has no targets" % title)
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("expr", "query", "definition") and isinstance(v, str):
                print("EXPR\t" + v.replace("\n", " "))
            walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(d)
print("UID\t" + str(d.get("uid", "")))
PY
  else
    node -e '
const fs = require("fs");
const d = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const err = (m) => console.log("ERR\t" + m);
for (const k of ["title", "uid", "panels", "templating", "schemaVersion"]) if (!(k in d)) err("missing key " + k);
const tv = ((d.templating || {}).list || []).filter((v) => v.name === "datasource");
if (!tv.length || tv[0].type !== "datasource" || tv[0].query !== "prometheus")
  err("no template variable \x27datasource\x27 of type datasource/prometheus");
const panels = (ps) => ps.flatMap((p) => [p, ...panels(p.panels || [])]);
for (const p of panels(d.panels || [])) {
  if (p.type === "row") continue;
  for (const t of [p, ...(p.targets || [])]) {
    if (!t.datasource || t.datasource.uid !== "${datasource}") err("panel " + JSON.stringify(p.title) + ": datasource is not ${datasource}");
  }
  if (!(p.targets || []).length) err("panel " + JSON.stringify(p.title) + " has no targets");
}
(function walk(o) {
  if (Array.isArray(o)) o.forEach(walk);
  else if (o && typeof o === "object") for (const [k, v] of Object.entries(o)) {
    if (["expr", "query", "definition"].includes(k) && typeof v === "string") console.log("EXPR\t" + v.replace(/\n/g, " "));
    walk(v);
  }
})(d);
console.log("UID\t" + (d.uid || ""));
' "$1"
  fi
}

############################################################################ chart layout
group "chart layout"
check "chart directory deploy/k8s/jobwheel exists" test -d "$CHART"
check "Chart.yaml exists" test -f "$CHART/Chart.yaml"
check "Chart.yaml: apiVersion v2" grep -qE '^apiVersion:[[:space:]]*v2[[:space:]]*$' "$CHART/Chart.yaml"
check "Chart.yaml: name jobwheel" grep -qE '^name:[[:space:]]*jobwheel[[:space:]]*$' "$CHART/Chart.yaml"
check "Chart.yaml: SemVer version" grep -qE '^version:[[:space:]]*"?[0-9]+\.[0-9]+\.[0-9]+' "$CHART/Chart.yaml"
check "Chart.yaml: appVersion" grep -qE '^appVersion:' "$CHART/Chart.yaml"
check "values.yaml exists" test -f "$CHART/values.yaml"
for t in _helpers.tpl NOTES.txt validate.yaml secret.yaml scheduler.yaml registry.yaml dispatcher.yaml \
         demo-executor.yaml http-executor.yaml console.yaml serviceaccount.yaml servicemonitor.yaml dashboards.yaml \
         networkpolicy.yaml certificates.yaml migrations-job.yaml; do
  check "templates/$t exists" test -f "$CHART/templates/$t"
done
check "no tab characters in templates or values (YAML forbids them)" \
  bash -c "! grep -lP '\t' '$CHART'/templates/*.yaml '$CHART/values.yaml' '$CHART/Chart.yaml'"
# A template file's {{ and }} must balance, or Helm cannot parse it (NOTES.txt is left out:
# its JSON examples contain a literal "}}").
for f in "$CHART"/templates/*.yaml "$CHART"/templates/*.tpl; do
  o=$(grep -o '{{' "$f" | wc -l); c=$(grep -o '}}' "$f" | wc -l)
  if [ "$o" -eq "$c" ]; then ok "$(basename "$f"): balanced template delimiters ($o)"
  else fail "$(basename "$f"): $o '{{' but $c '}}'"; fi
done

############################################################################ secure defaults
group "secure defaults"
V="$CHART/values.yaml"
# value_of PATH: the scalar at a dotted path of values.yaml (simple two-level lookup).
value_of() {
  awk -v parent="${1%%.*}" -v key="${1#*.}" '
    /^[A-Za-z]/ { in_p = ($0 ~ "^" parent ":") }
    in_p && $0 ~ "^  " key ":" { sub("^  " key ":[[:space:]]*", ""); sub("[[:space:]]*#.*$", ""); print; exit }
  ' "$V"
}
for k in db.dsn auth.executorToken auth.adminToken auth.schedulerSigningKey auth.schedulerPublicKey \
         auth.dispatcherSigningKey auth.dispatcherPublicKey demoExecutor.token demoExecutor.tokenSecret \
         httpExecutor.token httpExecutor.tokenSecret console.proxyToken console.proxyTokenSecret; do
  val="$(value_of "$k")"
  if [ "$val" = '""' ]; then ok "values.yaml: $k defaults to empty (no default secret)"
  else fail "values.yaml: $k must default to \"\", found [$val]"; fi
done
check "values.yaml: insecureDev defaults to false" grep -qE '^insecureDev:[[:space:]]*false' "$V"
check "values.yaml: existingSecret defaults to empty" grep -qE '^existingSecret:[[:space:]]*""' "$V"
check "values.yaml: runAsNonRoot: true" grep -qE '^[[:space:]]+runAsNonRoot:[[:space:]]*true' "$V"
check "values.yaml: runAsUser: 65532" grep -qE '^[[:space:]]+runAsUser:[[:space:]]*65532' "$V"
check "values.yaml: readOnlyRootFilesystem: true" grep -qE '^[[:space:]]+readOnlyRootFilesystem:[[:space:]]*true' "$V"
check "values.yaml: allowPrivilegeEscalation: false" grep -qE '^[[:space:]]+allowPrivilegeEscalation:[[:space:]]*false' "$V"
check "values.yaml: capabilities drop ALL" grep -qE '^[[:space:]]+- ALL' "$V"
check "values.yaml: seccompProfile RuntimeDefault" grep -qE '^[[:space:]]+type:[[:space:]]*RuntimeDefault' "$V"
check "values.yaml: serviceMonitor off by default" \
  awk '/^serviceMonitor:/{s=1;next} /^[A-Za-z]/{s=0} s&&/^  enabled:[[:space:]]*false/{f=1} END{exit !f}' "$V"
check "values.yaml: migrations.job off by default" grep -qE '^    enabled:[[:space:]]*false' "$V"
check "values.yaml: demoExecutor off by default" \
  awk '/^demoExecutor:/{s=1;next} /^[A-Za-z]/{s=0} s&&/^  enabled:[[:space:]]*false/{f=1} END{exit !f}' "$V"
check "values.yaml: console on by default" \
  awk '/^console:/{s=1;next} /^[A-Za-z]/{s=0} s&&/^  enabled:[[:space:]]*true/{f=1} END{exit !f}' "$V"
check "values.yaml: networkPolicy on by default" \
  awk '/^networkPolicy:/{s=1;next} /^[A-Za-z]/{s=0} s&&/^  enabled:[[:space:]]*true/{f=1} END{exit !f}' "$V"
check "validate.yaml fails the render when values are missing" grep -q 'fail (printf' "$CHART/templates/validate.yaml"
check "validate.yaml requires a DSN" grep -q 'a PostgreSQL DSN is required' "$CHART/templates/validate.yaml"
check "validate.yaml requires the tokens" grep -q 'authentication tokens are required' "$CHART/templates/validate.yaml"
check "validate.yaml requires each enabled executor's own token" \
  grep -q 'needs its own executor token (there is no shared one)' "$CHART/templates/validate.yaml"
check "validate.yaml refuses insecureDev (--insecure_dev needs a loopback listener)" \
  grep -q 'insecureDev=true cannot work in a cluster' "$CHART/templates/validate.yaml"
check "pods use native gRPC probes" grep -qE '^grpc:$' "$CHART/templates/_helpers.tpl"
check "pods disable service links (no stray JOBWHEEL_* variables)" grep -q 'enableServiceLinks: false' "$CHART/templates/_helpers.tpl"
check "pods mount an emptyDir at /tmp" grep -q 'mountPath: /tmp' "$CHART/templates/_helpers.tpl"
check "headless Services for client-side balancing" grep -q 'clusterIP: None' "$CHART/templates/_helpers.tpl"
check "HPA uses autoscaling/v2" grep -q 'apiVersion: autoscaling/v2' "$CHART/templates/_helpers.tpl"
check "PDBs use policy/v1" grep -q 'apiVersion: policy/v1' "$CHART/templates/_helpers.tpl"
check "dashboards ConfigMap reads the chart's dashboards with .Files.Glob" \
  grep -q '.Files.Glob "dashboards/\*.json"' "$CHART/templates/dashboards.yaml"
check "dashboards ConfigMap carries grafana_dashboard: \"1\"" grep -qE '^    grafana_dashboard: "1"' "$V"

# Every leaf key of values.yaml is documented: it, or a map above it, follows a comment line.
undocumented="$(awk '
  function indent(s) { match(s, /^ */); return RLENGTH }
  /^[[:space:]]*$/ { next }
  /^[[:space:]]*#/ { prev_comment = 1; next }
  /^[[:space:]]*- / { prev_comment = 0; next }
  /^[[:space:]]*[A-Za-z_][A-Za-z0-9_.-]*:/ {
    n = indent($0)
    while (depth > 0 && ind[depth] >= n) depth--
    covered = prev_comment
    for (i = 1; i <= depth; i++) if (doc[i]) covered = 1
    depth++; ind[depth] = n; doc[depth] = prev_comment
    line = $0; sub(/^[[:space:]]*/, "", line)
    leaf = (line !~ /:[[:space:]]*$/)
    if (leaf && !covered) { key = line; sub(/:.*/, "", key); print NR ":" key }
    prev_comment = 0
  }
' "$V")"
if [ -z "$undocumented" ]; then ok "values.yaml: every key is documented"
else fail "values.yaml: undocumented keys (line:key): $(echo $undocumented)"; fi

############################################################################ flags
# The chart passes flags as JOBWHEEL_<FLAG> variables, which a binary silently ignores when it
# has no such flag: check every flag the chart sets against the ABSL_FLAG definitions.
group "chart flags exist in the binaries"
# component (source dir or file) and the flags the chart sets for it; the scheduler, registry
# and dispatcher take the readiness flags (drain_delay) from common/server/readiness_flags.cc,
# the scheduler, registry, dispatcher, console and XXL gateway the logging flags from
# common/server/log_flags.cc
FLAG_TABLE="
services/scheduler listen metrics_address db_dsn replica_id signing_key_file admin_token_file dispatcher_target tls_cert tls_key tls_ca tls_client_ca migrate_only
services/registry listen metrics_address db_dsn replica_id dispatcher_public_key_file admin_token_file executor_token_file tls_cert tls_key tls_client_ca
services/dispatcher listen metrics_address db_dsn replica_id signing_key_file scheduler_public_key_file executor_token_file registry_target tls_cert tls_key tls_ca tls_client_ca
sdk/examples/demo_executor.cc listen metrics_address log_json log_level dispatcher_public_key_file scheduler_public_key_file executor_token_file registry_target dispatcher_target app advertise_address log_dir spool_dir tls_cert tls_key tls_ca tls_client_ca
services/console listen metrics_address scheduler_target registry_target web_root tls_ca tls_client_cert tls_client_key drain_delay
common/server/readiness_flags.cc drain_delay
common/server/log_flags.cc log_json log_level
services/xxl_gateway listen_http metrics_address executor_ports advertise_host bind_host registry_target dispatcher_target state_dir drain_delay dispatcher_public_key_file scheduler_public_key_file app_handlers script_apps tls_cert tls_key tls_ca tls_client_ca
"
ALL_FLAGS=" "
while read -r src flags; do
  [ -n "$src" ] || continue
  if [ ! -e "$ROOT/$src" ]; then fail "$src: missing (the chart runs its binary)"; continue; fi
  defined=" $(grep -rhoE 'ABSL_FLAG\([^,]+,[[:space:]]*[a-z0-9_]+' "$ROOT/$src" | sed -E 's/.*,[[:space:]]*//' | tr '\n' ' ') "
  ALL_FLAGS="$ALL_FLAGS$defined"
  missing=""
  for f in $flags; do [[ "$defined" == *" $f "* ]] || missing="$missing --$f"; done
  if [ -z "$missing" ]; then ok "$src defines every flag the chart sets ($(wc -w <<<"$flags"))"
  else fail "$src lacks flags the chart sets:$missing"; fi
done <<<"$FLAG_TABLE"
# Every JOBWHEEL_* variable named in the templates maps to a flag of some binary.
unknown=""
for v in $(grep -rhoE 'JOBWHEEL_[A-Z][A-Z0-9_]*' "$CHART/templates" | sort -u); do
  f="$(tr 'A-Z' 'a-z' <<<"${v#JOBWHEEL_}")"
  [[ "$ALL_FLAGS" == *" $f "* ]] || unknown="$unknown $v"
done
if [ -z "$unknown" ]; then ok "every JOBWHEEL_* variable in the templates is a flag"
else fail "JOBWHEEL_* variables in the templates that no binary defines:$unknown"; fi

############################################################################ dashboards
group "dashboards"
if [ -z "$JSON_TOOL" ]; then
  fail "neither python3 nor node is available to parse JSON"
fi

# Metric contract from docs/metrics.md: name -> type, name -> " label label ".
declare -A MTYPE MLABELS
if [ -f "$METRICS_DOC" ]; then
  while IFS=$'\t' read -r name type labels; do
    MTYPE[$name]="$type"
    MLABELS[$name]=" $labels "
  done < <(awk -F'|' '$2 ~ /`jobwheel_[a-z_]+`/ {
      name = $2; gsub(/[` ]/, "", name)
      type = $3; gsub(/ /, "", type)
      labels = ""
      s = $4
      while (match(s, /`[a-z_]+`/)) { labels = labels " " substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) }
      sub(/^ /, "", labels)
      print name "\t" type "\t" labels
    }' "$METRICS_DOC")
  check "docs/metrics.md lists metrics (${#MTYPE[@]})" test "${#MTYPE[@]}" -gt 0
else
  fail "docs/metrics.md is missing"
fi

# metric_base NAME: the documented metric NAME refers to, or "" when it is not in the contract.
metric_base() {
  local n="$1" b
  if [ -n "${MTYPE[$n]:-}" ] && [ "${MTYPE[$n]}" != histogram ]; then echo "$n"; return; fi
  for suf in _bucket _sum _count; do
    b="${n%"$suf"}"
    if [ "$b" != "$n" ] && [ "${MTYPE[$b]:-}" = histogram ]; then echo "$b"; return; fi
  done
  echo ""
}

declare -A USED UIDS
for name in "${DASHBOARDS[@]}"; do
  check "deploy/grafana/$name.json exists" test -f "$GRAFANA/$name.json"
done
for f in "$GRAFANA"/*.json; do
  [ -f "$f" ] || continue
  rel="deploy/grafana/$(basename "$f")"
  [ -n "$JSON_TOOL" ] || continue
  if ! scan="$(dashboard_scan "$f" 2>&1)"; then
    fail "$rel: invalid JSON ($(grep -m1 -E "Error" <<<"$scan" || tail -1 <<<"$scan"))"
    continue
  fi
  ok "$rel: valid JSON ($JSON_TOOL)"
  errs="$(printf '%s\n' "$scan" | awk -F'\t' '$1 == "ERR" { print $2 }')"
  if [ -z "$errs" ]; then ok "$rel: Grafana structure, every panel on \${datasource}"
  else while IFS= read -r e; do fail "$rel: $e"; done <<<"$errs"; fi
  uid="$(printf '%s\n' "$scan" | awk -F'\t' '$1 == "UID" { print $2 }')"
  if [ -n "$uid" ] && [ -z "${UIDS[$uid]:-}" ]; then ok "$rel: unique uid $uid"; UIDS[$uid]="$rel"
  else fail "$rel: uid '$uid' empty or also used by ${UIDS[$uid]:-?}"; fi

  bad_metrics=""; bad_labels=""; n_expr=0
  while IFS= read -r expr; do
    n_expr=$((n_expr + 1))
    allowed="$TARGET_LABELS"
    for m in $(grep -oE 'jobwheel_[a-z_]+' <<<"$expr" | sort -u); do
      b="$(metric_base "$m")"
      if [ -z "$b" ]; then bad_metrics="$bad_metrics $m"; continue; fi
      USED[$b]=1
      allowed="$allowed${MLABELS[$b]}"
      [ "$m" != "$b" ] && [ "${m%_bucket}" != "$m" ] && allowed="$allowed le "
    done
    # Label matchers inside metric selectors: only that metric's labels (plus target labels).
    while IFS= read -r sel; do
      [ -n "$sel" ] || continue
      m="${sel%%\{*}"; b="$(metric_base "$m")"; [ -n "$b" ] || continue
      ok_labels="$TARGET_LABELS${MLABELS[$b]}"; [ "${m%_bucket}" != "$m" ] && ok_labels="$ok_labels le "
      for l in $(grep -oE '[a-zA-Z_][a-zA-Z0-9_]*[[:space:]]*(=~|!~|!=|=)' <<<"${sel#*\{}" | grep -oE '^[a-zA-Z_][a-zA-Z0-9_]*'); do
        [[ "$ok_labels" == *" $l "* ]] || bad_labels="$bad_labels $m{$l}"
      done
    done < <(grep -oE 'jobwheel_[a-z_]+\{[^}]*\}' <<<"$expr")
    # Grouping labels (by/without) and label_values(): labels of the metrics in the expression.
    for l in $( { grep -oE '(by|without)[[:space:]]*\([^)]*\)' <<<"$expr" | sed -E 's/^[a-z]+[[:space:]]*\(//; s/\)$//';
                  grep -oE 'label_values\([^)]*\)' <<<"$expr" | sed -E 's/.*,[[:space:]]*//; s/\)$//'; } | tr ',' ' '); do
      [[ "$allowed" == *" $l "* ]] || bad_labels="$bad_labels $l"
    done
  done < <(printf '%s\n' "$scan" | awk -F'\t' '$1 == "EXPR" { print $2 }')
  if [ "$n_expr" -gt 0 ]; then ok "$rel: has $n_expr queries"; else fail "$rel: has no queries"; fi
  if [ -z "$bad_metrics" ]; then ok "$rel: every metric is in docs/metrics.md (histograms via _bucket/_sum/_count)"
  else fail "$rel: metrics not in docs/metrics.md (or histogram used without _bucket/_sum/_count):$(tr ' ' '\n' <<<"$bad_metrics" | sort -u | tr '\n' ' ')"; fi
  if [ -z "$bad_labels" ]; then ok "$rel: every label is listed for its metric in docs/metrics.md (or a target label)"
  else fail "$rel: labels not in docs/metrics.md:$(tr ' ' '\n' <<<"$bad_labels" | sort -u | tr '\n' ' ')"; fi
done
unshown=""
for m in "${!MTYPE[@]}"; do [ -n "${USED[$m]:-}" ] || unshown="$unshown $m"; done
if [ -n "$unshown" ]; then echo "note - documented metrics on no dashboard:$unshown"; fi

############################################################################ chart copies
group "chart dashboards = deploy/grafana"
check "chart has dashboards/" test -d "$CHART/dashboards"
for f in "$GRAFANA"/*.json; do
  [ -f "$f" ] || continue
  b="$(basename "$f")"
  if cmp -s "$f" "$CHART/dashboards/$b"; then ok "dashboards/$b identical to deploy/grafana/$b"
  else fail "deploy/k8s/jobwheel/dashboards/$b differs from deploy/grafana/$b (run: cp deploy/grafana/*.json deploy/k8s/jobwheel/dashboards/)"; fi
done
for f in "$CHART"/dashboards/*; do
  [ -e "$f" ] || continue
  b="$(basename "$f")"
  check "dashboards/$b has a source in deploy/grafana/" test -f "$GRAFANA/$b"
done

############################################################################ image
group "Dockerfile and .dockerignore"
D="$ROOT/Dockerfile"
check "Dockerfile exists" test -f "$D"
check "build stage on debian:bookworm" grep -qE '^FROM debian:bookworm AS build' "$D"
check "runtime stage on debian:bookworm-slim" grep -qE '^FROM debian:bookworm-slim' "$D"
check "builds with bazel --jobs=2" grep -q 'bazel build --jobs=2' "$D"
for b in scheduler registry dispatcher demo_executor jobwheelctl console; do
  check "image gets $b" grep -qE "bazel-bin/.*/$b( |\\\\|$)" "$D"
done
check "binaries land in /usr/local/bin" grep -q 'COPY --from=build /out/ /usr/local/bin/' "$D"
check "build stage copies services/console/web" grep -q 'cp -R services/console/web/' "$D"
WEB_ROOT="$(awk '/^console:/{s=1;next} /^[A-Za-z]/{s=0} s&&/^  webRoot:/{print $2; exit}' "$V")"
check "image gets the console's web pages at the chart's console.webRoot ($WEB_ROOT)" \
  grep -qE "^COPY --from=build /web/ ${WEB_ROOT:-unset}/?\$" "$D"
check "runtime installs libcpp-httplib0.11 (the console's HTTP server)" \
  bash -c "sed -n '/^FROM debian:bookworm-slim/,\$p' '$D' | grep -q 'libcpp-httplib0.11'"
check "runs as USER 65532" grep -qE '^USER 65532' "$D"
check "runtime installs no compiler or -dev package" \
  bash -c "! sed -n '/^FROM debian:bookworm-slim/,\$p' '$D' | grep -qE 'g\\+\\+|-dev( |\$)|bazel'"
for p in bazel-\\* .data node_modules .git; do
  check ".dockerignore excludes $p" grep -qE "^(\\*\\*/)?${p}\$" "$ROOT/.dockerignore"
done

############################################################################ rendered chart
# The chart rendered by tools/chart-render for realistic value sets; every object checked by
# rendered_checks.py (kinds, references, probes, security contexts, Secrets, NetworkPolicies,
# console, TLS), and value sets that must fail do so with the template's message.
group "chart rendered (tools/chart-render)"
RENDER_SCENARIOS=(default tls-cert-manager tls-existing-secret console-ingress replicas
                  external-secrets minimal xxl-gateway http-executor cloudnativepg)
RENDER_FAILURES=(no-values tls-without-certificates ingress-without-host short-token missing-keys
                 swapped-key insecure-dev insecure-dev-with-secrets executor-without-token
                 app-token-not-an-api-token app-token-twice)
render_skip() { # render_skip REASON: every rendered check is skipped, visibly
  skip "$1: $(( ${#RENDER_SCENARIOS[@]} + ${#RENDER_FAILURES[@]} + 1 )) render checks skipped"
  SKIPPED=$(( SKIPPED + ${#RENDER_SCENARIOS[@]} + ${#RENDER_FAILURES[@]} ))
  G_SKIPPED=$(( G_SKIPPED + ${#RENDER_SCENARIOS[@]} + ${#RENDER_FAILURES[@]} ))
}
RENDERER=""
if ! python3 -c 'import yaml' >/dev/null 2>&1; then
  render_skip "python3 with PyYAML (python3-yaml) is not installed"
else
  build_log="$(bash "$ROOT/tools/chart-render/build.sh" test 2>&1)"; rc=$?
  if [ "$rc" -eq 77 ]; then
    render_skip "$(tail -1 <<<"$build_log")"
  elif [ "$rc" -ne 0 ]; then
    fail "tools/chart-render builds and its unit tests pass: $(tail -15 <<<"$build_log")"
  else
    ok "tools/chart-render builds and its unit tests pass"
    RENDERER="$(tail -1 <<<"$build_log")"
  fi
fi

if [ -n "$RENDERER" ]; then
  WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
  RAN=()
  # Flags each component's binary defines, for rendered_checks.py.
  python3 - "$ROOT" >"$WORK/flags.json" <<'PY'
import json, os, re, sys
root = sys.argv[1]
# The readiness flags (--db_check_interval, --db_check_timeout, --drain_delay) of the servers
# with a database are defined once, in common/server/readiness_flags.cc; the logging flags
# (--log_json, --log_level) of the scheduler, registry, dispatcher, console, XXL gateway and HTTP
# executor in
# common/server/log_flags.cc.
readiness = "common/server/readiness_flags.cc"
logging = "common/server/log_flags.cc"
src = {"scheduler": ["services/scheduler", readiness, logging],
       "registry": ["services/registry", readiness, logging],
       "dispatcher": ["services/dispatcher", readiness, logging],
       "demo-executor": ["sdk/examples/demo_executor.cc"], "console": ["services/console", logging],
       "xxl-gateway": ["services/xxl_gateway", logging],
       "http-executor": ["services/http_executor/main.cc", logging],
       "migrations": ["services/scheduler", readiness, logging]}
out = {}
for comp, rels in src.items():
    files = []
    for rel in rels:
        p = os.path.join(root, rel)
        files += [p] if os.path.isfile(p) else [os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if f.endswith(".cc")]
    flags = set()
    for f in files:
        flags |= set(re.findall(r"ABSL_FLAG\([^,]+,\s*([a-z0-9_]+)", open(f, encoding="utf-8", errors="replace").read()))
    out[comp] = sorted(flags)
print(json.dumps(out))
PY
  T="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  DSN="postgresql://jw:$T@pg.example.internal:5432/jobwheel?sslmode=require"
  # The Ed25519 key pairs, as `--set-file` would give them (chart-render takes them in a
  # values file); KEYS_GIVEN: the four PEM texts as JSON strings.
  (umask 077
   for k in scheduler dispatcher; do
     openssl genpkey -algorithm ed25519 -out "$WORK/$k.key" &&
       openssl pkey -in "$WORK/$k.key" -pubout -out "$WORK/$k.pub"
   done)
  KEYS_GIVEN="$(python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
pems = {k: open("%s/%s" % (w, f)).read() for k, f in [
    ("schedulerSigningKey", "scheduler.key"), ("schedulerPublicKey", "scheduler.pub"),
    ("dispatcherSigningKey", "dispatcher.key"), ("dispatcherPublicKey", "dispatcher.pub")]}
with open("%s/keys-values.yaml" % w, "w") as f:
    json.dump({"auth": pems}, f)  # JSON is YAML.
print(", ".join(json.dumps(v) for v in pems.values()))
PY
)"
  # No shared executor token: each executor its own API token (jw_ + 64 hex digits), scoped
  # to its app, and the console its proxy token.
  api_token() { printf 'jw_%s' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
  DEMO_TOKEN="$(api_token)"; HTTP_TOKEN="$(api_token)"; PROXY_TOKEN="$(api_token)"
  SECRETS=(--set-string "db.dsn=$DSN" --set-string "auth.adminToken=a$T" -f "$WORK/keys-values.yaml")
  DEMO=(--set demoExecutor.enabled=true --set-string "demoExecutor.token=$DEMO_TOKEN")
  GIVEN="\"$DSN\", \"e$T\", \"a$T\", \"$DEMO_TOKEN\", \"$HTTP_TOKEN\", \"$PROXY_TOKEN\", $KEYS_GIVEN"
  # The image's web root must match what the chart passes.
  BASE='"secret_values": ['"$GIVEN"'], "dashboards_namespace": "jobs"'

  # scenario NAME RELEASE FULLNAME EXPECT_JSON_FIELDS ARGS...: render, then check.
  scenario() {
    local name="$1" release="$2" full="$3" expect="$4"; shift 4
    local out="$WORK/$name.yaml" err="$WORK/$name.err"
    RAN+=("$name")
    if ! "$RENDERER" "$release" "$CHART" -n jobs "$@" >"$out" 2>"$err"; then
      fail "$name: renders ($(head -c 1500 "$err"))"; return
    fi
    ok "$name: renders ($(grep -c '^# Source:' "$out") objects)"
    printf '{"release": "%s", "fullname": "%s", "namespace": "jobs", %s, %s}\n' \
      "$release" "$full" "$BASE" "$expect" >"$WORK/$name.json"
    while IFS=$'\t' read -r status desc; do
      case "$status" in ok) ok "$desc" ;; FAIL) fail "$desc" ;; *) fail "$name: checker said: $status $desc" ;; esac
    done < <(python3 "$ROOT/tests/deploy/rendered_checks.py" "$name" "$out" "$WORK/$name.json" "$WORK/flags.json" 2>&1)
  }
  # must_fail NAME MESSAGE ARGS...: the render fails and says MESSAGE.
  must_fail() {
    local name="$1" msg="$2"; shift 2
    local out rc
    RAN+=("$name")
    out="$("$RENDERER" jw "$CHART" -n jobs "$@" 2>&1)"; rc=$?
    if [ "$rc" -ne 0 ] && grep -qF -- "$msg" <<<"$out"; then ok "$name: the render fails with \"$msg\""
    else fail "$name: want a failed render saying \"$msg\", got rc=$rc: $(head -c 600 <<<"$out")"; fi
  }

  scenario default jw jw-jobwheel \
    '"kinds": {"Deployment": 4, "Service": 6, "ConfigMap": 5, "Secret": 2, "NetworkPolicy": 4, "PodDisruptionBudget": 4, "HorizontalPodAutoscaler": 1, "ServiceAccount": 1, "Ingress": 0, "Certificate": 0}, "replicas": {"scheduler": 2, "registry": 2}, "app_tokens": {"console": "jw-jobwheel-console-token"}' \
    "${SECRETS[@]}" --set-string "console.proxyToken=$PROXY_TOKEN"
  scenario tls-cert-manager jw jw-jobwheel \
    '"kinds": {"Certificate": 5, "Deployment": 5, "NetworkPolicy": 5, "Secret": 2}, "client_auth": true, "tls": {"scheduler": "jw-jobwheel-scheduler-tls", "registry": "jw-jobwheel-registry-tls", "dispatcher": "jw-jobwheel-dispatcher-tls", "demo-executor": "jw-jobwheel-demo-executor-tls", "console": "jw-jobwheel-console-tls"}, "app_tokens": {"demo-executor": "jw-jobwheel-demo-executor-token"}' \
    "${SECRETS[@]}" --set tls.enabled=true,tls.clientAuth=true,tls.certManager.enabled=true \
    --set tls.certManager.issuerRef.name=jobwheel-ca "${DEMO[@]}"
  scenario tls-existing-secret jw jw-jobwheel \
    '"kinds": {"Certificate": 0}, "external_secrets": ["jw-tls", "jw-sched-tls"], "tls": {"*": "jw-tls", "scheduler": "jw-sched-tls"}' \
    "${SECRETS[@]}" --set tls.enabled=true,tls.existingSecret=jw-tls,tls.componentSecrets.scheduler=jw-sched-tls
  scenario console-ingress jw jw-jobwheel \
    '"kinds": {"Ingress": 1}, "console_ingress": {"host": "jobs.example.com", "className": "nginx", "tlsSecret": "jobs-example-com-tls"}' \
    "${SECRETS[@]}" --set console.ingress.enabled=true,console.ingress.host=jobs.example.com \
    --set console.ingress.className=nginx,console.ingress.tls.secretName=jobs-example-com-tls \
    --set 'console.ingress.annotations.cert-manager\.io/cluster-issuer=letsencrypt'
  cat >"$WORK/replicas-values.yaml" <<'YAML'
scheduler: {replicaCount: 3}
registry: {replicaCount: 4}
dispatcher: {autoscaling: {enabled: false}, replicaCount: 5}
console: {replicaCount: 3, autoscaling: {enabled: false}, proxyTokenSecret: console-proxy}
demoExecutor: {enabled: true, replicaCount: 2, pdb: {enabled: true}, tokenSecret: demo-executor-token}
podAntiAffinity: hard
YAML
  # Existing Secrets for the own tokens, and the optional bootstrap executor token (registry
  # and dispatchers only).
  scenario replicas jw jw-jobwheel \
    '"kinds": {"HorizontalPodAutoscaler": 0, "PodDisruptionBudget": 5, "Secret": 1}, "console_replicas": 3, "replicas": {"scheduler": 3, "registry": 4, "dispatcher": 5, "console": 3, "demo-executor": 2}, "external_secrets": ["demo-executor-token", "console-proxy"], "app_tokens": {"demo-executor": "demo-executor-token", "console": "console-proxy"}, "bootstrap_executor_token": true' \
    "${SECRETS[@]}" -f "$WORK/replicas-values.yaml" --set-string "auth.executorToken=e$T"
  scenario external-secrets jobwheel jobwheel \
    '"kinds": {"Secret": 0}, "external_secrets": ["pg-app", "jobwheel-secrets"]' \
    --set db.existingSecret=pg-app,db.existingSecretKey=uri,existingSecret=jobwheel-secrets \
    --set migrations.job.enabled=true
  scenario minimal jw jw-jobwheel \
    '"kinds": {"NetworkPolicy": 0, "ServiceMonitor": 1, "Deployment": 3}, "network_policy": false, "console": false' \
    "${SECRETS[@]}" --set networkPolicy.enabled=false,console.enabled=false \
    --set serviceMonitor.enabled=true,metrics.scrapeAnnotations=true --api-versions monitoring.coreos.com/v1
  scenario xxl-gateway jw jw-jobwheel \
    '"kinds": {"Deployment": 5, "NetworkPolicy": 5, "PodDisruptionBudget": 5}' \
    "${SECRETS[@]}" --set xxlGateway.enabled=true,xxlGateway.appHandlers=demo-xxl=echo
  scenario http-executor jw jw-jobwheel \
    '"kinds": {"Deployment": 5, "NetworkPolicy": 5, "PodDisruptionBudget": 4, "Secret": 2}, "app_tokens": {"http-executor": "jw-jobwheel-http-executor-token"}' \
    "${SECRETS[@]}" --set httpExecutor.enabled=true --set-string "httpExecutor.token=$HTTP_TOKEN"
  # The CloudNativePG values (docs/database.md): the DSN from the operator's app Secret.
  scenario cloudnativepg jw jw-jobwheel \
    '"kinds": {"Deployment": 4, "NetworkPolicy": 4}, "external_secrets": ["jobwheel-pg-app"], "app_tokens": {"console": "jw-jobwheel-console-token"}' \
    --set-string "auth.adminToken=a$T" -f "$WORK/keys-values.yaml" \
    --set-string "console.proxyToken=$PROXY_TOKEN" -f "$CHART/values-cloudnativepg.yaml"

  must_fail no-values "authentication tokens are required"
  must_fail tls-without-certificates "tls.enabled needs certificates" "${SECRETS[@]}" --set tls.enabled=true
  must_fail ingress-without-host "console.ingress.enabled needs console.ingress.host" \
    "${SECRETS[@]}" --set console.ingress.enabled=true
  must_fail short-token "auth.adminToken is too short" \
    --set-string "db.dsn=$DSN" --set-string "auth.adminToken=short" -f "$WORK/keys-values.yaml"
  must_fail missing-keys "Ed25519 key pairs are required" \
    --set-string "db.dsn=$DSN" --set-string "auth.adminToken=a$T"
  must_fail swapped-key "auth.schedulerSigningKey is not a PEM PRIVATE KEY" \
    "${SECRETS[@]}" --set-string "auth.schedulerSigningKey=$(cat "$WORK/scheduler.pub")"
  # --insecure_dev is accepted only on loopback listeners and pods listen on 0.0.0.0: the
  # value cannot work, so it cannot render, with or without credentials.
  must_fail insecure-dev "insecureDev=true cannot work in a cluster" \
    --set-string "db.dsn=$DSN" --set insecureDev=true
  must_fail insecure-dev-with-secrets "insecureDev=true cannot work in a cluster" \
    "${SECRETS[@]}" --set insecureDev=true
  # An executor without a token of its own does not render, even with the bootstrap token.
  must_fail executor-without-token "demoExecutor.enabled needs its own executor token" \
    "${SECRETS[@]}" --set-string "auth.executorToken=e$T" --set demoExecutor.enabled=true
  must_fail app-token-not-an-api-token "httpExecutor.token is not an API token" \
    "${SECRETS[@]}" --set httpExecutor.enabled=true --set-string "httpExecutor.token=e$T"
  must_fail app-token-twice "set console.proxyToken or console.proxyTokenSecret, not both" \
    "${SECRETS[@]}" --set-string "console.proxyToken=$PROXY_TOKEN,console.proxyTokenSecret=x"
  # The skip count above assumes these lists; keep them equal to what ran.
  check "the value sets that ran are RENDER_SCENARIOS + RENDER_FAILURES" \
    test "${RAN[*]}" = "${RENDER_SCENARIOS[*]} ${RENDER_FAILURES[*]}"
fi
end_group

echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
if [ "$FAILED" -ne 0 ]; then exit 1; fi
# Anything skipped makes the whole check a skip for scripts/test (which fails it under CI=true):
# a partly run check never counts as passed.
if [ "$SKIPPED" -gt 0 ]; then exit 77; fi
exit 0
