#!/usr/bin/env bash
# Build the HDF5 2.x source that cargo's `static-hdf5` feature compiles (vendored in the
# hdf5-metno-src crate of Cargo.lock), or with `--version 1.14` an HDF5 1.14.6 source, as a
# SHARED library into a cache directory, so vh5 can
# be built and tested against it:
#
#   prefix=$(bash scripts/build_hdf5.sh | tail -n 1)
#   VH5_HDF5_DIR=$prefix bash scripts/test.sh
#
# Prints the install prefix on the last line of stdout (progress goes to stderr). Idempotent:
# when the prefix already holds a build of the same source with the same options, nothing is
# built. The build (about 3 minutes on 2 idle cores) logs to <cache>/hdf5-<version>.log.
#
# Usage: scripts/build_hdf5.sh             build (or reuse) the shared HDF5, print its prefix
#        scripts/build_hdf5.sh --version 1.14
#                                          the same for HDF5 1.14.6 instead: the source
#                                          vendored in the hdf5-metno-src crate 0.9.5 (pinned
#                                          below with its sha256, fetched with cargo), the HDF5
#                                          series h5py 3.12 .. 3.15 wheels bundle (for the
#                                          h5py-bound build of scripts/build_h5py_lib.sh)
#        scripts/build_hdf5.sh --cmake-dir print a directory holding only a cmake >= 3.26 (the
#                                          version HDF5 2.x needs; also what
#                                          `cargo build --features static-hdf5` needs on PATH)
# Env:   VH5_HDF5_CACHE  cache directory (default $HOME/.cache/vh5); the prefix is
#                        $VH5_HDF5_CACHE/hdf5-<version>
#        VH5_HDF5_JOBS   parallel compile jobs (default: the number of CPUs)
# Needs: cargo, a C compiler, zlib and libaec (szip) development files (scripts/setup.sh
# installs them), python3 with venv when the system's cmake is older than 3.26 (Debian 12 has
# 3.25): cmake is then pip-installed into <cache>/cmake-venv.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${VH5_HDF5_CACHE:-$HOME/.cache/vh5}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
log() { echo "[build_hdf5] $*" >&2; }

# cmake_ok CMAKE: whether CMAKE runs and is >= 3.26.
cmake_ok() {
  local v
  v=$("$1" --version 2>/dev/null | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p') || return 1
  [ -n "$v" ] || return 1
  set -- $v
  [ "$1" -gt 3 ] || { [ "$1" = 3 ] && [ "$2" -ge 26 ]; }
}

# cmake_dir: a directory holding only cmake, ctest and cpack (symbolic links) of a cmake >=
# 3.26: the system's, else one pip-installed into a venv in the cache. Only those three: the
# caller puts the directory first on PATH, where the venv's own bin/ (or /usr/bin) would also
# change which python3 the tests run with (CI of 2026-12-02: "No module named pytest").
cmake_dir() {
  local c src
  c=$(command -v cmake || true)
  if [ -n "$c" ] && cmake_ok "$c"; then
    src=$(dirname "$c")
  else
    local venv="$CACHE/cmake-venv"
    if ! cmake_ok "$venv/bin/cmake"; then
      log "cmake >= 3.26 not found (system: $(${c:-false} --version 2>/dev/null | head -n 1 || echo none)): pip install cmake into $venv"
      python3 -m venv "$venv" >&2
      "$venv/bin/python" -m pip install -q 'cmake>=3.26' >&2
      cmake_ok "$venv/bin/cmake" || { log "pip-installed cmake is not >= 3.26"; exit 1; }
    fi
    src="$venv/bin"
  fi
  local bin="$CACHE/cmake-bin"
  mkdir -p "$bin"
  for t in cmake ctest cpack; do
    if [ -e "$src/$t" ]; then ln -sfn "$src/$t" "$bin/$t"; fi
  done
  echo "$bin"
}

if [ "${1:-}" = "--cmake-dir" ]; then cmake_dir; exit 0; fi
SERIES=2
if [ "${1:-}" = "--version" ] && [ $# = 2 ]; then SERIES=$2; shift 2; fi
[ $# = 0 ] || { echo "usage: $0 [--version 2|1.14] | --cmake-dir" >&2; exit 2; }

# HDF5 1.14: the source vendored in an older hdf5-metno-src (0.9.5: HDF5 1.14.6), pinned by
# version and by the sha256 of its .crate. cargo fetches it like any dependency, through a
# throw-away manifest in the cache (and checks the registry's checksum too).
SRC114_CRATE=hdf5-metno-src
SRC114_VERSION=0.9.5
SRC114_SHA256=36b0303729f84fb0f2dc510d28b64cb716fb13e6a139a17e88db329123ecff82

# crate_dir MANIFEST_DIR [ARGS]: the unpacked hdf5-metno-src of that manifest's dependencies.
crate_dir() {
  cargo metadata --format-version 1 --offline --manifest-path "$1/Cargo.toml" "${@:2}" |
    python3 -c 'import json, sys, os
m = json.load(sys.stdin)
print(next(os.path.dirname(p["manifest_path"]) for p in m["packages"] if p["name"] == "hdf5-metno-src"))'
}

case "$SERIES" in
  2)
    # The vendored source: hdf5-metno-src, as locked (cargo fetch downloads every locked crate).
    cargo fetch --locked >&2
    SRC_CRATE=$(crate_dir . --locked --features static-hdf5)
    ;;
  1.14)
    fetch="$CACHE/fetch-$SRC114_CRATE-$SRC114_VERSION"
    mkdir -p "$fetch/src"
    printf '[package]\nname = "vh5-hdf5-source"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[dependencies]\n%s = "=%s"\n' \
      "$SRC114_CRATE" "$SRC114_VERSION" >"$fetch/Cargo.toml"
    : >"$fetch/src/lib.rs"
    cargo fetch --manifest-path "$fetch/Cargo.toml" >&2
    SRC_CRATE=$(crate_dir "$fetch")
    packed=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$SRC114_CRATE-$SRC114_VERSION.crate" | head -n 1)
    sum=$(sha256sum "$packed" | cut -d' ' -f1)
    [ "$sum" = "$SRC114_SHA256" ] || { log "$packed: sha256 $sum, expected $SRC114_SHA256"; exit 1; }
    ;;
  *) echo "$0: --version takes 2 (the locked HDF5 2.x, the default) or 1.14" >&2; exit 2 ;;
esac
SRC="$SRC_CRATE/ext/hdf5"
[ -f "$SRC/CMakeLists.txt" ] || { log "no HDF5 source at $SRC"; exit 1; }
ver() { sed -n "s/^#define H5_VERS_$1 *\([0-9]*\).*/\1/p" "$SRC/src/H5public.h" | head -n 1; }
VERSION="$(ver MAJOR).$(ver MINOR).$(ver RELEASE)"
case "$SERIES/$VERSION" in
  2/2.*|1.14/1.14.*) ;;
  *) log "$SRC holds HDF5 $VERSION, not the $SERIES series asked for"; exit 1 ;;
esac
PREFIX="$CACHE/hdf5-$VERSION"

OPTIONS=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib
  -DBUILD_SHARED_LIBS=ON -DBUILD_STATIC_LIBS=OFF -DBUILD_TESTING=OFF -DHDF5_BUILD_TOOLS=OFF
  -DHDF5_BUILD_EXAMPLES=OFF -DHDF5_BUILD_HL_LIB=OFF -DHDF5_BUILD_CPP_LIB=OFF -DHDF5_BUILD_FORTRAN=OFF
  -DHDF5_BUILD_JAVA=OFF -DHDF5_ENABLE_ZLIB_SUPPORT=ON -DHDF5_ENABLE_SZIP_SUPPORT=ON
  -DHDF5_ENABLE_DEPRECATED_SYMBOLS=ON -DHDF5_NO_PACKAGES=ON)
if [ "$SERIES" = 1.14 ]; then
  # 1.14 spells the zlib option HDF5_ENABLE_Z_LIB_SUPPORT, would build utilities whose sources
  # the crate leaves out, and finds libaec (szip) only through a CMake package config, which
  # Debian's libaec-dev does not ship: libaec_DIR names a minimal one, written into the build
  # directory (below) for the system's libsz/libaec.
  OPTIONS+=(-DHDF5_ENABLE_Z_LIB_SUPPORT=ON -DHDF5_BUILD_UTILS=OFF -Dlibaec_DIR=@BUILD@/libaec-config)
fi
# What the prefix was built from; a different source or option list rebuilds it.
STAMP="source $(basename "$SRC_CRATE"); options ${OPTIONS[*]}"
if [ -f "$PREFIX/.vh5-build" ] && [ "$(cat "$PREFIX/.vh5-build")" = "$STAMP" ] && [ -e "$PREFIX/lib/libhdf5.so" ]; then
  log "HDF5 $VERSION already built in $PREFIX"
  echo "$PREFIX"; exit 0
fi

CMAKE="$(cmake_dir)/cmake"
BUILD=$(mktemp -d "$CACHE/build-$VERSION.XXXXXX")
LOG="$CACHE/hdf5-$VERSION.log"
trap 'rm -rf "$BUILD"' EXIT
OPTIONS=("${OPTIONS[@]//@BUILD@/$BUILD}")
if [ "$SERIES" = 1.14 ]; then
  # What HDF5 1.14's CMakeFilters.cmake uses of a libaec package: libaec_FOUND,
  # SZIP_INCLUDE_DIR and the targets libaec::sz and libaec::aec.
  sz_h=$(echo '#include <szlib.h>' | cc -E -H -x c - 2>&1 >/dev/null | sed -n 's/^\. //p' | head -n 1)
  sz_so=$(cc -print-file-name=libsz.so)
  aec_so=$(cc -print-file-name=libaec.so)
  if [ -f "$sz_h" ] && [ -f "$sz_so" ] && [ -f "$aec_so" ]; then
    mkdir -p "$BUILD/libaec-config"
    inc=$(dirname "$sz_h")
    cat >"$BUILD/libaec-config/libaec-config.cmake" <<CONFIG
set(libaec_FOUND TRUE)
set(SZIP_INCLUDE_DIR "$inc")
add_library(libaec::aec SHARED IMPORTED)
set_target_properties(libaec::aec PROPERTIES IMPORTED_LOCATION "$aec_so" INTERFACE_INCLUDE_DIRECTORIES "$inc")
add_library(libaec::sz SHARED IMPORTED)
set_target_properties(libaec::sz PROPERTIES IMPORTED_LOCATION "$sz_so" INTERFACE_INCLUDE_DIRECTORIES "$inc")
CONFIG
  else
    log "libaec development files not found: HDF5 $VERSION is built without szip (scripts/setup.sh installs libaec-dev)"
  fi
fi
log "building HDF5 $VERSION from $SRC into $PREFIX with $("$CMAKE" --version | head -n 1) (log: $LOG)"
start=$(date +%s)
rm -rf "$PREFIX"
if ! { "$CMAKE" -S "$SRC" -B "$BUILD" "${OPTIONS[@]}" &&
       "$CMAKE" --build "$BUILD" -j "${VH5_HDF5_JOBS:-$(nproc)}" &&
       "$CMAKE" --install "$BUILD"; } >"$LOG" 2>&1; then
  tail -n 40 "$LOG" >&2; log "HDF5 build failed (full log: $LOG)"; rm -rf "$PREFIX"; exit 1
fi
echo "$STAMP" >"$PREFIX/.vh5-build"
log "HDF5 $VERSION built in $(( $(date +%s) - start )) s"
echo "$PREFIX"
