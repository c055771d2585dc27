#!/usr/bin/env bash
# dtsim-mpi-sweep hands the points of a 4-point sweep to 2 worker ranks; all complete and
# each trace equals the one `dtsim sweep` writes. Usage: mpi_sweep_test.sh MPIEXEC MPI_SWEEP DTSIM SRC
set -euo pipefail
mpiexec=$1 mpi_sweep=$2 dtsim=$3 src=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/base.yaml" <<'YAML'
nodes: 4
data: {dataset: synthetic, synthetic: {features: 8, classes: 3, train: 400, test: 100}}
model: {kind: softmax}
algorithm: {name: dsgd, lr: 0.1}
stop: {epochs: 1}
eval: {every_s: 0.5}
YAML
printf 'name: mpi\nbase: base.yaml\ngrid:\n  seed: [1, 2]\n  algorithm.mode: [sync, async]\n' > "$dir/sweep.yaml"
"$mpiexec" --allow-run-as-root --oversubscribe -np 3 "$mpi_sweep" "$dir/sweep.yaml" -o "$dir/mpi"
test "$(grep -c ',"completed",' "$dir/mpi/index.csv")" -eq 4
"$dtsim" sweep "$dir/sweep.yaml" -o "$dir/serial" > /dev/null 2>&1
/usr/bin/python3 - "$dir" <<'PY'
import h5py, sys, glob, os, numpy as np
d = sys.argv[1]
for f in glob.glob(f"{d}/serial/*.h5"):
    a, b = h5py.File(f), h5py.File(f.replace("/serial/", "/mpi/"))
    for k in a["metrics"]:
        if k != "wall_time_s":
            assert np.array_equal(a["metrics"][k][:], b["metrics"][k][:], equal_nan=True), (f, k)
print("mpi sweep traces equal the serial sweep's")
PY
