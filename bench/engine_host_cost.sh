#!/usr/bin/env bash
# The engine's own work per node-step on the host, outside the gradient backend, the
# algorithm's hooks and the evaluations (docs/cuda.md, "Where a round goes now"): on a GPU
# it runs while the device's local steps do, so it bounds a resident round. Runs
# bench/dpsgd32.yaml with the softmax model on cpu-resident (the cheapest real gradients) at
# NODES nodes for SHORT and LONG rounds, REPEATS times each, and prints the rest of the wall
# time (wall - gradient - hooks - evaluation, from the traces) per extra node-step between
# the two budgets, so that start-up cancels; then a timing-only run of the same ring (the
# event loop alone, no gradients).
# Usage: bench/engine_host_cost.sh [BUILD_DIR]   (default build/release; NODES=1024,
#        SHORT=50, LONG=250, REPEATS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
dtsim="${1:-build/release}/apps/dtsim"
nodes=${NODES:-1024}
short=${SHORT:-50}
long=${LONG:-250}
repeats=${REPEATS:-3}
python=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
  "$("$dtsim" --version | sed -n 2p)"
for r in $(seq "$repeats"); do
  for rounds in "$short" "$long"; do
    "$dtsim" run bench/dpsgd32.yaml --quiet -o "$out/$rounds-$r.h5" --set nodes="$nodes" \
      --set stop.steps="$rounds" --set 'model={kind: softmax}' \
      --set model.backend=cpu-resident > /dev/null 2>&1
  done
done
"$python" - "$out" "$nodes" "$short" "$long" "$repeats" << 'EOF'
import statistics, sys
import h5py
out, nodes, short, long_, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def rest(path):
    a = h5py.File(path, "r").attrs
    return (a["wall_seconds"] - a["gradient_wall_seconds"] - a["algorithm_task_wall_seconds"]
            - a["eval_wall_seconds"])
per_step = []
for r in range(1, repeats + 1):
    extra = rest(f"{out}/{long_}-{r}.h5") - rest(f"{out}/{short}-{r}.h5")
    per_step.append(extra / ((long_ - short) * nodes) * 1e6)
mean = statistics.mean(per_step)
std = statistics.stdev(per_step) if len(per_step) > 1 else float("nan")
print(f"engine outside backend, hooks and evaluations: {mean:.3f} ± {std:.3f} µs per node-step "
      f"({len(per_step)} pairs of {short} and {long_} rounds at {nodes} nodes; mean ± sample std)")
EOF
"$dtsim" run bench/dpsgd32.yaml --quiet -o "$out/timing.h5" --set nodes="$nodes" \
  --set stop.steps="$long" --set 'model={kind: none, num_params: 235146}' \
  --set 'data={batch_size: 32}' --set 'eval={every_s: 1000}' > /dev/null 2>&1
"$python" -c "
import h5py, sys
a = h5py.File('$out/timing.h5', 'r').attrs
print(f'timing-only event loop: {a[\"wall_seconds\"] / a[\"gradient_steps\"] * 1e6:.3f} µs per node-step')"
