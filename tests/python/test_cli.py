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


SUBCOMMANDS = ["payload", "info", "read", "make-sample"]


def _readme_cli_section():
    text = (REPO / "README.md").read_text().split("## Command-line tool")[1].split("\n## ")[0]
    return text


def _options(text):
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text)) - {"--help"}


def test_help_lists_every_readme_command_and_option():
    r = run("--help")
    assert r.returncode == 0 and r.stdout.startswith("usage:"), r.stderr
    section = _readme_cli_section().split("```")[1]
    lines = [ln for ln in section.splitlines() if ln.startswith("vh5 ")]
    assert len(lines) >= 5
    for ln in lines:
        assert f"vh5 {ln.split()[1]}" in r.stdout, ln
        for opt in re.findall(r"--[a-z-]+", ln):
            assert opt in r.stdout, (opt, ln)
    assert "payload --make-samples DIR" in r.stdout and "--values N|all" in r.stdout
    r = run("frobnicate")
    assert r.returncode == 2 and "unknown subcommand" in r.stderr and "usage:" in r.stderr


@pytest.mark.parametrize("sub", SUBCOMMANDS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_every_subcommand_help_prints_to_stdout_and_exits_0(sub, flag):
    r = run(sub, flag)
    assert r.returncode == 0 and r.stdout.startswith(f"usage: vh5 {sub}") and r.stderr == "", (
        r.returncode,
        r.stdout[:200],
        r.stderr,
    )
    # an unknown option is still a usage error: exit 2, usage on stderr
    r = run(sub, "--no-such-option", "x")
    assert r.returncode == 2 and "usage: vh5" in r.stderr and r.stdout == "", (r.returncode, r.stdout, r.stderr)


def test_readme_cli_section_matches_every_subcommand_help():
    """Every option of each subcommand's --help is in the README's CLI section, and every
    option the section gives a subcommand is in that subcommand's --help."""
    section = _readme_cli_section()
    usage = section.split("```")[1]
    for sub in SUBCOMMANDS:
        helptext = run(sub, "--help").stdout
        missing = _options(helptext) - _options(section)
        assert not missing, (sub, missing)
        readme_opts = set()
        for ln in usage.splitlines():
            if ln.startswith(f"vh5 {sub} "):
                readme_opts |= _options(ln.split("   ")[0])
        assert readme_opts and readme_opts <= _options(helptext), (sub, readme_opts - _options(helptext))
    for word in ["--seed", "--show", "--values all", "--shape", "--chunk", "--allow-external", "--version"]:
        assert word in section, word


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
    return cbor2.dumps(
        {"bytes": v.tobytes(), "dtype": "float64", "shape": [v.size], "count": list(counts), "byte_order": "little"}
    )


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
    doc = {
        "coords": {"time": {"data": np.arange(3)}},
        "data_vars": {"a b": {"data": np.ones((2, 2), ">f4")}},
        "l": [np.zeros(1)],
    }
    f = tmp_path / "doc.msgpack"
    f.write_bytes(msgpack.packb(doc, default=msgpack_numpy.encode))
    r = run("payload", "--json", f)
    assert r.returncode == 0, r.stdout + r.stderr
    v = json.loads(r.stdout)
    assert v["format"] == "document" and v["document_format"] == "msgpack"
    got = [(a["path"], a["dtype"], a["shape"], a["byte_order"]) for a in v["arrays"]]
    assert got == [
        ("$.coords.time.data", "int64", [3], "little"),
        ('$.data_vars["a b"].data', "float32", [2, 2], "big"),
        ("$.l[0]", "float64", [1], "little"),
    ]
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


def _expect(data, rows):
    """The destination vh5 read builds for 2-d rows (src0, src1, dst0, dst1, c0, c1)."""
    shape = [max(r[2] + r[4] for r in rows), max(r[3] + r[5] for r in rows)]
    out = np.zeros(shape, data.dtype)
    for s0, s1, d0, d1, c0, c1 in rows:
        out[d0 : d0 + c0, d1 : d1 + c1] = data[s0 : s0 + c0, s1 : s1 + c1]
    return out


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    p = tmp_path_factory.mktemp("grid") / "grid.h5"
    data = np.arange(40 * 30, dtype="<f8").reshape(40, 30)
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("x", data=data, chunks=(8, 8), compression="gzip")
        f.create_dataset("scalar", data=np.float64(2.5))
    return p, data


@pytest.mark.parametrize("style", ["savetxt_default", "savetxt_int_tabs", "csv_header", "spaces_comments"])
def test_table_commas_whitespace_tabs_comments_header_like_savetxt(grid, tmp_path, style):
    p, data = grid
    rows = [(0, 0, 0, 0, 3, 4), (10, 20, 3, 0, 2, 5), (39, 29, 5, 1, 1, 1)]
    t = tmp_path / "rows.txt"
    if style == "savetxt_default":
        np.savetxt(t, np.array(rows), header="src0 src1 dst0 dst1 c0 c1")  # '%.18e', '# ' header
    elif style == "savetxt_int_tabs":
        np.savetxt(t, np.array(rows), fmt="%d", delimiter="\t")
    elif style == "csv_header":
        t.write_text(
            "src_start_0,src_start_1,dst_start_0,dst_start_1,count_0,count_1\n"
            + "".join(",".join(map(str, r)) + "\n" for r in rows)
        )
    else:
        t.write_text("# a table\n\n" + "".join("  " + "   ".join(map(str, r)) + "  # row\n" for r in rows))
    out = tmp_path / "o.npy"
    r = run("read", p, "x", "--table", t, "--save", out)
    assert r.returncode == 0, r.stderr
    assert "rows: 3 read, 0 skipped" in r.stdout, r.stdout
    np.testing.assert_array_equal(np.load(out), _expect(data, rows))


def test_table_without_rows_or_with_a_malformed_line_names_file_and_line(grid, tmp_path):
    p, _ = grid
    empty = tmp_path / "empty.csv"
    empty.write_text("# only a comment\nsrc dst count\n")
    r = run("read", p, "x", "--table", empty)
    assert r.returncode == 1 and r.stderr.startswith(
        f"vh5: VH5_ERR_INVALID_ARGUMENT: {empty}: the table has no data rows"
    ), r.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("0 0 0 0 1 1\n0 0 0 0 1\n")
    r = run("read", p, "x", "--table", bad)
    assert r.returncode == 1 and f"{bad} line 2: 5 fields" in r.stderr, r.stderr
    bad.write_text("0 0 0 0 1 1\n0 0 zero 0 1 1\n")
    r = run("read", p, "x", "--table", bad)
    assert (
        r.returncode == 1 and f'{bad} line 2: data row 1, column 3 (dst_start_0): "zero" is not a number' in r.stderr
    ), r.stderr


def test_table_header_only_without_numbers_typo_in_first_row_is_an_error(grid, tmp_path):
    """A typo in the first data row (letter O for zero) made it a header, skipped silently
    (exit 0, one row fewer): a line with any numeric field is a data row; a real header is
    named in the output."""
    p, data = grid
    t = tmp_path / "typo.csv"
    t.write_text("1O 2 0 0 3 4\n10 11 3 0 3 4\n")
    r = run("read", p, "x", "--table", t)
    assert r.returncode == 1 and r.stdout == "", (r.stdout, r.stderr)
    want = f'vh5: VH5_ERR_INVALID_ARGUMENT: {t} line 1: data row 0, column 1 (src_start_0): "1O" is not a number; the first line is a header only when none of its fields is a number'
    assert r.stderr.startswith(want), r.stderr
    t.write_text("src0 src1 dst0 dst1 c0 c1\n1 2 0 0 3 4\n10 11 3 0 3 4\n")
    out = tmp_path / "h.npy"
    r = run("read", p, "x", "--table", t, "--save", out)
    skipped = f"{t} line 1: skipped as a header (no field is a number, every field is a name)"
    assert r.returncode == 0 and skipped in r.stdout, (r.stdout, r.stderr)
    assert "rows: 2 read" in r.stdout, r.stdout
    np.testing.assert_array_equal(np.load(out), _expect(data, [(1, 2, 0, 0, 3, 4), (10, 11, 3, 0, 3, 4)]))
    t.write_text("1 2 0 0 3 4\n")
    r = run("read", p, "x", "--table", t)
    assert r.returncode == 0 and "header" not in r.stdout, r.stdout


def test_table_integers_parsed_exactly_quoted_or_hex_first_line_is_no_header(grid, tmp_path):
    """``0.99999999999999999`` parsed as the float 1.0 and passed as the integer 1; a quoted
    or hex first line was skipped as a header (one row fewer, exit 0). Both are now errors
    naming the line and column."""
    p, _ = grid
    t = tmp_path / "t.csv"
    t.write_text("0 0 0 0 1 1\n0.99999999999999999 0 0 0 1 1\n")
    r = run("read", p, "x", "--table", t)
    want = f'vh5: VH5_ERR_INVALID_ARGUMENT: {t} line 2: data row 1, column 1 (src_start_0): "0.99999999999999999" is not an integer (it has a non-zero fraction)'
    assert r.returncode == 1 and r.stderr.startswith(want) and r.stdout == "", (r.stdout, r.stderr)
    for first, col in [('"0","0","0","0","1","1"', '"\\"0\\""'), ("0x0 0x0 0x0 0x0 0x1 0x1", '"0x0"')]:
        t.write_text(first + "\n1 2 0 0 3 4\n")
        r = run("read", p, "x", "--table", t)
        assert r.returncode == 1 and r.stdout == "", (first, r.stdout, r.stderr)
        assert r.stderr.startswith(
            f"vh5: VH5_ERR_INVALID_ARGUMENT: {t} line 1: data row 0, column 1 (src_start_0): {col} is not a number"
        ), r.stderr
        assert "every field is a name" in r.stderr, r.stderr
    t.write_text("1.000000000000000000e+00 2 0 0 3.0e0 4\n")
    r = run("read", p, "x", "--table", t)
    assert r.returncode == 0 and "rows: 1 read" in r.stdout, (r.stdout, r.stderr)


def test_read_null_dataspace_is_named_not_called_a_scalar(tmp_path):
    """h5py.Empty (H5S_NULL) has ndim 0 like a scalar: --random said "0-d (a scalar)" and
    suggested dropping the options, which then printed a row before failing."""
    p = tmp_path / "empty.h5"
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("e", data=h5py.Empty("f8"))
    for opts in [("--random", 5, "--size", 2), (), ("--table", p)]:
        r = run("read", p, "e", *opts)
        want = "vh5: VH5_ERR_UNSUPPORTED: dataset e has a null dataspace (H5S_NULL, h5py.Empty): it holds no elements to read"
        assert r.returncode == 1 and r.stderr.strip() == want and r.stdout == "", (opts, r.stdout, r.stderr)


def test_table_float_coordinates_from_2_pow_53_refused_integers_exact(tmp_path):
    """2^53 + 1 written as a float parses to 2^53 and would read the neighbouring element:
    refused naming line, row, column and the value as written; as an integer it is exact."""
    p = tmp_path / "big53.h5"
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        d = f.create_dataset("x", shape=(2**54,), dtype="<i8", chunks=(1024,), fillvalue=-1)
        d[2**53] = 111
        d[2**53 + 1] = 222
        want = int(d[2**53 + 1])
    t = tmp_path / "i.csv"
    t.write_text("9007199254740993,0,1\n")
    r = run("read", p, "x", "--table", t)
    assert r.returncode == 0 and f"checksum: sum {float(want)}" in r.stdout, (r.stdout, r.stderr)
    for written in ["9.007199254740993e15", "9007199254740992.0", "1.8446744073709552e+19"]:
        t.write_text(f"0 0 1\n{written} 0 1\n")
        r = run("read", p, "x", "--table", t)
        msg = f'{t} line 2: data row 1, column 1 (src_start_0): "{written}" is a float of magnitude 2^53 or more'
        assert r.returncode == 1 and msg in r.stderr and "write it as an integer" in r.stderr, r.stderr
    t.write_text("9007199254740991.0 0 1\n")  # 2^53 - 1: still exact as a float
    r = run("read", p, "x", "--table", t)
    assert r.returncode == 0 and "checksum: sum -1.0" in r.stdout, (r.stdout, r.stderr)


def test_clip_destination_follows_the_clipped_rows(grid, tmp_path):
    """--clip: the new array is just large enough for every row as clipped to the dataset
    (it followed the unclipped count), and equals numpy's clipped slicing."""
    p, data = grid
    t = tmp_path / "clip.csv"
    out = tmp_path / "clip.npy"
    for c in [40, 45, 1000]:
        t.write_text(f"0,0,0,0,{c},{c}\n")
        r = run("read", p, "x", "--table", t, "--clip", "--save", out)
        assert r.returncode == 0 and "destination [40, 30]" in r.stdout, (c, r.stdout, r.stderr)
        np.testing.assert_array_equal(np.load(out), data)
    # a row clipped on both axes, a row with a count of 0, a row entirely outside
    t.write_text("35,25,2,1,1000,1000\n0,0,0,0,0,50\n50,0,0,0,3,3\n")
    r = run("read", p, "x", "--table", t, "--clip", "--save", out)
    assert r.returncode == 0 and "destination [7, 6]" in r.stdout and "rows: 1 read, 2 skipped" in r.stdout, r.stdout
    want = np.zeros((7, 6))
    want[2:7, 1:6] = data[35:1035, 25:1025]
    np.testing.assert_array_equal(np.load(out), want)


@pytest.mark.parametrize("opt", ["--show", "--random", "--seed"])
def test_read_numeric_options_say_what_they_expect(grid, opt):
    p, _ = grid
    r = run("read", p, "x", "--random", "1", "--size", "1", opt, "-1")
    assert (
        r.returncode == 2 and f"vh5 read: {opt} expects a non-negative integer" in r.stderr and 'got "-1"' in r.stderr
    ), r.stderr
    assert "invalid digit" not in r.stderr


def test_info_fill_value_printed_in_the_dataset_type(tmp_path):
    p = tmp_path / "fill.h5"
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("i4", shape=(3,), dtype="<i4")
        f.create_dataset("u8", shape=(3,), dtype="<u8", fillvalue=2**64 - 1)
        f.create_dataset("f8", shape=(3,), dtype="<f8", fillvalue=-1.5)
    r = run("info", p)
    assert r.returncode == 0, r.stderr
    assert "int32 (little-endian), contiguous, no filters, fill value 0 (default)" in r.stdout, r.stdout
    assert "fill value 18446744073709551615" in r.stdout, r.stdout
    assert "fill value -1.5" in r.stdout, r.stdout


def test_scalar_dataset_read(grid, tmp_path):
    """0-d datasets: read without --table/--random/--size, value equal to h5py's."""
    p, _ = grid
    out = tmp_path / "s.npy"
    r = run("read", p, "scalar", "--save", out)
    assert r.returncode == 0, r.stderr
    with h5py.File(p) as f:
        want = f["scalar"][()]
    got = np.load(out)
    assert got.shape == () and got == want, (got, want)
    assert "rows: 1 read" in r.stdout and "checksum: sum 2.5" in r.stdout, r.stdout
    r = run("read", p, "scalar", "--random", 2, "--size", 1)
    assert r.returncode == 1 and "0-d" in r.stderr, r.stderr
    r = run("read", p, "x")
    assert r.returncode == 1 and "give --table" in r.stderr, r.stderr


def test_read_summary_explains_its_fields(grid):
    p, _ = grid
    r = run("read", p, "x", "--random", 50, "--size", 3)
    assert r.returncode == 0, r.stderr
    assert "direct reads" not in r.stdout
    assert re.search(
        r"rows: 50 read, 0 skipped \(count 0, or clipped to nothing by --clip\); 450 elements copied", r.stdout
    ), r.stdout
    assert re.search(r"storage: \d+ chunks? read whole once \(\d+ of them raw, decoded by vh5\)", r.stdout), r.stdout
    assert re.search(r"^strategy: planner (auto|chunks|rows), \d+ threads?$", r.stdout, re.M), r.stdout
    h = run("read", "--help").stdout
    assert "Summary: the planner mode and thread count used; rows read / skipped" in h
    assert "hyperslab reads by libhdf5" in h


def test_read_planner_option_sets_the_strategy_same_values(tmp_path):
    """`vh5 read --planner MODE` reads with that strategy (the summary says which; `rows` on
    an unfiltered dataset reads through libhdf5, `chunks` reads whole chunks), the values are
    the same in every mode, and an unknown mode is a usage error naming it."""
    p = tmp_path / "raw.h5"
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("x", data=np.arange(40 * 30, dtype="<f8").reshape(40, 30), chunks=(8, 8))
    sums = set()
    for mode in ["auto", "chunks", "rows"]:
        out = tmp_path / f"{mode}.npy"
        r = run("read", p, "x", "--random", 40, "--size", 3, "--planner", mode, "--save", out)
        assert r.returncode == 0, r.stderr
        assert re.search(rf"^strategy: planner {mode}, ", r.stdout, re.M), r.stdout
        sums.add(np.load(out).tobytes())
        if mode == "chunks":
            assert re.search(r"storage: [1-9]\d* chunks? read whole once", r.stdout), r.stdout
        if mode == "rows":
            assert re.search(r"storage: 0 chunks read whole once", r.stdout), r.stdout
    assert len(sums) == 1
    r = run("read", p, "x", "--random", 4, "--size", 3, "--planner", "fast")
    assert r.returncode == 2 and '--planner "fast": one of auto, chunks, rows' in r.stderr, r.stderr


def test_payload_names_hdf5_netcdf3_json_and_unknown_inputs(grid, tmp_path):
    p, _ = grid
    r = run("payload", p)
    assert r.returncode == 1 and "VH5_ERR_UNSUPPORTED: the input is an HDF5 file (signature at byte 0)" in r.stdout, (
        r.stdout
    )
    assert "msgpack" not in r.stdout
    ub = tmp_path / "ub.h5"
    with h5py.File(ub, "w", userblock_size=1024, libver=("earliest", "v110")) as f:
        f["x"] = np.arange(3)
    r = run("payload", ub)
    assert "HDF5 file (signature at byte 1024 after a user block of 1024 bytes)" in r.stdout, r.stdout
    for magic, kind in [(b"CDF\x01", "classic"), (b"CDF\x02", "64-bit offset"), (b"CDF\x05", "CDF-5")]:
        r = run("payload", stdin=(magic + b"\0" * 28).decode("latin-1"))
        assert r.returncode == 1 and f"netCDF-3 file ({kind}" in r.stdout, r.stdout
    r = run("payload", "--json", stdin='{"hello": [1, 2]}')
    v = json.loads(r.stdout)
    assert v["status"] == "VH5_ERR_UNSUPPORTED" and "JSON document" in v["message"], v
    # a Reductionist error body stays a server error
    r = run("payload", "--json", stdin='{"error": {"message": "boom", "caused_by": []}}')
    assert json.loads(r.stdout)["status"] == "VH5_ERR_SERVER_ERROR", r.stdout
    r = run("payload", stdin="garbage")
    assert r.returncode == 1 and "first bytes 67 61 72 62 61 67 65" in r.stdout, r.stdout


def test_info_lists_a_dataset_it_cannot_open_and_allow_external(tmp_path):
    """External raw storage is refused by default: listed with the reason, exit 1, the other
    datasets still listed; --allow-external opens it."""
    raw = tmp_path / "raw.bin"
    raw.write_bytes(bytes(range(16)))
    p = tmp_path / "ext.h5"
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("a", data=np.arange(4))
        f.create_dataset("ext", shape=(16,), dtype="u1", external=[(str(raw), 0, 16)])
        f.create_dataset("z", data=np.arange(2))
    r = run("info", p)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].startswith("  /a: shape [4]") and lines[-1].startswith("  /z: shape [2]"), r.stdout
    assert "  /ext: cannot open: VH5_ERR_UNSUPPORTED: " in r.stdout and "1 object of" in r.stderr, (r.stdout, r.stderr)
    r = run("info", "--allow-external", p)
    assert r.returncode == 0 and "/ext: shape [16], uint8" in r.stdout, r.stdout + r.stderr


def test_info_version_names_vh5_and_libhdf5():
    r = run("info", "--version")
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    assert re.fullmatch(r"vh5 \d+\.\d+\.\d+", first), first
    assert re.fullmatch(r"libhdf5 \d+\.\d+\.\d+ \((system|vendored), (not )?thread-safe\)", second), second
    assert run("--version").stdout == r.stdout


def _linked_hdf5():
    return tuple(map(int, run("info", "--version").stdout.splitlines()[1].split()[1].split(".")))


def _writer_hdf5():
    """(major, minor) of h5py's libhdf5, which writes the files: a libhdf5 older than it may
    refuse its 'latest' formats (1.14 refuses HDF5 2.x's newest layout message)."""
    return tuple(h5py.version.hdf5_version_tuple[:2])


@pytest.mark.parametrize("libver", ["latest", "v112", "v114"])
def test_newer_hdf5_format_files_named_by_info_and_read(tmp_path, libver):
    """h5py (HDF5 2.x) files with newer object formats: read equal to h5py where the linked
    libhdf5 reads them; otherwise every dataset is listed with 'written with a newer HDF5
    format' (file, object, feature, version, which build reads it) and the exit status is 1 —
    never an empty listing or NOT_FOUND."""
    p = tmp_path / f"{libver}.h5"
    data = np.arange(60, dtype="<f8").reshape(6, 10)
    try:
        with h5py.File(p, "w", libver=libver) as f:
            f.create_dataset("gz", data=data, chunks=(3, 5), compression="gzip")
            f.create_dataset("plain", data=data)
    except ValueError as e:  # an h5py whose HDF5 lacks this libver
        pytest.skip(str(e))
    r = run("info", p)
    assert r.stdout.count("\n  /") == 2, r.stdout  # both datasets listed
    ok = r.returncode == 0
    if not ok:
        assert r.returncode == 1 and "NOT_FOUND" not in r.stdout + r.stderr, r.stdout + r.stderr
        assert "written with a newer HDF5 format than the linked libhdf5 " in r.stdout, r.stdout
        assert f"file `{p}`, object `/gz`" in r.stdout and "bad version number for" in r.stdout, r.stdout
        linked = _linked_hdf5()[:2]
        # refused only by a libhdf5 older than the writer; the static-hdf5 hint (HDF5 2.2)
        # wherever the linked libhdf5 is older than 2.0; the layout message version 5 of
        # HDF5 2.x needs 2.0 (1.14.6 refuses it too: "1.12 or newer" was wrong advice)
        assert linked < _writer_hdf5(), (linked, r.stdout)
        assert ("static-hdf5" in r.stdout) == (linked < (2, 0)), r.stdout
        assert "1.12 or newer reads it" not in r.stdout, r.stdout
        if "bad version number for layout message" in r.stdout:
            assert (
                "layout message version 5 (what HDF5 2.x writes with libver 'latest' or 'v200') needs libhdf5 2.0 or newer"
                in r.stdout
            ), r.stdout
    out = tmp_path / "o.npy"
    t = tmp_path / "t.csv"
    t.write_text("1 2 0 0 4 7\n")
    r = run("read", p, "gz", "--table", t, "--save", out)
    if r.returncode == 0:
        np.testing.assert_array_equal(np.load(out), data[1:5, 2:9])
    else:
        assert _linked_hdf5()[:2] < _writer_hdf5() and r.stderr.startswith("vh5: VH5_ERR_UNSUPPORTED: file `"), r.stderr
        assert "object `gz`: written with a newer HDF5 format" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_info_null_dataspace_is_not_listed_as_a_scalar(tmp_path):
    """A null dataspace (h5py.Empty, no elements) and a scalar (one element) were both
    listed as `shape []`."""
    p = tmp_path / "null.h5"
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("empty", data=h5py.Empty("f4"))
        f["scalar"] = np.float32(1)
    r = run("info", p)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "  /empty: shape null (no elements" in r.stdout and "  /scalar: shape []" in r.stdout, r.stdout


def test_read_allow_external_opens_external_storage_and_the_refusal_names_the_flag(tmp_path):
    """`vh5 read` had no --allow-external (vh5 info has one) and its refusal told the user about
    VH5_FILE_ALLOW_EXTERNAL and the Python keyword; the CLI names its own flag (read and info)."""
    raw = tmp_path / "raw.bin"
    raw.write_bytes(bytes(range(16)))
    p = tmp_path / "ext.h5"
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("ext", shape=(16,), dtype="u1", external=[(str(raw), 0, 16)])
    r = run("read", p, "/ext", "--random", 3, "--size", 4)
    assert r.returncode == 1 and "VH5_ERR_UNSUPPORTED" in r.stderr, r.stderr
    assert "--allow-external" in r.stderr and "VH5_FILE_ALLOW_EXTERNAL" not in r.stderr and "Python" not in r.stderr
    r = run("info", p)
    assert "--allow-external" in r.stdout and "VH5_FILE_ALLOW_EXTERNAL" not in r.stdout, r.stdout
    r = run("read", p, "/ext", "--random", 3, "--size", 4, "--allow-external")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--allow-external" in run("read", "--help").stdout


def test_read_repeat_reports_the_decoded_chunk_cache_of_the_last_call(tmp_path):
    """`--repeat R` reads the table R times on one open dataset: from the second call the
    gzip chunks come from the decoded-chunk cache, which the summary counts (hits); the
    values are those of one call."""
    p = tmp_path / "gz.h5"
    data = np.arange(64 * 64, dtype="<f8").reshape(64, 64)
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("x", data=data, chunks=(16, 16), compression="gzip")
    t = tmp_path / "rows.txt"
    t.write_text("0 0 0 0 64 64\n")
    out = tmp_path / "o.npy"
    r = run("read", p, "x", "--table", t, "--save", out)
    assert r.returncode == 0 and "chunk cache: 0 hits" in r.stdout and re.search(r"^time [0-9.]+ ms", r.stdout, re.M), (
        r.stdout
    )
    r = run("read", p, "x", "--table", t, "--repeat", 3, "--save", out)
    assert r.returncode == 0 and "chunk cache: 16 hits, 0 misses" in r.stdout, r.stdout
    assert re.search(r"^time first call [0-9.]+ ms \([0-9.]+ us/row\); best of 3 calls [0-9.]+ ms", r.stdout, re.M), (
        r.stdout
    )
    np.testing.assert_array_equal(np.load(out), data)
    r = run("read", p, "x", "--table", t, "--repeat", 0)
    assert r.returncode == 2 and "--repeat 0: give a number of calls >= 1" in r.stderr, r.stderr
