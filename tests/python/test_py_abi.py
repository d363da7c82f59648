"""The ctypes declarations of vh5 match include/vh5.h and the loaded library.

A C program compiled against the header prints sizeof/offsetof of every field the Python
package declares; they must equal ctypes' numbers. Status names, dtype names and the version
come from the library itself.
"""

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

import vh5  # noqa: E402
from vh5 import _dtypes, _errors, _lib  # noqa: E402

INCLUDE = Path(os.environ.get("VH5_INCLUDE_DIR", REPO / "include"))
HEADER = INCLUDE / "vh5.h"
STRUCTS = {"payload_view": _lib.PayloadView, "vh5_dataset_info": _lib.DatasetInfo, "vh5_array": _lib.Array}


def _header_has(name: str) -> bool:
    return f"}} {name};" in HEADER.read_text() or f"struct {name} {{" in HEADER.read_text()


def test_struct_layouts_match_header(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler on PATH: cannot compile a layout probe against include/vh5.h")
    present = {n: s for n, s in STRUCTS.items() if _header_has(n)}
    if not present:
        pytest.skip("include/vh5.h declares none of the structs yet")
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "vh5.h"', "int main(void) {"]
    for cname, st in present.items():
        lines.append(f'printf("{cname} sizeof %zu\\n", sizeof({cname}));')
        for fname, _ in st._fields_:
            lines.append(f'printf("{cname} {fname} %zu\\n", offsetof({cname}, {fname}));')
    lines += ["return 0;", "}"]
    src = tmp_path / "probe.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "probe"
    r = subprocess.run([cc, "-std=c99", "-I", str(INCLUDE), str(src), "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, f"probe did not compile (a field name differs from the header?):\n{r.stderr}"
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    got = {}
    for line in out:
        if line:
            cname, field, n = line.split()
            got[(cname, field)] = int(n)
    for cname, st in present.items():
        assert got[(cname, "sizeof")] == ctypes.sizeof(st), cname
        for fname, _ftype in st._fields_:
            assert got[(cname, fname)] == getattr(st, fname).offset, f"{cname}.{fname}"
    # and every field of the header struct is declared (sizes equal and no gaps is checked above)


def test_status_names_and_error_classes():
    for status in range(1, 17):
        name = _lib.status_name(status)
        assert name.startswith("VH5_ERR_")
        cls = vh5.error_class(status)
        assert issubclass(cls, vh5.Error) and cls is not vh5.Error
        # class name follows the C name: VH5_ERR_OUT_OF_BOUNDS -> OutOfBoundsError
        words = [w for w in name[len("VH5_ERR_") :].split("_") if w != "ERROR"]
        expected = "".join(w.capitalize() for w in words) + "Error"
        assert cls.__name__.lower() == expected.lower(), (name, cls.__name__)
    assert _lib.status_name(0) == "VH5_OK"
    assert vh5.error_class(99) is vh5.Error
    e = _errors.make_error(6, "VH5_ERR_OUT_OF_BOUNDS", "row 3 axis 1")
    assert isinstance(e, IndexError) and e.status == 6 and "row 3 axis 1" in str(e)
    e = _errors.make_error(16, "VH5_ERR_NO_MEMORY", "chunk [0, 0]: cannot allocate 536870912 bytes")
    assert isinstance(e, vh5.NoMemoryError) and isinstance(e, MemoryError) and isinstance(e, vh5.Error)
    assert _lib.status_name(16) == "VH5_ERR_NO_MEMORY" and _lib.status_name(17) == "VH5_UNKNOWN_STATUS"


def test_status_numbers_come_from_the_library():
    """The package never writes a status number: it raises statuses by name
    (``error("VH5_ERR_DTYPE", ...)``), every name it uses is one the library defines, and the
    error classes cover exactly the library's table (``vh5_status_name``)."""
    import re

    pkg = Path(vh5.__file__).parent
    names = set()
    for f in pkg.rglob("*.py"):
        text = f.read_text()
        assert not re.findall(r"make_error\(\s*\d+", text), f.name
        assert not re.findall(r"\b\d+,\s*#\s*VH5_ERR_", text), f.name
        names |= set(re.findall(r'error\(\s*"(VH5_[A-Z0-9_]+)"', text))
    assert names, "no status raised by name found: the scan is broken"
    table = _errors.status_table()
    assert set(names) <= set(table.values()), set(names) - set(table.values())
    classes = {c.status_name for c in vh5.Error.__subclasses__()}
    assert classes == set(table.values()) - {"VH5_OK"}
    for number, name in table.items():
        if number:
            assert vh5.error_class(number).status_name == name
            assert _errors.error(name, "x").status == number


def test_dtype_codes_match_library():
    L = _lib.lib()
    for code, char in _dtypes.CODE_TO_CHAR.items():
        name = L.vh5_dtype_name(code).decode()
        assert np.dtype(char) == np.dtype(name if name != "bool" else "?"), (code, name)
    assert L.vh5_dtype_name(15).decode() == "opaque" or L.vh5_dtype_name(15)
    assert L.vh5_dtype_name(999) is None
    assert _dtypes.to_numpy(12, 8, 1) == np.dtype(">f8")
    assert _dtypes.to_numpy(6, 1, 2) == np.dtype("u1")
    assert _dtypes.from_numpy(np.dtype(">i4"))[2] == 1 and _dtypes.from_numpy(np.dtype("<i4"))[2] == 0


def test_version_and_library_path():
    assert vh5.library_version() == vh5.__version__
    p = vh5.library_path()
    assert os.path.exists(p)
    if os.environ.get("VH5_LIBRARY"):
        assert os.path.samefile(p, os.environ["VH5_LIBRARY"])


def test_import_does_not_import_h5py():
    """Neither importing vh5 nor loading a linked libvh5 imports h5py (loading the h5py-bound
    build does: it runs on h5py's libhdf5)."""
    load = "" if vh5._lib.lib().h5py_bound else " vh5.library_version();"
    code = f"import sys, vh5, vh5.compat.versioned_hdf5, vh5.compat.pyactivestorage;{load} print('h5py' in sys.modules)"
    env = dict(os.environ)
    if os.environ.get("VH5_TEST_INSTALLED") != "1":
        env["PYTHONPATH"] = str(REPO / "bindings" / "python") + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_missing_library_is_a_clear_import_error(tmp_path):
    code = "import vh5\ntry:\n    vh5.library_version()\nexcept ImportError as e:\n    print('ImportError', e)\n"
    env = dict(os.environ)
    env["VH5_LIBRARY"] = str(tmp_path / "nope.so")
    env["PYTHONPATH"] = str(REPO / "bindings" / "python")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "ImportError" in r.stdout and "nope.so" in r.stdout, r.stdout + r.stderr
