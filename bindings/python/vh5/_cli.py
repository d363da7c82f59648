"""The ``vh5`` command for Python installs: ``python -m vh5 ...`` and the ``vh5`` console
script both run the Rust command-line tool (``src/bin/vh5`` of the repository), which
``pip install`` packages next to the library as ``vh5/vh5``. Same subcommands, options,
output and exit status as ``target/release/vh5``: the arguments are handed to it unchanged
(``os.execv`` on POSIX: the process becomes the tool).

The binary is found, in order: env ``VH5_CLI`` (a path); the copy inside this package;
``vh5`` next to the library named by env ``VH5_LIBRARY`` (a cargo build's target/release).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

__all__ = ["binary_path", "main"]

_EXE = "vh5.exe" if sys.platform == "win32" else "vh5"


def binary_path() -> str:
    """Path of the ``vh5`` executable this package runs. Raises FileNotFoundError naming every
    place looked at when there is none."""
    tried = []
    env = os.environ.get("VH5_CLI")
    if env:
        if os.path.isfile(env):
            return env
        tried.append(f"VH5_CLI={env}")
    here = Path(__file__).resolve().parent / _EXE
    if here.is_file():
        return str(here)
    tried.append(str(here))
    lib = os.environ.get("VH5_LIBRARY")
    if lib:
        beside = Path(lib).resolve().parent / _EXE
        if beside.is_file():
            return str(beside)
        tried.append(str(beside))
    raise FileNotFoundError(
        "the vh5 command-line tool was not found (looked at: " + ", ".join(tried) + "); "
        "install the package with pip (pip install ./bindings/python), or build it with "
        "cargo build --release and set VH5_CLI=target/release/vh5"
    )


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the ``vh5`` tool with ``argv`` (default: ``sys.argv[1:]``); never returns."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        exe = binary_path()
    except FileNotFoundError as e:
        print(f"vh5: {e}", file=sys.stderr)
        sys.exit(127)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(exe, [exe, *args])
    sys.exit(subprocess.call([exe, *args]))
