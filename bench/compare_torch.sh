#!/usr/bin/env bash
# Whole-process comparison: dtsim running bench/dpsgd32.yaml (32 nodes x 300 rounds of
# D-PSGD with momentum on an MLP) against bench/torch_reference.py doing the same work the
# fast way, each at 1 and 2 threads, both timed from process start to exit (start-up, data
# loading and evaluation included). Needs Debian's python3-torch (not a dtsim dependency).
# Usage: bench/compare_torch.sh [BUILD_DIR]   (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
dtsim="${1:-build/release}/apps/dtsim"
wall() { # prints the wall seconds of the command
  local start=$EPOCHREALTIME
  "$@" > /dev/null 2>&1
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'
}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
  "dtsim $("$dtsim" --version | sed -n 2p), $("$dtsim" --version | sed -n 4p)"
for threads in 1 2; do
  d=$(wall "$dtsim" run bench/dpsgd32.yaml --quiet --threads "$threads" -o /tmp/dtsim-compare.h5)
  t=$(wall /usr/bin/python3 bench/torch_reference.py --rounds 300 --threads "$threads")
  printf "%d thread(s): dtsim %.2f s, PyTorch %.2f s (whole processes, 9600 node-steps): dtsim %.2fx faster\n" \
    "$threads" "$d" "$t" "$(awk -v t="$t" -v d="$d" 'BEGIN { print t / d }')"
done
