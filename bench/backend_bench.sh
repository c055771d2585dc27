#!/usr/bin/env bash
# Gradient backends side by side (docs/cuda.md): bench/dpsgd32.yaml (MLP 784-256-128-10,
# synchronous D-PSGD with momentum on a ring) at several node counts, once per backend,
# printing from each trace the node-steps per second (gradient steps / the run's
# wall_seconds), the mean batch and the bus traffic per node-step (the one-time copy of the
# training set included). On a machine without a GPU
# the cuda rows say why they did not run.
# Usage: bench/backend_bench.sh [BUILD_DIR] [NODES...]   (default build/release, 32 256 1024)
# MODEL (a YAML map, e.g. '{kind: resnet20}') replaces the MLP; NODE_STEPS (default 10,000)
# is the budget per point, CUDA_NODE_STEPS (default NODE_STEPS) the cuda rows' (a GPU needs
# more steps than the CPU for its start-up to vanish in the figure); BACKENDS (default
# 'cpu cpu-batched cuda') picks the rows. Besides the whole run's node-steps/s, each row
# gives the backend's alone (steps / gradient_wall_seconds), the backend's share of the wall
# time and, on the device, the shares of the backend's time spent uploading, computing,
# downloading (device events) and staging (host copies, which overlap the bus: the four
# shares can add up to more than 100%; docs/trace-schema.md).
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
printf '%-12s %6s %8s %14s %12s %9s %8s %12s %s\n' backend nodes steps node-steps/s backend-only \
  backend_% batch bus_MB/step 'up/compute/down/staging %'
for n in "${nodes[@]}"; do
  # About NODE_STEPS node-steps per point (at least 10 rounds), evaluation only at the ends.
  for backend in ${BACKENDS:-cpu cpu-batched cuda}; do
    budget=${NODE_STEPS:-10000}
    [ "$backend" != cuda ] || budget=${CUDA_NODE_STEPS:-$budget}
    steps=$(( budget / n > 10 ? budget / n : 10 ))
    trace="$out/$backend-$n.h5"
    if ! msg=$("$dtsim" run bench/dpsgd32.yaml --quiet -o "$trace" --set nodes="$n" \
        --set stop.steps="$steps" ${MODEL:+--set "model=$MODEL"} \
        --set model.backend="$backend" 2>&1); then
      printf '%-12s %6s   %s\n' "$backend" "$n" "$(tail -1 <<<"$msg")"
      continue
    fi
    "${PYTHON:-/usr/bin/python3}" - "$trace" "$backend" "$n" "$steps" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r"); a = f.attrs
steps = a["gradient_steps"]
wall = a["wall_seconds"]
mean = a.get("gradient_batch_mean", float("nan"))
bus = (a.get("host_to_device_bytes", 0) + a.get("device_to_host_bytes", 0)) / steps / 1e6
grad = a["gradient_wall_seconds"]
parts = [a.get(f"device_{p}_wall_seconds", 0.0) for p in ("upload", "compute", "download", "staging")]
split = "/".join(f"{100 * p / grad:.0f}" for p in parts) if sum(parts) > 0 else "-"
# The unbatched CPU backend sums its tasks' times over the threads: no backend-only rate.
batched = "gradient_batches" in a
alone = f"{steps / grad:.0f}" if batched else "-"
share = f"{100 * grad / wall:.0f}" if batched else "-"
print(f"{sys.argv[2]:<12} {sys.argv[3]:>6} {int(steps):>8} {steps / wall:>14.0f} {alone:>12} {share:>9} "
      f"{mean:>8.1f} {bus:>12.3f} {split}")
PY
  done
done
