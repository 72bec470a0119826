#!/usr/bin/env python3
"""Where a cold `check` spends its CPU at two tree sizes (issue 7 growth).

Usage: scripts/perf_growth.py SMALL_TREE LARGE_TREE [--cudalog target/release/cudalog] [--freq 299]

Runs `perf record -F FREQ` around a cold `check TREE --db FRESH --format
json` of each tree, then sorts each profile's samples by symbol into
categories (tree-sitter, the allocator, SQLite, the LP solver, crepe
programs, salsa, hashing, the kernel, the rest of cudalog, libc) and prints
the samples per category at both sizes and their ratio. A category whose
ratio exceeds the trees' size ratio is the part that grows faster than the
code. Needs `perf` (linux-tools).
"""
import argparse, collections, os, re, subprocess, sys, tempfile


def category(dso, sym):
    if dso.startswith("[kernel"):
        return "kernel"
    if dso.startswith("libc"):
        return "libc (malloc, memcpy, ...)"
    if sym.startswith("ts_") or "subtree" in sym or sym.startswith("stack_") or "stack__" in sym \
            or sym.startswith("array__") or sym == "set_contains":
        return "tree-sitter"
    if "mi_" in sym:
        return "mimalloc"
    if "sqlite" in sym.lower():
        return "sqlite"
    if "microlp" in sym:
        return "LP (microlp)"
    if "salsa" in sym:
        return "salsa"
    if "Crepe" in sym or "crepe" in sym:
        return "crepe programs"
    if "hash" in sym.lower():
        return "hashing"
    if "cudalog" in sym:
        return "cudalog (rest)"
    return "other"


def profile(cudalog, tree, freq):
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-F", str(freq), "-o", data, cudalog, "check", tree,
                        "--db", os.path.join(tmp, "c.db"), "--format", "json"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,symbol",
                              "--stdio", "-n"], capture_output=True, text=True).stdout
    c = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\S+)\s+\[.\]\s+(.*)", line)
        if m:
            c[category(m.group(2), m.group(3).strip())] += int(m.group(1))
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("small")
    ap.add_argument("large")
    ap.add_argument("--cudalog", default="target/release/cudalog")
    ap.add_argument("--freq", type=int, default=299)
    a = ap.parse_args()
    cudalog = os.path.abspath(a.cudalog)
    s, l = profile(cudalog, a.small, a.freq), profile(cudalog, a.large, a.freq)
    ts, tl = sum(s.values()), sum(l.values())
    if ts == 0:
        sys.exit("no samples: is perf allowed (kernel.perf_event_paranoid)?")
    print(f"| category | samples {os.path.basename(a.small)} | samples {os.path.basename(a.large)} | ratio |")
    print("|---|---:|---:|---:|")
    for k in sorted(set(s) | set(l), key=lambda k: -l[k]):
        print(f"| {k} | {s[k]} | {l[k]} | {l[k] / max(s[k], 1):.2f} |")
    print(f"| **total** | {ts} | {tl} | {tl / ts:.2f} |")


if __name__ == "__main__":
    main()
