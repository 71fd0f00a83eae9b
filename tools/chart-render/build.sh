#!/usr/bin/env bash
# Builds chart-render (.data/bin/chart-render) with Debian's Go and Debian's Go
# libraries (golang-github-masterminds-sprig-dev, golang-k8s-sigs-yaml-dev,
# golang-gopkg-yaml.v3-dev) in GOPATH mode: nothing is fetched from the network.
#
#   tools/chart-render/build.sh          # builds; prints the binary's path
#   tools/chart-render/build.sh test     # also runs the unit tests
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# Build state (GOPATH, Go build cache) and the binary live under the gitignored .data/.
OUT="$ROOT/.data/chart-render"
BIN="$ROOT/.data/bin/chart-render"
command -v go >/dev/null 2>&1 || { echo "chart-render: go is not installed (apt-get install golang-go)" >&2; exit 77; }
SYS_GOPATH=/usr/share/gocode
for dep in github.com/Masterminds/sprig sigs.k8s.io/yaml gopkg.in/yaml.v3 github.com/Masterminds/semver; do
  if [ ! -d "$SYS_GOPATH/src/$dep" ]; then
    echo "chart-render: $SYS_GOPATH/src/$dep is missing (Debian golang-*-dev packages, see scripts/setup)" >&2
    exit 77
  fi
done

# A private GOPATH whose only package is this directory; the libraries come from Debian's.
mkdir -p "$OUT/gopath/src/jobwheel" "$OUT/cache" "$(dirname "$BIN")"
ln -sfn "$HERE" "$OUT/gopath/src/jobwheel/chart-render"
# Debian installs the v3 modules without the /v3 import-path suffix GOPATH mode needs.
for m in sprig semver; do
  mkdir -p "$OUT/gopath/src/github.com/Masterminds/$m"
  ln -sfn "$SYS_GOPATH/src/github.com/Masterminds/$m" "$OUT/gopath/src/github.com/Masterminds/$m/v3"
done
export GO111MODULE=off GOPATH="$OUT/gopath:$SYS_GOPATH" GOCACHE="$OUT/cache" GOTOOLCHAIN=local
cd "$OUT/gopath/src/jobwheel/chart-render"
if [ "${1:-}" = test ]; then go test ./ >&2; fi
go build -o "$BIN" .
echo "$BIN"
