#!/usr/bin/env bash
# Builds what a GPU lease needs and packs it (docs/cuda.md, "On a GPU machine lent through
# the device tool"): this tree in build/device, a baseline commit in build/baseline-<commit>
# (for scripts/device_run.sh's PARTS=ab: the two side by side on one GPU), the extension
# example against build/device's install (PARTS=differential runs its method), then
# scripts/device_bundle.sh into .device/. The build directories and the checkout are
# git-ignored and gone with a fresh clone, so a session that is lent a GPU runs this first:
# 14 minutes for both trees and the example on the 2-core VM, none of it device time.
#
#   scripts/device_prepare.sh [BASELINE_COMMIT]   (default: none, and PARTS=ab is skipped)
#
# Both trees are built with -DDTSIM_ARCH=x86-64-v3 (the GPU machine's CPU is not known) and
# DTSIM_CUDA=ON: this one whole (its install builds the extension), the baseline's dtsim alone.
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir=$PWD
configure() { # configure SOURCE BUILD
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTSIM_ARCH=x86-64-v3 \
    -DDTSIM_CUDA=ON > "$2.configure.log" || { cat "$2.configure.log"; exit 1; }
}
mkdir -p build
configure . build/device
cmake --build build/device

baseline_args=()
if [ -n "${1:-}" ]; then
  commit=$(git rev-parse --short=7 "$1^{commit}")
  base_build="build/baseline-$commit"
  if [ ! -x "$base_build/apps/dtsim" ]; then
    checkout="$source_dir/build/baseline-$commit.src"
    [ -d "$checkout" ] || git worktree add --detach "$checkout" "$commit"
    configure "$checkout" "$base_build"
    cmake --build "$base_build" --target dtsim
  fi
  baseline_args=(BASELINE="$base_build/apps/dtsim")
fi

# The extension example, built against build/device's install as tests/app/extension_test.sh
# builds it.
cmake --install build/device --prefix build/device-prefix > /dev/null
cmake -S examples/extension -B build/device-extension -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$source_dir/build/device-prefix" > build/device-extension.configure.log ||
  { cat build/device-extension.configure.log; exit 1; }
cmake --build build/device-extension

env "${baseline_args[@]}" EXTENSION=build/device-extension/my_dtsim \
  scripts/device_bundle.sh build/device
