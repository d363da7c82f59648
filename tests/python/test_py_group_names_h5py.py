"""Group lookups with unusual names, differential against h5py: ``""`` (h5py: not in the group,
KeyError, ``get`` None; vh5 gave the group itself), a name that is not str or bytes (``5 in f``:
h5py TypeError; vh5 said False), and soft links that loop (``a -> b -> a``, a link to itself,
a loop inside a group, a path through a loop: h5py RuntimeError "too many links"; vh5 said
KeyError "dangling"). Dangling links, ``"."`` and ``"/"`` stay as they were."""

import h5py
import numpy as np
import pytest
import vh5
from _tmpdirs import module_tmp

TMP = module_tmp("vh5_group_names_")


@pytest.fixture(scope="module")
def path():
    p = TMP / "names.h5"
    with h5py.File(p, "w") as f:
        g = f.create_group("g")
        g["x"] = np.arange(3)
        f["a"] = h5py.SoftLink("/b")
        f["b"] = h5py.SoftLink("/a")
        f["self"] = h5py.SoftLink("/self")
        f["dang"] = h5py.SoftLink("/nowhere")
        f["to_g"] = h5py.SoftLink("g")
        g["loop"] = h5py.SoftLink("/g/loop2")
        g["loop2"] = h5py.SoftLink("loop")
        for i in range(20):  # a chain longer than libhdf5's limit of 16 soft links
            f[f"c{i}"] = h5py.SoftLink(f"/c{i + 1}")
        f["c20"] = h5py.SoftLink("/g")
    return p


OPS = {
    "'' in f": lambda f: "" in f,
    "b'' in f": lambda f: b"" in f,
    "'' in g": lambda f: "" in f["g"],
    "f['']": lambda f: f[""],
    "g['']": lambda f: f["g"][""],
    "f.get('')": lambda f: f.get(""),
    "g.get('')": lambda f: f["g"].get("", 7),
    "5 in f": lambda f: 5 in f,
    "None in f": lambda f: None in f,
    "1.5 in g": lambda f: 1.5 in f["g"],
    "f[5]": lambda f: f[5],
    "f.get(5)": lambda f: f.get(5),
    "'.' in f": lambda f: "." in f,
    "'/' in g": lambda f: "/" in f["g"],
    "f['.']": lambda f: f["."],
    "'a' in f": lambda f: "a" in f,
    "f['a']": lambda f: f["a"],
    "f.get('a')": lambda f: f.get("a"),
    "f.get('a', getclass=True)": lambda f: f.get("a", getclass=True),
    "f['self']": lambda f: f["self"],
    "g['loop']": lambda f: f["g"]["loop"],
    "f['g/loop2']": lambda f: f["g/loop2"],
    "f['a/x']": lambda f: f["a/x"],
    "'a/x' in f": lambda f: "a/x" in f,
    "values()": lambda f: list(f.values()),
    "f['c0']": lambda f: f["c0"],
    "f['c10']": lambda f: f["c10"],
    "f['dang']": lambda f: f["dang"],
    "f.get('dang')": lambda f: f.get("dang"),
    "'dang/x' in f": lambda f: "dang/x" in f,
    "'to_g/x' in f": lambda f: "to_g/x" in f,
    "f['to_g/x']": lambda f: f["to_g/x"],
}


def _outcome(fn, f):
    try:
        r = fn(f)
    except (KeyError, TypeError, RuntimeError, ValueError) as e:
        for cls in (KeyError, TypeError, RuntimeError, ValueError):
            if isinstance(e, cls):
                return ("raises", cls)
    if isinstance(r, (bool, int, type(None))):
        return ("value", r)
    if isinstance(r, list):
        return ("list", len(r))
    if isinstance(r, type):
        return ("class", "group" if r.__name__ in ("Group", "File") else r.__name__)
    return ("object", r.name)


@pytest.mark.parametrize("op", list(OPS))
def test_group_names_like_h5py(path, op):
    with h5py.File(path, "r") as f:
        want = _outcome(OPS[op], f)
    with vh5.File(path) as f:
        got = _outcome(OPS[op], f)
    assert got == want


def test_group_names_loop_message(path):
    with vh5.File(path) as f:
        with pytest.raises(vh5.HDF5Error, match="too many links") as e:
            f["a"]
    assert "/a -> /b -> /a" in str(e.value) and str(path) in str(e.value)
