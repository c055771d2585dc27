#!/usr/bin/env bash
# On a GPU machine lent through the `device` tool, from the repository root, with .device/
# carried (scripts/device_bundle.sh): puts the bundled binaries where the tests expect them,
# the Fashion-MNIST files in their usual folder, and runs the CUDA tests and the backend
# benchmark. Results also go to $OUT when it is set.
#
#   scripts/device_run.sh [NODES...]        (default 32 256 1024)
set -euo pipefail
cd "$(dirname "$0")/.."
b=.device
src=$(cat "$b/source_dir")
build=$(cat "$b/build_dir")
# The test binaries name the source tree by the path they were built in.
if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
  mkdir -p "$(dirname "$src")"
  ln -s "$PWD" "$src"
fi
tar -C "$b" -xJf "$b/binaries.tar.xz"
mkdir -p "$build/apps" "$build/tests/cuda" /usr/share/datasets
cp "$b/bin/dtsim" "$build/apps/"
cp "$b/bin/cuda_test" "$b/bin/cuda_pipeline_test" "$build/tests/cuda/"
[ -d /usr/share/datasets/fashion-mnist ] || cp -r "$b/data/fashion-mnist" /usr/share/datasets/
cuda_libs=/usr/local/cuda/lib64
if command -v nvcc > /dev/null; then
  cuda_libs=$(dirname "$(readlink -f "$(command -v nvcc)")")/../lib64
fi
export LD_LIBRARY_PATH="$PWD/$b/lib:$cuda_libs:${LD_LIBRARY_PATH:-}"
log=${OUT:-/tmp}/device_run.txt
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  "$build/apps/dtsim" --version
  "$build/tests/cuda/cuda_pipeline_test"
  "$build/tests/cuda/cuda_test" --success=false
  PYTHON=${PYTHON:-python3} bench/backend_bench.sh "$build" "$@"
  PYTHON=${PYTHON:-python3} MODEL='{kind: lenet}' bench/backend_bench.sh "$build" "$@"
  PYTHON=${PYTHON:-python3} MODEL='{kind: resnet20}' NODE_STEPS=2000 \
    bench/backend_bench.sh "$build" 32 256
} 2>&1 | tee "$log"
