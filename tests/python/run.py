"""Runs this folder's tests with unittest discovery; exits 77 (skipped) without numpy."""
import os
import sys
import unittest

try:
    import numpy  # noqa: F401
except ImportError:
    print("numpy is not installed: the Python binding tests are skipped")
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
suite = unittest.defaultTestLoader.discover(here, top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
