#!/usr/bin/env python3
"""Checks a kiln wheel's file list: check_wheel.py WHEEL [--aot TARGET ...] [--no-aot TARGET ...]

Linux: the package, libkiln.so, the kiln command, the fast path (_ext.abi3.so) and the
entry point; Windows (win_amd64): kiln.dll and kiln.exe, no .so. With --aot, code objects
and manifest.json under kiln/aot/ for exactly those targets (and --no-aot ones absent),
the manifest listing only objects that are in the wheel."""
import argparse
import json
import re
import sys
import zipfile

PACKAGE = ["kiln/__init__.py", "kiln/__main__.py", "kiln/_arrays.py", "kiln/_bf16.py",
           "kiln/_command.py", "kiln/_lib.py"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wheel")
    ap.add_argument("--aot", nargs="*", default=[])
    args = ap.parse_args()
    m = re.match(r"kiln-([0-9.]+)-py3-none-(\w+)\.whl$", args.wheel.split("/")[-1])
    if not m:
        sys.exit(f"{args.wheel}: not named kiln-<version>-py3-none-<platform>.whl")
    version, platform = m.groups()
    names = set(zipfile.ZipFile(args.wheel).namelist())
    win = platform == "win_amd64"
    want = PACKAGE + (["kiln/kiln.dll", "kiln/kiln.exe"] if win else
                      ["kiln/libkiln.so", "kiln/kiln", "kiln/_ext.abi3.so"])
    want.append(f"kiln-{version}.dist-info/entry_points.txt")
    problems = [f"missing {n}" for n in want if n not in names]
    if win:
        problems += [f"{n}: a Linux file in a Windows wheel" for n in names
                     if n.endswith(".so")]
    aot = sorted({n.split("/")[2] for n in names if n.startswith("kiln/aot/")
                  and n.count("/") == 3})
    if sorted(args.aot) != aot:
        problems.append(f"code objects for {aot or 'no target'}; expected "
                        f"{sorted(args.aot) or 'none'}")
    if args.aot:
        z = zipfile.ZipFile(args.wheel)
        manifest = json.loads(z.read("kiln/aot/manifest.json"))
        if sorted(manifest["targets"]) != sorted(args.aot):
            problems.append(f"manifest targets {manifest['targets']}")
        for o in manifest["objects"]:
            if f"kiln/aot/{o['target']}/{o['file'].split('/')[-1]}" not in names:
                problems.append(f"manifest lists {o['target']}/{o['file']}, not in the wheel")
        for t in args.aot:
            if not any(n.startswith(f"kiln/aot/{t}/") and
                       n.endswith((".cubin", ".hsaco")) for n in names):
                problems.append(f"no code object for {t}")
    for p in problems:
        print(f"{args.wheel}: {p}")
    print(f"{args.wheel}: {len(names)} files, code objects for {aot or 'no target'}"
          + ("" if problems else ": as expected"))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
