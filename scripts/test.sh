#!/usr/bin/env bash
# Run every vh5 test: Rust unit/integration/property tests, header freshness, C and C++
# programs against the built library, and the Python tests. This is the README's test command.
#
# Which libhdf5: the system's (pkg-config / default paths; target dir target/), or with
# VH5_HDF5_DIR=<prefix> the libhdf5 installed under <prefix> (e.g. HDF5 2.x built by
# scripts/build_hdf5.sh), built in the target dir target/hdf5-<its major version> (1.x:
# target/hdf5-<major>.<minor>) unless CARGO_TARGET_DIR is set. Binaries then find that libhdf5 through their run-time path (build.rs).
# Or with VH5_FEATURES=static-hdf5 the HDF5 2.x source vendored in the hdf5-metno-src crate,
# compiled by cargo and linked into libvh5 statically (target dir target/static-hdf5; a
# cmake >= 3.26 is put on PATH by scripts/build_hdf5.sh --cmake-dir). VH5_FEATURES is passed
# to every cargo build of the library, as by scripts/install.sh and pip.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

FEATURES=()
if [ -n "${VH5_FEATURES:-}" ]; then
  FEATURES=(--features "$VH5_FEATURES")
  case " $VH5_FEATURES " in *static-hdf5*)
    [ -z "${VH5_HDF5_DIR:-}" ] || { echo "VH5_FEATURES=static-hdf5 and VH5_HDF5_DIR=$VH5_HDF5_DIR: choose one libhdf5" >&2; exit 2; }
    PATH="$(bash scripts/build_hdf5.sh --cmake-dir):$PATH"
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/static-hdf5}"
    echo "== against HDF5 built from the vendored source, linked statically (features: $VH5_FEATURES; target dir $CARGO_TARGET_DIR)" ;;
  esac
fi
if [ -n "${VH5_HDF5_DIR:-}" ]; then
  HDF5_DIR=$(cd "$VH5_HDF5_DIR" && pwd)
  h5ver=$(for m in MAJOR MINOR RELEASE; do sed -n "s/^#define H5_VERS_$m *\([0-9]*\).*/\1/p" "$HDF5_DIR/include/H5public.h"; done | paste -sd.)
  [ -n "$h5ver" ] || { echo "VH5_HDF5_DIR=$VH5_HDF5_DIR: no include/H5public.h with the HDF5 version there" >&2; exit 2; }
  export HDF5_DIR
  # target/hdf5-<major> for HDF5 >= 2, target/hdf5-<major>.<minor> for 1.x (whose minor
  # versions differ in API/ABI): the target dir scripts/build_h5py_lib.sh uses too.
  series=${h5ver%%.*}
  [ "$series" -ge 2 ] || series=$(echo "$h5ver" | cut -d. -f1-2)
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/hdf5-$series}"
  echo "== against the libhdf5 $h5ver in $HDF5_DIR (target dir $CARGO_TARGET_DIR)"
fi
TD=$(cargo metadata --format-version 1 --no-deps --locked | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')

echo "== cargo build (release library, CLI)"
cargo build --release --locked "${FEATURES[@]}" 2>&1 | tail -n 2

echo "== gates: cargo fmt --check, cargo clippy -D warnings, ruff check, ruff format --check"
cargo fmt --check || { echo "cargo fmt --check: run 'cargo fmt' (rustfmt.toml)"; exit 1; }
cargo clippy --release --locked "${FEATURES[@]}" --all-targets -q -- -D warnings
echo "   ruff (Python lint: bindings/python, tests/python, scripts; rules in bindings/python/pyproject.toml)"
ruff check --config bindings/python/pyproject.toml bindings/python tests/python scripts
ruff format --check --config bindings/python/pyproject.toml bindings/python tests/python scripts \
  || { echo "ruff format --check: run 'ruff format --config bindings/python/pyproject.toml bindings/python tests/python scripts'"; exit 1; }

echo "== duplicate code (no block of 8+ code lines repeated in the library under src/)"
python3 scripts/check_duplicates.py

echo "== cargo test"
log=$(mktemp -t vh5-cargo-test.XXXXXX)
trap 'rm -f "$log"' EXIT
status=0
# --show-output prints what passing tests printed, so their SKIP reasons reach this summary.
cargo test --release --locked "${FEATURES[@]}" -- --show-output >"$log" 2>&1 || status=$?
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
cargo test --lib --locked "${FEATURES[@]}" >"$log" 2>&1 || status=$?
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

# ==== h5py-bound builds (Python on h5py's libhdf5: one libhdf5 per process) =====================
# libvh5_h5py.so is compiled against HDF5 2.x headers (h5py >= 3.16), libvh5_h5py_1_14.so
# against HDF5 1.14 headers (h5py 3.12 .. 3.15); neither has a libhdf5 of its own (see
# docs/ARCHITECTURE.md). Each is built by scripts/build_h5py_lib.sh when a prefix of its HDF5
# series is known: VH5_HDF5_DIR when it is of that series, else (1.14) VH5_HDF5_1_14_DIR, else
# the newest ${VH5_HDF5_CACHE:-~/.cache/vh5}/hdf5-<series>.* (scripts/build_hdf5.sh [--version 1.14]).
# Runs the tests that exercise h5py interplay (the rest of the suite is the linked build's):
# on 2.x with this Python (its h5py must bundle HDF5 2.x), on 1.14 in a venv with
# h5py 3.12 .. 3.15 (VH5_H5PY_1_14_VENV, default ${VH5_HDF5_CACHE:-~/.cache/vh5}/venv-h5py-1.14;
# made once, pip install from scripts/requirements-test.txt less versioned-hdf5, which
# requires h5py 3.16). VH5_H5PY_BOUND=0 skips both, and tests/python/test_wheel.py (CI runs
# them in its HDF5 2.x run only).
H5PY_TESTS=(tests/python/test_py_h5py_bound.py tests/python/test_versioned_hdf5_suite.py tests/python/test_py_compat_versioned.py
  tests/python/test_py_h5py_api.py tests/python/test_read_h5py.py tests/python/test_py_newer_format.py tests/python/test_py_edge.py
  tests/python/test_dask.py tests/python/test_py_complex_native.py)
cache=${VH5_HDF5_CACHE:-$HOME/.cache/vh5}
# bound_prefix SERIES: the HDF5 prefix of that series ("2" or "1.14") to build against, or "".
bound_prefix() {
  local d p=""
  if [ -n "${VH5_HDF5_DIR:-}" ] && grep -Eq "^#define H5_VERS_MAJOR[[:space:]]+${1%%.*}\b" "$VH5_HDF5_DIR/include/H5public.h" &&
     { [ "$1" = 2 ] || grep -Eq "^#define H5_VERS_MINOR[[:space:]]+${1#*.}\b" "$VH5_HDF5_DIR/include/H5public.h"; }; then
    echo "$VH5_HDF5_DIR"; return
  fi
  if [ "$1" = 1.14 ] && [ -n "${VH5_HDF5_1_14_DIR:-}" ]; then echo "$VH5_HDF5_1_14_DIR"; return; fi
  while IFS= read -r d; do [ -f "$d/include/H5public.h" ] && p=$d; done < <(ls -d "$cache/hdf5-$1".* 2>/dev/null | sort -V)
  echo "$p"
}
h5py_prefix=$(bound_prefix 2)
if [ "${VH5_H5PY_BOUND:-1}" = 0 ]; then
  echo "== h5py-bound builds: SKIP (VH5_H5PY_BOUND=0)"
  h5py_prefix=
elif [ -n "$h5py_prefix" ]; then
  echo "== Python tests on the h5py-bound build for HDF5 2.x (headers of $h5py_prefix, run on h5py's libhdf5)"
  VH5_HDF5_DIR="$h5py_prefix" bash scripts/build_h5py_lib.sh target/h5py
  VH5_LIBRARY="$PWD/target/h5py/libvh5_h5py.so" python3 -m pytest -q -rs "${H5PY_TESTS[@]}"
else
  echo "== h5py-bound build for HDF5 2.x: SKIP (no HDF5 2.x prefix: set VH5_HDF5_DIR=<prefix> or run scripts/build_hdf5.sh)"
fi

h5py_prefix=$(bound_prefix 1.14)
if [ "${VH5_H5PY_BOUND:-1}" = 0 ]; then
  :
elif [ -n "$h5py_prefix" ]; then
  echo "== Python tests on the h5py-bound build for HDF5 1.14 (headers of $h5py_prefix, run on h5py 3.12 .. 3.15's libhdf5)"
  VH5_HDF5_DIR="$h5py_prefix" bash scripts/build_h5py_lib.sh --hdf5 1.14 target/h5py
  venv=${VH5_H5PY_1_14_VENV:-$cache/venv-h5py-1.14}
  reqs=$(grep -v -E '^(h5py|ruff|versioned-hdf5)([^a-z0-9_-]|$)' scripts/requirements-test.txt; echo 'h5py>=3.12,<3.16')
  if [ "$(cat "$venv/requirements.txt" 2>/dev/null)" != "$reqs" ] || ! "$venv/bin/python" -c "import h5py" 2>/dev/null; then
    echo "   venv $venv: pip install $(echo "$reqs" | paste -sd" ")"
    rm -rf "$venv"
    python3 -m venv "$venv"
    echo "$reqs" >"$venv/requirements.in"
    "$venv/bin/python" -m pip install -q -r "$venv/requirements.in"
    mv "$venv/requirements.in" "$venv/requirements.txt"   # only once the install succeeded
  fi
  "$venv/bin/python" -c 'import h5py; v = h5py.version.hdf5_version_tuple; print("   h5py", h5py.__version__, "HDF5", h5py.version.hdf5_version); assert v[:2] == (1, 14), v'
  VH5_LIBRARY="$PWD/target/h5py/libvh5_h5py_1_14.so" "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider "${H5PY_TESTS[@]}"
else
  echo "== h5py-bound build for HDF5 1.14: SKIP (no HDF5 1.14 prefix: run scripts/build_hdf5.sh --version 1.14)"
fi
