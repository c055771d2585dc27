#!/usr/bin/env bash
# Runs the example-ordering study of docs/ordering-study.md and makes its tables and plots:
# D-RR (random) vs independent balancing (id-grab) vs CD-GraB, n = 4..64, 3 seeds, per model.
# Resumable (dtsim sweep --resume). Usage:
#   scripts/ordering_study.sh [softmax|lenet|lenet-lr|all] [BUILD_DIR] [JOBS]
# (default: softmax build/release 2); lenet-lr is the step-size check at n = 64.
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-softmax}"
build="${2:-build/release}"
jobs="${3:-2}"
dtsim="$build/apps/dtsim"
python=/usr/bin/python3
case "$which" in
  softmax) models=(softmax) ;;
  lenet) models=(lenet) ;;
  lenet-lr) models=() ;;
  all) models=(softmax lenet) ;;
  *) echo "usage: $0 [softmax|lenet|lenet-lr|all] [BUILD_DIR] [JOBS]" >&2; exit 2 ;;
esac
mkdir -p docs/img
for m in "${models[@]}"; do
  out="runs/ordering-$m"
  "$dtsim" sweep "scenarios/ordering/$m.yaml" --jobs "$jobs" --resume
  # Per (n, order): mean ± std over seeds, and the reduction vs D-RR at the same n, in %.
  "$dtsim" analyze "$out" --by nodes,data.order.kind --baseline data.order.kind=random \
    --columns epoch_train_loss,epoch_train_loss_2nd_half,epoch_test_acc,herding_bound_mean,order_bytes,wall_s \
    --markdown | tee "docs/ordering-$m-table.md"
  "$dtsim" analyze "$out" --by nodes,data.order.kind,seed --csv "docs/ordering-$m.csv" > /dev/null
  for y in train_loss herding_bound test_accuracy; do
    "$python" analysis/plot.py "$out" --table epochs --x epoch --y "$y" --panel nodes \
      --colour data.order.kind -o "docs/img/ordering-$m-$y" \
      $([ "$y" = herding_bound ] && echo --logy)
  done
  for measure in epoch_train_loss epoch_train_loss_2nd_half herding_bound_mean; do
    "$python" analysis/plot.py "docs/ordering-$m.csv" --vs nodes --measure "$measure" \
      --colour data.order.kind -o "docs/img/ordering-$m-$measure-vs-nodes"
  done
done
if [ "$which" = lenet-lr ] || [ "$which" = all ]; then
  "$dtsim" sweep scenarios/ordering/lenet-lr.yaml --jobs "$jobs" --resume
  # The lr 0.01 runs of the main grid at n = 64 (seeds 1, 2) join as the middle step size.
  "$dtsim" analyze runs/ordering-lenet-lr runs/ordering-lenet/seed=[12]_nodes=64_order=[rc]* \
    --by algorithm.lr,data.order.kind --baseline data.order.kind=random --markdown \
    --columns epoch_train_loss,epoch_train_loss_2nd_half,epoch_test_acc,herding_bound_mean \
    | tee docs/ordering-lenet-lr-table.md
fi
