# shellcheck shell=bash
# What the scripts/fuzz-* scripts share: the SECONDS argument and the clang++ check, a work
# directory removed on exit unless a failure keeps it, the libFuzzer + ASan + UBSan build against
# the system libraries, and the run with its one-line verdict.
#
#   . "$root/scripts/lib/fuzz.sh"
#   fuzz_init NAME "$@"       # sets fuzz_seconds, fuzz_work; exits 2 (usage) or 77 (no clang++)
#   fuzz_bazel_sources TARGET...   # prints the workspace .cc files TARGETs are built from
#   fuzz_build BINARY ARG...       # clang++ ARG... (sources, -I, -l) -o BINARY, or exit 1
#   (write seeds into "$fuzz_work/corpus")
#   fuzz_run BINARY MAX_LEN        # runs for fuzz_seconds, prints the verdict, exits 0 or 1

fuzz_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Abseil libraries the fuzz targets use directly (Debian's shared libraries pull in their own
# dependencies).
# shellcheck disable=SC2034  # Used by the scripts that source this file.
fuzz_absl_libs=(
  -labsl_statusor -labsl_status -labsl_cord -labsl_cord_internal
  -labsl_cordz_info -labsl_cordz_functions -labsl_cordz_handle
  -labsl_str_format_internal -labsl_strings -labsl_strings_internal
  -labsl_time -labsl_time_zone -labsl_civil_time -labsl_int128
  -labsl_raw_hash_set -labsl_hash -labsl_city -labsl_low_level_hash
  -labsl_synchronization -labsl_spinlock_wait -labsl_bad_optional_access
  -labsl_bad_variant_access -labsl_throw_delegate -labsl_raw_logging_internal -labsl_base
  -labsl_random_distributions -labsl_random_internal_pool_urbg -labsl_random_internal_randen
  -labsl_random_internal_randen_hwaes -labsl_random_internal_randen_hwaes_impl
  -labsl_random_internal_randen_slow -labsl_random_internal_platform
  -labsl_random_internal_seed_material -labsl_random_seed_gen_exception
  -labsl_random_seed_sequences -lpthread
)

fuzz_init() {
  fuzz_name=$1
  fuzz_seconds="${2:-20}"
  if ! [[ "$fuzz_seconds" =~ ^[0-9]+$ ]]; then
    echo "usage: scripts/$fuzz_name [SECONDS]" >&2
    exit 2
  fi
  if ! command -v clang++ >/dev/null 2>&1; then
    echo "$fuzz_name: clang++ not found, skipped"
    exit 77
  fi
  fuzz_work="$(mktemp -d "${TMPDIR:-/tmp}/$fuzz_name.XXXXXX")"
  fuzz_keep_work=0
  trap fuzz_cleanup EXIT
  mkdir -p "$fuzz_work/corpus"
}

# shellcheck disable=SC2317  # Called by the EXIT trap.
fuzz_cleanup() { if [[ "$fuzz_keep_work" == 0 ]]; then rm -rf "$fuzz_work"; fi; }

# The sources come from the Bazel graph, so a file moved or split there is picked up here.
fuzz_bazel_sources() {
  local query="" target
  for target in "$@"; do query+="${query:+ union }deps($target)"; done
  (cd "$fuzz_root" && bazel query --noshow_progress "kind(\"source file\", $query)" \
    2>>"$fuzz_work/build.log") | grep -v '^@' | grep '\.cc$' |
    sed 's#^//##; s#:#/#; s#^#'"$fuzz_root"'/#'
}

fuzz_build() {
  local binary=$1
  shift
  if ! clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined \
      -fno-sanitize-recover=undefined -I"$fuzz_root" "$@" -o "$binary" \
      >>"$fuzz_work/build.log" 2>&1; then
    cat "$fuzz_work/build.log" >&2
    echo "$fuzz_name: FAILED to build the fuzzer"
    exit 1
  fi
}

fuzz_run() {
  local binary=$1 max_len=$2 rc runs artifact
  "$binary" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$fuzz_work/" \
    "$fuzz_work/corpus" >"$fuzz_work/fuzz.log" 2>&1
  rc=$?
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$fuzz_work/fuzz.log" | tail -1)"
  if [[ "$rc" == 0 ]]; then
    echo "$fuzz_name: OK, ${runs:-?} runs in ${fuzz_seconds}s, no crash"
    exit 0
  fi
  fuzz_keep_work=1
  tail -n 40 "$fuzz_work/fuzz.log" >&2
  artifact="$(find "$fuzz_work" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' \
    -o -name 'oom-*' -o -name 'leak-*' \) | sort | head -1)"
  echo "$fuzz_name: FAILED (libFuzzer exit $rc) after ${runs:-?} runs;" \
    "input: ${artifact:-none}, log: $fuzz_work/fuzz.log"
  exit 1
}
