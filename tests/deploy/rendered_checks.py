#!/usr/bin/env python3
"""Checks a rendered jobwheel chart (the output of tools/chart-render) for one value set.

    rendered_checks.py SCENARIO RENDERED.yaml EXPECT.json FLAGS.json

EXPECT.json says what the value set should produce (see tests/deploy/test_chart.sh);
FLAGS.json maps each component to the flags its binary defines. Prints one line per check,
"ok<TAB>description" or "FAIL<TAB>description: problems", and exits 0 (the caller counts).
"""
import base64
import json
import re
import sys

import yaml

# kind -> apiVersion the chart must use (nothing deprecated).
KINDS = {
    "ConfigMap": "v1", "Secret": "v1", "Service": "v1", "ServiceAccount": "v1",
    "Deployment": "apps/v1", "Job": "batch/v1", "PodDisruptionBudget": "policy/v1",
    "HorizontalPodAutoscaler": "autoscaling/v2", "NetworkPolicy": "networking.k8s.io/v1",
    "Ingress": "networking.k8s.io/v1", "ServiceMonitor": "monitoring.coreos.com/v1",
    "Certificate": "cert-manager.io/v1",
}
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Values a token or password must never have (defaults people leave in place).
WEAK = {"", "changeme", "change-me", "secret", "password", "token", "admin", "jobwheel",
        "default", "dev", "test", "example", "insecure"}

SCENARIO = sys.argv[1]
with open(sys.argv[2], encoding="utf-8") as f:
    DOCS = [d for d in yaml.safe_load_all(f) if d is not None]
with open(sys.argv[3], encoding="utf-8") as f:
    EXPECT = json.load(f)
with open(sys.argv[4], encoding="utf-8") as f:
    FLAGS = {k: set(v) for k, v in json.load(f).items()}


def check(desc, problems):
    problems = [p for p in problems if p]
    if problems:
        print("FAIL\t%s: %s: %s" % (SCENARIO, desc, "; ".join(sorted(set(problems)))[:2000]))
    else:
        print("ok\t%s: %s" % (SCENARIO, desc))


def of_kind(kind):
    return [d for d in DOCS if d.get("kind") == kind]


def name(d):
    return (d.get("metadata") or {}).get("name", "")


def component(d):
    return ((d.get("metadata") or {}).get("labels") or {}).get("app.kubernetes.io/component", "")


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


NS = EXPECT.get("namespace", "default")
deployments = of_kind("Deployment")
services = of_kind("Service")
configmaps = {name(d): d for d in of_kind("ConfigMap")}
secrets = {name(d): d for d in of_kind("Secret")}
certificates = of_kind("Certificate")
external = set(EXPECT.get("external_secrets", []))
cert_secrets = {c["spec"].get("secretName") for c in certificates}


def pod(d):
    return d["spec"]["template"]


def containers(d):
    return pod(d)["spec"].get("containers", [])


# ------------------------------------------------------------------ every object
probs = []
for d in DOCS:
    k = d.get("kind")
    if k not in KINDS:
        probs.append("unknown kind %r (%s)" % (k, name(d)))
    elif d.get("apiVersion") != KINDS[k]:
        probs.append("%s %s: apiVersion %r, want %r" % (k, name(d), d.get("apiVersion"), KINDS[k]))
    n = name(d)
    if not n or not DNS1123.match(n) or len(n) > (63 if k in ("Service", "Deployment") else 253):
        probs.append("%s: bad metadata.name %r" % (k, n))
    md = d.get("metadata") or {}
    if k not in ("ServiceMonitor",) and md.get("namespace") not in (NS, EXPECT.get("dashboards_namespace")):
        probs.append("%s %s: namespace %r, want %r" % (k, n, md.get("namespace"), NS))
    if (md.get("labels") or {}).get("app.kubernetes.io/instance") != EXPECT["release"]:
        probs.append("%s %s: no app.kubernetes.io/instance label" % (k, n))
check("%d objects: known kinds with current apiVersions, valid names, namespace, instance label" % len(DOCS), probs)

names = [(d.get("kind"), name(d)) for d in DOCS]
check("no two objects share kind and name", ["%s/%s twice" % kn for kn in set(names) if names.count(kn) > 1])

want_kinds = EXPECT.get("kinds", {})
got = {}
for d in DOCS:
    got[d["kind"]] = got.get(d["kind"], 0) + 1
check("object counts by kind %s" % json.dumps(want_kinds, sort_keys=True),
      ["%s: %d, want %d" % (k, got.get(k, 0), n) for k, n in want_kinds.items() if got.get(k, 0) != n])

# ------------------------------------------------------------------ Deployments (and Jobs)
probs = []
jobs = of_kind("Job")
for d in deployments + jobs:
    n = name(d)
    p = pod(d)
    is_job = d["kind"] == "Job"
    if not is_job and not matches(d["spec"]["selector"].get("matchLabels"), p["metadata"].get("labels", {})):
        probs.append("%s: selector does not match its pod labels" % n)
    psc = p["spec"].get("securityContext") or {}
    if psc.get("runAsNonRoot") is not True:
        probs.append("%s: pod securityContext.runAsNonRoot is not true" % n)
    if p["spec"].get("automountServiceAccountToken") is not False:
        probs.append("%s: mounts a ServiceAccount token" % n)
    volumes = {v["name"]: v for v in p["spec"].get("volumes", [])}
    for c in containers(d):
        cn = "%s/%s" % (n, c["name"])
        res = c.get("resources") or {}
        for r in ("cpu", "memory"):
            if r not in (res.get("requests") or {}):
                probs.append("%s: no %s request" % (cn, r))
        if "memory" not in (res.get("limits") or {}):
            probs.append("%s: no memory limit" % cn)
        ports = {pt["name"]: pt["containerPort"] for pt in c.get("ports", [])}
        for probe in () if is_job else ("livenessProbe", "readinessProbe", "startupProbe"):
            pr = c.get(probe)
            if not pr:
                probs.append("%s: no %s" % (cn, probe))
                continue
            handler = [h for h in ("grpc", "httpGet", "tcpSocket", "exec") if h in pr]
            if len(handler) != 1:
                probs.append("%s: %s has handlers %s" % (cn, probe, handler))
                continue
            port = pr[handler[0]].get("port")
            if port not in ports and port not in ports.values():
                probs.append("%s: %s port %r is not a declared port %s" % (cn, probe, port, ports))
        sc = c.get("securityContext") or {}
        if sc.get("runAsNonRoot") is not True or sc.get("readOnlyRootFilesystem") is not True:
            probs.append("%s: not non-root with a read-only root filesystem" % cn)
        if sc.get("allowPrivilegeEscalation") is not False or sc.get("privileged"):
            probs.append("%s: may escalate privileges" % cn)
        if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
            probs.append("%s: capabilities not dropped" % cn)
        if c.get("image", "").endswith(":latest") or ":" not in c.get("image", ""):
            probs.append("%s: image %r has no pinned tag" % (cn, c.get("image")))
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                probs.append("%s: mounts undeclared volume %s" % (cn, m["name"]))
        for ef in c.get("envFrom", []):
            ref = (ef.get("configMapRef") or {}).get("name")
            if ref and ref not in configmaps:
                probs.append("%s: envFrom ConfigMap %s is not rendered" % (cn, ref))
        for e in c.get("env", []):
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            if ref and ref["name"] not in secrets and ref["name"] not in external:
                probs.append("%s: env %s from unknown Secret %s" % (cn, e["name"], ref["name"]))
            if ref and ref["name"] in secrets and ref["key"] not in (secrets[ref["name"]].get("data") or {}):
                probs.append("%s: env %s: Secret %s has no key %s" % (cn, e["name"], ref["name"], ref["key"]))
    for v in volumes.values():
        s = (v.get("secret") or {}).get("secretName")
        if s and s not in secrets and s not in external and s not in cert_secrets:
            probs.append("%s: volume %s uses unknown Secret %s" % (n, v["name"], s))
        if s in secrets:
            for item in v["secret"].get("items", []):
                if item["key"] not in (secrets[s].get("data") or {}):
                    probs.append("%s: volume %s: Secret %s has no key %s" % (n, v["name"], s, item["key"]))
check("%d Deployments, %d Jobs: resources, probes on declared ports, non-root read-only "
      "containers, rendered ConfigMaps/Secrets" % (len(deployments), len(jobs)), probs)


def env_of(c):
    """Every JOBWHEEL_* variable a container gets, from env and envFrom ConfigMaps."""
    env = {}
    for ef in c.get("envFrom", []):
        ref = (ef.get("configMapRef") or {}).get("name")
        env.update((configmaps.get(ref) or {}).get("data") or {})
    for e in c.get("env", []):
        env[e["name"]] = e.get("value", "<from %s>" % list((e.get("valueFrom") or {}).keys()))
    return env


probs = []
for d in deployments + jobs:
    comp = component(d)
    flags = FLAGS.get(comp)
    if not flags:
        probs.append("%s: no flag definitions found for component %r" % (name(d), comp))
        continue
    for c in containers(d):
        for k in env_of(c):
            if k.startswith("JOBWHEEL_") and k[len("JOBWHEEL_"):].lower() not in flags:
                probs.append("%s: %s is not a flag of %s" % (name(d), k, comp))
        for a in (c.get("args") or []):
            if a.startswith("--") and a[2:].split("=")[0] not in flags:
                probs.append("%s: argument %s is not a flag of %s" % (name(d), a, comp))
check("every JOBWHEEL_* variable and --flag a container gets is a flag of its binary", probs)

# ------------------------------------------------------------------ Services and friends
pods = [(name(d), pod(d)["metadata"].get("labels", {}), containers(d)) for d in deployments]
probs = []
for s in services:
    sel = s["spec"].get("selector")
    targets = [(n, cs) for n, labels, cs in pods if matches(sel, labels)]
    if not targets:
        probs.append("Service %s selects no Deployment's pods (%s)" % (name(s), sel))
        continue
    for port in s["spec"]["ports"]:
        tp = port.get("targetPort", port["port"])
        for n, cs in targets:
            declared = {p.get("name") for c in cs for p in c.get("ports", [])} | \
                       {p["containerPort"] for c in cs for p in c.get("ports", [])}
            if tp not in declared:
                probs.append("Service %s: targetPort %r not declared by %s" % (name(s), tp, n))
for kind in ("PodDisruptionBudget", "NetworkPolicy"):
    for o in of_kind(kind):
        sel = (o["spec"].get("selector") or o["spec"].get("podSelector") or {}).get("matchLabels")
        if not any(matches(sel, labels) for _, labels, _ in pods):
            probs.append("%s %s selects no pods" % (kind, name(o)))
dep_names = {name(d): d for d in deployments}
for h in of_kind("HorizontalPodAutoscaler"):
    ref = h["spec"]["scaleTargetRef"]["name"]
    if ref not in dep_names:
        probs.append("HPA %s scales unknown Deployment %s" % (name(h), ref))
    elif "replicas" in dep_names[ref]["spec"]:
        probs.append("Deployment %s has replicas although HPA %s scales it" % (ref, name(h)))
for i in of_kind("Ingress"):
    for rule in i["spec"].get("rules", []):
        if not rule.get("host"):
            probs.append("Ingress %s: rule without host" % name(i))
        for p in rule["http"]["paths"]:
            b = p["backend"]["service"]
            svc = [s for s in services if name(s) == b["name"]]
            if not svc:
                probs.append("Ingress %s: backend Service %s not rendered" % (name(i), b["name"]))
            elif b["port"].get("name") not in [pt["name"] for pt in svc[0]["spec"]["ports"]]:
                probs.append("Ingress %s: Service %s has no port %s" % (name(i), b["name"], b["port"]))
for sm in of_kind("ServiceMonitor"):
    sel = sm["spec"]["selector"]["matchLabels"]
    hit = [s for s in services if matches(sel, s["metadata"].get("labels", {}))]
    if not hit:
        probs.append("ServiceMonitor %s selects no Service" % name(sm))
    for s in hit:
        if "metrics" not in [pt["name"] for pt in s["spec"]["ports"]]:
            probs.append("ServiceMonitor %s: Service %s has no metrics port" % (name(sm), name(s)))
for c in certificates:
    if c["spec"]["secretName"] not in {(v.get("secret") or {}).get("secretName")
                                       for d in deployments for v in pod(d)["spec"].get("volumes", [])}:
        probs.append("Certificate %s: Secret %s mounted by no Deployment" % (name(c), c["spec"]["secretName"]))
check("Services, PDBs, NetworkPolicies select existing pods and ports; HPA, Ingress, "
      "ServiceMonitor and Certificate references resolve", probs)

# ------------------------------------------------------------------ secrets
probs = []
given = set(EXPECT.get("secret_values", []))
for s in secrets.values():
    for k, v in (s.get("data") or {}).items():
        val = base64.b64decode(v).decode("utf-8", "replace")
        if val.strip().lower() in WEAK:
            probs.append("Secret %s key %s holds a default value %r" % (name(s), k, val))
        if k.endswith("-token") and len(val) < 16:
            probs.append("Secret %s key %s: token shorter than 16 characters" % (name(s), k))
        if val not in given:
            probs.append("Secret %s key %s holds a value the test did not give" % (name(s), k))
    if s.get("stringData"):
        probs.append("Secret %s uses stringData" % name(s))
check("Secrets hold only the values given, no default or short token (%d Secrets)" % len(secrets), probs)

# Least privilege: a private (signing) key is mounted by its own component only, and the
# public keys only where they verify callers; executors get no private key at all.
MAY_MOUNT = {
    "scheduler-signing-key": {"scheduler"}, "dispatcher-signing-key": {"dispatcher"},
    "scheduler-public-key": {"dispatcher", "demo-executor", "xxl-gateway", "http-executor"},
    "dispatcher-public-key": {"registry", "demo-executor", "xxl-gateway", "http-executor"},
}
probs = []
mounted = set()
for d in deployments:
    for v in pod(d)["spec"].get("volumes", []):
        for item in (v.get("secret") or {}).get("items", []):
            allowed = MAY_MOUNT.get(item["key"])
            if allowed is not None:
                mounted.add(item["key"])
                if component(d) not in allowed:
                    probs.append("%s mounts %s" % (name(d), item["key"]))
if secrets and mounted != set(MAY_MOUNT):
    probs.append("keys mounted by nobody: %s" % sorted(set(MAY_MOUNT) - mounted))
check("signing keys only in their own component, public keys only where callers are verified",
      probs)

# Scoped credentials: each executor mounts a token Secret of its own (an EXECUTOR token of its
# app alone, never the bootstrap executor token of every app) and the console its proxy token;
# the bootstrap executor token, when given, reaches the registry and the dispatchers only.
OWN_FILE = {"demo-executor": "executor-token", "http-executor": "executor-token",
            "console": "proxy-token"}
want_own = EXPECT.get("app_tokens", {})
probs = []
own_by = {}
bootstrap_at = set()
for d in deployments:
    comp = component(d)
    vols = {v["name"]: v for v in pod(d)["spec"].get("volumes", [])}
    for v in vols.values():
        sec = v.get("secret") or {}
        keys = [i["key"] for i in sec.get("items", [])]
        if v["name"] != "app-token" and "executor-token" in keys:
            bootstrap_at.add(comp)
            if comp not in ("registry", "dispatcher"):
                probs.append("%s mounts the bootstrap executor token" % name(d))
    own = ((vols.get("app-token") or {}).get("secret") or {})
    got = own.get("secretName")
    if got != want_own.get(comp):
        probs.append("%s: own token Secret %r, want %r" % (name(d), got, want_own.get(comp)))
    if got:
        own_by.setdefault(got, []).append(comp)
        if [i["key"] for i in own.get("items", [])] != [OWN_FILE.get(comp)]:
            probs.append("%s: own token items %s" % (name(d), own.get("items")))
        if got in secrets and set((secrets[got].get("data") or {})) != {OWN_FILE.get(comp)}:
            probs.append("Secret %s holds %s" % (got, sorted(secrets[got].get("data") or {})))
    flag = "JOBWHEEL_%s_FILE" % OWN_FILE.get(comp, "-").replace("-", "_").upper()
    want_file = "/etc/jobwheel/app-token/%s" % OWN_FILE.get(comp) if got else None
    for c in containers(d):
        if comp in OWN_FILE and env_of(c).get(flag) != want_file:
            probs.append("%s: %s=%r, want %r" % (name(d), flag, env_of(c).get(flag), want_file))
probs += ["Secret %s is the own token of %s" % (k, v) for k, v in own_by.items() if len(v) > 1]
want_bootstrap = {"registry", "dispatcher"} if EXPECT.get("bootstrap_executor_token") else set()
if bootstrap_at != want_bootstrap:
    probs.append("bootstrap executor token mounted by %s, want %s" % (sorted(bootstrap_at), sorted(want_bootstrap)))
check("each executor its own app-scoped token Secret, the console its proxy token, the bootstrap "
      "executor token only on registry and dispatchers when given", probs)

# ------------------------------------------------------------------ NetworkPolicy
nps = of_kind("NetworkPolicy")
probs = []
if EXPECT.get("network_policy", True):
    for n, labels, _ in pods:
        if labels.get("app.kubernetes.io/component") == "migrations":
            continue
        if not any(matches(np["spec"]["podSelector"].get("matchLabels"), labels) for np in nps):
            probs.append("pods of %s are selected by no NetworkPolicy" % n)
    for np in nps:
        types = np["spec"].get("policyTypes", [])
        if "Ingress" not in types or "Egress" not in types:
            probs.append("%s: policyTypes %s, want Ingress and Egress" % (name(np), types))
        for rule in np["spec"].get("ingress", []):
            # The console and the XXL gateway's admin side serve any client (with a token).
            if not rule.get("from") and component(np) not in ("console", "xxl-gateway"):
                probs.append("%s: an ingress rule admits any source" % name(np))
            if not rule.get("ports"):
                probs.append("%s: an ingress rule admits every port" % name(np))
        for rule in np["spec"].get("egress", []):
            if not rule.get("to") and not rule.get("ports"):
                probs.append("%s: an egress rule allows everything" % name(np))
    check("NetworkPolicies (Ingress+Egress) select every pod; no rule open to any source on any port", probs)

    # Who may call whom among the release's components, from the policies' both ends.
    CALLS = {("scheduler", "dispatcher"), ("scheduler", "registry"), ("scheduler", "demo-executor"),
             ("dispatcher", "registry"), ("dispatcher", "demo-executor"),
             ("demo-executor", "registry"), ("demo-executor", "dispatcher"),
             ("console", "scheduler"), ("console", "registry"),
             ("scheduler", "xxl-gateway"), ("dispatcher", "xxl-gateway"),
             ("xxl-gateway", "registry"), ("xxl-gateway", "dispatcher"),
             ("scheduler", "http-executor"), ("dispatcher", "http-executor"),
             ("http-executor", "registry"), ("http-executor", "dispatcher")}
    by_comp = {}
    for d in deployments:
        c = containers(d)[0]
        serve = [p["containerPort"] for p in c.get("ports", []) if p["name"] != "metrics"][0]
        by_comp[component(d)] = (pod(d)["metadata"]["labels"], serve)

    def peer_matches(peers, labels):
        if not peers:
            return True
        for pr in peers:
            if "ipBlock" in pr:
                continue
            ns = pr.get("namespaceSelector")
            if ns not in (None, {}) and ns.get("matchLabels") != {"kubernetes.io/metadata.name": NS}:
                continue
            if matches((pr.get("podSelector") or {}).get("matchLabels"), labels) or pr.get("podSelector") == {}:
                return True
        return False

    def port_matches(ports, port):
        return not ports or any(p.get("port") == port for p in ports)

    def policy_of(labels):
        return [np for np in nps if matches(np["spec"]["podSelector"].get("matchLabels"), labels)]

    def allowed(src, dst):
        (sl, _), (dl, dport) = by_comp[src], by_comp[dst]
        ing = any(peer_matches(r.get("from"), sl) and port_matches(r.get("ports"), dport)
                  for np in policy_of(dl) for r in np["spec"].get("ingress", []))
        eg = any(peer_matches(r.get("to"), dl) and port_matches(r.get("ports"), dport)
                 for np in policy_of(sl) for r in np["spec"].get("egress", []))
        return ing and eg

    probs = []
    for src in by_comp:
        for dst in by_comp:
            if src == dst:
                continue
            want, got_a = (src, dst) in CALLS, allowed(src, dst)
            if want and not got_a:
                probs.append("%s cannot reach %s" % (src, dst))
            if got_a and not want:
                probs.append("%s may reach %s but needs not" % (src, dst))
    check("NetworkPolicies let each component reach exactly the peers it calls (%d components)" % len(by_comp), probs)
else:
    check("no NetworkPolicy when networkPolicy.enabled=false", ["%d rendered" % len(nps)] if nps else [])

# ------------------------------------------------------------------ console
full = EXPECT["fullname"]
if EXPECT.get("console", True):
    probs = []
    dep = dep_names.get(full + "-console")
    svc = [s for s in services if name(s) == full + "-console"]
    if not dep or not svc:
        probs.append("console Deployment or Service missing")
    else:
        c = containers(dep)[0]
        env = env_of(c)
        want = {
            "JOBWHEEL_LISTEN": "0.0.0.0:7180",
            "JOBWHEEL_METRICS_ADDRESS": "0.0.0.0:9180",
            "JOBWHEEL_SCHEDULER_TARGET": "%s-scheduler.%s.svc.cluster.local:7100" % (full, NS),
            "JOBWHEEL_REGISTRY_TARGET": "dns:///%s-registry-headless.%s.svc.cluster.local:7101" % (full, NS),
            "JOBWHEEL_WEB_ROOT": "/usr/share/jobwheel/console/web",
        }
        if EXPECT.get("tls"):
            want.update({"JOBWHEEL_TLS_CA": "/etc/jobwheel/tls/ca.crt",
                         "JOBWHEEL_TLS_CLIENT_CERT": "/etc/jobwheel/tls/tls.crt",
                         "JOBWHEEL_TLS_CLIENT_KEY": "/etc/jobwheel/tls/tls.key"})
        for k, v in want.items():
            if env.get(k) != v:
                probs.append("%s=%r, want %r" % (k, env.get(k), v))
        if c["command"] != ["/usr/local/bin/console"]:
            probs.append("command %s" % c["command"])
        # Its own proxy token only (a VIEWER of no app: it reads nothing).
        if any(("TOKEN" in k and k != "JOBWHEEL_PROXY_TOKEN_FILE") or "DB_DSN" in k for k in env):
            probs.append("the console gets a token or the DSN: %s" % sorted(env))
        if (c["readinessProbe"].get("httpGet") or {}).get("path") != "/readyz" or \
           (c["livenessProbe"].get("httpGet") or {}).get("path") != "/healthz":
            probs.append("probes are not httpGet /readyz and /healthz")
        scheduler_svc = [s for s in services if name(s) == full + "-scheduler"]
        registry_svc = [s for s in services if name(s) == full + "-registry-headless"]
        if not scheduler_svc or not registry_svc:
            probs.append("the Services the console dials are not rendered")
        if (dep["spec"].get("replicas") or 0) != EXPECT.get("console_replicas", 2):
            probs.append("replicas %s" % dep["spec"].get("replicas"))
    ing = of_kind("Ingress")
    if EXPECT.get("console_ingress"):
        want = EXPECT["console_ingress"]
        if len(ing) != 1:
            probs.append("%d Ingresses, want 1" % len(ing))
        else:
            spec = ing[0]["spec"]
            if spec["rules"][0]["host"] != want["host"]:
                probs.append("Ingress host %s" % spec["rules"][0]["host"])
            if spec.get("ingressClassName") != want.get("className"):
                probs.append("ingressClassName %s" % spec.get("ingressClassName"))
            if [t["secretName"] for t in spec.get("tls", [])] != [want["tlsSecret"]]:
                probs.append("Ingress tls %s" % spec.get("tls"))
    elif ing:
        probs.append("an Ingress although console.ingress.enabled is false")
    check("console: Deployment (flags, http probes, no token), Service, Ingress as configured", probs)
else:
    check("no console objects when console.enabled=false",
          ["%s %s" % (d["kind"], name(d)) for d in DOCS if component(d) == "console"])

# ------------------------------------------------------------------ TLS
if EXPECT.get("tls"):
    probs = []
    for d in deployments:
        comp = component(d)
        if comp == "migrations":
            continue
        vols = {v["name"]: v for v in pod(d)["spec"].get("volumes", [])}
        want = EXPECT["tls"].get(comp, EXPECT["tls"].get("*"))
        got = ((vols.get("tls") or {}).get("secret") or {}).get("secretName")
        if got != want:
            probs.append("%s mounts TLS Secret %r, want %r" % (name(d), got, want))
        env = env_of(containers(d)[0])
        if comp != "console" and "JOBWHEEL_TLS_CERT" not in env:
            probs.append("%s: no JOBWHEEL_TLS_CERT" % name(d))
        if EXPECT.get("client_auth") and comp != "console" and "JOBWHEEL_TLS_CLIENT_CA" not in env:
            probs.append("%s: mutual TLS on but no JOBWHEEL_TLS_CLIENT_CA" % name(d))
        for c in containers(d):
            if comp != "console" and "grpc" in c["readinessProbe"]:
                probs.append("%s: plaintext gRPC probe on a TLS port" % name(d))
    check("TLS: every Deployment mounts its certificate Secret and gets the TLS flags", probs)

# ------------------------------------------------------------------ readiness probes
# Registry and dispatcher: readiness asks the overall health service "" (database, registry
# snapshot, draining); liveness and startup ask "liveness", which a database outage or a drain
# leaves SERVING, so neither restarts a pod. With TLS every gRPC probe is a TCP check.
probs = []
for d in deployments:
    comp = component(d)
    if comp not in ("registry", "dispatcher"):
        continue
    for c in containers(d):
        ready = c["readinessProbe"].get("grpc")
        if ready is not None and ready.get("service", "") != "":
            probs.append("%s: readiness asks service %r, not \"\"" % (name(d), ready.get("service")))
        for probe in ("livenessProbe", "startupProbe"):
            g = c[probe].get("grpc")
            if g is not None and g.get("service") != "liveness":
                probs.append("%s: %s asks service %r, not \"liveness\"" % (name(d), probe, g.get("service")))
            if (g is None) != (ready is None):
                probs.append("%s: %s and readinessProbe use different handlers" % (name(d), probe))
        env = env_of(c)
        if "JOBWHEEL_DRAIN_DELAY" not in env:
            probs.append("%s: no JOBWHEEL_DRAIN_DELAY" % name(d))
check("registry and dispatcher: readiness probes the overall health, liveness and startup the "
      "\"liveness\" service; --drain_delay set", probs)

# ------------------------------------------------------------------ replicas
if EXPECT.get("replicas"):
    probs = []
    for comp, n in EXPECT["replicas"].items():
        d = dep_names.get("%s-%s" % (full, comp))
        got_n = d["spec"].get("replicas") if d else None
        if got_n != n:
            probs.append("%s: replicas %r, want %r" % (comp, got_n, n))
    check("replica counts %s" % json.dumps(EXPECT["replicas"], sort_keys=True), probs)

# insecureDev never renders (validate.yaml fails it): no container is ever insecure, whatever
# extraArgs or extraEnv say.
probs = []
for d in deployments:
    for c in containers(d):
        if any("insecure_dev" in str(a) for a in (c.get("command") or []) + (c.get("args") or [])):
            probs.append("%s: --insecure_dev on the command line" % name(d))
        if any("INSECURE" in k for k in env_of(c)):
            probs.append("%s: insecure mode set through the environment" % name(d))
check("no container runs with --insecure_dev (argument or environment)", probs)
