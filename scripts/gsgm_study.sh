#!/usr/bin/env bash
# Runs the GSGM stability study of docs/gsgm-study.md: nodes x partition x algorithm x seed,
# one trace per point under runs/gsgm-study/. Resumable: points whose trace exists are skipped.
# Usage: scripts/gsgm_study.sh [BUILD_DIR]   (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
dtsim="${1:-build/release}/apps/dtsim"
out=runs/gsgm-study
mkdir -p "$out"
declare -A partitions=(
  [shards2]='{kind: shards, shards_per_node: 2}'
  [dir0.1]='{kind: dirichlet, alpha: 0.1}'
  [dir1]='{kind: dirichlet, alpha: 1}'
)
declare -A algorithms=(
  [asgd-lr0.05]='{name: asgd, lr: 0.05}'
  [asgd-lr0.01]='{name: asgd, lr: 0.01}'
  [dcasgd-lr0.05]='{name: dc-asgd, lr: 0.05}'
  [gsgm-lr0.001]='{name: gsgm, lr: 0.001, momentum: 0.9}'
)
for n in 10 20 30; do
  for p in shards2 dir0.1 dir1; do
    for a in asgd-lr0.05 asgd-lr0.01 dcasgd-lr0.05 gsgm-lr0.001; do
      for seed in 1 2 3; do
        name="n$n-$p-$a-s$seed"
        [ -f "$out/$name.h5" ] && continue
        "$dtsim" run scenarios/gsgm/base.yaml --quiet -o "$out/$name.h5" --set "name=$name" \
          --set "nodes=$n" --set "seed=$seed" --set "data.partition=${partitions[$p]}" \
          --set "algorithm=${algorithms[$a]}" > /dev/null || echo "$name: exit $?"
      done
    done
  done
done
