#!/usr/bin/env bash
# Install what building and testing vh5 needs on a fresh Debian 12 / Ubuntu machine.
# Idempotent: installs only what is missing. Needs root or sudo for apt.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

# clang + libclang-rt-14-dev (ASan/UBSan runtime) and valgrind: c_tests/sanitize.sh; zlib1g-dev
# and libaec-dev (szip): scripts/build_hdf5.sh (HDF5 2.x from source).
APT_PKGS="libhdf5-dev pkg-config cmake binutils gcc g++ python3-venv clang libclang-rt-14-dev valgrind zlib1g-dev libaec-dev"
# patchelf: scripts/build_h5py_lib.sh (the h5py-bound library and tool of the wheel).
APT_PKGS="$APT_PKGS patchelf"
missing=""
for p in $APT_PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "[setup] apt-get install$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

if ! command -v cargo >/dev/null; then
  echo "[setup] cargo not found: install Rust (https://rustup.rs) and re-run" >&2
  exit 1
fi
# rustfmt and clippy: the formatting and lint gates of scripts/test.sh.
for c in rustfmt clippy; do
  if ! cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1; then
    echo "[setup] rustup component add $c"
    rustup component add "$c"
  fi
done

# Python test/benchmark dependencies (pinned peers for differential tests; ruff pinned too:
# `ruff format --check` is a gate and its output changes between releases).
PY=${PYTHON:-python3}
if ! $PY -c "import numpy, h5py, cbor2, pytest, hypothesis, msgpack, msgpack_numpy, versioned_hdf5, dask.array, distributed, xarray" 2>/dev/null \
  || [ "$(ruff --version 2>/dev/null)" != "ruff $(sed -n 's/^ruff==//p' scripts/requirements-test.txt)" ]; then
  echo "[setup] pip install -r scripts/requirements-test.txt"
  $PY -m pip install -q -r scripts/requirements-test.txt
fi
