"""versioned-hdf5 2.6.0's own tests/test_slicetools.py and tests/test_staged_changes.py (from its
sdist) with every ``read_many_slices`` call routed to ``vh5.compat.versioned_hdf5`` (plugin
``_versioned_route``: versioned-hdf5's modules and the tests' own imports), file locking at
its default. All must pass (their one wall-clock test, ``test_big_O_performance``, runs apart
and passes if one of 3 attempts does), and the only calls handed back to versioned-hdf5 are the documented
fallbacks (object and StringDType arrays). With the h5py-bound build (VH5_LIBRARY=
target/h5py/libvh5_h5py.so) vh5 reads the files versioned-hdf5 holds open for writing; with a
linked build those calls fall back ("reopen") and the test says so.

The sdist is fetched once from PyPI's simple index (sha256 checked, nothing built) into
``$VH5_VERSIONED_SDIST_DIR`` (default target/versioned-hdf5-sdist); without network the test
is skipped saying so. The counts go to target/versioned-hdf5-suite.json and stdout.
Each file's Hypothesis test runs 300 examples here instead of 10_000 (the full run:
VH5_VERSIONED_MAX_EXAMPLES=full; tens of minutes).
"""

import hashlib
import html
import json
import os
import re
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path
from urllib.parse import urljoin

import pytest
from vh5._lib import lib

h5py = pytest.importorskip("h5py")
VERSION = "2.6.0"
vh = pytest.importorskip(
    "versioned_hdf5",
    reason=f"versioned-hdf5 is not installed ({VERSION} requires h5py 3.16, HDF5 2.x; this h5py {h5py.__version__} runs HDF5 {h5py.version.hdf5_version})",
)

REPO = Path(__file__).resolve().parents[2]
SDIST_DIR = Path(os.environ.get("VH5_VERSIONED_SDIST_DIR", REPO / "target" / "versioned-hdf5-sdist"))
FILES = ["tests/test_slicetools.py", "tests/test_staged_changes.py"]
DOCUMENTED = {"object", "stringdtype"}
#: Hypothesis examples per property test in the test command (env VH5_VERSIONED_MAX_EXAMPLES;
#: "full" = versioned-hdf5's own 10_000).
MAX_EXAMPLES = 300


def _sdist() -> Path:
    """The sdist, downloaded once from PyPI's simple index (the link pip itself would use; no
    build: `pip download` would prepare the metadata, which compiles the Cython modules) and
    checked against the sha256 the index gives."""
    tgz = SDIST_DIR / f"versioned_hdf5-{VERSION}.tar.gz"
    if tgz.exists():
        return tgz
    SDIST_DIR.mkdir(parents=True, exist_ok=True)
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/") + "/versioned-hdf5/"
    try:
        page = urllib.request.urlopen(index, timeout=60).read().decode()
        m = re.search(rf'href="([^"]*/{re.escape(tgz.name)})#sha256=([0-9a-f]+)"', page)
        if not m:
            pytest.skip(f"{index} lists no {tgz.name}")
        data = urllib.request.urlopen(urljoin(index, html.unescape(m.group(1))), timeout=300).read()
    except OSError as e:
        pytest.skip(f"cannot fetch the versioned-hdf5 {VERSION} sdist (offline?): {e}")
    if hashlib.sha256(data).hexdigest() != m.group(2):
        pytest.fail(f"{tgz.name}: sha256 differs from the index's {m.group(2)}")
    tmp = tgz.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(tgz)
    return tgz


def _extract(tgz: Path, dest: Path) -> Path:
    pattern = r"^[^/]+/(tests/[^/]+\.py|conftest\.py|pyproject\.toml)$"
    with tarfile.open(tgz) as t:
        t.extractall(dest, members=[m for m in t.getmembers() if re.match(pattern, m.name)], filter="data")
    root = dest / f"versioned_hdf5-{VERSION}"
    n = os.environ.get("VH5_VERSIONED_MAX_EXAMPLES", str(MAX_EXAMPLES))
    if n != "full":
        # Each file's one property test runs `max_examples = 10_000` Hypothesis examples (tens
        # of minutes on a loaded machine): the test command runs fewer; "full" keeps theirs.
        for f in FILES:
            p = root / f
            text, k = re.subn(r"^max_examples = 10_000$", f"max_examples = {int(n)}", p.read_text(), flags=re.M)
            assert k == 1, f"{f}: no `max_examples = 10_000` line to lower"
            p.write_text(text)
    return root


def test_versioned_hdf5_own_tests_through_the_shim(tmp_path):
    if vh.__version__ != VERSION:
        pytest.skip(f"installed versioned-hdf5 is {vh.__version__}, the suite is {VERSION}'s")
    root = _extract(_sdist(), tmp_path)
    report = REPO / "target" / "versioned-hdf5-suite.json"
    report.parent.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_USE_FILE_LOCKING", "VH5_COMPAT_STRICT")}
    env["PYTHONPATH"] = os.pathsep.join(
        [
            str(REPO / "bindings" / "python"),
            str(Path(__file__).parent),
            env.get("PYTHONPATH", ""),
        ]
    )
    env["VH5_ROUTE_REPORT"] = str(report)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "_versioned_route",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(root),
        *FILES,
    ]
    # Their one wall-clock test (`test_big_O_performance`: one call on 5 and on 5 million
    # chunks, within 3x) failed once in a CI rehearsal at 5x (7.0 vs 1.4 ms) under load: it runs
    # apart, passing if one of 3 attempts does (an O(total chunks) cost fails all three).
    timing = f"{FILES[1]}::test_big_O_performance"
    attempts = []
    for _ in range(3):
        t = subprocess.run(
            cmd[: -len(FILES)] + [timing],
            cwd=root,
            env=dict(env, VH5_ROUTE_REPORT=str(report) + ".timing"),
            capture_output=True,
            text=True,
            timeout=600,
        )
        attempts.append((t.stdout.strip().splitlines() or [""])[-1])
        if t.returncode == 0:
            break
    assert t.returncode == 0, f"{timing} failed 3 times: {attempts}\n{t.stdout[-3000:]}"
    r = subprocess.run(cmd + ["--deselect", timing], cwd=root, env=env, capture_output=True, text=True, timeout=7200)
    summary = (r.stdout.strip().splitlines() or [""])[-1]
    assert report.exists(), r.stdout[-3000:] + r.stderr[-3000:]
    counts = json.loads(report.read_text())
    counts["summary"] = summary
    report.write_text(json.dumps(counts))
    print(
        f"\nversioned-hdf5 {VERSION} suite on {counts['hdf5']}: {summary}; shim calls {counts['calls']}, fallbacks {counts['fallback_count']} {counts['fallbacks']}"
    )
    assert r.returncode == 0, r.stdout[-6000:]
    assert counts["replaced"] >= 2, counts  # slicetools and staged_changes
    assert counts["calls"] > 0, counts
    allowed = DOCUMENTED if lib().h5py_bound else DOCUMENTED | {"reopen"}
    extra = {k: v for k, v in counts["fallbacks"].items() if v and k not in allowed}
    assert not extra, f"undocumented fallbacks: {extra}"
