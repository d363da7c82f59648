"""Build hook: compile the vh5 Rust crate (repository root) and ship libvh5 inside the package.

The crate is a plain C ABI cdylib loaded with ctypes, so it is built with
``Binding.NoBinding`` and installed under a fixed name (``vh5/libvh5.so``, or ``.dylib`` /
``.dll``) instead of an ABI-tagged extension-module name: the Python code loads it by path,
and the same file works for every Python version. The wheel is tagged ``py3-none-<platform>``
for the same reason. Set ``VH5_CARGO_FEATURES`` (comma separated, e.g. ``static-hdf5``) to
pass crate features.
"""

import os
import sys

from setuptools import setup
from setuptools_rust import Binding, RustExtension
from setuptools_rust.build import build_rust

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


class build_rust_fixed_name(build_rust):
    """Install the cdylib as vh5/libvh5.so rather than vh5/libvh5.cpython-XY-<plat>.so."""

    def get_dylib_ext_path(self, ext, target_fname):
        path = super().get_dylib_ext_path(ext, target_fname)
        return os.path.join(os.path.dirname(path), LIB_NAME)


class bdist_wheel_any_python(bdist_wheel):
    """The wheel has no Python extension module: any Python 3, one platform."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


if not os.path.exists(CARGO_TOML):
    sys.exit(
        f"vh5: the Rust crate was not found at {CARGO_TOML}; install from a checkout of the "
        "repository (pip install ./bindings/python)"
    )

features = [f for f in os.environ.get("VH5_CARGO_FEATURES", "").split(",") if f]

setup(
    rust_extensions=[
        RustExtension(
            "vh5.libvh5",
            path=CARGO_TOML,
            binding=Binding.NoBinding,
            py_limited_api=False,
            features=features,
            args=["--locked"],
        )
    ],
    cmdclass={"build_rust": build_rust_fixed_name, "bdist_wheel": bdist_wheel_any_python},
)
