"""`python -m kiln`: the loaded library's path and version, and kiln_info_json(), as JSON."""
import json
import sys

import kiln
from kiln import _lib

try:
    report = {"library": _lib.library_path(), "version": kiln.library_version(),
              "info": kiln.info()}
except kiln.KilnError as exc:
    sys.exit(f"kiln: {exc}")
json.dump(report, sys.stdout, indent=1)
print()
