"""Shared set-up of the Python tests (pytest loads this before any test module): the tests
import the in-tree package (bindings/python) with the library it finds (VH5_LIBRARY, set by
scripts/test.sh), unless VH5_TEST_INSTALLED=1, when they test the pip-installed vh5."""

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if os.environ.get("VH5_TEST_INSTALLED") != "1":
    sys.path.insert(0, str(REPO / "bindings" / "python"))
