"""pytest plugin (``-p _versioned_route``) for running versioned-hdf5's own tests on vh5: every
``read_many_slices`` of versioned-hdf5 (its modules and the tests' imports) is routed to
``vh5.compat.versioned_hdf5`` before the tests are collected; at the end the shim's call and
fallback counts are written as JSON to ``$VH5_ROUTE_REPORT``."""

import json
import os

from vh5.compat import versioned_hdf5 as shim

REPLACED = shim.install()


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001
    path = os.environ.get("VH5_ROUTE_REPORT")
    if path:
        from vh5 import hdf5_version

        report = {
            "replaced": REPLACED,
            "calls": shim.call_count,
            "fallback_count": shim.fallback_count,
            "fallbacks": dict(shim.fallbacks),
            "hdf5": str(hdf5_version()),
        }
        with open(path, "w") as f:
            json.dump(report, f)
