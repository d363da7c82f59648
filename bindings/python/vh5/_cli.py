"""The ``vh5`` command for Python installs: ``python -m vh5 ...`` and the ``vh5`` console
script both run the Rust command-line tool (``src/bin/vh5`` of the repository), which
``pip install`` packages next to the library. Same subcommands, options, output and exit
status as ``target/release/vh5``: the arguments are handed to it unchanged (``os.execv`` on
POSIX: the process becomes the tool).

Two builds of the tool can be packaged:

- ``vh5/vh5`` (a source install, ``pip install ./bindings/python``): linked to a libhdf5 of
  the system; run as it is.
- ``vh5/vh5_h5py`` and ``vh5/vh5_h5py_1_14`` (the wheel of ``scripts/build_wheel.sh``):
  *h5py-bound*, built against HDF5 2.x and 1.14 headers, with no libhdf5 of their own (no
  ``DT_NEEDED`` entry for it). The one for the HDF5 series of h5py's libhdf5 is run
  (:func:`vh5._h5pybind.hdf5_series`), with ``LD_PRELOAD`` set to that libhdf5 (found by
  importing h5py: :func:`vh5._h5pybind.h5py_libhdf5_path`), so its HDF5 symbols resolve against
  that library. h5py must be importable, its libhdf5 path free of spaces and colons
  (LD_PRELOAD cannot name it otherwise), and that libhdf5 must be of the HDF5 series the tool
  was compiled against (``vh5/libvh5_h5py[_1_14].hdf5_version``); any of these failing is a
  clear message and exit status 127. The libhdf5's directory (``h5py.libs``) is put first in
  ``LD_LIBRARY_PATH`` as well: the libhdf5 of h5py 3.12 .. 3.15 wheels has no run path of its
  own, and finds the libraries it needs beside it (``libsz-<hash>.so``, ``libaec-<hash>.so``)
  only through h5py's extension modules, which the tool does not load. Both variables are
  inherited by whatever the tool starts (it starts nothing).

The tool is found, in order: env ``VH5_CLI`` (a path; h5py-bound when its file name starts
with ``vh5_h5py``); the copy inside this package (``vh5``, then the ``vh5_h5py*`` of h5py's
HDF5 series, else the first ``vh5_h5py*``); the tool next to the library named by env
``VH5_LIBRARY`` (a cargo build's ``target/release/vh5``, or ``vh5_h5py<suffix>`` beside a
``libvh5_h5py<suffix>.so`` library, as ``scripts/build_h5py_lib.sh`` writes them).
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
#: Beside the packaged h5py-bound library ``libvh5_h5py<suffix>.so``: the HDF5 version it and
#: the tool ``vh5_h5py<suffix>`` were compiled against, in ``libvh5_h5py<suffix>.hdf5_version``.
H5PY_VERSION_SUFFIX = ".hdf5_version"


def _bound_tool(tools: list[Path]) -> Path:
    """Of the packaged h5py-bound tools, the one built for h5py's HDF5 series (the first one
    when h5py cannot be imported or none matches: :func:`launch_env` then says why)."""
    if len(tools) > 1:
        try:
            import h5py
        except ImportError:
            return tools[0]
        want = _h5pybind.h5py_hdf5_series(h5py)
        for t in tools:
            if _h5pybind.library_series("lib" + t.name + ".so") == want:
                return t
    return tools[0]


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
    if (here / _EXE).is_file():
        return str(here / _EXE)
    tried.append(str(here / _EXE))
    tools = sorted(p for p in here.glob(H5PY_EXE + "*") if p.is_file() and H5PY_VERSION_SUFFIX not in p.name)
    if tools:
        return str(_bound_tool(tools))
    tried.append(str(here / H5PY_EXE) + "*")
    lib = os.environ.get("VH5_LIBRARY")
    if lib:
        stem = Path(lib).name.split(".so")[0]
        name = stem[len("lib") :] if stem.startswith("libvh5_h5py") else _EXE
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
    names = ["lib" + Path(exe).name + H5PY_VERSION_SUFFIX]
    if Path(exe).name == H5PY_EXE:
        names.append("hdf5_version")  # the older name of the 2.x build's file
    for name in names:
        p = d / name
        if p.is_file():
            return p.read_text().strip() or None
    return None


def launch_env(exe: str) -> dict[str, str]:
    """The environment to run ``exe`` in: this one, plus, for the h5py-bound tool,
    ``LD_PRELOAD`` = h5py's libhdf5 and ``LD_LIBRARY_PATH`` = its directory (each put first
    when the variable is already set).

    Raises:
        RuntimeError: the tool is h5py-bound and h5py is missing, its libhdf5 is not found,
            or it is of another HDF5 series than the one the tool was compiled against
            (:func:`vh5._h5pybind.hdf5_series`).
    """
    env = dict(os.environ)
    if not h5py_bound(exe):
        return env
    try:
        import h5py
    except ImportError as e:
        raise RuntimeError(
            f"{exe} runs inside h5py's libhdf5 (this vh5 install has no libhdf5 of its own), "
            f"but h5py cannot be imported ({e}); install it: python -m pip install h5py"
        ) from None
    try:
        hdf5 = _h5pybind.h5py_libhdf5_path(h5py)
    except ImportError as e:
        raise RuntimeError(str(e)) from None
    built = _build_hdf5_version(exe)
    have = h5py.version.hdf5_version
    if built is not None and _h5pybind.hdf5_series(built) != _h5pybind.hdf5_series(have):
        raise RuntimeError(
            f"{exe} was compiled against HDF5 {built}, but h5py {h5py.__version__} uses HDF5 {have} "
            f"({hdf5}); install an h5py whose libhdf5 is HDF5 {_h5pybind.hdf5_series(built)}.x"
        )
    if any(c in hdf5 for c in " \t\n:"):
        # LD_PRELOAD is a list separated by spaces and colons: such a path cannot be named in it.
        raise RuntimeError(
            f"h5py's libhdf5 {hdf5!r} has a space or colon in its path, which LD_PRELOAD cannot name; "
            "install h5py in an environment whose path has neither"
        )
    env["LD_PRELOAD"] = hdf5 + (" " + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    libs = os.path.dirname(hdf5)
    env["LD_LIBRARY_PATH"] = libs + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
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
