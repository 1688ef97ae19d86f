"""Executed instructions of one profiled kernel by opcode, from Nsight Compute's SASS source
page (ncu --page source --csv --print-source sass), for bench/ncu_run.sh.

    python3 bench/sass_mix.py NAME.sass.csv [TOP]

Prints the total warp-level instructions executed, the TOP opcodes (default 28) with their
count and share, and then the code grouped by how often it ran: instructions with the same
execution count belong to one region (the key loop, the masked tiles, code run once per
work item, a spin-wait), so each count class is listed with its size, its share of the
total and its commonest opcodes. A wait loop shows up as a small class with a large count.
"""
import csv
import re
import sys
from collections import Counter


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 28
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines)
                  if "Source" in l and "Instructions Executed" in l), None)
    if start is None:
        print("    sass_mix: no source table in", path)
        for l in lines[:6]:
            print("     |", l[:200])
        return
    rows = list(csv.reader(lines[start:]))
    hdr = rows[0]
    col = {h: i for i, h in enumerate(hdr)}
    src = col.get("Source")
    exe = next((col[h] for h in hdr if h.startswith("Instructions Executed")), None)
    if src is None or exe is None:
        print("    sass_mix: columns not found:", hdr[:12])
        return
    ins = []
    for r in rows[1:]:
        if len(r) <= max(src, exe):
            continue
        try:
            n = float(r[exe].replace(",", "") or 0)
        except ValueError:
            continue
        text = re.sub(r"^@!?U?P\w+\s+", "", r[src].strip())
        op = text.split(" ")[0] if text else "?"
        ins.append((op, n))
    total = sum(n for _, n in ins)
    if not total:
        print("    sass_mix: nothing executed")
        return
    allc = Counter()
    cls = {}
    for op, n in ins:
        allc[op] += n
        if n:
            cls.setdefault(n, Counter())[op] += 1
    print(f"    sass: {len(ins)} instructions, {total:.4g} executed (warp level)")
    for op, n in allc.most_common(top):
        print(f"      {op:28s} {n:12.4g} {n / total:6.1%}")
    print("    by execution count (count x static instructions = share; commonest opcodes):")
    big = sorted(cls.items(), key=lambda kv: -kv[0] * sum(kv[1].values()))[:16]
    for n, ops in sorted(big, key=lambda kv: -kv[0]):
        k = sum(ops.values())
        mix = " ".join(f"{o}:{c}" for o, c in ops.most_common(6))
        print(f"      {n:10.6g} x {k:5d} = {n * k / total:6.1%}   {mix}")
    stalls(rows, col, exe)


def stalls(rows, col, exe):
    """Stall samples by reason, over the kernel and per execution-count class."""
    names = [h for h in col if h.startswith("stall_") and "Not Issued" not in h]
    if not names:
        return
    tot, per = Counter(), {}
    for r in rows[1:]:
        if len(r) <= max(col[h] for h in names):
            continue
        try:
            n = float(r[exe].replace(",", "") or 0)
            v = {h: int(r[col[h]].replace(",", "") or 0) for h in names}
        except ValueError:
            continue
        tot.update(v)
        per.setdefault(n, Counter()).update(v)
    t = sum(tot.values())
    if not t:
        return
    top = ", ".join(f"{h[6:]} {c / t:.1%}" for h, c in tot.most_common(8))
    print(f"    stall samples: {t}; {top}")
    print("    stall samples by execution count (share of all; commonest reasons):")
    for n, c in sorted(per.items(), key=lambda kv: -sum(kv[1].values()))[:6]:
        k = sum(c.values())
        mix = ", ".join(f"{h[6:]} {v / t:.1%}" for h, v in c.most_common(4))
        print(f"      {n:10.6g}: {k / t:6.1%}   {mix}")


if __name__ == "__main__":
    main()
