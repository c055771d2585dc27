#!/usr/bin/env bash
# What a resident run costs before its rounds: one round of bench/dpsgd32.yaml (MLP
# 784-256-128-10) at NODES nodes on cpu-resident, with DSGDm and with gradient tracking, as
# a whole process (seconds, peak resident memory) and as the trace's wall_seconds. Several
# dtsim binaries alternate run by run (A B, A B, ...), so that a change's effect is read
# within one run of this script on one machine; REPEATS runs of each (mean ± sample std).
# Usage: bench/resident_startup.sh DTSIM [DTSIM...]   (NODES=1024, REPEATS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: bench/resident_startup.sh DTSIM [DTSIM...]" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time for the peak memory (Debian: apt-get install time)" >&2; exit 2; }
nodes=${NODES:-1024}
repeats=${REPEATS:-3}
python=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
  "$nodes MLP nodes, one round on cpu-resident; $repeats runs each, alternating"
declare -A algorithms=([dsgdm]='{name: dsgdm, lr: 0.05}'
                       [gradient-tracking]='{name: gradient-tracking, lr: 0.05}')
for name in dsgdm gradient-tracking; do
  for r in $(seq "$repeats"); do
    for b in $(seq $#); do
      dtsim=${!b}
      /usr/bin/time -f "%e %M" -o "$out/time" "$dtsim" run bench/dpsgd32.yaml --quiet \
        -o "$out/$name-$b-$r.h5" --set nodes="$nodes" --set stop.steps=1 \
        --set model.backend=cpu-resident --set "algorithm=${algorithms[$name]}" > /dev/null \
        2> "$out/err" || { cat "$out/err" >&2; exit 1; }
      echo "$name $b $(cat "$out/time")" >> "$out/times"
    done
  done
done
"$python" - "$out" "$repeats" "$@" << 'EOF'
import statistics, sys
import h5py
out, repeats, binaries = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = [line.split() for line in open(f"{out}/times")]
def figure(values, unit):
    if len(values) == 1:
        return f"{values[0]:.2f} {unit}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f} {unit}"
for name in ("dsgdm", "gradient-tracking"):
    for b, binary in enumerate(binaries, start=1):
        mine = [r for r in rows if r[0] == name and r[1] == str(b)]
        seconds = [float(r[2]) for r in mine]
        peak = [float(r[3]) / 2**20 for r in mine]  # KiB -> GiB
        wall = [float(h5py.File(f"{out}/{name}-{b}-{r}.h5", "r").attrs["wall_seconds"])
                for r in range(1, repeats + 1)]
        print(f"{name:<18} {binary}: process {figure(seconds, 's')}, trace wall_seconds "
              f"{figure(wall, 's')}, peak {figure(peak, 'GiB')}")
EOF
