#!/usr/bin/env bash
# Triage of a long fuzzing run's findings (scripts/fuzz_long.sh keeps them as crash-*,
# timeout-*, oom-* in WORK/TARGET/): runs each input alone under the asan build's target and
# sorts it by where it fails. Prints one line per input and a count per class:
#   libhdf5 FUNCTION  fails again, its first frame past the sanitizer in libhdf5 (HDF5's own
#                     defect on a corrupted file; dtsim cannot guard against it)
#   dtsim FILE:LINE   fails again with the first such frame in dtsim's code: a defect to fix
#   other FRAME       fails again elsewhere (libstdc++, zlib, ...)
#   rss over 2 GB     exceeds libFuzzer's memory limit (no allocation stack is printed)
#   hang              still running after SECONDS (default 5)
#   clean             runs without a failure alone (e.g. a timeout while the machine was busy)
#
#   scripts/fuzz_triage.sh WORK/TARGET [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: fuzz_triage.sh WORK/TARGET [SECONDS]}
seconds=${2:-5}
target=$(basename "$dir")
bin=${FUZZ_BIN:-build/asan/tests/fuzz}/fuzz_$target
export ASAN_OPTIONS=detect_leaks=0
classes=$(mktemp)
trap 'rm -f "$classes"' EXIT
for input in "$dir"/crash-* "$dir"/timeout-* "$dir"/oom-*; do
  [ -e "$input" ] || continue
  log=$(timeout "$seconds" "$bin" -rss_limit_mb=2048 "$input" 2>&1)
  rc=$?
  if [ $rc -eq 124 ]; then
    class="hang"
  elif [ $rc -eq 0 ]; then
    class="clean"
  elif grep -q 'libFuzzer: out-of-memory (used:' <<<"$log"; then
    class="rss over 2 GB" # the watchdog's stack, not the allocation's: rerun under gdb to see
  else
    # The first stack frame that is not the sanitizer's, libFuzzer's, an allocator's or
    # libc's (memcpy and the like, called from the frame that matters).
    frame=$(grep -E '^ +#[0-9]+ ' <<<"$log" |
      grep -vE 'asan|ubsan|sanitizer|__interceptor|fuzzer::| in (malloc|calloc|realloc|operator new)|/libc\.so|sysdeps/' |
      head -1)
    function=$(grep -oE ' in [^ ]+' <<<"$frame" | head -1 | cut -c5-)
    if grep -q 'libhdf5' <<<"$frame"; then
      class="libhdf5 ${function:-(no symbol)}"
    elif grep -q "$PWD/" <<<"$frame"; then
      class="dtsim $(grep -oE "$PWD/[^ ]+" <<<"$frame" | sed "s|$PWD/||")"
    else
      class="other ${function:-$(head -c 80 <<<"$frame")}"
    fi
  fi
  printf '%s\t%s\n' "$(basename "$input")" "$class"
  cut -d' ' -f1 <<<"$class" >> "$classes"
done
echo "---"
sort "$classes" | uniq -c
