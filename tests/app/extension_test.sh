#!/usr/bin/env bash
# The extension path end to end: install dtsim from this build tree, build examples/extension
# against the installed package (find_package(dtsim), dtsim::dtsim) and run its algorithm.
#   extension_test.sh BUILD_DIR SOURCE_DIR CXX_COMPILER
set -euo pipefail
build="$1" source="$2" cxx="$3"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > /dev/null
cmake -S "$source/examples/extension" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" \
  || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
exe="$work/build/my_dtsim"
# (Outputs go to files: grep -q closing a pipe early would fail the writer under pipefail.)
"$exe" list > "$work/list.txt"
for name in random-push ternary tanh-mlp; do
  grep -q "^  $name " "$work/list.txt" || { echo "$name is not listed"; cat "$work/list.txt"; exit 1; }
done
"$exe" schema > "$work/schema.json"
for name in random-push ternary tanh-mlp; do
  grep -q "\"$name\"" "$work/schema.json" || { echo "$name is not in the schema"; exit 1; }
done
"$exe" run "$source/examples/extension/scenario.yaml" -o "$work/run.h5" --quiet \
  --set stop.epochs=1 > "$work/run.log"
grep -q "random-push: completed" "$work/run.log" || { cat "$work/run.log"; exit 1; }
# The example algorithm names its vectors (named_vectors.hpp): on cpu-resident they stay in the
# backend, and its trace is cpu-batched's bit for bit (cpu-resident is cuda-resident's host
# reference).
# (Debian's /usr/bin/python3 with h5py, which scripts/install_deps.sh installs; the other
# Python tests are left out without it, as this step is.)
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 "$source/tests/app/backend_differential.py" "$exe" \
    --scenario "$source/examples/extension/scenario.yaml" --set stop.epochs=1 \
    --backends cpu-batched,cpu-resident > "$work/differential.log" ||
    { cat "$work/differential.log"; exit 1; }
else
  echo "no /usr/bin/python3: the example's cpu-resident comparison left out"
fi
# The example compressor (in CHOCO-SGD) and model (on Fashion-MNIST) from YAML: each run
# completes and learns (test accuracy above chance: 0.25 and 0.1).
"$exe" run "$source/examples/extension/ternary.yaml" -o "$work/ternary.h5" --quiet \
  --set stop.epochs=2 > "$work/ternary.log"
grep -q "choco-ternary: completed" "$work/ternary.log" || { cat "$work/ternary.log"; exit 1; }
"$exe" run "$source/examples/extension/tanh-mlp.yaml" -o "$work/tanh.h5" --quiet \
  --set stop.epochs=1 --set data.train_samples=8000 > "$work/tanh.log"
grep -q "tanh-mlp: completed" "$work/tanh.log" || { cat "$work/tanh.log"; exit 1; }
for log in ternary tanh; do
  acc=$(sed -n 's/.*final test accuracy (averaged model): \([0-9.]*\).*/\1/p' "$work/$log.log")
  awk -v a="$acc" -v floor="$([ $log = ternary ] && echo 0.4 || echo 0.5)" \
    'BEGIN { exit !(a > floor) }' || { echo "$log: accuracy $acc"; cat "$work/$log.log"; exit 1; }
  echo "$log: final test accuracy $acc"
done
# The built-in algorithms are all still there, and bad keys are still refused by name.
"$exe" validate "$source/scenarios/quickstart.yaml" > /dev/null
if "$exe" validate "$source/examples/extension/scenario.yaml" --set algorithm.lrr=1 2> "$work/err"; then
  echo "a misspelled key of the example algorithm was accepted"; exit 1
fi
grep -q "algorithm.lrr: unknown key 'lrr' (did you mean 'lr'?)" "$work/err" || { cat "$work/err"; exit 1; }
# An extension's model has no CUDA pass: backend cuda is refused for it by name, exit 2.
status=0
"$exe" validate "$source/examples/extension/tanh-mlp.yaml" --set model.backend=cuda \
  2> "$work/err" || status=$?
[ "$status" = 2 ] && grep -q "model.backend: backend cuda runs the built-in models" "$work/err" ||
  { echo "backend cuda with tanh-mlp: exit $status"; cat "$work/err"; exit 1; }
# The installed dtsim draws its report's figures with the installed analysis scripts, not
# with the source tree's.
if [ -x /usr/bin/python3 ]; then
  mkdir -p "$work/report-runs"
  cp "$work/ternary.h5" "$work/tanh.h5" "$work/report-runs/"
  "$work/prefix/bin/dtsim" report "$work/report-runs" > "$work/report.log" 2>&1 ||
    { cat "$work/report.log"; exit 1; }
  grep -qF "| figures drawn by | \`'/usr/bin/python3' '$work/prefix/share/dtsim/analysis/plot.py'\` |" \
    "$work/report-runs/report.md" || { grep -F "figures" "$work/report-runs/report.md"; exit 1; }
  [ -s "$work/report-runs/report-img/curves.png" ] || { echo "no curves.png"; exit 1; }
fi
echo "extension example: installed, built, listed, ran (algorithm, compressor, model)"
