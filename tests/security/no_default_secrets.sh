#!/usr/bin/env bash
# "No default token anywhere", checked on the committed files (the runtime half, every binary
# refusing to start without credentials, is tests/security:advisory_test):
#   1. every string flag whose name mentions a token, secret or key defaults to "";
#   2. the SDK's ExecutorOptions token and key fields have no default value;
#   3. the Helm chart's auth.* values are empty;
#   4. no literal shaped like a secret (an API token "jw_<64 hex>", or 32+ hex digits) in
#      code, deployment files, scripts or docs outside tests.
# Simple and honest: a grep, not a proof.
#
#   tests/security/no_default_secrets.sh     # exit 1 and a list on failure
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 2
# ok / fail and the FAILED count.
# shellcheck source=scripts/lib/tally.sh
. "$ROOT/scripts/lib/tally.sh"

# 1. Flags (ABSL_FLAG spans lines: parse with python).
bad_flags="$(python3 - <<'PY'
import glob, re
pat = re.compile(r'ABSL_FLAG\(\s*std::string\s*,\s*(\w*(?:token|secret|key)\w*)\s*,\s*("(?:[^"\\]|\\.)*")', re.S)
for path in sorted(glob.glob('services/**/*.cc', recursive=True) + glob.glob('sdk/**/*.cc', recursive=True) +
                   glob.glob('tools/**/*.cc', recursive=True)):
    for name, default in pat.findall(open(path).read()):
        if default != '""':
            print(f"{path}: --{name} defaults to {default}")
PY
)"
n_flags="$(grep -rhoE 'ABSL_FLAG\(\s*std::string,\s*\w*(token|key)\w*' services sdk tools | wc -l)"
if [ -n "$bad_flags" ]; then fail "token flags with a default: $bad_flags"; else
  ok "all $n_flags token/secret string flags default to \"\""; fi

# 2. SDK options.
if grep -nE '^\s*std::string (executor_token|dispatcher_public_keys|scheduler_public_keys)\s*=' \
    sdk/include/jobwheel/options.h; then
  fail "ExecutorOptions has a default token or key"
else
  ok "ExecutorOptions executor_token/dispatcher_public_keys/scheduler_public_keys have no default"
fi

# 3. Chart values.
values=deploy/k8s/jobwheel/values.yaml
for key in executorToken adminToken schedulerSigningKey schedulerPublicKey dispatcherSigningKey \
           dispatcherPublicKey; do
  line="$(grep -E "^\s+$key:" "$values")"
  if [ -z "$line" ]; then fail "$values: $key missing"; continue; fi
  if [[ "$line" =~ :[[:space:]]*\"\"[[:space:]]*$ ]]; then ok "$values: $key is empty"; else
    fail "$values: $line"; fi
done

# 4. Secret-shaped literals outside tests.
hits="$(grep -rnIE 'jw_[0-9a-f]{64}|[0-9a-fA-F]{32,}' \
  services sdk tools common deploy scripts docs proto Dockerfile README.md 2>/dev/null |
  grep -vE '_test\.(cc|sh):|/testing/|^tests/|/tests/test_[a-z0-9_]+\.py:' || true)"
if [ -n "$hits" ]; then fail "secret-shaped literals:"; echo "$hits"; else
  ok "no secret-shaped literal (jw_<hex64> or 32+ hex digits) outside tests"; fi

if [ "$FAILED" -gt 0 ]; then echo "no_default_secrets: $FAILED failed"; exit 1; fi
echo "no_default_secrets: all passed"
