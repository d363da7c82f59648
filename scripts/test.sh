#!/usr/bin/env bash
# Run every vh5 test: Rust unit/integration/property tests, header freshness, C and C++
# programs against the built library, and the Python tests. This is the README's test command.
#
# Which libhdf5: the system's (pkg-config / default paths; target dir target/), or with
# VH5_HDF5_DIR=<prefix> the libhdf5 installed under <prefix> (e.g. HDF5 2.x built by
# scripts/build_hdf5.sh), built in the target dir target/hdf5-<its major version> unless
# CARGO_TARGET_DIR is set. Binaries then find that libhdf5 through their run-time path (build.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

if [ -n "${VH5_HDF5_DIR:-}" ]; then
  HDF5_DIR=$(cd "$VH5_HDF5_DIR" && pwd)
  h5ver=$(for m in MAJOR MINOR RELEASE; do sed -n "s/^#define H5_VERS_$m *\([0-9]*\).*/\1/p" "$HDF5_DIR/include/H5public.h"; done | paste -sd.)
  [ -n "$h5ver" ] || { echo "VH5_HDF5_DIR=$VH5_HDF5_DIR: no include/H5public.h with the HDF5 version there" >&2; exit 2; }
  export HDF5_DIR
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/hdf5-${h5ver%%.*}}"
  echo "== against the libhdf5 $h5ver in $HDF5_DIR (target dir $CARGO_TARGET_DIR)"
fi
TD=$(cargo metadata --format-version 1 --no-deps --locked | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')

echo "== cargo build (release library, CLI)"
cargo build --release --locked 2>&1 | tail -n 2

echo "== gates: cargo fmt --check, cargo clippy -D warnings, ruff"
cargo fmt --check || { echo "cargo fmt --check: run 'cargo fmt' (rustfmt.toml)"; exit 1; }
cargo clippy --release --locked --all-targets -q -- -D warnings
echo "   ruff (Python lint: bindings/python, tests/python, scripts; rules in bindings/python/pyproject.toml)"
ruff check --config bindings/python/pyproject.toml bindings/python tests/python scripts

echo "== duplicate code (no block of 8+ code lines repeated in the library under src/)"
python3 scripts/check_duplicates.py

echo "== cargo test"
log=$(mktemp -t vh5-cargo-test.XXXXXX)
trap 'rm -f "$log"' EXIT
status=0
# --show-output prints what passing tests printed, so their SKIP reasons reach this summary.
cargo test --release --locked -- --show-output >"$log" 2>&1 || status=$?
grep -E "^test result|FAILED|^error" "$log" || true
grep -h "SKIP" "$log" | sort -u | sed 's/^/  /' || true
if [ "$status" != 0 ] || grep -q "test result: FAILED" "$log"; then
  echo "cargo test failed (exit $status); full log:"; cat "$log"; exit 1
fi
grep -q "^test result: ok" "$log" || { echo "cargo test ran nothing"; exit 1; }

echo "== cargo test --lib (debug: overflow checks and debug assertions on the unit tests)"
# The release profile wraps on integer overflow; the unit tests of the pure modules (geometry,
# planner, copy engines, decoders) must also hold with every overflow checked.
status=0
cargo test --lib --locked >"$log" 2>&1 || status=$?
grep -E "^test result|FAILED" "$log" || true
if [ "$status" != 0 ]; then echo "debug unit tests failed (exit $status); full log:"; cat "$log"; exit 1; fi

echo "== C and C++ tests"
bash c_tests/run.sh "$TD/release"
bash c_tests/sanitize.sh "$TD/release"   # ASan+UBSan+LSan and valgrind on the C programs
bash c_tests/install_check.sh

if [ "${VH5_FUZZ_SMOKE:-0}" = 1 ]; then
  echo "== fuzz smoke (VH5_FUZZ_SMOKE=1): ${VH5_FUZZ_SMOKE_SECS:-60} s per fuzz target"
  bash scripts/fuzz.sh "${VH5_FUZZ_SMOKE_SECS:-60}"
fi

echo "== Python tests"
export VH5_LIBRARY="$TD/release/libvh5.so"
export VH5_CLI="$TD/release/vh5"
python3 -m pytest -q -rs tests/python   # -rs: print every skip reason

# ==== h5py-bound build (Python on h5py's libhdf5: one libhdf5 per process) ======================
# libvh5_h5py.so is compiled against HDF5 2.x headers and has no libhdf5 of its own (see
# docs/ARCHITECTURE.md); built by scripts/build_h5py_lib.sh when an HDF5 2.x prefix is known:
# VH5_HDF5_DIR, or the newest ${VH5_HDF5_CACHE:-~/.cache/vh5}/hdf5-2.* (scripts/build_hdf5.sh).
# Runs the tests that exercise h5py interplay (the rest of the suite is the linked build's).
h5py_prefix=${VH5_HDF5_DIR:-}
if [ -z "$h5py_prefix" ]; then
  for d in "${VH5_HDF5_CACHE:-$HOME/.cache/vh5}"/hdf5-2.*; do [ -f "$d/include/H5public.h" ] && h5py_prefix=$d; done
fi
if [ -n "$h5py_prefix" ] && grep -Eq '^#define H5_VERS_MAJOR[[:space:]]+2\b' "$h5py_prefix/include/H5public.h" 2>/dev/null; then
  echo "== Python tests on the h5py-bound build (HDF5 2.x headers of $h5py_prefix, run on h5py's libhdf5)"
  VH5_HDF5_DIR="$h5py_prefix" bash scripts/build_h5py_lib.sh target/h5py
  VH5_LIBRARY="$PWD/target/h5py/libvh5_h5py.so" python3 -m pytest -q -rs \
    tests/python/test_py_h5py_bound.py tests/python/test_versioned_hdf5_suite.py tests/python/test_py_compat_versioned.py \
    tests/python/test_py_h5py_api.py tests/python/test_read_h5py.py tests/python/test_py_newer_format.py tests/python/test_py_edge.py \
    tests/python/test_dask.py
else
  echo "== h5py-bound build: SKIP (no HDF5 2.x prefix: set VH5_HDF5_DIR=<prefix> or run scripts/build_hdf5.sh)"
fi
