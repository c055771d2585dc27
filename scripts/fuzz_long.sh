#!/usr/bin/env bash
# Long fuzzing runs (docs/reliability.md): each target for SECONDS with a random seed, one
# after another on one core, starting from the committed seed corpus plus whatever earlier
# long runs added to it. Prints each target's figures (inputs run, coverage, corpus size,
# findings) as one table row; findings are kept in WORK/<target>/ for triage.
#
#   scripts/fuzz_long.sh SECONDS WORK [TARGET...]     (default: all eight targets)
#
# Needs the asan build (cmake --preset asan && cmake --build --preset asan). Targets run in
# fork mode and go on after a finding (each is kept as crash-*, oom-* or timeout-*), so that
# one finding does not end the hour; the trace target finds HDF5's own crashes on corrupted
# files (docs/reliability.md), which are triaged from the kept inputs.
# With MERGE=1, each target's new inputs are merged (minimised) into tests/fuzz/corpus/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: fuzz_long.sh SECONDS WORK [TARGET...]}
work=${2:?usage: fuzz_long.sh SECONDS WORK [TARGET...]}
shift 2
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario sweep text_rows idx cifar arrays trace trace_schema)
bin=${FUZZ_BIN:-build/asan/tests/fuzz} # FUZZ_BIN: a copy, so that rebuilding asan does not change a running campaign
export ASAN_OPTIONS=detect_leaks=0

# Seconds of user + system time of a finished command's children, from bash's `times`.
children_cpu_seconds() {
  tail -1 | awk '{ s = 0; for (i = 1; i <= 2; ++i) { split($i, p, "m"); s += p[1] * 60 + p[2] }
                   printf "%.0f", s }'
}

printf '%-12s %8s %8s %10s %8s %8s %8s %s\n' target seconds cpu_s inputs cov features corpus \
  findings
for t in "${targets[@]}"; do
  dir=$work/$t
  mkdir -p "$dir/corpus"
  extra=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  cpu=$( (
    "$bin/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$dir/" "${extra[@]}" \
      "$dir/corpus" "tests/fuzz/corpus/$t" >"$dir/log" 2>&1 || true
    times
  ) | children_cpu_seconds)
  # The figures from libFuzzer's own report: the last status line and the final stats.
  status=$(grep -E '^#[0-9]+' "$dir/log" | tail -1 || true)
  inputs=$( (grep -oE 'number_of_executed_units: *[0-9]+' "$dir/log" || true) | grep -oE '[0-9]+$' |
    awk '{s += $1} END {print s + 0}' || true)
  [ "$inputs" -gt 0 ] || inputs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$status")
  cov=$(grep -oE 'cov: [0-9]+' <<<"$status" | grep -oE '[0-9]+' || echo '?')
  ft=$(grep -oE 'ft: [0-9]+' <<<"$status" | grep -oE '[0-9]+' || echo '?')
  corpus=$(find "$dir/corpus" -type f | wc -l)
  findings=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'oom-*' -o \
    -name 'timeout-*' -o -name 'leak-*' \) | wc -l)
  printf '%-12s %8s %8s %10s %8s %8s %8s %s\n' "$t" "$seconds" "$cpu" "$inputs" "$cov" "$ft" \
    "$corpus" "$findings"
  if [ "${MERGE:-0}" = 1 ]; then
    "$bin/fuzz_$t" -merge=1 -rss_limit_mb=2048 "tests/fuzz/corpus/$t" "$dir/corpus" \
      >>"$dir/log" 2>&1 || true
  fi
done
