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
- ``VH5_PREBUILT_DIR``: a directory holding an already built library and tool, packaged as
  they are (cargo is not run):

  * ``libvh5.so`` and ``vh5`` (e.g. ``target/release`` after ``cargo build --release --locked``;
    used by the tests to install quickly): linked to a libhdf5 of the system, as a source build;
  * or the *h5py-bound* pair ``libvh5_h5py.so`` and ``vh5_h5py`` with ``hdf5_version``
    (``target/h5py``, written by ``scripts/build_h5py_lib.sh``; ``scripts/build_wheel.sh``):
    no libhdf5 of their own; their HDF5 symbols resolve against the libhdf5 that h5py loaded,
    so the wheel requires h5py with that HDF5 major version (``HDF5_H5PY`` below). The HDF5
    version they were compiled against is packaged as ``vh5/libvh5_h5py.hdf5_version``.
"""

import os
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

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
        print("vh5: VH5_CARGO_FEATURES is deprecated; set VH5_FEATURES (the name scripts/install.sh uses)", file=sys.stderr)
        if new is not None and new != old:
            sys.exit(f"vh5: VH5_FEATURES={new!r} and VH5_CARGO_FEATURES={old!r} disagree; set only VH5_FEATURES")
    return [f for f in (new if new is not None else old or "").split(",") if f]


EXE_NAME = "vh5.exe" if sys.platform == "win32" else "vh5"
PREBUILT = os.environ.get("VH5_PREBUILT_DIR")
# The h5py-bound build: the Python loader and the vh5 launcher recognise it by these names.
H5PY_LIB, H5PY_EXE, H5PY_VERSION = "libvh5_h5py.so", "vh5_h5py", "hdf5_version"
# HDF5 major version -> the h5py whose PyPI wheels bundle a libhdf5 of that major version.
HDF5_H5PY = {2: "h5py>=3.16"}
BASE_REQUIRES = ["numpy>=1.22"]


def prebuilt_files():
    """(files to package as {source: name in the package}, install_requires) of VH5_PREBUILT_DIR."""
    if os.path.isfile(os.path.join(PREBUILT, H5PY_LIB)):
        files = {H5PY_LIB: H5PY_LIB, H5PY_EXE: H5PY_EXE, H5PY_VERSION: "libvh5_h5py.hdf5_version"}
        missing = [n for n in files if not os.path.isfile(os.path.join(PREBUILT, n))]
        if missing:
            sys.exit(f"vh5: VH5_PREBUILT_DIR={PREBUILT} holds {H5PY_LIB} but not {', '.join(missing)} (bash scripts/build_h5py_lib.sh writes all three)")
        with open(os.path.join(PREBUILT, H5PY_VERSION)) as f:
            version = f.read().strip()
        major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else None
        if major not in HDF5_H5PY:
            sys.exit(f"vh5: {PREBUILT}/{H5PY_LIB} was built against HDF5 {version!r}; no h5py release bundles that major version")
        return files, BASE_REQUIRES + [HDF5_H5PY[major]]
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
            if name in (EXE_NAME, H5PY_EXE):
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
            RustExtension({"vh5": "vh5.vh5"}, path=CARGO_TOML, binding=Binding.Exec, script=False, features=features, args=["--locked", "--bin", "vh5"]),
        ],
        cmdclass={"build_rust": build_rust_fixed_name, "bdist_wheel": bdist_wheel_any_python},
    )
