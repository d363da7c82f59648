"""Security: datasets pointing at other files (external raw storage, virtual datasets,
external links), written by h5py, are refused by default (vh5.UnsupportedError naming the
dataset and its target) and read exactly as h5py reads them with ``allow_external=True``."""

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
