#!/usr/bin/env bash
# Build the "h5py-bound" libvh5 and vh5 command-line tool: compiled against the headers of the
# HDF5 series an h5py wheel bundles (2.x: h5py >= 3.16; 1.14: h5py 3.12 .. 3.15), then
# stripped of their link-time dependency on libhdf5, so that their HDF5 symbols resolve at
# load time against the libhdf5 that h5py loaded (one libhdf5 per process; see
# docs/ARCHITECTURE.md and bindings/python/vh5/_lib.py).
#
# Usage: bash scripts/build_h5py_lib.sh [--hdf5 2|1.14] [OUTDIR]   (default OUTDIR: target/h5py)
# Writes, with SUFFIX "" for HDF5 2.x and "_1_14" for HDF5 1.14 (so both builds can lie side
# by side and the Python loader picks the one of h5py's HDF5 series by its file name):
#   OUTDIR/libvh5_h5py$SUFFIX.so  the library; the Python loader recognises an h5py-bound
#                          build by its file name (basename starting with libvh5_h5py) and
#                          promotes h5py's libhdf5 to global scope before loading it
#   OUTDIR/vh5_h5py$SUFFIX the vh5 tool; run it with LD_PRELOAD=<h5py's libhdf5> (the `vh5`
#                          command and `python -m vh5` of the wheel do, see vh5/_cli.py)
#   OUTDIR/libvh5_h5py$SUFFIX.hdf5_version
#                          the HDF5 version the two were compiled against ("2.2.0", "1.14.6");
#                          for 2.x also as OUTDIR/hdf5_version (its older name)
# Neither file has a DT_NEEDED entry for libhdf5 nor an RPATH/RUNPATH; both list the H5*
# symbols as undefined (checked below).
#
# The HDF5 installation (headers + shared library, only used at build time) is, in order:
#   $VH5_HDF5_DIR                                    a prefix (include/, lib/libhdf5.so); its
#                                                    version must be of the --hdf5 series
#                                                    when that is given
#   ${VH5_HDF5_CACHE:-$HOME/.cache/vh5}/hdf5-<series>.*
#                                                    what scripts/build_hdf5.sh [--version
#                                                    1.14] installs (the newest there; series
#                                                    2 without --hdf5)
# Any other HDF5 series is refused: no h5py wheel bundles it.
# Cargo builds in ${VH5_H5PY_TARGET_DIR:-target/hdf5-<series>} (target/hdf5-2,
# target/hdf5-1.14): kept apart from target/release (which links the system libhdf5), and the
# very build of `VH5_HDF5_DIR=<prefix> bash scripts/test.sh` (same target dir, same
# HDF5_DIR), so the test command against that HDF5 compiles vh5 once. Needs cargo, patchelf
# and readelf/nm (binutils).
set -euo pipefail
cd "$(dirname "$0")/.."
SERIES=
if [ "${1:-}" = "--hdf5" ]; then SERIES=${2:-}; shift 2 || true; fi
case "$SERIES" in ""|2|1.14) ;; *) echo "build_h5py_lib: --hdf5 takes 2 or 1.14" >&2; exit 2 ;; esac
OUT=${1:-target/h5py}

die() { echo "build_h5py_lib: $*" >&2; exit 1; }

hdf5_version_of() {  # PREFIX -> "2.2.0" from its H5public.h ("" when unreadable)
  local h="$1/include/H5public.h" maj min rel
  [ -f "$h" ] || return 0
  maj=$(sed -n 's/^#define H5_VERS_MAJOR[[:space:]]*\([0-9]*\).*/\1/p' "$h")
  min=$(sed -n 's/^#define H5_VERS_MINOR[[:space:]]*\([0-9]*\).*/\1/p' "$h")
  rel=$(sed -n 's/^#define H5_VERS_RELEASE[[:space:]]*\([0-9]*\).*/\1/p' "$h")
  [ -n "$maj" ] && [ -n "$min" ] && [ -n "$rel" ] && echo "$maj.$min.$rel"
  return 0
}

find_prefix() {
  if [ -n "${VH5_HDF5_DIR:-}" ]; then
    echo "$VH5_HDF5_DIR"
    return
  fi
  local cache=${VH5_HDF5_CACHE:-$HOME/.cache/vh5} d best="" series=${SERIES:-2}
  # Newest last: the glob sorts by name, which orders 2.10 before 2.2; sort -V does not.
  while IFS= read -r d; do
    [ -f "$d/include/H5public.h" ] && ls "$d"/lib/libhdf5.so >/dev/null 2>&1 && best=$d
  done < <(ls -d "$cache"/hdf5-"$series".* 2>/dev/null | sort -V)
  local how="scripts/build_hdf5.sh"
  [ "$series" = 2 ] || how="scripts/build_hdf5.sh --version $series"
  [ -n "$best" ] || die "no HDF5 $series.x found: set VH5_HDF5_DIR=<prefix of a shared HDF5 $series.x build> or run $how (installs into $cache/hdf5-<version>)"
  echo "$best"
}

command -v patchelf >/dev/null || die "patchelf not found (apt-get install patchelf; scripts/setup.sh installs it)"
command -v readelf >/dev/null && command -v nm >/dev/null || die "readelf/nm not found (apt-get install binutils)"

PREFIX=$(find_prefix)
[ -d "$PREFIX" ] || die "$PREFIX is not a directory"
PREFIX=$(cd "$PREFIX" && pwd)   # as scripts/test.sh spells it: HDF5_DIR is part of cargo's build key
VERSION=$(hdf5_version_of "$PREFIX")
[ -n "$VERSION" ] || die "$PREFIX/include/H5public.h not found or unreadable: not an HDF5 installation"
# The series (what the loader matches against h5py's libhdf5) and the file-name suffix.
case "$VERSION" in
  2.*) HAVE=2; SUFFIX= ;;
  1.14.*) HAVE=1.14; SUFFIX=_1_14 ;;
  *) die "$PREFIX holds HDF5 $VERSION; the h5py-bound build is made against HDF5 2.x or 1.14 (the libhdf5 series h5py's wheels bundle)" ;;
esac
[ -z "$SERIES" ] || [ "$SERIES" = "$HAVE" ] || die "--hdf5 $SERIES, but $PREFIX (VH5_HDF5_DIR) holds HDF5 $VERSION"

TARGET_DIR=${VH5_H5PY_TARGET_DIR:-$PWD/target/hdf5-$HAVE}
echo "[h5py-lib] cargo build --release --locked against HDF5 $VERSION at $PREFIX (target dir $TARGET_DIR)"
HDF5_DIR=$PREFIX cargo build --release --locked --target-dir "$TARGET_DIR" --lib --bin vh5

mkdir -p "$OUT"
LIB="$OUT/libvh5_h5py$SUFFIX.so"
EXE="$OUT/vh5_h5py$SUFFIX"
rm -f "$LIB" "$EXE"
cp "$TARGET_DIR/release/libvh5.so" "$LIB"
cp "$TARGET_DIR/release/vh5" "$EXE"
chmod 0755 "$LIB" "$EXE"

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
for f in "$LIB" "$EXE"; do
  for n in $(needed "$f" | grep '^libhdf5' || true); do
    patchelf --remove-needed "$n" "$f"
  done
  # The build may record the HDF5 prefix as a run path: meaningless on the user's machine.
  patchelf --remove-rpath "$f"
done
# The library's own name (was libvh5.so.<major>): a process may hold a linked libvh5 too.
patchelf --set-soname "libvh5_h5py$SUFFIX.so" "$LIB"

for f in "$LIB" "$EXE"; do
  if readelf -d "$f" | grep -Ei '\((NEEDED|RPATH|RUNPATH)\).*(hdf5|'"$PREFIX"')'; then
    die "$f still names libhdf5 or $PREFIX in its dynamic section"
  fi
  undefined=$(nm -D --undefined-only "$f")
  grep -q ' H5Fopen$' <<<"$undefined" || die "$f does not list H5Fopen as undefined: not an HDF5-using build?"
done
echo "$VERSION" >"$OUT/libvh5_h5py$SUFFIX.hdf5_version"
[ -n "$SUFFIX" ] || echo "$VERSION" >"$OUT/hdf5_version"
echo "[h5py-lib] $LIB and $EXE: no libhdf5 in DT_NEEDED, $(nm -D --undefined-only "$LIB" | grep -c ' H5') undefined H5 symbols (HDF5 $VERSION headers)"
