"""Skips for an optional tool that is absent (numpy, torch, a C compiler): a skip normally,
a failure under KILN_TEST_STRICT=1 (.ci/run sets it), so a strict run cannot pass by
skipping. A missing GPU is not a missing tool: those tests use unittest.SkipTest."""
import os
import unittest


def strict():
    return os.environ.get("KILN_TEST_STRICT", "") not in ("", "0")


def tool(why):
    """Raises SkipTest(why), or a failure naming why when strict."""
    if strict():
        raise AssertionError(f"KILN_TEST_STRICT=1 and a tool is missing: {why}")
    raise unittest.SkipTest(why)
