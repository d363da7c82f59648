#!/usr/bin/env bash
# Build a wheel of the Python package that installs without Rust and without any libhdf5 of
# its own: bindings/python/dist/vh5-<version>-py3-none-<platform>.whl, holding the pure-Python
# package, the h5py-bound library vh5/libvh5_h5py.so and the h5py-bound tool vh5/vh5_h5py
# built against HDF5 2.x (h5py >= 3.16) and, when an HDF5 1.14 prefix is found, the same pair
# built against HDF5 1.14 (vh5/libvh5_h5py_1_14.so, vh5/vh5_h5py_1_14: h5py 3.12 .. 3.15; see
# scripts/build_h5py_lib.sh). The Python loader picks the pair of h5py's HDF5 series.
# Installed with pip, it requires h5py (whose libhdf5 both use; h5py >= 3.12 with both pairs,
# >= 3.16 with the 2.x pair only) and numpy; it installs the `vh5` command and `python -m vh5`.
#
# Usage: bash scripts/build_wheel.sh            (prints the wheel's path on its last line)
# Environment:
#   VH5_HDF5_DIR / VH5_HDF5_CACHE   the HDF5 2.x to compile against (scripts/build_h5py_lib.sh)
#   VH5_HDF5_1_14_DIR               the HDF5 1.14 to compile against; default: the newest
#                                   ${VH5_HDF5_CACHE:-~/.cache/vh5}/hdf5-1.14.* (made by
#                                   scripts/build_hdf5.sh --version 1.14); none: the wheel
#                                   holds the 2.x pair only (said on stderr)
#   VH5_WHEEL_PLAT                  the platform tag (e.g. manylinux_2_28_x86_64); by default
#                                   the one `auditwheel show` reports when auditwheel is
#                                   installed, else the plain linux_<arch> tag of the build
#   PYTHON                          the Python that runs pip (default python3)
# pip fetches the build requirements (setuptools, setuptools-rust, wheel) as for any build;
# cargo is not run by pip (VH5_PREBUILT_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
PREBUILT="$ROOT/target/h5py"
DIST="$ROOT/bindings/python/dist"

bash scripts/build_h5py_lib.sh "$PREBUILT"
PAIRS=("")   # file-name suffixes of the h5py-bound pairs to package
rm -f "$PREBUILT"/libvh5_h5py_1_14.* "$PREBUILT"/vh5_h5py_1_14   # never a stale 1.14 pair
h114=${VH5_HDF5_1_14_DIR:-}
if [ -z "$h114" ]; then   # the newest HDF5 1.14 installation in the cache (not its build log)
  while IFS= read -r d; do
    [ -f "$d/include/H5public.h" ] && h114=$d
  done < <(ls -d "${VH5_HDF5_CACHE:-$HOME/.cache/vh5}"/hdf5-1.14.* 2>/dev/null | sort -V)
fi
if [ -n "$h114" ]; then
  VH5_HDF5_DIR=$h114 bash scripts/build_h5py_lib.sh --hdf5 1.14 "$PREBUILT"
  PAIRS+=("_1_14")
else
  echo "[wheel] no HDF5 1.14 prefix (VH5_HDF5_1_14_DIR, or scripts/build_hdf5.sh --version 1.14): the wheel holds the HDF5 2.x build only (h5py >= 3.16)" >&2
fi

TMP=$(mktemp -d -t vh5-wheel.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# The packaged copies lose their debug sections (the release profile keeps line tables:
# ~10 MB each); symbol tables and the dynamic section stay.
mkdir -p "$TMP/prebuilt"
for sfx in "${PAIRS[@]}"; do
  cp "$PREBUILT/libvh5_h5py$sfx.so" "$PREBUILT/vh5_h5py$sfx" "$PREBUILT/libvh5_h5py$sfx.hdf5_version" "$TMP/prebuilt/"
  strip --strip-debug "$TMP/prebuilt/libvh5_h5py$sfx.so" "$TMP/prebuilt/vh5_h5py$sfx"
done
# A clean copy of the package source: no build/, egg-info or native files left in the tree by
# a source install (they would be packaged beside the h5py-bound ones).
mkdir -p "$TMP/src"
tar -C bindings/python --exclude=./build --exclude=./dist --exclude='*.egg-info' --exclude=__pycache__ \
  --exclude='./vh5/libvh5*' --exclude=./vh5/vh5 --exclude='./vh5/vh5_h5py*' -cf - . | tar -C "$TMP/src" -xf -

echo "[wheel] pip wheel (VH5_PREBUILT_DIR: $PREBUILT, debug sections stripped)"
VH5_PREBUILT_DIR="$TMP/prebuilt" "$PY" -m pip wheel -q --no-deps --disable-pip-version-check -w "$TMP/out" "$TMP/src"
WHEEL=$(ls "$TMP"/out/vh5-*.whl)

PLAT=${VH5_WHEEL_PLAT:-}
if [ -z "$PLAT" ] && "$PY" -c "import auditwheel" 2>/dev/null; then
  # "... is consistent with the following platform tag: "manylinux_2_28_x86_64"."
  PLAT=$("$PY" -m auditwheel show "$WHEEL" 2>/dev/null | tr '\n' ' ' | sed -n 's/.*following platform tag: *"\([^"]*\)".*/\1/p')
  [ -n "$PLAT" ] && echo "[wheel] auditwheel: consistent with $PLAT"
fi
if [ -n "$PLAT" ]; then
  # Only the platform tag changes (the wheel holds no external library to graft).
  "$PY" - "$WHEEL" "$PLAT" "$TMP/tagged" <<'EOF'
import base64, hashlib, os, re, sys, zipfile
src, plat, outdir = sys.argv[1:]
name = os.path.basename(src)
m = re.match(r"^(.+)-(py3)-(none)-([^-]+)\.whl$", name)
assert m, name
new = f"{m[1]}-py3-none-{plat}.whl"
os.makedirs(outdir, exist_ok=True)
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(os.path.join(outdir, new), "w", zipfile.ZIP_DEFLATED) as zout:
    record_name = next(n for n in zin.namelist() if n.endswith(".dist-info/RECORD"))
    rows = []
    for info in zin.infolist():
        if info.filename == record_name:
            continue
        data = zin.read(info)
        if info.filename.endswith(".dist-info/WHEEL"):
            data = re.sub(rb"(?m)^Tag: py3-none-.*$", f"Tag: py3-none-{plat}".encode(), data)
        zout.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{info.filename},sha256={digest},{len(data)}")
    rows.append(f"{record_name},,")
    zout.writestr(zin.getinfo(record_name), "\n".join(rows) + "\n")
EOF
  WHEEL=$(ls "$TMP"/tagged/vh5-*.whl)
fi

# What the wheel must hold, and that no file in it asks for a libhdf5.
"$PY" - "$WHEEL" "${PAIRS[@]}" <<'EOF'
import subprocess, sys, tempfile, zipfile
wheel, pairs = sys.argv[1], sys.argv[2:]
with zipfile.ZipFile(wheel) as z, tempfile.TemporaryDirectory() as d:
    names = z.namelist()
    for need in ("vh5/__init__.py", "vh5/_cli.py", "vh5/compat/__init__.py"):
        assert need in names, f"{wheel} lacks {need}"
    for sfx in pairs:
        for need in (f"vh5/libvh5_h5py{sfx}.so", f"vh5/vh5_h5py{sfx}", f"vh5/libvh5_h5py{sfx}.hdf5_version"):
            assert need in names, f"{wheel} lacks {need}"
    for bad in ("vh5/libvh5.so", "vh5/vh5"):
        assert bad not in names, f"{wheel} holds {bad} (a build linked to a libhdf5)"
    for n in names:
        data = z.read(n)
        if data[:4] == b"\x7fELF":
            p = z.extract(n, d)
            dyn = subprocess.run(["readelf", "-d", p], capture_output=True, text=True, check=True).stdout
            assert "libhdf5" not in dyn and "RPATH" not in dyn and "RUNPATH" not in dyn, f"{n}: {dyn}"
    meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    want = "Requires-Dist: h5py>=3.12" if "_1_14" in pairs else "Requires-Dist: h5py>=3.16"
    assert want in meta, (want, meta)
    assert any(line.startswith("vh5 = vh5._cli:main") for line in z.read(next(n for n in names if n.endswith("entry_points.txt"))).decode().splitlines())
EOF

mkdir -p "$DIST"
cp "$WHEEL" "$DIST/"
OUTWHEEL="$DIST/$(basename "$WHEEL")"
echo "[wheel] $(du -k "$OUTWHEEL" | cut -f1) KiB, h5py-bound builds for HDF5 2.x${h114:+ and 1.14}, no libhdf5 inside nor asked for"
echo "$OUTWHEEL"
