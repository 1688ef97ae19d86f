"""`python -m kiln`: which library was loaded (path, and whether it came from the installed
package, KILN_LIBRARY or the source tree's build/), whether the C fast path is in use, the
library's version and kiln_info_json(), as JSON."""
import json
import sys

import kiln
from kiln import _arrays, _lib

try:
    path, how = _lib.library_location()
    report = {"library": path, "loaded_from": how, "version": kiln.library_version(),
              "fast_path": bool(_arrays.fast()), "info": kiln.info()}
except kiln.KilnError as exc:
    sys.exit(f"kiln: {exc}")
json.dump(report, sys.stdout, indent=1)
print()
