#!/usr/bin/env python3
"""Checks an installed kiln wheel, run from outside the repository.

    installed.py KILN_JSON VENV                  `python -m kiln`'s report: the library
        came from the installed package inside VENV (not KILN_LIBRARY, not a build/), the
        fast path is in use, and a numpy attention call matches a float64 reference.
    installed.py --aot T... -- INFO_JSON VENV    `kiln info --json` of the installed
        command: the code objects are found inside the package (no KILN_AOT_DIR), for
        exactly the targets T."""
import json
import os
import sys


def fail(message):
    sys.exit(f"installed.py: {message}")


def check_module(report, venv):
    lib = os.path.realpath(report["library"])
    if report["loaded_from"] != "package" or not lib.startswith(os.path.realpath(venv)):
        fail(f"library {lib} loaded from {report['loaded_from']}, not the package in {venv}")
    if not report["fast_path"]:
        fail("the wheel's fast path (_ext) was not loaded")
    import numpy as np
    import kiln
    if not kiln.__file__.startswith(os.path.realpath(venv)) and \
            not os.path.realpath(kiln.__file__).startswith(os.path.realpath(venv)):
        fail(f"imported kiln from {kiln.__file__}, not from {venv}")
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 5, 4, 16)).astype(np.float32) for _ in range(3))
    out = kiln.attention(q, k, v, causal=True)
    s = np.einsum("bihd,bjhd->bhij", q.astype(np.float64), k.astype(np.float64)) / 4.0
    mask = np.tril(np.ones((5, 5), bool))
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    want = np.einsum("bhij,bjhd->bihd", p, v.astype(np.float64))
    err = float(np.abs(out - want).max())
    if err > 1e-5:
        fail(f"numpy attention differs from the float64 reference by {err}")
    print(f"installed kiln {report['version']}: library {lib} (from the package), fast "
          f"path in use, numpy attention max |error| {err:.2e}")


def check_aot(info, venv, targets):
    aot = info.get("aot") or {}
    folder = os.path.realpath(aot.get("dir") or "")
    if not folder.startswith(os.path.realpath(venv)):
        fail(f"code objects found in {aot.get('dir')}, not in the package in {venv}")
    if sorted(aot.get("targets", [])) != sorted(targets):
        fail(f"kiln info lists {aot.get('targets')}; expected {targets}")
    print(f"installed kiln info: code objects for {aot['targets']} in {folder}")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--aot":
        sep = args.index("--")
        with open(args[sep + 1]) as f:
            check_aot(json.load(f), args[sep + 2], args[1:sep])
    else:
        with open(args[0]) as f:
            check_module(json.load(f), args[1])


if __name__ == "__main__":
    main()
