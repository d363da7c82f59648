"""Links themselves (``Group.get(name, getlink=True)`` / ``getclass=True``, C
``vh5_link_get``) against h5py on a file holding every kind of link: hard, soft (absolute,
relative, dangling, to a name that is not UTF-8), external (to an existing and a missing
file), in the root and in subgroups, compact and dense groups."""

import ctypes

import h5py
import numpy as np
import pytest
import vh5
from vh5._lib import lib

NAMES = ["d", "g", "g/x", "soft", "dang", "g/rel", "ext", "extmiss", "missing", "d/below", "g/sub/deep", "nonutf"]


@pytest.fixture(scope="module")
def linkfile(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("links")
    with h5py.File(tmp / "b.h5", "w") as g:
        g["t"] = np.arange(3)
    p = tmp / "a.h5"
    with h5py.File(p, "w") as f:
        f["d"] = np.arange(4)
        g = f.create_group("g")
        g["x"] = 1
        sub = g.create_group("sub")
        sub["deep"] = h5py.SoftLink("/g/x")
        f["soft"] = h5py.SoftLink("/d")
        f["dang"] = h5py.SoftLink("/nothing")
        f["g/rel"] = h5py.SoftLink("x")
        f["ext"] = h5py.ExternalLink("b.h5", "/t")
        f["extmiss"] = h5py.ExternalLink("nofile.h5", "/t")
        f.id.links.create_soft(b"nonutf", b"/a\xe9")
        dense = f.create_group("dense")  # > 8 links: a dense group (fractal heap + B-tree v2)
        for i in range(20):
            dense[f"s{i:02d}"] = h5py.SoftLink(f"/target/{i}")
        dense["e"] = h5py.ExternalLink("other.h5", "/in/other")
    return p


def _describe(obj):
    if isinstance(obj, type):
        return obj.__name__
    if isinstance(obj, (h5py.SoftLink, vh5.SoftLink)):
        return ("SoftLink", obj.path)
    if isinstance(obj, (h5py.ExternalLink, vh5.ExternalLink)):
        return ("ExternalLink", obj.filename, obj.path)
    if isinstance(obj, (h5py.HardLink, vh5.HardLink)):
        return "HardLink"
    return obj


@pytest.mark.parametrize("getclass", [False, True])
@pytest.mark.parametrize("name", NAMES + [f"dense/s{i:02d}" for i in (0, 7, 19)] + ["dense/e"])
def test_get_link_equals_h5py(linkfile, name, getclass):
    with h5py.File(linkfile) as h, vh5.File(linkfile) as v:
        want = _describe(h.get(name, "DEFAULT", getlink=True, getclass=getclass))
        if want == ("SoftLink", "b'/a\\xe9'"):
            want = ("SoftLink", b"/a\xe9")  # h5py's str(bytes); vh5 gives the bytes, as for names
        assert _describe(v.get(name, "DEFAULT", getlink=True, getclass=getclass)) == want
        if name.startswith("g/"):  # the same link through its group
            rel = name.removeprefix("g/")
            want = _describe(h["g"].get(rel, "DEFAULT", getlink=True, getclass=getclass))
            assert _describe(v["g"].get(rel, "DEFAULT", getlink=True, getclass=getclass)) == want


@pytest.mark.parametrize("name", ["d", "g", "g/x", "soft", "g/rel", "g/sub/deep", "missing", "d/below", "/"])
def test_get_class_equals_h5py(linkfile, name):
    with h5py.File(linkfile) as h, vh5.File(linkfile) as v:
        want = h.get(name, "DEFAULT", getclass=True)
        got = v.get(name, "DEFAULT", getclass=True)
        assert (got if isinstance(got, str) else got.__name__) == (want if isinstance(want, str) else want.__name__)


def test_get_class_of_an_external_link_follows_it_only_when_allowed(linkfile):
    with vh5.File(linkfile) as v, pytest.raises(vh5.UnsupportedError, match="allow_external"):
        v.get("ext", getclass=True)
    with vh5.File(linkfile, allow_external=True) as v:
        assert v.get("ext", getclass=True) is vh5.Dataset
        # the link itself is read without opening any file, allowed or not
        assert _describe(v.get("extmiss", getlink=True)) == ("ExternalLink", "nofile.h5", "/t")


@pytest.fixture(scope="module")
def brokenext(tmp_path_factory):
    """External links h5py cannot follow (a missing file, a missing object, a file that is
    not HDF5) beside ones it can (to a dataset, to a group)."""
    tmp = tmp_path_factory.mktemp("brokenext")
    with h5py.File(tmp / "b.h5", "w") as g:
        g["t"] = np.arange(3)
        g.create_group("grp")
    (tmp / "text.h5").write_bytes(b"not an HDF5 file\n")
    p = tmp / "a.h5"
    with h5py.File(p, "w") as f:
        f["d"] = np.arange(2)
        f["nofile"] = h5py.ExternalLink("nofile.h5", "/t")
        f["noobject"] = h5py.ExternalLink("b.h5", "/nothing")
        f["nothdf5"] = h5py.ExternalLink("text.h5", "/t")
        f["ok"] = h5py.ExternalLink("b.h5", "/t")
        f["okgroup"] = h5py.ExternalLink("b.h5", "/grp")
    return p


BROKEN = ["nofile", "noobject", "nothdf5"]


def _kind(obj):
    if isinstance(obj, (h5py.Group, vh5.Group)):
        return "Group"
    if isinstance(obj, (h5py.Dataset, vh5.Dataset)):
        return "Dataset"
    return obj  # None or the default


@pytest.mark.parametrize("name", BROKEN + ["ok", "okgroup", "d", "missing"])
def test_get_of_an_external_link_that_cannot_be_followed_gives_the_default_as_h5py(brokenext, name):
    # allow_external: the link is followed, and where h5py cannot open its target, get()
    # gives the default (vh5 raised HDF5Error)
    with h5py.File(brokenext) as h, vh5.File(brokenext, allow_external=True) as v:
        assert _kind(v.get(name)) == _kind(h.get(name))
        assert _kind(v.get(name, "DEFAULT")) == _kind(h.get(name, "DEFAULT"))


@pytest.mark.parametrize("name", BROKEN)
def test_getitem_of_an_external_link_that_cannot_be_followed_raises_key_error_as_h5py(brokenext, name):
    with h5py.File(brokenext) as h, pytest.raises(KeyError):
        h[name]
    with vh5.File(brokenext, allow_external=True) as v, pytest.raises(vh5.NotFoundError) as e:
        v[name]
    assert isinstance(e.value, KeyError)
    # the message names the link, where it points and libhdf5's reason
    assert f"external link '/{name}'" in e.value.message and "cannot be followed" in e.value.message
    assert "libhdf5 error stack" in e.value.message


def test_values_and_items_of_external_links_that_cannot_be_followed_equal_h5py(brokenext):
    with h5py.File(brokenext) as h, vh5.File(brokenext, allow_external=True) as v:
        assert [_kind(x) for x in v.values()] == [_kind(x) for x in h.values()]
        assert [(k, _kind(x)) for k, x in v.items()] == [(k, _kind(x)) for k, x in h.items()]
        assert [n in v for n in BROKEN + ["missing", "d/x"]] == [n in h for n in BROKEN + ["missing", "d/x"]]


def test_external_links_without_allow_external_are_still_refused(brokenext):
    with vh5.File(brokenext) as v:
        for name in BROKEN + ["ok"]:
            with pytest.raises(vh5.UnsupportedError, match="allow_external"):
                v.get(name)


def test_get_link_of_the_root_is_refused_naming_it(linkfile):
    with vh5.File(linkfile) as v, pytest.raises(vh5.InvalidArgumentError, match="names no link"):
        v.get("/", getlink=True)


def _link_get(fid, name, cap=None):
    kind, n = ctypes.c_uint8(0), ctypes.c_size_t(0)
    fn = lib().vh5_link_get
    st = fn(fid, name, ctypes.byref(kind), None, 0, ctypes.byref(n))
    if st or cap == 0:
        return st, kind.value, n.value, b""
    buf = ctypes.create_string_buffer(max(n.value if cap is None else cap, 1))
    st = fn(fid, name, ctypes.byref(kind), buf, len(buf) if cap is None else cap, ctypes.byref(n))
    return st, kind.value, n.value, buf.raw[: n.value]


def test_c_link_get_two_call_protocol_and_statuses(linkfile):
    from vh5._errors import status_number

    with vh5.File(linkfile) as v:
        fid = v.id
        assert _link_get(fid, b"ext") == (0, ord("e"), 8, b"b.h5\0/t\0")
        assert _link_get(fid, b"/g/rel") == (0, ord("s"), 2, b"x\0")
        assert _link_get(fid, b"nonutf") == (0, ord("s"), 4, b"/a\xe9\0")
        assert _link_get(fid, b"d") == (0, ord("h"), 0, b"")
        st, kind, n, _ = _link_get(fid, b"ext", cap=3)
        assert (st, kind, n) == (status_number("VH5_ERR_BUFFER_TOO_SMALL"), ord("e"), 8)
        assert _link_get(fid, b"missing")[0] == status_number("VH5_ERR_NOT_FOUND")
        assert _link_get(fid, b"d/below")[0] == status_number("VH5_ERR_INVALID_ARGUMENT")
        assert _link_get(fid, b"/")[0] == status_number("VH5_ERR_INVALID_ARGUMENT")
        assert _link_get(fid, b"ext/below")[0] == status_number("VH5_ERR_UNSUPPORTED")
        assert _link_get(123456789, b"d")[0] == status_number("VH5_ERR_INVALID_HANDLE")
        kind, n = ctypes.c_uint8(7), ctypes.c_size_t(7)
        fn = lib().vh5_link_get
        assert fn(fid, None, ctypes.byref(kind), None, 0, ctypes.byref(n)) == status_number("VH5_ERR_NULL_ARGUMENT")
        assert (kind.value, n.value) == (0, 0)
        assert fn(fid, b"d", None, None, 0, ctypes.byref(n)) == status_number("VH5_ERR_NULL_ARGUMENT")
        assert fn(fid, b"d", ctypes.byref(kind), None, 5, ctypes.byref(n)) == status_number("VH5_ERR_NULL_ARGUMENT")


def test_membership_and_getitem_of_a_group_ask_the_link_not_a_listing(linkfile, monkeypatch):
    # `name in g` answers from the status of vh5_link_get and g["group"] from the dataset
    # open's, neither by listing a group (vh5_group_members: its cost grows with the group)
    import vh5._files as files

    names = NAMES + ["dense/s07", "dense/e", "dense/nope", "g/sub", "nothing/x"]
    with h5py.File(linkfile) as h, vh5.File(linkfile) as v:
        monkeypatch.setattr(files, "members", lambda *a, **k: pytest.fail("a group was listed"))
        assert [n in v for n in names] == [n in h for n in names]
        assert isinstance(v["g"], vh5.Group) and isinstance(v["g/sub"], vh5.Group)
        assert [n in v["g"] for n in ("x", "rel", "sub/deep", "nope")] == [True, True, True, False]
