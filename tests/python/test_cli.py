"""The `vh5` command-line tool: usage text, error prefixes, memory refusals, output format.

The binary comes from env VH5_CLI (default target/release/vh5); files are written by h5py and
cbor2 (independent of vh5), values checked against numpy.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("VH5_CLI", str(REPO / "target" / "release" / "vh5"))
if not os.path.exists(CLI):
    pytest.skip(f"{CLI} not built (cargo build --release, or set VH5_CLI)", allow_module_level=True)
h5py = pytest.importorskip("h5py")
cbor2 = pytest.importorskip("cbor2")


def run(*args, stdin=None):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, input=stdin, timeout=60)


@pytest.fixture(scope="module")
def tas(tmp_path_factory):
    p = tmp_path_factory.mktemp("cli") / "tas.h5"
    data = np.arange(12 * 64 * 128, dtype="<f8").reshape(12, 64, 128)
    with h5py.File(p, "w") as f:
        f.create_dataset("tas", data=data, chunks=(1, 64, 128))
    return p, data


def test_help_lists_every_readme_command_and_option():
    r = run("--help")
    assert r.returncode == 0 and r.stdout.startswith("usage:"), r.stderr
    section = (REPO / "README.md").read_text().split("## Command-line tool")[1].split("```")[1]
    lines = [ln for ln in section.splitlines() if ln.startswith("vh5 ")]
    assert len(lines) >= 5
    for ln in lines:
        assert f"vh5 {ln.split()[1]}" in r.stdout, ln
        for opt in re.findall(r"--[a-z-]+", ln):
            assert opt in r.stdout, (opt, ln)
    assert "payload --make-samples DIR" in r.stdout and "--values N|all" in r.stdout
    r = run("frobnicate")
    assert r.returncode == 2 and "unknown subcommand" in r.stderr and "usage:" in r.stderr


def test_huge_random_table_is_refused_before_allocating(tas):
    p, _ = tas
    r = run("read", p, "tas", "--random", 100_000_000_000, "--size", 4)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("vh5: VH5_ERR_NO_MEMORY: --random"), r.stderr
    assert "bytes of memory" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    r = run("read", p, "tas", "--random", 2**64 - 1, "--size", 4)
    assert r.returncode == 1 and "VH5_ERR_NO_MEMORY" in r.stderr and "overflows 64 bits" in r.stderr, r.stderr
    # a huge destination from a slice table (dst_start far away) is refused the same way
    table = p.parent / "far.csv"
    table.write_text("0,0,0,1000000000000,0,0,1,1,1\n")
    r = run("read", p, "tas", "--table", table)
    assert r.returncode == 1 and r.stderr.startswith("vh5: VH5_ERR_NO_MEMORY: --table"), r.stderr


def test_size_zero_says_at_least_one(tas):
    p, _ = tas
    r = run("read", p, "tas", "--random", 3, "--size", 0)
    assert r.returncode == 2 and "--size 0: every size must be >= 1" in r.stderr, r.stderr
    assert "does not fit" not in r.stderr
    r = run("read", p, "tas", "--random", 3, "--size", "2,0,2")
    assert r.returncode == 2 and ">= 1" in r.stderr, r.stderr
    r = run("read", p, "tas", "--random", 3)
    assert r.returncode == 2 and "--random needs --size" in r.stderr, r.stderr


def test_random_read_values_and_status_name_prefix(tas, tmp_path):
    p, data = tas
    out = tmp_path / "o.npy"
    r = run("read", p, "tas", "--random", 5, "--size", 4, "--seed", 3, "--save", out, "--show", 5)
    assert r.returncode == 0, r.stderr
    got = np.load(out)
    assert got.shape == (20, 4, 4)
    rows = re.findall(r"row (\d+): src \[(\d+), (\d+), (\d+)\] -> dst \[(\d+), 0, 0\], count \[4, 4, 4\]", r.stdout)
    assert len(rows) == 5
    for i, a, b, c, d in (tuple(map(int, x)) for x in rows):
        assert d == 4 * i
        np.testing.assert_array_equal(got[d : d + 4], data[a : a + 4, b : b + 4, c : c + 4])
    # errors carry the C API's status names (vh5_status_name), not Rust enum names
    r = run("read", p, "nope", "--random", 1, "--size", 1)
    assert r.returncode == 1 and r.stderr.startswith("vh5: VH5_ERR_NOT_FOUND: "), r.stderr
    r = run("info", tmp_path / "missing.h5")
    assert r.returncode == 1 and re.match(r"vh5: VH5_ERR_[A-Z_]+: ", r.stderr), r.stderr
    r = run("make-sample", tmp_path / "s.h5", "--chunk", "0,1")
    assert r.returncode == 1 and r.stderr.startswith("vh5: VH5_ERR_INVALID_ARGUMENT: "), r.stderr


def _reductionist(values, counts):
    v = np.asarray(values, "<f8")
    return cbor2.dumps({"bytes": v.tobytes(), "dtype": "float64", "shape": [v.size], "count": list(counts), "byte_order": "little"})


def test_payload_json_ends_with_newline_and_human_output_grammar(tmp_path):
    one = tmp_path / "one.cbor"
    one.write_bytes(_reductionist([1.5], [0]))
    two = tmp_path / "two.cbor"
    two.write_bytes(_reductionist([1.5, 2.5, 3.5], [0, 0, 4]))
    r = run("payload", "--json", one)
    assert r.returncode == 0 and r.stdout.endswith("}\n") and r.stdout.count("\n") == 1, repr(r.stdout)
    assert json.loads(r.stdout)["count"]["zeros"] == 1
    r = run("payload", "--json", one, two)
    assert r.stdout.endswith("\n") and [json.loads(x)["nelements"] for x in r.stdout.splitlines()] == [1, 3]
    r = run("payload", "--json", stdin="")  # an error report is a JSON line too
    assert r.returncode == 1 and r.stdout.endswith("}\n") and json.loads(r.stdout)["ok"] is False
    r = run("payload", one)
    assert "= 1 element," in r.stdout and "1 element, 1 zero," in r.stdout, r.stdout
    assert "1 zeros" not in r.stdout and "1 elements" not in r.stdout
    r = run("payload", two)
    assert "3 elements, 2 zeros," in r.stdout, r.stdout


@pytest.mark.parametrize("args", [["--h5", "FILE"], ["--h5"], ["x.cbor", "--h5", "FILE"], ["--help"]])
def test_demo_script_usage_errors_exit_2_before_building(args):
    """scripts/demo.sh checks its arguments first: usage and exit 2, no bash 'unbound variable'."""
    r = subprocess.run(["bash", str(REPO / "scripts" / "demo.sh"), *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert "usage: scripts/demo.sh [PAYLOAD_FILE ...] [--h5 FILE DATASET]" in r.stderr
    assert "unbound variable" not in r.stderr and "building" not in r.stdout


def test_payload_summarises_every_array_of_a_document(tmp_path):
    """`vh5 payload` on a document holding several arrays (an xarray to_dict("array")-shaped
    msgpack-numpy message): every array with its path, dtype, shape, byte order, alignment."""
    msgpack = pytest.importorskip("msgpack")
    msgpack_numpy = pytest.importorskip("msgpack_numpy")
    doc = {"coords": {"time": {"data": np.arange(3)}}, "data_vars": {"a b": {"data": np.ones((2, 2), ">f4")}}, "l": [np.zeros(1)]}
    f = tmp_path / "doc.msgpack"
    f.write_bytes(msgpack.packb(doc, default=msgpack_numpy.encode))
    r = run("payload", "--json", f)
    assert r.returncode == 0, r.stdout + r.stderr
    v = json.loads(r.stdout)
    assert v["format"] == "document" and v["document_format"] == "msgpack"
    got = [(a["path"], a["dtype"], a["shape"], a["byte_order"]) for a in v["arrays"]]
    assert got == [("$.coords.time.data", "int64", [3], "little"), ('$.data_vars["a b"].data', "float32", [2, 2], "big"), ("$.l[0]", "float64", [1], "little")]
    r = run("payload", f)
    assert "msgpack document, 16 items, 3 arrays" in r.stdout and "$.l[0]: float64 shape [1]" in r.stdout, r.stdout
    # a bare msgpack float is named as msgpack
    g = tmp_path / "float.msgpack"
    g.write_bytes(msgpack.packb(1.5))
    r = run("payload", g)
    assert r.returncode == 1 and "msgpack float 64" in r.stdout and "CBOR tag 11" not in r.stdout, r.stdout


def test_closed_stdout_pipe_ends_quietly(tmp_path):
    """`vh5 payload --values all FILE | head -2`: the CLI ends by SIGPIPE like other Unix
    tools instead of panicking with "failed printing to stdout: Broken pipe"."""
    samples = tmp_path / "s"
    assert run("payload", "--make-samples", str(samples)).returncode == 0
    f = sorted(samples.glob("sum_f64_100x100*.cbor"))[0]
    p = subprocess.Popen([CLI, "payload", "--values", "all", str(f)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()  # the reader goes away
    err = p.stderr.read().decode()
    rc = p.wait(timeout=60)
    assert "panicked" not in err and rc in (-13, 141), (rc, err[-300:])
