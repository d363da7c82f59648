"""Security: datasets pointing at other files (external raw storage, virtual datasets,
external links), written by h5py, are refused by default (vh5.UnsupportedError naming the
dataset and its target) and read exactly as h5py reads them with ``allow_external=True``."""

import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
import vh5

V110 = ("earliest", "v110")


def _read(ds, n):
    out = np.zeros(n, ds.dtype)
    vh5.read_many_slices(
        ds, out, np.zeros((1, 1), np.uint64), np.zeros((1, 1), np.uint64), np.full((1, 1), n, np.uint64)
    )
    return out


@pytest.fixture
def files(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(bytes(range(64)))
    src = tmp_path / "src.h5"
    with h5py.File(src, "w", libver=V110) as f:
        f["data"] = np.arange(10, dtype="<i4") * 7
    main = tmp_path / "main.h5"
    with h5py.File(main, "w", libver=V110) as f:
        f.create_dataset("ext", shape=(16,), dtype="u1", external=[(str(secret), 8, 16)])
        layout = h5py.VirtualLayout(shape=(10,), dtype="<i4")
        layout[:] = h5py.VirtualSource(str(src), "data", shape=(10,))
        f.create_virtual_dataset("vds", layout)
        f["g/lnk"] = h5py.ExternalLink(str(src), "/data")
    return main, secret, src


@pytest.mark.parametrize("name,target", [("ext", "secret.bin"), ("vds", "src.h5"), ("g/lnk", "src.h5")])
def test_external_storage_virtual_and_external_links_refused_by_default(files, name, target):
    main, _, _ = files
    with vh5.File(main) as f:
        with pytest.raises(vh5.UnsupportedError) as e:
            f.dataset(name)
    msg = str(e.value)
    assert target in msg and "allow_external=True" in msg, msg


@pytest.mark.parametrize("name", ["ext", "vds", "g/lnk"])
def test_external_storage_virtual_and_external_links_read_when_allowed(files, name):
    main, _, _ = files
    with h5py.File(main, "r") as h:
        want = h[name][...]
    with vh5.File(main, allow_external=True) as f:
        got = _read(f.dataset(name), want.shape[0])
    np.testing.assert_array_equal(got, want)


def test_external_storage_relative_name_from_another_cwd_names_file_and_rule(tmp_path, monkeypatch):
    """A relative external file name is resolved by libhdf5 (vh5's and h5py's alike) against the
    current working directory. From another directory the read failed with libhdf5's bare
    stack; the message now names the dataset, the HDF5 file, the external file as resolved and
    the rule, and the HDF5_EXTFILE_PREFIX='${ORIGIN}' it suggests reads what h5py reads."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "raw.bin").write_bytes(np.arange(12, dtype="<i4").tobytes())
    monkeypatch.chdir(sub)
    with h5py.File("main.h5", "w", libver=V110) as h:
        h.create_dataset("ext", shape=(12,), dtype="<i4", external=[("raw.bin", 0, 48)])
    with h5py.File("main.h5", "r") as h:
        want = h["ext"][...]
    np.testing.assert_array_equal(want, np.arange(12))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HDF5_EXTFILE_PREFIX", raising=False)
    with h5py.File("sub/main.h5", "r") as h, pytest.raises(OSError):
        h["ext"][...]  # h5py resolves against the working directory too
    with vh5.File("sub/main.h5", allow_external=True) as f, pytest.raises(vh5.HDF5Error) as e:
        f["ext"][()]
    msg = str(e.value)
    for part in (
        "`/ext` in `sub/main.h5`",
        f"`raw.bin` as `{tmp_path / 'raw.bin'}` (no such file)",
        "current working directory",
    ):
        assert part in msg, msg
    assert (
        f"HDF5 file's directory (`{sub}`, which holds `raw.bin`)" in msg and "HDF5_EXTFILE_PREFIX='${ORIGIN}'" in msg
    ), msg
    # libhdf5 2.x reads the variable once (h5py ignores a later os.environ change): children
    code = (
        f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); import conftest; "
        "import test_py_external as t; t._read_both_with_prefix()"
    )
    env = dict(os.environ, HDF5_EXTFILE_PREFIX="${ORIGIN}")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.split() == ["h5py", "ok", "vh5", "ok"], r.stdout + r.stderr
    env["HDF5_EXTFILE_PREFIX"] = "elsewhere"
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert f"as `{tmp_path / 'elsewhere' / 'raw.bin'}`" in r.stdout and "env HDF5_EXTFILE_PREFIX" in r.stdout, (
        r.stdout + r.stderr
    )


def _read_both_with_prefix():
    """(Child process, cwd above sub/main.h5) read /ext with h5py and vh5: "ok" or the message."""
    for name, read in (("h5py", lambda: h5py.File("sub/main.h5", "r")["ext"][...]), ("vh5", _vh5_read_ext)):
        try:
            ok = np.array_equal(read(), np.arange(12))
            print(name, "ok" if ok else "DIFFERENT")
        except Exception as e:  # noqa: BLE001 - printed for the parent
            print(name, e)


def _vh5_read_ext():
    with vh5.File("sub/main.h5", allow_external=True) as f:
        return f["ext"][()]
