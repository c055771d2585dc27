#!/usr/bin/env bash
# What a resident run costs on the host (docs/benchmarks.md, "A resident run's start"):
# bench/dpsgd32.yaml (MLP 784-256-128-10) at NODES nodes on cpu-resident in these cases
#   dsgdm              one round of DSGDm
#   gradient-tracking  one round of gradient tracking
#   per-node           five rounds of DSGDm, per-node accuracies on 200 examples at each of
#                      its six evaluations
#   choco-sgd          one round of CHOCO-SGD (QSGD 4 bits), no evaluation but the first
#   dsgdm-async        one round of asynchronous DSGDm, likewise
# as a whole process (seconds, peak resident memory) and as the trace's wall_seconds and
# resident_model_pulls. Several dtsim binaries alternate run by run (A B, A B, ...), so that
# a change's effect is read within one run of this script on one machine; REPEATS runs of
# each: mean ± sample std (n - 1) and the 95% t interval of the mean.
# Usage: bench/resident_startup.sh DTSIM [DTSIM...]   (NODES=1024, REPEATS=6,
#        CASES="dsgdm gradient-tracking per-node" by default)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: bench/resident_startup.sh DTSIM [DTSIM...]" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time for the peak memory (Debian: apt-get install time)" >&2; exit 2; }
nodes=${NODES:-1024}
repeats=${REPEATS:-6}
python=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
  "$nodes MLP nodes on cpu-resident; $repeats runs each, alternating"
declare -A sets=(
  [dsgdm]="stop.steps=1;algorithm={name: dsgdm, lr: 0.05}"
  [gradient-tracking]="stop.steps=1;algorithm={name: gradient-tracking, lr: 0.05}"
  [per-node]="stop.steps=5;algorithm={name: dsgdm, lr: 0.05};eval={every_s: 0.05, per_node: true, per_node_samples: 200, test_samples: 1000}"
  [choco-sgd]="stop.steps=1;algorithm={name: choco-sgd, lr: 0.05, momentum: 0.9, gamma: 0.6, compressor: {kind: qsgd, bits: 4}};eval={every_s: 1000}"
  [dsgdm-async]="stop.steps=1;algorithm={name: dsgdm, lr: 0.05, mode: async};eval={every_s: 1000}")
read -r -a cases <<< "${CASES:-dsgdm gradient-tracking per-node}"
for name in "${cases[@]}"; do
  [ -n "${sets[$name]:-}" ] || { echo "no case $name; cases: ${!sets[*]}" >&2; exit 2; }
done
for name in "${cases[@]}"; do
  IFS=';' read -r -a keys <<< "${sets[$name]}"
  args=()
  for kv in "${keys[@]}"; do args+=(--set "$kv"); done
  for r in $(seq "$repeats"); do
    for b in $(seq $#); do
      /usr/bin/time -f "%e %M" -o "$out/time" "${!b}" run bench/dpsgd32.yaml --quiet \
        -o "$out/$name-$b-$r.h5" --set nodes="$nodes" --set model.backend=cpu-resident \
        "${args[@]}" > /dev/null 2> "$out/err" || { cat "$out/err" >&2; exit 1; }
      echo "$name $b $(cat "$out/time")" >> "$out/times"
    done
  done
done
"$python" - "$out" "$repeats" "${cases[*]}" "$@" << 'EOF'
import statistics, sys
import h5py
out, repeats, cases, binaries = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228}  # two-sided 95% t quantiles by degrees of freedom
rows = [line.split() for line in open(f"{out}/times")]
def figure(values, unit):
    if len(values) == 1:
        return f"{values[0]:.2f} {unit}"
    mean, std = statistics.mean(values), statistics.stdev(values)
    half = T95.get(len(values) - 1, 1.96) * std / len(values) ** 0.5
    return f"{mean:.2f} ± {std:.2f} {unit} [{mean - half:.2f}, {mean + half:.2f}]"
print("mean ± sample std [95% t interval of the mean]")
for name in cases:
    for b, binary in enumerate(binaries, start=1):
        mine = [r for r in rows if r[0] == name and r[1] == str(b)]
        seconds = [float(r[2]) for r in mine]
        peak = [float(r[3]) / 2**20 for r in mine]  # KiB -> GiB
        traces = [h5py.File(f"{out}/{name}-{b}-{r}.h5", "r").attrs for r in range(1, repeats + 1)]
        wall = [float(a["wall_seconds"]) for a in traces]
        pulls = sorted({int(a["resident_model_pulls"]) for a in traces})
        print(f"{name:<18} {binary}: process {figure(seconds, 's')}; trace wall_seconds "
              f"{figure(wall, 's')}; peak {figure(peak, 'GiB')}; model pulls {pulls}")
EOF
