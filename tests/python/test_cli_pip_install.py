"""The entry points a pip install gives: ``python -m vh5`` and the ``vh5`` console script run
the packaged Rust tool (vh5/vh5 next to vh5/libvh5.so) with the same output and exit status
as target/release/vh5.

Installs bindings/python (a copy) into a temporary venv made with --system-site-packages (so
numpy/h5py are there) using ``VH5_PREBUILT_DIR`` = the directory of the built binary (the
tests' VH5_CLI, default target/release), so cargo is not run; pip fetches the build
requirements (setuptools, setuptools-rust, wheel) as for any install."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("VH5_CLI", str(REPO / "target" / "release" / "vh5")))
PREBUILT = CLI.parent
if not (CLI.is_file() and (PREBUILT / "libvh5.so").is_file()):
    pytest.skip(f"{PREBUILT} lacks vh5 or libvh5.so (cargo build --release)", allow_module_level=True)
h5py = pytest.importorskip("h5py")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("VH5_LIBRARY", "VH5_CLI", "PYTHONPATH")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pip")
    src = tmp / "src"
    shutil.copytree(
        REPO / "bindings" / "python", src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "dist")
    )
    v = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(v)], check=True, timeout=120)
    r = subprocess.run(
        [str(v / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", str(src)],
        env=_env(VH5_PREBUILT_DIR=str(PREBUILT)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return v


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    p = tmp_path_factory.mktemp("pipdata") / "s.h5"
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("x", data=np.arange(100.0).reshape(10, 10), chunks=(5, 5), compression="gzip")
        f.create_dataset("s", data=1.5)
    return p


def _run(cmd, cwd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120, cwd=cwd, env=_env())


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["read", "--help"],
        ["info", "{h5}"],
        ["info", "--version"],
        ["read", "{h5}", "s"],
        ["read", "{h5}", "x", "--bogus"],
        ["payload", "{h5}"],
    ],
    ids=["help", "read-help", "info", "info-version", "read-scalar", "usage-error", "payload-hdf5"],
)
def test_python_m_vh5_and_vh5_script_match_the_rust_binary(venv, sample, tmp_path, args):
    args = [a.format(h5=sample) for a in args]
    want = _run([CLI, *args], tmp_path)
    for cmd in ([venv / "bin" / "python", "-m", "vh5"], [venv / "bin" / "vh5"]):
        got = _run([*cmd, *args], tmp_path)
        assert got.returncode == want.returncode, (cmd, got.returncode, want.returncode, got.stderr)
        if "read" in args and "s" in args:  # the timing line differs run to run
            strip = lambda t: [ln for ln in t.splitlines() if not ln.startswith("time ")]  # noqa: E731
            assert strip(got.stdout) == strip(want.stdout), (cmd, got.stdout, want.stdout)
        else:
            assert (got.stdout, got.stderr) == (want.stdout, want.stderr), cmd


def test_installed_package_holds_the_tool_next_to_the_library(venv, tmp_path):
    code = "import os, vh5, vh5._cli as c; print(c.binary_path()); print(vh5.library_path()); print(vh5.hdf5_version())"
    r = _run([venv / "bin" / "python", "-c", code], tmp_path)
    assert r.returncode == 0, r.stderr
    exe, lib, version = r.stdout.splitlines()
    assert Path(exe).name == "vh5" and Path(exe).parent == Path(lib).parent and os.access(exe, os.X_OK), r.stdout
    assert str(venv) in exe, exe
    assert version == _run([CLI, "info", "--version"], tmp_path).stdout.splitlines()[1]


def test_prebuilt_dir_relative_path_refused_naming_the_absolute_one(tmp_path):
    """VH5_PREBUILT_DIR=target/release (what the README said) failed with "libvh5.so not
    found" although the file exists: pip runs setup.py from another directory. A relative
    path is refused at once, naming the absolute path meant (the shell's $PWD joined with it)."""
    start, rel = PREBUILT.parent.parent, os.path.join(PREBUILT.parent.name, PREBUILT.name)
    r = subprocess.run(
        [sys.executable, str(REPO / "bindings" / "python" / "setup.py"), "--version"],
        env=_env(VH5_PREBUILT_DIR=rel, PWD=str(start)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    want = f"vh5: VH5_PREBUILT_DIR must be an absolute path (got {rel!r})"
    assert r.returncode == 1 and want in r.stderr and f"VH5_PREBUILT_DIR={start / rel}" in r.stderr, r.stderr
    # where $PWD does not hold it, the advice is the $PWD form
    r = subprocess.run(
        [sys.executable, str(REPO / "bindings" / "python" / "setup.py"), "--version"],
        env=_env(VH5_PREBUILT_DIR="no/such/dir", PWD=str(tmp_path)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and "VH5_PREBUILT_DIR=$PWD/no/such/dir" in r.stderr, r.stderr
