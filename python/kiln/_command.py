"""The `kiln` command of an installed wheel: runs the executable shipped in the package."""
import os
import subprocess
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(here, "kiln.exe" if sys.platform == "win32" else "kiln")
    if not os.path.isfile(exe):
        sys.exit(f"kiln: no command at {exe}; this kiln package was not installed from a "
                 "wheel (build the command with make)")
    if sys.platform == "win32":
        sys.exit(subprocess.call([exe] + sys.argv[1:]))
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
