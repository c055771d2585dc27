#!/usr/bin/env bash
# Packs what a GPU machine lent through the `device` tool needs to run dtsim's CUDA tests and
# bench/backend_bench.sh (docs/cuda.md): that machine has the CUDA toolkit but none of
# dtsim's Debian libraries and no network, so the binaries built here travel with every
# shared library they load that is not glibc, libstdc++ or CUDA's own, and with the
# Fashion-MNIST files. Writes .device/ (git-ignored; name it in the tool's `carry`): the
# binaries and libraries xz-compressed, about 40 MB with the data (the tool carries at most
# 64 MiB with the working tree). Run scripts/device_run.sh there.
#
#   scripts/device_bundle.sh [BUILD_DIR]     (default build/release; a build with
#                                             DTSIM_CUDA on, ideally -DDTSIM_ARCH=x86-64-v3,
#                                             since the GPU machine's CPU is not known)
#
# BASELINE=PATH also packs another dtsim binary (an earlier commit's, built the same way) as
# dtsim-baseline, for scripts/device_run.sh's PARTS=ab: the two side by side on one GPU.
# EXTENSION=PATH packs the extension example's program (examples/extension built against
# BUILD_DIR's install, as tests/app/extension_test.sh does) as my_dtsim, whose method added at
# run time PARTS=differential then runs on cuda-resident against cpu-resident.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
out=.device
bins=("$build/apps/dtsim" "$build/tests/cuda/cuda_test" "$build/tests/cuda/cuda_pipeline_test")
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "error: $b not built (a build with the CUDA backend is needed)" >&2; exit 2; }
done
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/fallback" "$out/data"
cp "${bins[@]}" "$out/bin/"
if [ -n "${BASELINE:-}" ]; then
  [ -x "$BASELINE" ] || { echo "error: BASELINE=$BASELINE is not an executable" >&2; exit 2; }
  cp "$BASELINE" "$out/bin/dtsim-baseline"
  bins+=("$BASELINE")
fi
if [ -n "${EXTENSION:-}" ]; then
  [ -x "$EXTENSION" ] || { echo "error: EXTENSION=$EXTENSION is not an executable" >&2; exit 2; }
  cp "$EXTENSION" "$out/bin/my_dtsim"
  bins+=("$EXTENSION")
fi
# Every library the binaries load, less the C runtime and CUDA's (the GPU machine's toolkit
# and driver provide those, matched to its GPU); the C++ runtime set aside.
ldd "${bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
  while read -r name path; do
    case "$name" in
    libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libresolv.so* | \
      ld-linux* | libcuda*.so* | libcublas*.so*) ;;
    # Used there only if its own are older than these (scripts/device_run.sh).
    libstdc++.so* | libgcc_s.so*) cp -L "$path" "$out/lib/fallback/$name" ;;
    *) cp -L "$path" "$out/lib/$name" ;;
    esac
  done
tar -C "$out" -cJf "$out/binaries.tar.xz" bin lib
rm -rf "$out/bin" "$out/lib"
cp -r /usr/share/datasets/fashion-mnist "$out/data/"
# Where the test binaries were built: they find the source tree and dtsim there.
echo "$PWD" > "$out/source_dir"
echo "$build" > "$out/build_dir"
du -sh "$out"
