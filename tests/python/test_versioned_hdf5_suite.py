"""versioned-hdf5 2.6.0's own tests/test_slicetools.py and tests/test_staged_changes.py (from its
sdist) with every ``read_many_slices`` call routed to ``vh5.compat.versioned_hdf5`` (plugin
``_versioned_route``: versioned-hdf5's modules and the tests' own imports), file locking at
its default. All must pass, and the only calls handed back to versioned-hdf5 are the documented
fallbacks (object and StringDType arrays). With the h5py-bound build (VH5_LIBRARY=
target/h5py/libvh5_h5py.so) vh5 reads the files versioned-hdf5 holds open for writing; with a
linked build those calls fall back ("reopen") and the test says so.

The sdist is fetched once with ``pip download --no-binary versioned-hdf5 --no-deps
versioned-hdf5==2.6.0`` into ``$VH5_VERSIONED_SDIST_DIR`` (default target/versioned-hdf5-sdist;
pip prepares its metadata, which compiles its Cython modules: minutes, once); without network
the test is skipped saying so. The counts go to target/versioned-hdf5-suite.json and stdout.
Each file's Hypothesis test runs 300 examples here instead of 10_000 (the full run:
VH5_VERSIONED_MAX_EXAMPLES=full; tens of minutes).
"""

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from vh5._lib import lib

pytest.importorskip("h5py")
vh = pytest.importorskip("versioned_hdf5")

REPO = Path(__file__).resolve().parents[2]
VERSION = "2.6.0"
SDIST_DIR = Path(os.environ.get("VH5_VERSIONED_SDIST_DIR", REPO / "target" / "versioned-hdf5-sdist"))
FILES = ["tests/test_slicetools.py", "tests/test_staged_changes.py"]
DOCUMENTED = {"object", "stringdtype"}
#: Hypothesis examples per property test in the test command (env VH5_VERSIONED_MAX_EXAMPLES;
#: "full" = versioned-hdf5's own 10_000).
MAX_EXAMPLES = 300


def _sdist() -> Path:
    tgz = SDIST_DIR / f"versioned_hdf5-{VERSION}.tar.gz"
    if tgz.exists():
        return tgz
    SDIST_DIR.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-binary",
        "versioned-hdf5",
        "--no-deps",
        f"versioned-hdf5=={VERSION}",
        "-d",
        str(SDIST_DIR),
    ]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        pytest.skip(f"`{' '.join(cmd[2:])}` did not finish in 30 min")
    if r.returncode != 0 or not tgz.exists():
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        pytest.skip(f"cannot fetch the versioned-hdf5 {VERSION} sdist (offline?): {' | '.join(tail)}")
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
    r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=7200)
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
