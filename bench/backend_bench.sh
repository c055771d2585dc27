#!/usr/bin/env bash
# Gradient backends side by side (docs/cuda.md): bench/dpsgd32.yaml (MLP 784-256-128-10,
# synchronous D-PSGD with momentum on a ring) at several node counts, per backend,
# printing from each trace the node-steps per second (gradient steps / the run's
# wall_seconds), the mean batch and the bus traffic per node-step (the one-time copy of the
# training set included). On a machine without a GPU
# the cuda rows say why they did not run.
# Usage: bench/backend_bench.sh [BUILD_DIR] [NODES...]   (default build/release, 32 256 1024)
# MODEL (a YAML map, e.g. '{kind: resnet20}') replaces the MLP, ALGORITHM (e.g. '{name:
# qg-dsgdm-n, lr: 0.05}') the synchronous D-PSGD with momentum; NODE_STEPS (default 10,000)
# is the budget per point, CUDA_NODE_STEPS (default NODE_STEPS) the cuda rows' (a GPU needs
# more steps than the CPU for its start-up to vanish in the figure); BACKENDS (default
# 'cpu cpu-batched cuda-batched cuda-resident') picks the rows; REPEATS (default 1) runs each point that many
# times and gives mean ± sample standard deviation (n - 1) of the rates. Besides the whole run's node-steps/s, each row
# gives the backend's alone (steps / gradient_wall_seconds), the backend's share of the wall
# time and, on the device, the shares of the backend's time spent uploading, computing,
# downloading (device events) and staging (host copies, which overlap the bus: the four
# shares can add up to more than 100%; docs/trace-schema.md), the shares of the wall
# time in the algorithm's hooks and in evaluations, the backend's set-up before the run's
# clock (which the rates leave out; mean over the runs, in ms), and on a resident device the
# milliseconds per batch (a synchronous round) its stream spent mixing, in the pass, in the
# local steps and idle, waiting for the host (cuda/phase_timer.hpp says where; with REPEATS,
# their means over the runs).
set -euo pipefail
cd "$(dirname "$0")/.."
dtsim="${1:-build/release}/apps/dtsim"
shift || true
nodes=("$@")
[ ${#nodes[@]} -gt 0 ] || nodes=(32 256 1024)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
  "$("$dtsim" --version | sed -n 2p); $("$dtsim" --version | grep 'cuda backend')"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "model: ${MODEL:-the MLP of bench/dpsgd32.yaml}"
printf '%-12s %6s %8s %14s %12s %9s %8s %12s %11s %25s %9s %s\n' backend nodes steps node-steps/s \
  backend-only backend_% batch bus_MB/step hooks/eval% 'up/compute/down/staging %' set-up_s \
  'mix/pass/steps/idle ms per batch'
for n in "${nodes[@]}"; do
  # About NODE_STEPS node-steps per point (at least 10 rounds), evaluation only at the ends.
  for backend in ${BACKENDS:-cpu cpu-batched cuda-batched cuda-resident}; do
    budget=${NODE_STEPS:-10000}
    [[ "$backend" != cuda* ]] || budget=${CUDA_NODE_STEPS:-$budget}
    steps=$(( budget / n > 10 ? budget / n : 10 ))
    traces=()
    for ((r = 1; r <= ${REPEATS:-1}; ++r)); do
      trace="$out/$backend-$n-$r.h5"
      if ! msg=$("$dtsim" run bench/dpsgd32.yaml --quiet -o "$trace" --set nodes="$n" \
          --set stop.steps="$steps" ${MODEL:+--set "model=$MODEL"} \
          ${ALGORITHM:+--set "algorithm=$ALGORITHM"} \
          --set model.backend="$backend" 2>&1); then
        printf '%-12s %6s   %s\n' "$backend" "$n" "$(tail -1 <<<"$msg")"
        continue 2
      fi
      traces+=("$trace")
    done
    "${PYTHON:-/usr/bin/python3}" - "$backend" "$n" "${traces[@]}" <<'PY'
import statistics, sys, h5py
backend, n, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = [h5py.File(p, "r").attrs for p in paths]
a = runs[0]
steps = a["gradient_steps"]
def rate(x, key):
    return x["gradient_steps"] / x[key]
def figure(values):  # one run: the value; several: mean ± sample std (n - 1)
    if len(values) == 1:
        return f"{values[0]:.0f}"
    return f"{statistics.mean(values):.0f}±{statistics.stdev(values):.0f}"
whole = figure([rate(x, "wall_seconds") for x in runs])
batched = "gradient_batches" in a
# The unbatched CPU backend sums its tasks' times over the threads: no backend-only rate.
alone = figure([rate(x, "gradient_wall_seconds") for x in runs]) if batched else "-"
share = f"{100 * a['gradient_wall_seconds'] / a['wall_seconds']:.0f}" if batched else "-"
mean = a.get("gradient_batch_mean", float("nan"))
bus = (a.get("host_to_device_bytes", 0) + a.get("device_to_host_bytes", 0)) / steps / 1e6
grad = a["gradient_wall_seconds"]
parts = [a.get(f"device_{p}_wall_seconds", 0.0) for p in ("upload", "compute", "download", "staging")]
split = "/".join(f"{100 * p / grad:.0f}" for p in parts) if sum(parts) > 0 else "-"
# The algorithm's hooks (with a resident backend: queuing its math and launching the local
# steps' kernel, whose run the next batch waits for) and the evaluations, as shares of the
# wall time: the rest is the engine.
wall = a["wall_seconds"]
hooks = f"{100 * a['algorithm_task_wall_seconds'] / wall:.0f}" if batched else "-"
rest = f"{hooks}/{100 * a['eval_wall_seconds'] / wall:.0f}"
# A resident device run: its stream's mixing, pass, local steps and idle time (waiting for
# the host), in milliseconds per batch (bench/goal_row.py reads them).
stream = [statistics.mean(x.get(f"device_{p}_wall_seconds", 0.0) / x["gradient_batches"]
                         for x in runs) if batched else 0.0
          for p in ("mixing", "compute", "steps", "idle")]
device = "/".join(f"{1e3 * p:.3f}" for p in stream) if stream[0] + stream[2] > 0 else "-"
# The backend's set-up before the run's clock (the rates leave it out): on a device, its
# buffers and the kernels and pass it runs ahead (DTSIM_CUDA_PRELOAD).
setup = figure([x.get("backend_setup_wall_seconds", float("nan")) * 1000 for x in runs]) + "ms"
print(f"{backend:<12} {n:>6} {int(steps):>8} {whole:>14} {alone:>12} {share:>9} "
      f"{mean:>8.1f} {bus:>12.3f} {rest:>11} {split:>25} {setup:>9} {device}")
PY
  done
done
