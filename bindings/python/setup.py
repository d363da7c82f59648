"""Build hook: compile the vh5 Rust crate (repository root) and ship libvh5 and the ``vh5``
command-line tool inside the package.

The crate is a plain C ABI cdylib loaded with ctypes, so it is built with
``Binding.NoBinding`` and installed under a fixed name (``vh5/libvh5.so``, or ``.dylib`` /
``.dll``) instead of an ABI-tagged extension-module name: the Python code loads it by path,
and the same file works for every Python version. The crate's ``vh5`` binary is installed
as ``vh5/vh5`` (``Binding.Exec``); ``python -m vh5`` and the ``vh5`` console script run it
(``vh5/_cli.py``). The wheel is tagged ``py3-none-<platform>`` for the same reason.

Environment:

- ``VH5_FEATURES`` (comma separated, e.g. ``static-hdf5``): cargo features, the same variable
  as ``scripts/install.sh``. ``VH5_CARGO_FEATURES``, its old name, is still accepted with a
  deprecation message.
- ``VH5_PREBUILT_DIR``: the absolute path of a directory holding an already built library
  and tool, packaged as they are (cargo is not run; a relative path is refused, since pip
  runs this script from another directory):

  * ``libvh5.so`` and ``vh5`` (e.g. ``target/release`` after ``cargo build --release --locked``;
    used by the tests to install quickly): linked to a libhdf5 of the system, as a source build;
  * or the *h5py-bound* builds (``target/h5py``, written by ``scripts/build_h5py_lib.sh``;
    ``scripts/build_wheel.sh``): for each HDF5 series built, the pair
    ``libvh5_h5py<suffix>.so`` and ``vh5_h5py<suffix>`` with ``libvh5_h5py<suffix>.hdf5_version``
    (suffix ``""``: HDF5 2.x, whose version file may also be called ``hdf5_version``;
    ``"_1_14"``: HDF5 1.14). No libhdf5 of their own; their HDF5 symbols resolve against the
    libhdf5 that h5py loaded, so the wheel requires an h5py whose wheels bundle one of those
    HDF5 series (``HDF5_H5PY`` below); the Python loader picks the build of h5py's series.
    The HDF5 version each was compiled against is packaged as
    ``vh5/libvh5_h5py<suffix>.hdf5_version``.
"""

import os
import sys


# Checked before setuptools is imported: a wrong path fails at once, with nothing else in the way.
def prebuilt_dir():
    """VH5_PREBUILT_DIR, which must be absolute: pip runs this script from another directory
    (the package directory, or a temporary copy of it), where a relative path names nothing
    the user meant; refused with the absolute path it most likely meant ($PWD of the shell
    that started pip, when that is known and holds it)."""
    d = os.environ.get("VH5_PREBUILT_DIR")
    if not d or os.path.isabs(d):
        return d
    start = os.environ.get("PWD", "")
    meant = os.path.join(start, d) if os.path.isabs(start) else ""
    hint = f"VH5_PREBUILT_DIR={meant}" if meant and os.path.isdir(meant) else f"VH5_PREBUILT_DIR=$PWD/{d}"
    sys.exit(
        f"vh5: VH5_PREBUILT_DIR must be an absolute path (got {d!r}): pip builds the package in another "
        f"directory, where a relative path does not name your build; give e.g. {hint}"
    )


PREBUILT = prebuilt_dir()

from setuptools import Distribution, setup  # noqa: E402
from setuptools.command.build_py import build_py  # noqa: E402

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
CARGO_TOML = os.path.join(HERE, "..", "..", "Cargo.toml")

if sys.platform == "darwin":
    LIB_NAME = "libvh5.dylib"
elif sys.platform == "win32":
    LIB_NAME = "vh5.dll"
else:
    LIB_NAME = "libvh5.so"


class bdist_wheel_any_python(bdist_wheel):
    """The wheel has no Python extension module: any Python 3, one platform."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


if not os.path.exists(CARGO_TOML) and not os.environ.get("VH5_PREBUILT_DIR"):
    sys.exit(
        f"vh5: the Rust crate was not found at {CARGO_TOML}; install from a checkout of the "
        "repository (pip install ./bindings/python)"
    )


def cargo_features():
    """The cargo features from VH5_FEATURES (or its deprecated name VH5_CARGO_FEATURES)."""
    new, old = os.environ.get("VH5_FEATURES"), os.environ.get("VH5_CARGO_FEATURES")
    if old is not None:
        print(
            "vh5: VH5_CARGO_FEATURES is deprecated; set VH5_FEATURES (the name scripts/install.sh uses)",
            file=sys.stderr,
        )
        if new is not None and new != old:
            sys.exit(f"vh5: VH5_FEATURES={new!r} and VH5_CARGO_FEATURES={old!r} disagree; set only VH5_FEATURES")
    return [f for f in (new if new is not None else old or "").split(",") if f]


EXE_NAME = "vh5.exe" if sys.platform == "win32" else "vh5"

# The h5py-bound builds, one per HDF5 series: the Python loader and the vh5 launcher recognise
# them by these names (file-name suffix -> series).
H5PY_SUFFIXES = {"": "2", "_1_14": "1.14"}
# HDF5 series -> the h5py releases whose PyPI wheels bundle a libhdf5 of that series, as
# (first, first after); None: no upper bound. The ranges are adjacent, so any set of them
# joins into one requirement.
HDF5_H5PY = {"2": ((3, 16), None), "1.14": ((3, 12), (3, 16))}
BASE_REQUIRES = ["numpy>=1.22"]


def _series_of(version):
    """ "2" for HDF5 2.x.y, "1.14" for 1.14.x (the loader's vh5._h5pybind.hdf5_series)."""
    parts = version.split(".")
    if not parts[0].isdigit():
        return None
    return parts[0] if int(parts[0]) >= 2 else ".".join(parts[:2])


def _h5py_requirement(series):
    """The h5py requirement covering the h5py releases of every HDF5 series in ``series``."""
    lo = min(HDF5_H5PY[s][0] for s in series)
    his = [HDF5_H5PY[s][1] for s in series]
    spec = "h5py>={}.{}".format(*lo)
    return spec if None in his else spec + ",<{}.{}".format(*max(his))


def prebuilt_bound_files():
    """({source: name in the package}, [HDF5 series]) of the h5py-bound builds in VH5_PREBUILT_DIR."""
    files, series = {}, []
    for suffix, want in H5PY_SUFFIXES.items():
        lib, exe = f"libvh5_h5py{suffix}.so", f"vh5_h5py{suffix}"
        if not os.path.isfile(os.path.join(PREBUILT, lib)):
            continue
        vfile = f"libvh5_h5py{suffix}.hdf5_version"
        vsrc = vfile if os.path.isfile(os.path.join(PREBUILT, vfile)) or suffix else "hdf5_version"
        missing = [n for n in (exe, vsrc) if not os.path.isfile(os.path.join(PREBUILT, n))]
        if missing:
            sys.exit(
                f"vh5: VH5_PREBUILT_DIR={PREBUILT} holds {lib} but not {', '.join(missing)} (bash scripts/build_h5py_lib.sh writes all three)"
            )
        with open(os.path.join(PREBUILT, vsrc)) as f:
            version = f.read().strip()
        if _series_of(version) != want:
            sys.exit(f"vh5: {PREBUILT}/{lib} was built against HDF5 {version!r}; its name says HDF5 {want}.x")
        files.update({lib: lib, exe: exe, vsrc: vfile})
        series.append(want)
    return files, series


def prebuilt_files():
    """(files to package as {source: name in the package}, install_requires) of VH5_PREBUILT_DIR."""
    bound, series = prebuilt_bound_files()
    if bound:
        return bound, BASE_REQUIRES + [_h5py_requirement(series)]
    files = {LIB_NAME: LIB_NAME, EXE_NAME: EXE_NAME}
    for name in files:
        if not os.path.isfile(os.path.join(PREBUILT, name)):
            sys.exit(f"vh5: VH5_PREBUILT_DIR={PREBUILT}: {name} not found (cargo build --release --locked first)")
    return files, BASE_REQUIRES


class build_py_with_prebuilt(build_py):
    """Copy VH5_PREBUILT_DIR's library and binary into the package instead of running cargo."""

    def run(self):
        super().run()
        for src, name in prebuilt_files()[0].items():
            dst = os.path.join(self.build_lib, "vh5", name)
            self.copy_file(os.path.join(PREBUILT, src), dst)
            if name == EXE_NAME or name.startswith("vh5_h5py"):
                os.chmod(dst, 0o755)


class binary_distribution(Distribution):
    """The package holds native code (a wheel per platform) even when no extension is built."""

    def has_ext_modules(self):
        return True


if PREBUILT:
    setup(
        distclass=binary_distribution,
        install_requires=prebuilt_files()[1],
        cmdclass={"build_py": build_py_with_prebuilt, "bdist_wheel": bdist_wheel_any_python},
    )
else:
    from setuptools_rust import Binding, RustExtension
    from setuptools_rust.build import build_rust

    class build_rust_fixed_name(build_rust):
        """Install the cdylib as vh5/libvh5.so rather than vh5/libvh5.cpython-XY-<plat>.so."""

        def get_dylib_ext_path(self, ext, target_fname):
            path = super().get_dylib_ext_path(ext, target_fname)
            return os.path.join(os.path.dirname(path), LIB_NAME)

    features = cargo_features()
    setup(
        install_requires=BASE_REQUIRES,
        rust_extensions=[
            RustExtension(
                "vh5.libvh5",
                path=CARGO_TOML,
                binding=Binding.NoBinding,
                py_limited_api=False,
                features=features,
                args=["--locked"],
            ),
            # the command-line tool, installed as vh5/vh5 (run by python -m vh5 / the vh5 script)
            RustExtension(
                {"vh5": "vh5.vh5"},
                path=CARGO_TOML,
                binding=Binding.Exec,
                script=False,
                features=features,
                args=["--locked", "--bin", "vh5"],
            ),
        ],
        cmdclass={"build_rust": build_rust_fixed_name, "bdist_wheel": bdist_wheel_any_python},
    )
