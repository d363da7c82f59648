#!/usr/bin/env bash
# Build vh5 in release mode and install it like any system library.
#
# Usage: scripts/install.sh PREFIX          e.g. scripts/install.sh /usr/local
#        DESTDIR=/tmp/stage scripts/install.sh /usr   (staged install for packaging)
#
# Installs under PREFIX (all paths inside the installed files are relative, so the tree
# can be moved or copied afterwards):
#   lib/libvh5.so.<version>   the shared library (soname libvh5.so.<major>)
#   lib/libvh5.so.<major>     -> libvh5.so.<version>  (what programs load at run time)
#   lib/libvh5.so             -> libvh5.so.<major>    (what -lvh5 finds at link time)
#   lib/libvh5.a              the static library
#   include/vh5.h             C header
#   include/vh5.hpp           header-only C++17 wrapper (copy of bindings/cpp/vh5.hpp)
#   lib/cmake/vh5/            vh5Config.cmake + vh5ConfigVersion.cmake (find_package(vh5))
#   lib/pkgconfig/vh5.pc      pkg-config file
#   bin/vh5                   command-line tool
# Environment: VH5_FEATURES="static-hdf5" builds with cargo features (see docs/INSTALL.md; the
# same variable as pip install ./bindings/python; the old VH5_CARGO_FEATURES is accepted);
# CARGO_TARGET_DIR is honoured. Needs cargo; cmake for the CMake version file.
set -euo pipefail

[ $# -eq 1 ] && [ -n "$1" ] || { echo "usage: $0 PREFIX" >&2; exit 2; }
case "$1" in
  /*) PREFIX=$1 ;;
  *) PREFIX="$PWD/$1" ;;
esac
cd "$(dirname "$0")/.."
DEST="${DESTDIR:-}$PREFIX"

pkgid=$(cargo pkgid)
VERSION=${pkgid##*[#@]}
MAJOR=${VERSION%%.*}
case "$VERSION" in
  [0-9]*.[0-9]*.[0-9]*) ;;
  *) echo "install: cannot read the crate version from 'cargo pkgid' ($pkgid)" >&2; exit 1 ;;
esac
FEATURES=()
if [ -n "${VH5_CARGO_FEATURES:-}" ]; then   # the old name pip's build read
  echo "[install] VH5_CARGO_FEATURES is deprecated: set VH5_FEATURES (read by this script and by pip install ./bindings/python)" >&2
  if [ -n "${VH5_FEATURES:-}" ] && [ "$VH5_FEATURES" != "$VH5_CARGO_FEATURES" ]; then
    echo "[install] VH5_FEATURES=$VH5_FEATURES and VH5_CARGO_FEATURES=$VH5_CARGO_FEATURES disagree; set only VH5_FEATURES" >&2; exit 2
  fi
  VH5_FEATURES=$VH5_CARGO_FEATURES
fi
[ -n "${VH5_FEATURES:-}" ] && FEATURES=(--features "$VH5_FEATURES")

echo "[install] vh5 $VERSION: cargo build --release --locked ${FEATURES[*]}"
JSON=$(mktemp)
trap 'rm -f "$JSON"' EXIT
cargo build --release --locked "${FEATURES[@]}" --message-format=json-render-diagnostics >"$JSON"
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
REL="$TARGET_DIR/release"
for f in libvh5.so libvh5.a vh5; do
  [ -f "$REL/$f" ] || { echo "install: $REL/$f was not built" >&2; exit 1; }
done

# What a program linking libvh5.a statically must add: rustc's list of native libraries
# (std's libs plus libhdf5 when the library uses it) and the search paths the build scripts
# gave for them (e.g. /usr/lib/x86_64-linux-gnu/hdf5/serial). Paths inside the target
# directory (static-hdf5 builds) are skipped: those libraries are bundled into libvh5.a.
NATIVE_LIBS=$(cargo rustc --release --locked "${FEATURES[@]}" --lib --crate-type staticlib \
  -- --print native-static-libs 2>&1 | sed -n 's/.*native-static-libs: //p' | tail -n 1)
[ -n "$NATIVE_LIBS" ] || { echo "install: rustc did not report native-static-libs" >&2; exit 1; }
# Also finds the header cbindgen generated for this very build (vh5's build-script OUT_DIR).
BUILD_INFO=$(python3 - "$JSON" "$TARGET_DIR" <<'PY'
import json, sys
dirs, header = [], ""
for line in open(sys.argv[1]):
    msg = json.loads(line)
    if msg.get("reason") != "build-script-executed":
        continue
    if "/build/vh5-" in msg["out_dir"]:
        header = msg["out_dir"] + "/vh5.h"
    if not msg.get("linked_libs"):
        continue
    for p in msg.get("linked_paths", []):
        p = p.split("=", 1)[1] if "=" in p else p
        if not p.startswith(sys.argv[2]) and p not in dirs:
            dirs.append(p)
print(";".join(dirs))
print(header)
PY
)
LINK_DIRS=$(echo "$BUILD_INFO" | sed -n 1p)
HEADER=$(echo "$BUILD_INFO" | sed -n 2p)
[ -f "$HEADER" ] || { echo "install: generated header not found (build-script out_dir: '$HEADER')" >&2; exit 1; }
PC_LIBS=""
for d in ${LINK_DIRS//;/ }; do PC_LIBS="$PC_LIBS -L$d"; done
# A shared libhdf5 from HDF5_DIR (not the system's, e.g. scripts/build_hdf5.sh's HDF5 2.x):
# libvh5.so and bin/vh5 find it through their run-time path (build.rs); a program linking
# libvh5.a gets the same path (-Wl,-rpath) from pkg-config and CMake.
LINK_OPTIONS=""
case " ${FEATURES[*]} " in *static-hdf5*) ;; *)
  for d in ${LINK_DIRS//;/ }; do
    case "$d" in "${HDF5_DIR:-/nonexistent}"/lib|"${HDF5_DIR:-/nonexistent}"/lib64) LINK_OPTIONS="$LINK_OPTIONS;-Wl,-rpath,$d"; PC_LIBS="$PC_LIBS -Wl,-rpath,$d" ;; esac
  done ;;
esac
LINK_OPTIONS=${LINK_OPTIONS#;}
PC_LIBS="${PC_LIBS# } $NATIVE_LIBS"
CMAKE_LIBS=""
for l in $NATIVE_LIBS; do
  case "$l" in
    -l*) CMAKE_LIBS="$CMAKE_LIBS;${l#-l}" ;;
    *) CMAKE_LIBS="$CMAKE_LIBS;$l" ;;
  esac
done
CMAKE_LIBS=${CMAKE_LIBS#;}

echo "[install] into ${DEST}"
install -d "$DEST/lib" "$DEST/include" "$DEST/bin" "$DEST/lib/cmake/vh5" "$DEST/lib/pkgconfig"
install -m 755 "$REL/libvh5.so" "$DEST/lib/libvh5.so.$VERSION"
ln -sfn "libvh5.so.$VERSION" "$DEST/lib/libvh5.so.$MAJOR"
ln -sfn "libvh5.so.$MAJOR" "$DEST/lib/libvh5.so"
install -m 644 "$REL/libvh5.a" "$DEST/lib/libvh5.a"
install -m 755 "$REL/vh5" "$DEST/bin/vh5"
# The header generated for this very build (identical to include/vh5.h when that is fresh).
install -m 644 "$HEADER" "$DEST/include/vh5.h"
install -m 644 bindings/cpp/vh5.hpp "$DEST/include/vh5.hpp"

subst() {  # subst TEMPLATE OUTPUT: fill @VAR@ placeholders
  sed -e "s|@VH5_VERSION@|$VERSION|g" -e "s|@VH5_MAJOR@|$MAJOR|g" \
      -e "s|@VH5_STATIC_LINK_DIRS@|$LINK_DIRS|g" -e "s|@VH5_STATIC_LINK_LIBS@|$CMAKE_LIBS|g" \
      -e "s|@VH5_STATIC_LINK_OPTIONS@|$LINK_OPTIONS|g" -e "s|@VH5_STATIC_LIBS_PC@|$PC_LIBS|g" "$1" >"$2"
  chmod 644 "$2"
}
subst cmake/vh5.pc.in "$DEST/lib/pkgconfig/vh5.pc"
subst cmake/vh5Config.cmake.in "$DEST/lib/cmake/vh5/vh5Config.cmake"
if command -v cmake >/dev/null; then
  cmake -DVH5_VERSION="$VERSION" -DVH5_SIZEOF_VOID_P="$(( $(getconf LONG_BIT) / 8 ))" \
    -DOUT="$DEST/lib/cmake/vh5/vh5ConfigVersion.cmake" -P cmake/write_version_file.cmake
else
  echo "[install] WARNING: cmake not found: lib/cmake/vh5/vh5ConfigVersion.cmake not written," \
       "so find_package(vh5 <version>) will not work (install cmake and re-run)" >&2
fi

echo "[install] vh5 $VERSION installed in $DEST"
echo "[install]   pkg-config: PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --cflags --libs vh5"
echo "[install]   CMake:      -DCMAKE_PREFIX_PATH=$PREFIX ; find_package(vh5 $MAJOR.$(echo "$VERSION" | cut -d. -f2) CONFIG REQUIRED)"
