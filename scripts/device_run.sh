#!/usr/bin/env bash
# On a GPU machine lent through the `device` tool, from the repository root, with .device/
# carried (scripts/device_bundle.sh): puts the bundled binaries where the tests expect them
# and the Fashion-MNIST files in their usual folder, then runs the CUDA tests and the backend
# benchmark for the MLP, LeNet and ResNet-20 (docs/cuda.md), each step under a time limit so
# that one stuck step cannot use up the lease. The log also goes to $OUT when it is set.
#
#   scripts/device_run.sh [NODES...]        (default 32 256 1024)
#
# PARTS (default 'tests bench kernels') picks what runs: the tests, the benchmark, the
# per-kernel profile; 'resident' runs only the benchmark's cuda-resident rows (with a
# long 1,024-node MLP run: with the 400,000-step row it gives the rate net of start-up)
# and the 1,024-node MLP's cuda-batched row beside them; 'profile' times the kernels and
# copies of a few resident 1,024-node MLP rounds (Nsight Compute, and Nsight Systems where
# present; PROFILE_ALGORITHM='{name: ...}' profiles that method's rounds instead of D-PSGD's);
# 'ab' runs the goal row (the 1,024-node MLP on cuda-resident) with the bundle's
# dtsim-baseline and with dtsim in turn, three times (device_bundle.sh's BASELINE);
# 'goal' the goal row at 1.6 M steps three times (its steady state, with 'ab''s runs);
# 'methods' the 1,024-node MLP with AD-PSGD, ASGD, GSGM and gradient tracking on
# cuda-batched and on cuda-resident; 'compressed' the same with CHOCO-SGD, SwarmSGD and
# momentum tracking; 'eval' per-node evaluations (LeNet at 256 nodes, ResNet-20 at 32; LeNet
# on cuda-batched too) with both binaries in turn;
# 'mixed' the goal row with this binary's first-layer mixing in the forward pass off and on
# (DTSIM_CUDA_MIXED_FORWARD=0 / 1) in turn, three times (bench/goal_row.py --pair
# mixed0,mixed1), then on at 1.6 M steps, off and on at 256 nodes, and 3 rounds' kernels
# with it on under Nsight Compute; 'fused' the goal row with the first layer's steps alone
# fused and with the first two layers' (DTSIM_CUDA_FUSED_LAYERS=1 / 2) in turn, three times
# (bench/goal_row.py --pair fused1,fused2); 'prefetch' the goal row with the fused steps'
# model and momentum loaded after the sums and copied into shared memory during them
# (DTSIM_CUDA_FUSED_PREFETCH=0 / 1) in turn, three times (--pair prefetch0,prefetch1), then
# 3 rounds' kernels of each under Nsight Compute; 'tune' the goal row with the plain mixing
# in the kernel of every mixing and in its own (DTSIM_CUDA_PLAIN_MIX=0 / 1), then with the
# fused steps' sums' inputs copied after their tiles and before
# (DTSIM_CUDA_FUSED_SUMS_FIRST=0 / 1), three times each (--pair plainmix0,plainmix1 and
# sumsfirst0,sumsfirst1), then those kernels under Nsight Compute with each choice and the
# default ones in detail (stall reasons, memory, occupancy); 'differential' runs 24 random
# small scenarios (every
# built-in algorithm and compressor, tests/app/backend_differential.py) on cpu-resident and
# cuda-resident and keeps, under $OUT/differential, those whose final loss or accuracy
# differ by more than 5% or 3 points, or that end otherwise, and, where the bundle has the
# extension example's program (EXTENSION=), its method added at run time likewise;
# 'programs' SwarmSGD's and AD-PSGD's 1,024-node rows with the engine thread's element-wise
# steps launched one kernel each and as vector programs (DTSIM_CUDA_VECTOR_PROGRAMS=0 / 1) in
# turn, three times each (--pair swarm0,swarm1 and adpsgd0,adpsgd1); 'epilogue' the goal row
# with the forward products' bias in a kernel of its own and in their cuBLASLt epilogue
# (DTSIM_CUDA_GEMM_EPILOGUE=0 / 1) in turn, three times (--pair epilogue0,epilogue1), then
# 3 rounds' kernels of each under Nsight Compute; 'warmup' the goal row's round time over
# its course beside the GPU's clocks (bench/warmup_rounds.py), with lazy loading, with the
# runner's set-up preload (DTSIM_CUDA_PRELOAD=1) and with eager module loading; 'abswarm'
# SwarmSGD's 1,024-node row with the baseline and this binary in turn (--pair
# swarm-BASELINE,swarm-THIS); 'preload' the goal row's 1.6 M steps without and with the
# set-up preload in turn, three times (--pair preload0,preload1).
set -uo pipefail
cd "$(dirname "$0")/.."
b=$PWD/.device
src=$(cat "$b/source_dir")
build=$(cat "$b/build_dir")
nodes=("$@")
[ ${#nodes[@]} -gt 0 ] || nodes=(32 256 1024)
log=${OUT:-/tmp}/device_run.txt
exec > >(tee "$log") 2>&1

# The test binaries name the source tree by the path they were built in.
if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
  mkdir -p "$(dirname "$src")"
  ln -s "$PWD" "$src"
fi
tar -C "$b" -xJf "$b/binaries.tar.xz"
[ -d /usr/share/datasets/fashion-mnist ] || { mkdir -p /usr/share/datasets &&
  cp -r "$b/data/fashion-mnist" /usr/share/datasets/; }

# CUDA's runtime and cuBLAS from the machine's toolkit (or the Python packages' copies).
cublas=$(find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt -name 'libcublas.so.13*' \
  2> /dev/null | head -1)
libs="$b/lib:$(dirname "${cublas:-/usr/local/cuda/lib64/none}")"
cudart=$(find /usr/local/cuda*/ /opt -name 'libcudart.so.13*' 2> /dev/null | head -1)
[ -z "$cudart" ] || libs="$libs:$(dirname "$cudart")"
# The bundled C++ runtime only where the machine's is older than the build's.
LD_LIBRARY_PATH=$libs "$b/bin/dtsim" --version > /dev/null 2>&1 || libs="$libs:$b/lib/fallback"
echo "libraries: $libs"
# The binaries run through wrappers that set the library path, so that the machine's own
# programs (python3 for the benchmark's tables) keep theirs.
mkdir -p "$build/apps" "$build/tests/cuda"
for bin in dtsim cuda_test cuda_pipeline_test; do
  case $bin in dtsim) dir=apps ;; *) dir=tests/cuda ;; esac
  rm -f "$build/$dir/$bin"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$b/bin/$bin" > "$build/$dir/$bin"
  chmod +x "$build/$dir/$bin"
done
# The baseline binary as the dtsim of a build folder of its own (bench/backend_bench.sh takes
# a build folder).
baseline=$build-baseline
# The extension example's program beside dtsim, where the bundle has it.
if [ -x "$b/bin/my_dtsim" ]; then
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$b/bin/my_dtsim" \
    > "$build/apps/my_dtsim"
  chmod +x "$build/apps/my_dtsim"
fi
if [ -x "$b/bin/dtsim-baseline" ]; then
  mkdir -p "$baseline/apps"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$b/bin/dtsim-baseline" \
    > "$baseline/apps/dtsim"
  chmod +x "$baseline/apps/dtsim"
fi

step() { # step SECONDS TITLE COMMAND...: runs COMMAND under a time limit, timed
  local limit=$1 title=$2
  shift 2
  echo "=== $title"
  local t0=$SECONDS
  timeout "$limit" "$@"
  echo "=== $title: exit $?, $((SECONDS - t0)) s"
}
want() { [[ " ${PARTS:-tests bench kernels} " == *" $1 "* ]]; }
# host_backend DIR: the backend that keeps the vectors on the host for DIR's dtsim:
# cuda-batched, or cuda for a binary from before cuda-batched was named (its cuda).
host_backend() {
  if "$1/apps/dtsim" validate scenarios/quickstart.yaml --set model.backend=cuda-batched \
    > /dev/null 2>&1; then echo cuda-batched; else echo cuda; fi
}
# same_binary_pairs NAME VARIABLE A B [NODE_STEPS [ALGORITHM]]: the goal row (or ALGORITHM's
# 1,024-node MLP row, NODE_STEPS node-steps; default 400,000) with this binary and
# VARIABLE=A, then =B, in the order A B, B A, A B (as 'ab'), titled NAME$A / NAME$B for
# bench/goal_row.py --pair.
same_binary_pairs() {
  local name=$1 variable=$2 a=$3 b=$4 steps=${5:-400000} algorithm=${6:-} r m
  for r in 1 2 3; do
    local order=("$a" "$b")
    [ $((r % 2)) -eq 1 ] || order=("$b" "$a")
    for m in "${order[@]}"; do
      step 60 "goal row, commit: $name$m, run $r" env "$variable=$m" "ALGORITHM=$algorithm" \
        BACKENDS="cuda-resident" CUDA_NODE_STEPS="$steps" bench/backend_bench.sh "$build" 1024
    done
  done
}
export PYTHON=${PYTHON:-python3}
step 20 "machine" sh -c "nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm \
  --format=csv,noheader; nproc; grep -m1 'model name' /proc/cpuinfo; \
  grep -o -m1 'avx512f' /proc/cpuinfo; ldd --version | head -1; '$build/apps/dtsim' --version"
want tests && step 60 "pipeline test (host executor)" "$build/tests/cuda/cuda_pipeline_test"
want tests && step 240 "CUDA tests" "$build/tests/cuda/cuda_test" --duration=true
want differential && step 180 "cuda-resident against cpu-resident, 24 random scenarios" \
  "$PYTHON" tests/app/backend_differential.py "$build/apps/dtsim" --seed 1 --count 24 \
  --backends cpu-resident,cuda-resident --close 0.05 --points 3 --keep "${OUT:-/tmp}/differential"
want differential && [ -x "$build/apps/my_dtsim" ] &&
  step 60 "an extension's method on cuda-resident against cpu-resident" \
    "$PYTHON" tests/app/backend_differential.py "$build/apps/my_dtsim" \
    --scenario examples/extension/scenario.yaml --set stop.epochs=1 \
    --backends cpu-resident,cuda-resident --close 0.05 --points 3 \
    --keep "${OUT:-/tmp}/differential-extension"
# The MLP and LeNet resident rows get four times the steps: at their rate the start-up (the
# training set to the device, the first cuBLAS calls) would otherwise weigh in the figure.
want bench && step 120 "MLP" env BACKENDS="cpu cuda-batched" CUDA_NODE_STEPS=100000 \
  bench/backend_bench.sh "$build" "${nodes[@]}"
want resident && step 60 "MLP, cuda-batched, 1024 nodes" env BACKENDS="cuda-batched" \
  CUDA_NODE_STEPS=100000 bench/backend_bench.sh "$build" 1024
if want bench || want resident; then
  step 120 "MLP, resident" env BACKENDS="cuda-resident" CUDA_NODE_STEPS=400000 \
    bench/backend_bench.sh "$build" "${nodes[@]}"
  step 120 "MLP, resident, 1024 nodes, long" env BACKENDS="cuda-resident" \
    CUDA_NODE_STEPS=1600000 bench/backend_bench.sh "$build" 1024
  step 60 "MLP, QG-DSGDm-N, 1024 nodes" env BACKENDS="cuda-batched cuda-resident" \
    CUDA_NODE_STEPS=200000 ALGORITHM='{name: qg-dsgdm-n, lr: 0.05}' \
    bench/backend_bench.sh "$build" 1024
fi
want bench && step 120 "LeNet" env BACKENDS="cpu cuda-batched" CUDA_NODE_STEPS=50000 MODEL='{kind: lenet}' \
  bench/backend_bench.sh "$build" "${nodes[@]}"
want bench || want resident && step 120 "LeNet, resident" env BACKENDS="cuda-resident" CUDA_NODE_STEPS=200000 \
  MODEL='{kind: lenet}' bench/backend_bench.sh "$build" "${nodes[@]}"
want bench && step 60 "ResNet-20 on the CPU" env BACKENDS=cpu NODE_STEPS=320 MODEL='{kind: resnet20}' \
  bench/backend_bench.sh "$build" 32
want bench && step 120 "ResNet-20 on the GPU" env BACKENDS="cuda-batched cuda-resident" CUDA_NODE_STEPS=4096 MODEL='{kind: resnet20}' \
  bench/backend_bench.sh "$build" 32 256
want resident && step 60 "ResNet-20 on the GPU, resident" env BACKENDS="cuda-resident" \
  CUDA_NODE_STEPS=4096 MODEL='{kind: resnet20}' bench/backend_bench.sh "$build" 256
# Where the device time goes, kernel by kernel: one synchronous round under Nsight Compute
# (its own clocks left alone), for the two convolutional models.
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2> /dev/null | head -1)
for m in "resnet20 32" "lenet 256"; do
  set -- $m
  want kernels || break
  step 120 "kernels of one $1 round, $2 nodes (ncu)" "$ncu" --clock-control none \
    --metrics gpu__time_duration.sum --print-summary per-kernel \
    --log-file "${OUT:-/tmp}/ncu_$1.txt" "$build/apps/dtsim" run bench/dpsgd32.yaml --quiet \
    -o "/tmp/ncu_$1.h5" --set nodes="$2" --set stop.steps=1 --set "model={kind: $1}" \
    --set model.backend=cuda-batched
done
# baseline_pairs PREFIX NODE_STEPS [ALGORITHM]: the goal row (or ALGORITHM's 1,024-node MLP
# row) with the baseline binary and this one in turn, on one warm GPU, in the order A B, B A,
# A B (so that neither always runs first); each step's title names the binary by the commit
# its --version gives, after PREFIX (bench/goal_row.py --pair PREFIXcommit,PREFIXcommit).
baseline_pairs() {
  local prefix=$1 steps=$2 algorithm=${3:-} r which
  if [ ! -x "$baseline/apps/dtsim" ]; then
    echo "=== no dtsim-baseline in the bundle (device_bundle.sh's BASELINE)"
    return
  fi
  label() { timeout 20 "$1/apps/dtsim" --version | sed -n 2p | sed "s/commit: /commit: $prefix/"; }
  local -A commit=(["$baseline"]="$(label "$baseline")" ["$build"]="$(label "$build")")
  for r in 1 2 3; do
    local order=("$baseline" "$build")
    [ $((r % 2)) -eq 1 ] || order=("$build" "$baseline")
    for which in "${order[@]}"; do
      step 60 "goal row, ${commit[$which]}, run $r" env BACKENDS="cuda-resident" \
        CUDA_NODE_STEPS="$steps" "ALGORITHM=$algorithm" bench/backend_bench.sh "$which" 1024
    done
  done
}
want ab && baseline_pairs "" 400000
# SwarmSGD's 1,024-node row (the 4-bit lattice, 50,000 node-steps, as 'programs'), titled
# swarm-COMMIT (--pair swarm-BASELINE,swarm-THIS): its encodings as vector-program steps
# against the baseline's encoding kernels.
want abswarm && baseline_pairs swarm- 50000 \
  '{name: swarm-sgd, lr: 0.05, momentum: 0.9, compressor: {kind: lattice, bits: 4, side: 0.02, rounding: stochastic}}'
# The goal row at the equal budget, 1.6 M node-steps, without and with the kernels loaded and
# a warm-up pass run before the run's clock (DTSIM_CUDA_PRELOAD=0 / 1), in the same binary.
want preload && same_binary_pairs preload DTSIM_CUDA_PRELOAD 0 1 1600000
# The second layer's weight gradient fused into the local steps too (fused_layer_step.hpp),
# against the first layer's alone in the same binary, A B, B A, A B as 'ab'.
want fused && same_binary_pairs fused DTSIM_CUDA_FUSED_LAYERS 1 2
# The fused steps' tiles copied into shared memory while the sums run
# (fused_layer_step_prefetch_kernel), against loading them after, in the same binary.
if want prefetch; then
  same_binary_pairs prefetch DTSIM_CUDA_FUSED_PREFETCH 0 1
  if [ -n "$ncu" ]; then
    for m in 0 1; do
      step 90 "fused step kernels of 3 resident MLP rounds, prefetch $m (ncu)" \
        env DTSIM_CUDA_FUSED_PREFETCH=$m "$ncu" --clock-control none -k regex:fused_layer_step \
        --launch-count 12 \
        --metrics gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
        --print-summary per-kernel --log-file "${OUT:-/tmp}/ncu_prefetch$m.txt" \
        "$build/apps/dtsim" run bench/dpsgd32.yaml --quiet --set nodes=1024 \
        --set model.backend=cuda-resident -o "/tmp/ncu_prefetch$m.h5" --set stop.steps=3
    done
  fi
fi
# The plain mixing in a kernel of its own (plain_mix_tile) against the kernel of every
# mixing, and the fused steps' sums' inputs copied before their tiles against after, each in
# the same binary, A B, B A, A B as 'ab'; then each kernel's time under Nsight Compute with
# either choice, and the default kernels' stall reasons, memory traffic and occupancy.
if want tune; then
  same_binary_pairs plainmix DTSIM_CUDA_PLAIN_MIX 0 1
  same_binary_pairs sumsfirst DTSIM_CUDA_FUSED_SUMS_FIRST 0 1
  if [ -n "$ncu" ]; then
    for choice in DTSIM_CUDA_PLAIN_MIX=0 DTSIM_CUDA_FUSED_SUMS_FIRST=0 DTSIM_CUDA_PLAIN_MIX=1; do
      step 90 "mixing and fused step kernels of 3 resident MLP rounds, $choice (ncu)" \
        env "$choice" "$ncu" --clock-control none --kernel-name-base demangled \
        -k 'regex:run_mixes|fused_layer_step' --launch-count 12 \
        --metrics gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
        --print-summary per-kernel --log-file "${OUT:-/tmp}/ncu_tune_$(echo "${choice#DTSIM_CUDA_}" | tr = _).txt" \
        "$build/apps/dtsim" run bench/dpsgd32.yaml --quiet --set nodes=1024 \
        --set model.backend=cuda-resident -o /tmp/ncu_tune.h5 --set stop.steps=3
    done
    step 120 "the default mixing and fused step kernels in detail, one round (ncu)" \
      "$ncu" --clock-control none --kernel-name-base demangled \
      -k 'regex:run_mixes|fused_layer_step' --launch-count 3 --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
      --section SchedulerStats --log-file "${OUT:-/tmp}/ncu_tune_detail.txt" \
      "$build/apps/dtsim" run bench/dpsgd32.yaml --quiet --set nodes=1024 \
      --set model.backend=cuda-resident -o /tmp/ncu_tune.h5 --set stop.steps=1
  fi
fi
# The first layer's mixing in the forward pass (mixed_first_layer.hpp), off and on in the
# same binary, A B, B A, A B as 'ab'.
if want mixed; then
  same_binary_pairs mixed DTSIM_CUDA_MIXED_FORWARD 0 1
  step 120 "goal row, mixed forward, 1.6 M steps" env DTSIM_CUDA_MIXED_FORWARD=1 \
    BACKENDS="cuda-resident" CUDA_NODE_STEPS=1600000 bench/backend_bench.sh "$build" 1024
  # 256 nodes (1,024 blocks: taken; 32 nodes, 128 blocks, are under mixed_forward_fills'
  # two per SM), off then on.
  for m in 0 1; do
    step 60 "mixed forward $m, 256 nodes" env DTSIM_CUDA_MIXED_FORWARD=$m \
      BACKENDS="cuda-resident" CUDA_NODE_STEPS=400000 bench/backend_bench.sh "$build" 256
  done
  # The kernels that change, one at a time under Nsight Compute: the mixing (its rest of the
  # row), the mixed forward kernel and the fused step (reading the minibatch by index), and
  # cuBLAS's GEMMs beside them, over 3 resident 1,024-node rounds.
  if [ -n "$ncu" ]; then
    step 120 "kernels of mixed-forward resident MLP rounds, 1024 nodes (ncu)" \
      env DTSIM_CUDA_MIXED_FORWARD=1 "$ncu" --clock-control none --launch-count 120 \
      --metrics gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed \
      --print-summary per-kernel --log-file "${OUT:-/tmp}/ncu_mlp_mixed.txt" \
      "$build/apps/dtsim" run bench/dpsgd32.yaml --quiet --set nodes=1024 \
      --set model.backend=cuda-resident -o /tmp/ncu_mlp_mixed.h5 --set stop.steps=3
  fi
fi
# The forward products' bias and ReLU in their cuBLASLt epilogue (bias_epilogue_gemm.cuh)
# against an element kernel after each (DTSIM_CUDA_GEMM_EPILOGUE=0 / 1), in the same binary,
# A B, B A, A B as 'ab' (bench/goal_row.py --pair epilogue0,epilogue1), then the pass's
# kernels of 3 resident rounds with each under Nsight Compute.
if want epilogue; then
  same_binary_pairs epilogue DTSIM_CUDA_GEMM_EPILOGUE 0 1
  if [ -n "$ncu" ]; then
    for m in 0 1; do
      step 90 "kernels of 3 resident MLP rounds, epilogue $m (ncu)" \
        env DTSIM_CUDA_GEMM_EPILOGUE=$m "$ncu" --clock-control none --launch-count 120 \
        --metrics gpu__time_duration.sum --print-summary per-kernel \
        --log-file "${OUT:-/tmp}/ncu_epilogue$m.txt" "$build/apps/dtsim" run bench/dpsgd32.yaml \
        --quiet --set nodes=1024 --set model.backend=cuda-resident -o /tmp/ncu_epilogue.h5 \
        --set stop.steps=3
    done
  fi
fi
# The goal row's 1,562 rounds with an evaluation every 2 simulated seconds (about 40
# rounds), the GPU's SM clock and power sampled every 100 ms beside it: whether a run's
# first rounds are slower, and whether the clocks were still rising then
# (bench/warmup_rounds.py OUT/warmup-MODE.h5 OUT/warmup-MODE_clocks.csv
# $(cat OUT/warmup-MODE_end.txt)). Three times: with the CUDA runtime's default lazy module
# loading (a kernel's module loads at its first launch, inside the run, where the device's
# phase timers count the wait), with the set-up preload (DTSIM_CUDA_PRELOAD=1: dtsim's own
# kernels loaded and a warm-up pass run before the run, which loads cuBLAS's kernels for the
# pass; the first evaluation's set upload, buffers and products are still inside the run) and with CUDA_MODULE_LOADING=EAGER (every
# module at the context's creation, before the run): a slow first stretch under lazy loading
# alone is the first launches' loading (under PRELOAD too: what the preload leaves), slow
# first stretches in all three with the clocks rising are the GPU's clocks.
if want warmup; then
  for mode in LAZY PRELOAD EAGER; do
    o="${OUT:-/tmp}/warmup-$mode"
    loading=$mode preload=0
    if [ "$mode" = PRELOAD ]; then loading=LAZY preload=1; fi
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits \
      -lms 100 > "${o}_clocks.csv" 2>&1 &
    smi=$!
    sleep 1 # the idle clocks before the run
    date +%s.%N > "${o}_start.txt" # the process's whole time too: eager loading moves the
    # loading before the run's clock, into the process's start-up
    step 60 "goal row, 1.6 M steps, an evaluation every 2 simulated s, CUDA_MODULE_LOADING=$loading DTSIM_CUDA_PRELOAD=$preload" \
      env CUDA_MODULE_LOADING=$loading DTSIM_CUDA_PRELOAD=$preload "$build/apps/dtsim" run \
      bench/dpsgd32.yaml --quiet \
      --set nodes=1024 --set model.backend=cuda-resident --set stop.steps=1562 \
      --set eval.every_s=2 -o "$o.h5"
    date +%s.%N > "${o}_end.txt"
    sleep 1
    kill "$smi"
    "$PYTHON" bench/warmup_rounds.py "$o.h5" "${o}_clocks.csv" "$(cat "${o}_end.txt")"
    echo "CUDA_MODULE_LOADING=$loading DTSIM_CUDA_PRELOAD=$preload: the process took" \
      "$("$PYTHON" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" \
      "$(cat "${o}_start.txt")" "$(cat "${o}_end.txt")") s"
  done
fi
# The engine thread's element-wise steps as vector programs (vector_program.hpp) against a
# kernel each (DTSIM_CUDA_VECTOR_PROGRAMS=0 / 1), in the same binary, A B, B A, A B: SwarmSGD
# with the 4-bit lattice and AD-PSGD, 1,024 MLP nodes on cuda-resident (bench/goal_row.py
# LOG --pair swarm0,swarm1 and adpsgd0,adpsgd1, on a log of its own: with PARTS=goal's rows
# beside them goal_row.py would also print a steady state mixing the two methods; the
# device phases' idle column holds those steps' kernels).
if want programs; then
  same_binary_pairs swarm DTSIM_CUDA_VECTOR_PROGRAMS 0 1 50000 \
    '{name: swarm-sgd, lr: 0.05, momentum: 0.9, compressor: {kind: lattice, bits: 4, side: 0.02, rounding: stochastic}}'
  same_binary_pairs adpsgd DTSIM_CUDA_VECTOR_PROGRAMS 0 1 100000 \
    '{name: ad-psgd, lr: 0.05, momentum: 0.9}'
fi
# The goal row's steady state: this binary at 1,024 nodes with 1.6 M node-steps, three
# times (with the 400 k-step runs of 'ab', the rate net of start-up is the extra steps over
# the extra wall time).
want goal && step 120 "goal row, 1.6 M steps, 3 runs" env BACKENDS="cuda-resident" \
  CUDA_NODE_STEPS=1600000 REPEATS=3 bench/backend_bench.sh "$build" 1024
# The methods whose steps run on the engine thread, with and without resident vectors
# (the rates small enough that 1,024 workers do not diverge in 100 steps: checked on the CPU;
# GSGM diverges there at lr 0.0001 after 7,160 gradient steps, on every backend alike).
if want methods; then
  for algorithm in '{name: ad-psgd, lr: 0.05, momentum: 0.9}' '{name: asgd, lr: 0.0001}' \
    '{name: gsgm, lr: 0.00001, momentum: 0.9}' '{name: gradient-tracking, lr: 0.01}'; do
    step 120 "MLP, $algorithm, 1024 nodes" env BACKENDS="cuda-batched cuda-resident" \
      CUDA_NODE_STEPS=100000 ALGORITHM="$algorithm" bench/backend_bench.sh "$build" 1024
  done
fi
# The stability study's compressed methods (CHOCO-SGD with 4-bit QSGD, SwarmSGD with the
# 4-bit lattice) and momentum tracking, resident since 2026-11-26, and CHOCO-SGD with top-k
# (the device's radix selection, a block per node): the 1,024-node MLP on cuda-batched and
# on cuda-resident (rates checked on the CPU not to diverge in 100 steps; top-k 1%: 0.764
# accuracy after them). SwarmSGD runs on cuda-resident alone: on cuda-batched its lattice
# codec runs on the host, one message at a time (506 node-steps/s on the H100's host, run 18:
# 97 s).
if want compressed; then
  for algorithm in '{name: choco-sgd, lr: 0.05, momentum: 0.9, gamma: 0.6, compressor: {kind: qsgd, bits: 4}}' \
    '{name: choco-sgd, lr: 0.05, momentum: 0.9, gamma: 0.1, compressor: {kind: topk, ratio: 0.01}}' \
    '{name: swarm-sgd, lr: 0.05, momentum: 0.9, compressor: {kind: lattice, bits: 4, side: 0.02, rounding: stochastic}}' \
    '{name: momentum-tracking, lr: 0.01}'; do
    backends="cuda-batched cuda-resident"
    [[ $algorithm != *swarm-sgd* ]] || backends=cuda-resident
    step 100 "MLP, $algorithm, 1024 nodes" env BACKENDS="$backends" \
      CUDA_NODE_STEPS=50000 ALGORITHM="$algorithm" bench/backend_bench.sh "$build" 1024
  done
fi
# Where a resident round's device time goes: every kernel's duration and DRAM traffic
# (the element kernels' achieved bandwidth), and, with Nsight Systems, the copies and the
# gaps between kernels that the backend's event marks lump together.
if want profile; then
  resident_round=("$build/apps/dtsim" run bench/dpsgd32.yaml --quiet --set nodes=1024
    --set model.backend=cuda-resident)
  [ -z "${PROFILE_ALGORITHM:-}" ] || resident_round+=(--set "algorithm=$PROFILE_ALGORITHM")
  if [ -n "$ncu" ]; then
    step 150 "kernels of resident MLP rounds, 1024 nodes (ncu)" "$ncu" --clock-control none \
      --launch-count 600 \
      --metrics gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
      --print-summary per-kernel --log-file "${OUT:-/tmp}/ncu_mlp_resident.txt" \
      "${resident_round[@]}" -o /tmp/ncu_mlp_resident.h5 --set stop.steps=3
  else
    echo "=== no Nsight Compute (ncu) on this machine"
  fi
  # The newest Nsight Systems if several are installed; its summary tables go to the log
  # (the report file itself stays on the machine).
  nsys=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/bin/nsys \
    2> /dev/null | sort -V | tail -1)
  if [ -n "$nsys" ]; then
    step 120 "timeline of 40 resident MLP rounds, 1024 nodes (nsys)" "$nsys" profile \
      --stats=true --force-overwrite true -o /tmp/nsys_mlp_resident \
      "${resident_round[@]}" -o /tmp/nsys_mlp_resident.h5 --set stop.steps=40
  else
    echo "=== no Nsight Systems (nsys) on this machine"
  fi
fi
# Per-node evaluations on cuda-resident (the stability protocol's kind of run: every node's
# accuracy on held-out test examples) with the baseline binary and this one in turn: LeNet at
# 256 nodes, half an epoch, three evaluations of 1,000 examples (twice each); ResNet-20 at
# 32 nodes, a tenth of an epoch, two evaluations of 200 examples (four times each); the LeNet
# run with the node models on the host (once each). Each run's wall time, evaluation time and
# model pulls from its trace.
if want eval; then
  lenet_eval=(run scenarios/quickstart.yaml --quiet --set nodes=256 --set 'model={kind: lenet}'
    --set model.backend=cuda-resident --set stop.epochs=0.5
    --set 'eval={every_epochs: 0.25, per_node: true, per_node_samples: 1000}')
  resnet_eval=(run scenarios/quickstart.yaml --quiet --set nodes=32 --set 'model={kind: resnet20}'
    --set model.backend=cuda-resident --set stop.epochs=0.1
    --set 'eval={every_epochs: 0.1, per_node: true, per_node_samples: 200}')
  # LeNet's with the node models on the host, scored there before a740ee8 and on the device
  # (uploaded) since: backend cuda-batched, which a binary from before it was named calls cuda
  # (host_backend below).
  hosted_eval=("${lenet_eval[@]}")
  # ResNet-20 four times each (docs/cuda-measurements.md's fifth-lease figures: mean ± sample std of 4).
  for run in "lenet $baseline" "lenet $build" "lenet $baseline" "lenet $build" \
    "resnet $baseline" "resnet $build" "resnet $baseline" "resnet $build" \
    "resnet $baseline" "resnet $build" "resnet $baseline" "resnet $build" \
    "hosted $baseline" "hosted $build"; do
    set -- $run
    [ -x "$2/apps/dtsim" ] || continue
    declare -n scenario="${1}_eval"
    hosted=()
    [ "$1" != hosted ] || hosted=(--set "model.backend=$(host_backend "$2")")
    rm -f /tmp/node_eval.h5 # a run that fails leaves no earlier run's trace to read
    step 120 "$1 per-node evaluations, $(timeout 20 "$2/apps/dtsim" --version | sed -n 2p)" \
      "$2/apps/dtsim" "${scenario[@]}" "${hosted[@]}" -o /tmp/node_eval.h5
    $PYTHON -c "import h5py; a = h5py.File('/tmp/node_eval.h5', 'r').attrs; print('wall_seconds',
      round(a['wall_seconds'], 3), 'eval_wall_seconds', round(a['eval_wall_seconds'], 3),
      'resident_model_pulls', a['resident_model_pulls'])"
    unset -n scenario
  done
fi
