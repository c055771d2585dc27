#!/usr/bin/env bash
# GSGM ablation of docs/gsgm-study.md: 10 workers, 2 label shards each, seeds 1-3; each
# mechanism alone and together, at the ASGD step size and at a 5x smaller effective step.
# Resumable: points whose trace exists are skipped. Usage: scripts/gsgm_ablation.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dtsim="${1:-build/release}/apps/dtsim"
out=runs/gsgm-ablation
mkdir -p "$out"
variants=(
  "asgd-lr0.05|{name: asgd, lr: 0.05}"
  "asgd-lr0.01|{name: asgd, lr: 0.01}"
  "schedule-lr0.05|{name: gsgm, lr: 0.05, average: false, global_momentum: false}"
  "average-lr0.05|{name: gsgm, lr: 0.05, schedule: false, global_momentum: false}"
  "average-last2-lr0.05|{name: gsgm, lr: 0.05, schedule: false, global_momentum: false, average_by: last, last: 2}"
  "schedule+average-lr0.05|{name: gsgm, lr: 0.05, global_momentum: false}"
  "schedule+average-lr0.01|{name: gsgm, lr: 0.01, global_momentum: false}"
  "all-lr0.005|{name: gsgm, lr: 0.005}"
  "all-lr0.001|{name: gsgm, lr: 0.001}"
  "all-last2-lr0.002|{name: gsgm, lr: 0.002, average_by: last, last: 2}"
  "all-slack4-lr0.001|{name: gsgm, lr: 0.001, slack: 4}"
)
for v in "${variants[@]}"; do
  label="${v%%|*}"
  alg="${v#*|}"
  for seed in 1 2 3; do
    name="$label-s$seed"
    [ -f "$out/$name.h5" ] && continue
    "$dtsim" run scenarios/gsgm/base.yaml --quiet -o "$out/$name.h5" --set "name=$name" \
      --set "seed=$seed" --set "algorithm=$alg" > /dev/null || echo "$name: exit $?"
  done
done
