"""The h5py-bound build of libvh5: one libhdf5 per process, h5py's.

A normal libvh5 links its own libhdf5 (the system's, or HDF5 built into it); in a Python
process that also imported h5py there are then two libhdf5 instances, which cannot share ids,
file locks, metadata caches or unflushed data. The *h5py-bound* build
(``libvh5_h5py.so``, made by ``scripts/build_h5py_lib.sh``: compiled against HDF5 2.x headers,
then its ``DT_NEEDED`` entry on libhdf5 removed with ``patchelf``; ``libvh5_h5py_1_14.so`` the
same against HDF5 1.14 headers, for h5py 3.12 .. 3.15) has no libhdf5 of its own:
its HDF5 symbols are resolved when it is loaded, against whatever libhdf5 is already in the
process's global symbol scope. This module puts h5py's there, and nothing else:

1. ``import h5py`` (its extension modules load the libhdf5 of the wheel, e.g.
   ``h5py.libs/libhdf5-<hash>.so.320``, with local visibility);
2. :func:`h5py_libhdf5_path` finds that file among the process's mapped files
   (``/proc/self/maps``; elsewhere, the libraries shipped beside h5py);
3. ``ctypes.CDLL(path, RTLD_GLOBAL | RTLD_NOLOAD)`` promotes the *already loaded* copy to
   global scope (``RTLD_NOLOAD``: never a second copy; failing if it is not loaded);
4. libvh5_h5py is loaded (``RTLD_NOW``: every HDF5 symbol must resolve, or the load fails);
5. :func:`check_versions`: the libhdf5 must be of the HDF5 *series* libvh5 was compiled for
   (``vh5_hdf5_build_version``; :func:`hdf5_series`: the major version from 2.0 on, major and
   minor before, as 1.x minor releases changed the API and ABI), else ImportError naming both.

Which h5py-bound library is loaded when several are installed (the wheel ships one per HDF5
series): :func:`pick` chooses by h5py's runtime HDF5 version
(``h5py.version.hdf5_version_tuple``) and the series in the file name
(:func:`library_series`); none of that series is an ImportError naming every file.

A normal (linked) build is never handed h5py's library (:func:`is_h5py_bound` decides by the
file name): its symbols would bind to the wrong libhdf5.

h5py's libhdf5 is not thread-safe; h5py serialises its calls with its global lock
``h5py._objects.phil``. Every libvh5 function that calls libhdf5 is therefore wrapped
(:func:`with_phil`) to hold ``phil`` for the duration of the call; inside the call vh5's worker
threads still decode chunks in parallel (they call libhdf5 only under vh5's own lock, on behalf
of the thread holding ``phil``). The GIL is released during the call, as for every ctypes call:
other Python threads run, and block only when they call h5py or vh5.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

__all__ = [
    "is_h5py_bound",
    "load",
    "h5py_libhdf5_path",
    "PHIL_FUNCTIONS",
    "with_phil",
    "check_versions",
    "hdf5_series",
    "library_series",
    "pick",
]

#: File names of the h5py-bound build start with this.
BOUND_PREFIX = "libvh5_h5py"

#: libvh5 functions that call libhdf5 (held under h5py's ``phil`` when h5py-bound). The payload
#: decoders, ``vh5_copy_many_slices`` (numpy to numpy), error messages, names, versions of vh5
#: and the thread-count settings never call libhdf5.
PHIL_FUNCTIONS = frozenset(
    {
        "vh5_hdf5_version",
        "vh5_file_open",
        "vh5_dataset_open",
        "vh5_dataset_from_hdf5_id",
        "vh5_dataset_get_info",
        "vh5_close",
        "vh5_group_members",
        "vh5_link_get",
        "vh5_dataset_filter_params",
        "vh5_dataset_mem_type",
        "vh5_read_many_slices",
        "vh5_write_many_slices",
    }
)


def is_h5py_bound(path: str) -> bool:
    """True when ``path`` names the h5py-bound build (its file name starts with
    ``libvh5_h5py``, e.g. ``libvh5_h5py.so``)."""
    return os.path.basename(path).startswith(BOUND_PREFIX)


def hdf5_series(version) -> str:
    """The HDF5 series of ``version`` (a ``(major, minor, ...)`` tuple or a ``"2.0.0"`` string)
    that an h5py-bound build and a libhdf5 must share: ``"2"`` (the major version) from HDF5
    2.0 on, whose minor releases keep the API and ABI; ``"1.14"`` (major and minor) before,
    as every 1.x minor release changed them (``"?"`` when unreadable)."""
    parts = version.split(".") if isinstance(version, str) else [str(x) for x in version]
    if not parts or not parts[0].isdigit():
        return "?"
    if int(parts[0]) >= 2:
        return parts[0]
    return ".".join(parts[:2]) if len(parts) > 1 and parts[1].isdigit() else "?"


def library_series(path: str) -> str:
    """The HDF5 series an h5py-bound library was built for, from its file name (as
    ``scripts/build_h5py_lib.sh`` names it): ``libvh5_h5py.so`` is ``"2"``,
    ``libvh5_h5py_1_14.so`` is ``"1.14"`` (``libvh5_h5py_<major>[_<minor>].so``). ``"?"``
    for another name. :func:`check_versions` checks the library's real build version."""
    name = os.path.basename(path)
    if not name.startswith(BOUND_PREFIX) or not name.endswith(".so"):
        return "?"
    rest = name[len(BOUND_PREFIX) : -len(".so")]
    if rest == "":
        return "2"
    parts = rest.split("_")[1:] if rest.startswith("_") else []
    return hdf5_series(parts) if parts and all(p.isdigit() for p in parts) else "?"


def h5py_hdf5_series(h5py_module) -> str:
    """The HDF5 series of the libhdf5 h5py runs (``h5py.version.hdf5_version_tuple``)."""
    return hdf5_series(_h5py_hdf5_version(h5py_module))


def pick(paths, h5py_module) -> str:
    """Of the h5py-bound libraries ``paths``, the one built for the HDF5 series h5py runs.

    Raises ImportError naming h5py's HDF5 version and its libhdf5 file and every library with
    its series when none matches (vh5 never binds a library to another series)."""
    want = h5py_hdf5_series(h5py_module)
    for p in paths:
        if library_series(p) == want != "?":
            return str(p)
    try:
        hdf5 = h5py_libhdf5_path(h5py_module)
    except ImportError:
        hdf5 = "not found"
    have = ", ".join(f"{p} (HDF5 {library_series(p)}.x)" for p in paths) or "none"
    raise ImportError(
        f"h5py {getattr(h5py_module, '__version__', '?')} runs libhdf5 {_h5py_hdf5_version(h5py_module)} "
        f"({hdf5}), but the h5py-bound libvh5 builds installed are for other HDF5 series: {have}. "
        "Install an h5py whose wheel bundles one of those (HDF5 2.x: h5py >= 3.16; HDF5 1.14: "
        "h5py 3.12 .. 3.15), or a vh5 built for this libhdf5"
    )


def _is_libhdf5(name: str) -> bool:
    lib = ".so" in name or name.endswith(".dylib")
    return lib and name.startswith("libhdf5") and not name.startswith("libhdf5_hl")


def h5py_libhdf5_path(h5py_module) -> str:
    """The file of the libhdf5 h5py loaded (h5py already imported).

    Linux: the mapped file of ``/proc/self/maps`` whose name starts with ``libhdf5`` (not
    ``libhdf5_hl``), preferring one inside h5py's wheel (``h5py.libs``). Elsewhere (no
    ``/proc``): the ``libhdf5*`` shipped beside the h5py package (``h5py.libs``,
    ``h5py/.dylibs``). Raises ImportError when none is found."""
    found = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    p = parts[5].strip()
                    if p.startswith("/") and _is_libhdf5(os.path.basename(p)) and p not in found:
                        found.append(p)
    except OSError:
        pass
    pkg = Path(h5py_module.__file__).resolve().parent
    if not found:
        for d in (pkg.parent / "h5py.libs", pkg / ".dylibs"):
            if d.is_dir():
                found += [str(p) for p in sorted(d.iterdir()) if _is_libhdf5(p.name)]
    if not found:
        raise ImportError(
            f"the h5py-bound libvh5 needs h5py's libhdf5, but none is loaded in this process after "
            f"`import h5py` (h5py {getattr(h5py_module, '__version__', '?')} at {pkg}): is h5py built "
            "against a static libhdf5? Use a normal libvh5 build (VH5_LIBRARY=.../libvh5.so)"
        )
    inside = [p for p in found if "h5py" in p]
    return (inside or found)[0]


def promote(path: str) -> None:
    """Give the already loaded libhdf5 at ``path`` global visibility, without loading a copy."""
    mode = getattr(os, "RTLD_GLOBAL", 0) | getattr(os, "RTLD_NOLOAD", 0)
    try:
        ctypes.CDLL(path, mode=mode)
    except OSError as e:
        raise ImportError(f"cannot promote h5py's libhdf5 {path!r} to global scope: {e}") from None


def _h5py_hdf5_version(h5py_module) -> str:
    try:
        return ".".join(map(str, h5py_module.version.hdf5_version_tuple))
    except AttributeError:  # pragma: no cover - every h5py 3.x has it
        return "?"


def load(path: str):
    """``(ctypes.CDLL of the h5py-bound libvh5 at path, h5py's phil lock)``.

    Raises ImportError (naming h5py's libhdf5 version and file) when h5py is not importable,
    its libhdf5 cannot be found or promoted, or libvh5 cannot bind to it (missing symbols: a
    libhdf5 older than the headers libvh5 was compiled against)."""
    try:
        import h5py
        from h5py._objects import phil
    except ImportError as e:
        raise ImportError(
            f"{path!r} is the h5py-bound build of libvh5 (it has no libhdf5 of its own and runs on "
            f"h5py's), but h5py cannot be imported: {e}. Install h5py, or use a normal libvh5 build"
        ) from None
    hdf5 = h5py_libhdf5_path(h5py)
    promote(hdf5)
    try:
        cdll = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"cannot bind the h5py-bound libvh5 {path!r} to h5py's libhdf5 "
            f"{_h5py_hdf5_version(h5py)} ({hdf5}): {e}. That libvh5 was compiled against other HDF5 "
            "headers (see vh5_hdf5_build_version); use a build made for this h5py's HDF5 series "
            f"({h5py_hdf5_series(h5py)}.x), or a normal libvh5 build"
        ) from None
    check_versions(cdll, path, hdf5, h5py)
    return cdll, phil


def check_versions(cdll, path: str, hdf5: str, h5py_module) -> None:
    """Refuse a libhdf5 of another HDF5 series (:func:`hdf5_series`: major version from 2.0 on,
    major and minor before) than the headers libvh5 was compiled against: raises ImportError
    naming both versions and both files. ``cdll``: the loaded library; ``path``: its file;
    ``hdf5``: h5py's libhdf5 file; ``h5py_module``: the imported h5py."""
    b = [ctypes.c_uint32() for _ in range(3)]
    r = [ctypes.c_uint32() for _ in range(3)]
    cdll.vh5_hdf5_build_version.restype = None
    cdll.vh5_hdf5_build_version(*[ctypes.byref(x) for x in b])
    from h5py._objects import phil

    with phil:
        cdll.vh5_hdf5_version.restype = ctypes.c_int32
        st = cdll.vh5_hdf5_version(*[ctypes.byref(x) for x in r], None)
    built = ".".join(str(x.value) for x in b)
    running = ".".join(str(x.value) for x in r)
    if st != 0:
        running = _h5py_hdf5_version(h5py_module)
    want = hdf5_series(running)
    if st != 0 or want == "?" or hdf5_series(built) != want:
        raise ImportError(
            f"the h5py-bound libvh5 {path!r} was compiled against HDF5 {built} headers, but h5py "
            f"{getattr(h5py_module, '__version__', '?')} runs libhdf5 {running} ({hdf5}): the HDF5 "
            f"series differ ({hdf5_series(built)}.x and {want}.x), so vh5 refuses to call it. Use a "
            f"libvh5 built for HDF5 {want}.x, or a normal libvh5 build"
        )


def with_phil(fn, phil):
    """``fn`` (a ctypes function) called while holding h5py's ``phil`` (reentrant)."""

    def call(*args):
        with phil:
            return fn(*args)

    call.__name__ = getattr(fn, "__name__", "vh5_call")
    call.fn = fn
    return call
