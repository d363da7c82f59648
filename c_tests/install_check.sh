#!/usr/bin/env bash
# Install vh5 into a temporary prefix with scripts/install.sh, move the prefix, and use the
# moved copy like any system library: CMake consumer project (c_tests/consumer) with ctest,
# a pkg-config build (shared and static), soname, exported symbols, the header standalone,
# and version macros. Prints `install_check: N passed, M failed`; exits 1 on any failure.
#
# Usage: c_tests/install_check.sh
# Env:   VH5_CONSUMER_FULL=ON|OFF  build the payload/HDF5 consumers (default: ON when the
#                                  installed vh5.h declares payload_decode_view and
#                                  vh5_read_many_slices, else OFF with a note)
#        VH5_KEEP_TMP=1            keep the temporary directory for inspection
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/vh5-install-check.XXXXXX")
if [ -z "${VH5_KEEP_TMP:-}" ]; then trap 'rm -rf "$TMP"' EXIT; else echo "install_check: keeping $TMP"; fi

pass=0; fail=0; failed=""
LOG="$TMP/check.log"
# check NAME COMMAND...: run COMMAND (output to a log), count and report it.
check() {
  local name=$1; shift
  if "$@" >"$LOG" 2>&1; then
    pass=$((pass + 1)); echo "  ok   $name"
  else
    fail=$((fail + 1)); failed="$failed
    $name"; echo "  FAIL $name"; sed 's/^/       | /' "$LOG" | tail -n 40
  fi
}

pkgid=$(cargo pkgid)
VERSION=${pkgid##*[#@]}
MAJOR=${VERSION%%.*}; rest=${VERSION#*.}; MINOR=${rest%%.*}; PATCH=${rest#*.}
ORIG="$TMP/orig-prefix"
P="$TMP/moved/prefix"   # where the installed tree ends up

echo "== install_check: vh5 $VERSION"
if ! bash scripts/install.sh "$ORIG" >"$TMP/install.log" 2>&1; then
  tail -n 40 "$TMP/install.log"; echo "install_check: 0 passed, 1 failed (scripts/install.sh)"; exit 1
fi
mkdir -p "$TMP/moved" && mv "$ORIG" "$P"

layout() {
  local f
  for f in "lib/libvh5.so.$VERSION" lib/libvh5.a include/vh5.h bin/vh5 lib/pkgconfig/vh5.pc \
           lib/cmake/vh5/vh5Config.cmake lib/cmake/vh5/vh5ConfigVersion.cmake; do
    [ -f "$P/$f" ] && [ ! -L "$P/$f" ] || { echo "missing regular file $f"; return 1; }
  done
  [ "$(readlink "$P/lib/libvh5.so.$MAJOR")" = "libvh5.so.$VERSION" ] || { echo "bad lib/libvh5.so.$MAJOR link"; return 1; }
  [ "$(readlink "$P/lib/libvh5.so")" = "libvh5.so.$MAJOR" ] || { echo "bad lib/libvh5.so link"; return 1; }
  cmp bindings/cpp/vh5.hpp "$P/include/vh5.hpp" || return 1   # the C++ wrapper is always installed
  cmp include/vh5.h "$P/include/vh5.h" || { echo "installed vh5.h differs from include/vh5.h (stale header?)"; return 1; }
}
check "layout: lib/libvh5.so.$VERSION, .so.$MAJOR and .so links, .a, headers, cmake, pkgconfig, bin" layout

relocatable() {  # nothing installed may remember the original prefix
  if grep -rl -- "$ORIG" "$P/lib/cmake" "$P/lib/pkgconfig" "$P/include"; then
    echo "files above contain the install prefix $ORIG: the tree is not relocatable"; return 1
  fi
  # The only run-time path allowed: that of a libhdf5 from HDF5_DIR (build.rs), never the prefix.
  local rp want=""
  rp=$(readelf -d "$P/lib/libvh5.so.$VERSION" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
  [ -n "${HDF5_DIR:-}" ] && want="$HDF5_DIR/lib"
  [ "$rp" = "$want" ] || { echo "libvh5.so has the run-time path '$rp' (expected '$want')"; return 1; }
}
check "relocatable: no absolute install paths in cmake/pkgconfig/header/library (rpath: HDF5_DIR's only)" relocatable

soname() {
  local s
  s=$(readelf -d "$P/lib/libvh5.so.$VERSION" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
  echo "soname: $s"; [ "$s" = "libvh5.so.$MAJOR" ]
}
check "soname is libvh5.so.$MAJOR (readelf -d)" soname

symbols() {
  local all offenders
  all=$(nm -D --defined-only "$P/lib/libvh5.so.$VERSION" | awk '{print $3}' | sort)
  offenders=$(echo "$all" | grep -Ev '^(vh5_|payload_)' || true)
  echo "$(echo "$all" | wc -l) exported symbols"
  [ -z "$offenders" ] || { echo "symbols exported that are not vh5_*/payload_*:"; echo "$offenders"; return 1; }
  for s in vh5_version_string vh5_status_name vh5_last_error_message vh5_dtype_name; do
    echo "$all" | grep -qx "$s" || { echo "missing export $s"; return 1; }
  done
  # Every function the header declares is exported (and nothing undeclared is).
  local declared
  declared=$(grep -Ev '^[[:space:]]*(\*|/\*|//)' "$P/include/vh5.h" |
             grep -Eo '\b(vh5|payload)_[a-z0-9_]+\(' | tr -d '(' | sort -u)
  [ "$declared" = "$all" ] || { echo "header/export mismatch:"; diff <(echo "$declared") <(echo "$all"); return 1; }
}
check "exported dynamic symbols are exactly the vh5_*/payload_* functions of vh5.h (nm -D)" symbols

runtime_deps() {  # every library libvh5.so needs resolves (libhdf5 from the system)
  ldd "$P/lib/libvh5.so.$VERSION"; ! ldd "$P/lib/libvh5.so.$VERSION" | grep -q "not found"
}
check "libvh5.so dependencies resolve (ldd)" runtime_deps

header_standalone() {
  printf '#include <vh5.h>\nint main(void) { return (int)VH5_OK; }\n' >"$TMP/h.c"
  printf '#include <vh5.h>\nint main() { return static_cast<int>(VH5_OK); }\n' >"$TMP/h.cpp"
  cc -std=c99 -Wall -Wextra -Werror -pedantic -I"$P/include" -c "$TMP/h.c" -o "$TMP/h_c.o" &&
  c++ -std=c++11 -Wall -Wextra -Werror -pedantic -I"$P/include" -c "$TMP/h.cpp" -o "$TMP/h_cxx.o" || return 1
  if [ -f "$P/include/vh5.hpp" ]; then
    printf '#include <vh5.hpp>\nint main() { return 0; }\n' >"$TMP/hpp.cpp"
    c++ -std=c++17 -Wall -Wextra -Werror -I"$P/include" -c "$TMP/hpp.cpp" -o "$TMP/hpp.o" || return 1
  fi
}
check "installed vh5.h compiles alone as C99 -pedantic and C++11 (-Wall -Wextra -Werror)" header_standalone

version_macros() {
  cat >"$TMP/v.c" <<'C'
#include <stdio.h>
#include <vh5.h>
int main(void) { printf("%d %d %d %s\n", (int)VH5_VERSION_MAJOR, (int)VH5_VERSION_MINOR, (int)VH5_VERSION_PATCH, VH5_VERSION_STRING); return 0; }
C
  cc -std=c99 -I"$P/include" "$TMP/v.c" -o "$TMP/v" || return 1
  local got; got=$("$TMP/v"); echo "header: $got; Cargo.toml: $VERSION"
  [ "$got" = "$MAJOR $MINOR $PATCH $VERSION" ]
}
check "VH5_VERSION_MAJOR/MINOR/PATCH/STRING match Cargo.toml ($VERSION)" version_macros

# first line vh5's version, second line the libhdf5 it runs with ("libhdf5 1.10.8 (system, ...)")
cli() { local v; v=$("$P/bin/vh5" --version); echo "$v"; [ "$(echo "$v" | sed -n 1p)" = "vh5 $VERSION" ] && echo "$v" | sed -n 2p | grep -q '^libhdf5 [0-9]*\.[0-9]*\.[0-9]* ('; }
check "bin/vh5 --version (vh5 and libhdf5 versions)" cli

# --- CMake consumer project ----------------------------------------------------------------
FULL=${VH5_CONSUMER_FULL:-}
if [ -z "$FULL" ]; then
  if grep -q 'payload_decode_view(' "$P/include/vh5.h" && grep -q 'vh5_read_many_slices(' "$P/include/vh5.h"; then
    FULL=ON
  else
    FULL=OFF
    echo "  note: installed vh5.h does not declare payload_decode_view/vh5_read_many_slices yet:" \
         "consumer built with VH5_CONSUMER_FULL=OFF"
  fi
fi
B="$TMP/consumer-build"
cmake_configure() {
  cmake -S c_tests/consumer -B "$B" -DCMAKE_PREFIX_PATH="$P" -DVH5_CONSUMER_FULL="$FULL" || return 1
  grep -q "^vh5_DIR:PATH=$P/lib/cmake/vh5\$" "$B/CMakeCache.txt" || { grep vh5_DIR "$B/CMakeCache.txt"; return 1; }
}
check "cmake configure: find_package(vh5 0.1 CONFIG REQUIRED) finds the moved prefix (FULL=$FULL)" cmake_configure
check "cmake --build consumer (C99, C++11, static; -Wall -Wextra -Werror)" cmake --build "$B"
check "ctest --output-on-failure (consumer programs, find_package(vh5 1.0) refused)" \
  ctest --test-dir "$B" --output-on-failure
consumer_links_soname() {
  readelf -d "$B/consumer_basic_c" | grep -F "Shared library: [libvh5.so.$MAJOR]" &&
  ! readelf -d "$B/consumer_basic_static" | grep -F "libvh5"
}
check "consumer records DT_NEEDED libvh5.so.$MAJOR; static consumer needs no libvh5.so" consumer_links_soname

# --- pkg-config --------------------------------------------------------------------------
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
pc_version() { local v; v=$(pkg-config --modversion vh5); echo "$v"; [ "$v" = "$VERSION" ]; }
check "pkg-config --modversion vh5" pc_version
pc_shared() {
  local flags; flags=$(pkg-config --cflags --libs vh5) || return 1
  echo "pkg-config --cflags --libs vh5: $flags"
  # shellcheck disable=SC2086
  cc -std=c99 -Wall -Wextra -Werror -pedantic -DVH5_EXPECTED_VERSION="\"$VERSION\"" \
    c_tests/consumer/basic.c -o "$TMP/pc_shared" $flags || return 1
  LD_LIBRARY_PATH="$P/lib" ldd "$TMP/pc_shared" | grep -F "libvh5.so.$MAJOR => $P/lib/libvh5.so.$MAJOR" &&
  LD_LIBRARY_PATH="$P/lib" "$TMP/pc_shared"
}
check "C program built with \$(pkg-config --cflags --libs vh5) runs (LD_LIBRARY_PATH)" pc_shared
pc_static() {
  local flags; flags=$(pkg-config --static --cflags --libs vh5) || return 1
  flags=${flags/-lvh5/-l:libvh5.a}
  echo "static flags: $flags"
  # shellcheck disable=SC2086
  cc -std=c99 -Wall -Wextra -Werror -pedantic -DVH5_EXPECTED_VERSION="\"$VERSION\"" \
    c_tests/consumer/basic.c -o "$TMP/pc_static" $flags || return 1
  ! readelf -d "$TMP/pc_static" | grep -F libvh5 && "$TMP/pc_static"
}
check "C program linked statically with \$(pkg-config --static --libs vh5) (-l:libvh5.a) runs" pc_static

# --- DESTDIR staging -----------------------------------------------------------------------
destdir() {
  DESTDIR="$TMP/stage" bash scripts/install.sh /opt/vh5 || return 1
  diff <(cd "$TMP/stage/opt/vh5" && find . | sort) <(cd "$P" && find . | sort)
}
check "DESTDIR=stage scripts/install.sh /opt/vh5 stages the same tree" destdir

echo "install_check: $pass passed, $fail failed"
[ "$fail" = 0 ] || { echo "failed:$failed" >&2; exit 1; }
