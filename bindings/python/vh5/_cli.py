"""The ``vh5`` command for Python installs: ``python -m vh5 ...`` and the ``vh5`` console
script both run the Rust command-line tool (``src/bin/vh5`` of the repository), which
``pip install`` packages next to the library. Same subcommands, options, output and exit
status as ``target/release/vh5``: the arguments are handed to it unchanged (``os.execv`` on
POSIX: the process becomes the tool).

Two builds of the tool can be packaged:

- ``vh5/vh5`` (a source install, ``pip install ./bindings/python``): linked to a libhdf5 of
  the system; run as it is.
- ``vh5/vh5_h5py`` (the wheel of ``scripts/build_wheel.sh``): *h5py-bound*, it has no libhdf5
  of its own (no ``DT_NEEDED`` entry for it). It is run with ``LD_PRELOAD`` set to the libhdf5
  that h5py loads (found by importing h5py: :func:`vh5._h5pybind.h5py_libhdf5_path`), so its HDF5
  symbols resolve against that library. h5py must be importable, its libhdf5 path free of
  spaces and colons (LD_PRELOAD cannot name it otherwise), and that libhdf5 must have
  the major version the tool was compiled against (``vh5/libvh5_h5py.hdf5_version``); any of
  these failing is a clear message and exit status 127. ``LD_PRELOAD`` is inherited by whatever
  the tool starts (it starts nothing).

The tool is found, in order: env ``VH5_CLI`` (a path; h5py-bound when its file name starts
with ``vh5_h5py``); the copy inside this package (``vh5``, then ``vh5_h5py``); the tool next
to the library named by env ``VH5_LIBRARY`` (a cargo build's ``target/release/vh5``, or
``vh5_h5py`` beside a ``libvh5_h5py*`` library, as ``scripts/build_h5py_lib.sh`` writes them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

from . import _h5pybind

__all__ = ["binary_path", "h5py_bound", "launch_env", "main"]

_EXE = "vh5.exe" if sys.platform == "win32" else "vh5"
#: File-name prefix of the h5py-bound tool (and, with ``lib``, of the h5py-bound library).
H5PY_EXE = "vh5_h5py"
#: Beside the packaged h5py-bound library: the HDF5 version it was compiled against.
H5PY_VERSION_FILE = "libvh5_h5py.hdf5_version"


def binary_path() -> str:
    """Path of the ``vh5`` executable this package runs. Raises FileNotFoundError naming every
    place looked at when there is none."""
    tried = []
    env = os.environ.get("VH5_CLI")
    if env:
        if os.path.isfile(env):
            return env
        tried.append(f"VH5_CLI={env}")
    here = Path(__file__).resolve().parent
    for name in (_EXE, H5PY_EXE):
        if (here / name).is_file():
            return str(here / name)
        tried.append(str(here / name))
    lib = os.environ.get("VH5_LIBRARY")
    if lib:
        name = H5PY_EXE if Path(lib).name.startswith("libvh5_h5py") else _EXE
        beside = Path(lib).resolve().parent / name
        if beside.is_file():
            return str(beside)
        tried.append(str(beside))
    raise FileNotFoundError(
        "the vh5 command-line tool was not found (looked at: " + ", ".join(tried) + "); "
        "install the package with pip (pip install ./bindings/python, or a wheel of "
        "scripts/build_wheel.sh), or build it with cargo build --release and set "
        "VH5_CLI=target/release/vh5"
    )


def h5py_bound(exe: str) -> bool:
    """True when ``exe`` is the h5py-bound build of the tool (file name ``vh5_h5py*``)."""
    return Path(exe).name.startswith(H5PY_EXE)


def _build_hdf5_version(exe: str) -> str | None:
    """The HDF5 version the h5py-bound ``exe`` was compiled against (None when not recorded)."""
    d = Path(exe).resolve().parent
    for name in (H5PY_VERSION_FILE, "hdf5_version"):  # in the package; in scripts/build_h5py_lib.sh's output
        p = d / name
        if p.is_file():
            return p.read_text().strip() or None
    return None


def launch_env(exe: str) -> dict[str, str]:
    """The environment to run ``exe`` in: this one, plus, for the h5py-bound tool,
    ``LD_PRELOAD`` = h5py's libhdf5 (put first when ``LD_PRELOAD`` is already set).

    Raises:
        RuntimeError: the tool is h5py-bound and h5py is missing, its libhdf5 is not found,
            or it has another major version than the one the tool was compiled against.
    """
    env = dict(os.environ)
    if not h5py_bound(exe):
        return env
    try:
        import h5py
    except ImportError as e:
        raise RuntimeError(
            f"{exe} runs inside h5py's libhdf5 (this vh5 install has no libhdf5 of its own), "
            f"but h5py cannot be imported ({e}); install it: python -m pip install 'h5py>=3.16'"
        ) from None
    try:
        hdf5 = _h5pybind.h5py_libhdf5_path(h5py)
    except ImportError as e:
        raise RuntimeError(str(e)) from None
    built = _build_hdf5_version(exe)
    have = h5py.version.hdf5_version
    if built is not None and built.split(".")[0] != have.split(".")[0]:
        raise RuntimeError(
            f"{exe} was compiled against HDF5 {built}, but h5py {h5py.__version__} uses HDF5 {have} "
            f"({hdf5}); install an h5py whose libhdf5 has major version {built.split('.')[0]}"
        )
    if any(c in hdf5 for c in " \t\n:"):
        # LD_PRELOAD is a list separated by spaces and colons: such a path cannot be named in it.
        raise RuntimeError(
            f"h5py's libhdf5 {hdf5!r} has a space or colon in its path, which LD_PRELOAD cannot name; "
            "install h5py in an environment whose path has neither"
        )
    env["LD_PRELOAD"] = hdf5 + (" " + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    return env


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the ``vh5`` tool with ``argv`` (default: ``sys.argv[1:]``); never returns."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        exe = binary_path()
        env = launch_env(exe)
    except (FileNotFoundError, RuntimeError) as e:
        print(f"vh5: {e}", file=sys.stderr)
        sys.exit(127)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execve(exe, [exe, *args], env)
    sys.exit(subprocess.call([exe, *args], env=env))
