"""Builds the kiln wheel: the Python package with the library, the kiln command and, when
GPU_ARCHS is set, the ahead-of-time code objects, all built by CMake from this tree.

    python3 -m build --wheel --no-isolation        (make wheel)

Works offline with Debian's python3-setuptools, python3-wheel and python3-build. Settings
come from the environment:

    GPU_ARCHS             targets to compile code objects for (as for CMake)
    KILN_WHEEL_BUILD_DIR  CMake build folder (default build-wheel, or build-wheel-<platform>)
    KILN_WHEEL_PLATFORM   win_amd64: cross-build for Windows with MinGW-w64
    KILN_WHEEL_AOT_DIR    take the code objects from this folder (a `kiln build --out`
                          folder) instead of compiling them
    KILN_HOST_KILN        a kiln command that runs here (default build/kiln), which a
                          Windows wheel asks for the target table
    MAX_JOBS              parallel build jobs

The wheel is tagged py3-none-<platform>: the package is pure Python over a C library that
does not link Python. Its optional fast path (kiln/_ext, limited API 3.11) loads on
CPython 3.11 and later and is skipped elsewhere, where the ctypes path does every call.

On Windows the wheel leaves out code objects for targets Windows cannot run: AMD's
Windows driver and HIP SDK support Radeon (RDNA) GPUs, not Instinct (CDNA) ones.
"""

import json
import os
import re
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # building an sdist needs no wheel package
    bdist_wheel = None

ROOT = os.path.dirname(os.path.abspath(__file__))
WINDOWS_FAMILIES_LEFT_OUT = ("cdna2", "cdna3", "cdna4")


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(kiln VERSION ([0-9.]+)", f.read()).group(1)


def build_dir():
    return os.environ.get("KILN_WHEEL_BUILD_DIR") or os.path.join(
        ROOT, "build-wheel-win_amd64" if windows() else "build-wheel")


def windows():
    return os.environ.get("KILN_WHEEL_PLATFORM") == "win_amd64"


def target_families(kiln_command):
    """{target: family} from `kiln targets --json` of a command that runs here."""
    out = subprocess.run([kiln_command, "targets", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return {t["name"]: t["family"] for t in json.loads(out)["targets"]}


def copy_aot(src, dest, families=None):
    """Copies a `kiln build --out` folder (objects and manifest.json, not its .src/.probe
    scratch), leaving out targets whose family is in WINDOWS_FAMILIES_LEFT_OUT when families
    is given; the manifest then lists only what was kept. Returns the targets kept."""
    with open(os.path.join(src, "manifest.json")) as f:
        manifest = json.load(f)
    keep = []
    for target in manifest["targets"]:
        if families is not None and families.get(target) in WINDOWS_FAMILIES_LEFT_OUT:
            continue
        if os.path.isdir(os.path.join(src, target)):
            shutil.copytree(os.path.join(src, target), os.path.join(dest, target))
        keep.append(target)
    manifest["targets"] = keep
    manifest["objects"] = [o for o in manifest["objects"] if o["target"] in keep]
    os.makedirs(dest, exist_ok=True)
    with open(os.path.join(dest, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return keep


class BuildWithCMake(build_py):
    """build_py, then the CMake build, whose products are copied into the package."""

    def run(self):
        super().run()
        win = windows()
        build = build_dir()
        aot_from = os.environ.get("KILN_WHEEL_AOT_DIR")
        cfg = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
               "-DKILN_BUILD_TESTS=OFF", "-DKILN_BUILD_BENCH=OFF"]
        if win:
            cfg.append("-DCMAKE_TOOLCHAIN_FILE=" +
                       os.path.join(ROOT, "cmake", "mingw-w64-x86_64.cmake"))
        archs = os.environ.get("GPU_ARCHS", "")
        if archs and not aot_from:
            if win:
                sys.exit("setup.py: a Windows wheel takes its code objects from "
                         "KILN_WHEEL_AOT_DIR (a host `kiln build --out` folder)")
            cfg.append("-DGPU_ARCHS=" + archs)
        else:
            cfg.append("-DGPU_ARCHS=")
        jobs = os.environ.get("MAX_JOBS") or str(os.cpu_count() or 2)
        subprocess.check_call(cfg)
        subprocess.check_call(["cmake", "--build", build, "-j", jobs])

        dest = os.path.join(self.build_lib, "kiln")
        os.makedirs(dest, exist_ok=True)
        if win:
            files = {"kiln.dll": "kiln.dll", "kiln.exe": "kiln.exe"}
        else:
            files = {"libkiln.so": "libkiln.so", "kiln": "kiln", "_ext.abi3.so": "_ext.abi3.so"}
        for src, name in files.items():
            path = os.path.join(build, src)
            if not os.path.exists(path):
                if src.startswith("_ext"):
                    continue  # no Python headers at build time: the ctypes path remains
                sys.exit(f"setup.py: the CMake build made no {path}")
            # The real file, not the soname symlink: a wheel holds plain files.
            shutil.copy2(os.path.realpath(path), os.path.join(dest, name))
        aot = aot_from or (os.path.join(build, "aot") if archs else None)
        if aot:
            families = None
            if win:
                # The target table, from a kiln command that runs on this machine.
                families = target_families(os.environ.get("KILN_HOST_KILN") or
                                           os.path.join(ROOT, "build", "kiln"))
            copy_aot(aot, os.path.join(dest, "aot"), families)


cmdclass = {"build_py": BuildWithCMake}

if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """py3-none-<platform>: the package has binaries but no Python ABI dependency."""

        def finalize_options(self):
            if windows():
                self.plat_name = "win_amd64"
            super().finalize_options()

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", "win_amd64" if windows() else plat

    cmdclass["bdist_wheel"] = PlatformWheel

class BinaryDistribution(Distribution):
    """Holds binaries: the wheel's root is platlib and it is tagged for a platform."""

    def has_ext_modules(self):
        return True


# setuptools' own scratch goes under the CMake build folder, not into build/ (the source
# tree's CMake build, where the package looks for a library).
setup(version=version(), cmdclass=cmdclass, distclass=BinaryDistribution,
      options={"build": {"build_base": os.path.join(build_dir(), "setuptools")}})
