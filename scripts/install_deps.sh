#!/usr/bin/env bash
# Installs the Debian packages dtsim needs (idempotent: installs only what is missing).
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config zlib1g-dev libdeflate-dev libeigen3-dev libtbb-dev libboost-graph-dev
          libyaml-cpp-dev libhdf5-dev doctest-dev libspectra-dev libzip-dev nlohmann-json3-dev dataset-fashion-mnist
          python3-h5py python3-matplotlib python3-numpy python3-scipy python3-yaml python3-jsonschema python3-pandas python3-dev pybind11-dev hdf5-tools
          libopenmpi-dev openmpi-bin procps clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
