#!/usr/bin/env bash
# A worker rank of dtsim-mpi-sweep is SIGKILLed mid-sweep: the job ends, the finished points
# keep their traces, and `--resume` runs exactly the missing ones, so that index.csv ends
# with every point once and completed. Usage: mpi_kill_test.sh MPIEXEC MPI_SWEEP
set -euo pipefail
mpiexec=$1 mpi_sweep=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/base.yaml" <<'YAML'
nodes: 4
data: {dataset: synthetic, synthetic: {features: 8, classes: 3, train: 2000, test: 100}}
model: {kind: softmax}
algorithm: {name: dsgd, lr: 0.1}
stop: {epochs: 200}
eval: {every_s: 0.5}
YAML
printf 'name: mpikill\nbase: base.yaml\ngrid:\n  seed: [1, 2, 3, 4, 5, 6, 7, 8]\n' > "$dir/sweep.yaml"
run=("$mpiexec" --allow-run-as-root --oversubscribe -np 3 "$mpi_sweep" "$dir/sweep.yaml" -o "$dir/out")

"${run[@]}" > "$dir/first.log" 2>&1 &
job=$!
# Wait for the first finished trace, then kill worker rank 2 (found by its MPI environment).
for _ in $(seq 1 400); do
  compgen -G "$dir/out/*.h5" > /dev/null && break
  sleep 0.05
done
victim=""
for pid in $(pgrep -f "$mpi_sweep $dir/sweep.yaml" || true); do
  if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=2'; then
    victim=$pid
  fi
done
test -n "$victim" || { echo "no worker rank 2 found"; exit 1; }
kill -9 "$victim"
if wait "$job"; then echo "the job survived a killed rank"; exit 1; fi
done_before=$(find "$dir/out" -maxdepth 1 -name '*.h5' | wc -l)
echo "killed rank 2 (pid $victim): $done_before of 8 points finished"
test "$done_before" -lt 8

"${run[@]}" --resume > "$dir/resume.log" 2>&1
grep -q "8 points, $((8 - done_before)) to run" "$dir/resume.log" ||
  { echo "resume did not report the missing points:"; cat "$dir/resume.log"; exit 1; }
test "$(tail -n +2 "$dir/out/index.csv" | cut -d, -f1 | sort | uniq | wc -l)" -eq 8
test "$(tail -n +2 "$dir/out/index.csv" | wc -l)" -eq 8
test "$(grep -c ',"completed",' "$dir/out/index.csv")" -eq 8
test -z "$(find "$dir/out" -name '*.partial')"
echo "resume ran the $((8 - done_before)) missing points; every point once in index.csv"
