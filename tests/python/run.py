"""Runs this folder's tests with unittest discovery; exits 77 (skipped) without numpy, or 1
under KILN_TEST_STRICT=1. Lists every skipped test with its reason at the end."""
import os
import sys
import unittest

try:
    import numpy  # noqa: F401
except ImportError:
    strict = os.environ.get("KILN_TEST_STRICT", "") not in ("", "0")
    print("numpy is not installed (Debian: apt-get install python3-numpy): the Python binding "
          "tests are " + ("a failure under KILN_TEST_STRICT=1" if strict else "skipped"))
    sys.exit(1 if strict else 77)

here = os.path.dirname(os.path.abspath(__file__))
suite = unittest.defaultTestLoader.discover(here, top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2).run(suite)
if result.skipped:
    print(f"\n{len(result.skipped)} skipped:")
    for test, why in result.skipped:
        print(f"  SKIP {test.id()}: {why}")
sys.exit(0 if result.wasSuccessful() else 1)
