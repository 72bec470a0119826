#!/usr/bin/env python3
"""Compare `uncoalesced-global` with GPUDrano's dynamically confirmed
uncoalesced accesses on Rodinia (issue 8).

GPUDrano (github upenn-acg/gpuDranoDynamicAnalysis) ran Rodinia with every
global access instrumented and wrote, per static access, the average number
of 128-byte cache lines one warp access used (`Results/*/NoAlign*/*.results`;
only accesses averaging more than one line are listed).  A line of source is
*confirmed uncoalesced* here when one of its accesses averages more lines
than its bytes need: ceil(32 lanes * bytes per thread / 128) (an 8-byte
access of a full warp needs 2 lines; a float needs 1).  The bytes per thread
come from cudalog's `accesses` table (the type of the accessed element or
field); where cudalog has no access at that spot, 4 bytes are assumed.

GPUDrano's line numbers refer to its own copies of the sources (next to the
results); each is mapped to Rodinia 3.1's file by its text (the same
statement, nearest line when the copies differ).

cudalog runs with `[cost] sector_bytes = 128` (GPUDrano's unit) on a copy of
each benchmark directory under a temporary directory (the corpus is never
written: the copy gets the `cudalog.toml`).  A confirmed line is a *hit* when
cudalog reports `uncoalesced-global` on the same line for the same array.

Usage: scripts/gpudrano_eval.py [--cudalog target/release/cudalog]
         [--gpudrano /work/corpora/gpudrano] [--rodinia /work/corpora/rodinia_3.1/cuda]
         [--verbose]
Prints one row per confirmed line (HIT/MISS, GPUDrano's average, our
finding or the nearest other verdict) and the figure.
"""

import argparse
import csv
import glob
import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

# GPUDrano's result directory -> Rodinia 3.1 cuda/ directory.
BENCH_DIRS = {"srad_v1": "srad/srad_v1", "srad_v2": "srad/srad_v2", "euler3d": "cfd",
              "pre_euler3d": "cfd"}
SRC_RE = re.compile(r"\.(cu|cuh|h|c|cpp)$")


def read_results(gpudrano):
    """(bench, module, function, line, col) -> max average lines per warp."""
    out = {}
    for path in sorted(glob.glob(os.path.join(gpudrano, "Results", "*", "NoAlign*", "*.results"))):
        bench = path.split(os.sep)[-3]
        with open(path, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                module = row["fileName"].split("-device-")[0]
                key = (bench, module, row["functionName"], int(row["line"]), int(row["column"]))
                out[key] = max(out.get(key, 0.0), float(row["avgCacheLinesUsed"]))
    return out


def sources(root):
    files = []
    for p in glob.glob(os.path.join(root, "**", "*"), recursive=True):
        rel = os.path.relpath(p, root)
        parts = rel.split(os.sep)
        if any(x.startswith("NoAlign") or x.startswith("Align") for x in parts):
            continue
        if SRC_RE.search(p) and os.path.isfile(p):
            files.append(rel)
    return sorted(files)


def lines_of(path):
    with open(path, errors="replace") as f:
        return f.read().split("\n")


def ident_at(text, col):
    if not 0 < col <= len(text) or (col > 1 and re.match(r"\w", text[col - 2])):
        return None
    m = re.match(r"[A-Za-z_]\w*", text[col - 1:])
    if not m or m.group(0) in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
        return None
    return m.group(0)


def definition_ranges(ls, fn):
    """1-based line ranges of the definitions of `fn` in a file."""
    text = "\n".join(ls)
    out = []
    for m in re.finditer(r"\b" + re.escape(fn) + r"\s*(<[^;{]*?>)?\s*\(", text):
        i = m.end()
        depth = 1
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        j = i
        while j < len(text) and text[j] not in "{;":
            j += 1
        if j >= len(text) or text[j] != "{":
            continue
        depth, k = 0, j
        while k < len(text):
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
            if depth == 0:
                break
        out.append((text.count("\n", 0, m.start()) + 1, text.count("\n", 0, k) + 1))
    return out


def accessed_at(text, col):
    """The array or pointer an instrumented access at `col` goes through:
    the identifier at `col` when it is subscripted or dereferenced (a load),
    or the left-hand side's base when `col` is an assignment operator (a
    store's debug column)."""
    name = ident_at(text, col)
    if name:
        rest = text[col - 1 + len(name):].lstrip()
        deref = re.search(r"\*\s*\(\s*$", text[:col - 1]) is not None
        return name if rest[:1] in ("[", ".") or rest[:2] == "->" or deref else None
    if 0 < col <= len(text) and text[col - 1] in "=+-*/|&^<>%":
        lhs = text[:col - 1]
        m = re.search(r"\*\s*\(\s*([A-Za-z_]\w*)", lhs) or re.search(r"([A-Za-z_]\w*)\s*(\[|->|\.)", lhs)
        return m.group(1) if m else None
    return None


def locate(bench_dir, module, function, line, col):
    """The GPUDrano copy's file holding (line, col): preferring a file where
    that line lies inside a definition of the function, then one with an
    array access at that column, then the module's own file."""
    fn = function.split("<")[0].split("(")[0].strip()
    best = None
    for rel in sources(bench_dir):
        ls = lines_of(os.path.join(bench_dir, rel))
        if line > len(ls) or not ls[line - 1].strip():
            continue
        inside = any(a <= line <= b for a, b in definition_ranges(ls, fn))
        name = accessed_at(ls[line - 1], col)
        stem = os.path.splitext(os.path.basename(rel))[0]
        score = inside * 2 + (name is not None) * 3 + (stem == module)
        if score >= 2 and (best is None or score > best[0]):
            best = (score, rel, ls[line - 1], name)
    return best


def map_to_rodinia(rod_dir, rel, text, line):
    """Rodinia's (file, line) of the GPUDrano copy's statement `text`."""
    want = " ".join(text.split())
    cands = [r for r in sources(rod_dir) if r == rel] or [
        r for r in sources(rod_dir) if os.path.basename(r) == os.path.basename(rel)]
    best = None
    for r in cands:
        for i, t in enumerate(lines_of(os.path.join(rod_dir, r)), 1):
            if " ".join(t.split()) == want and want:
                d = abs(i - line)
                if best is None or d < best[0]:
                    best = (d, r, i)
    return (best[1], best[2]) if best else None


def run_cudalog(cudalog, rod_dir, work):
    """Copy the benchmark, add the config, run check; findings and the db."""
    dst = os.path.join(work, "ws")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(rod_dir, dst, symlinks=False,
                    ignore=shutil.ignore_patterns("*.o", "*.tar", "*.tar.gz", "data", ".cudalog"))
    with open(os.path.join(dst, "cudalog.toml"), "w") as f:
        f.write("[cost]\nsector_bytes = 128\n")
    db = os.path.join(work, "ws.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    p = subprocess.run([cudalog, "check", dst, "--format", "json", "--db", db],
                       capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"cudalog check {rod_dir} failed ({p.returncode}): {p.stderr[-2000:]}")
    return json.loads(p.stdout or "[]"), db


def access_bytes(db, rel, line, name):
    c = sqlite3.connect(db)
    rows = c.execute(
        "SELECT a.array, a.access_bytes, a.space FROM accesses a JOIN functions fn ON a.function_id = fn.id "
        "JOIN files fi ON fn.file_id = fi.id WHERE fi.path = ? AND a.line = ?", (rel, line)).fetchall()
    c.close()
    sizes = [b for (arr, b, sp) in rows if (arr == name or name == "?") and b and sp != "shared"]
    if sizes:
        return max(sizes), True
    return 4, False


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cudalog", default=os.path.join(here, "..", "target", "release", "cudalog"))
    ap.add_argument("--gpudrano", default="/work/corpora/gpudrano")
    ap.add_argument("--rodinia", default="/work/corpora/rodinia_3.1/cuda")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    results = read_results(args.gpudrano)
    # Confirmed lines: (bench, rodinia file, rodinia line) -> details.
    confirmed = {}
    unmapped = []
    for (bench, module, function, line, col), avg in sorted(results.items()):
        gd_dir = os.path.join(args.gpudrano, "Results", bench)
        loc = locate(gd_dir, module, function, line, col)
        rod_dir = os.path.join(args.rodinia, BENCH_DIRS.get(bench, bench))
        if loc is None or not os.path.isdir(rod_dir):
            unmapped.append((bench, module, line, col, "no source line"))
            continue
        _, rel, text, name = loc
        name = name or "?"
        mapped = map_to_rodinia(rod_dir, rel, text, line)
        if mapped is None:
            unmapped.append((bench, rel, line, col, "statement not found in Rodinia"))
            continue
        entry = confirmed.setdefault((bench, mapped[0], mapped[1]), {
            "text": text.strip(), "function": function, "accesses": {}})
        entry["accesses"][name] = max(entry["accesses"].get(name, 0.0), avg)

    by_bench = {}
    for (bench, rel, line) in confirmed:
        by_bench.setdefault(bench, []).append((rel, line))
    hits, misses, not_confirmed = [], [], []
    with tempfile.TemporaryDirectory(prefix="gpudrano_eval_") as work:
        for bench in sorted(by_bench):
            rod_dir = os.path.join(args.rodinia, BENCH_DIRS.get(bench, bench))
            findings, db = run_cudalog(args.cudalog, rod_dir, work)
            for rel, line in sorted(by_bench[bench]):
                e = confirmed[(bench, rel, line)]
                over = {}
                for name, avg in e["accesses"].items():
                    k, known = access_bytes(db, rel, line, name)
                    need = max(1, math.ceil(32 * k / 128))
                    if avg > need + 1e-9:
                        over[name] = (avg, need, k, known)
                row = (bench, rel, line, e["text"][:70], over or e["accesses"])
                if not over:
                    not_confirmed.append(row)
                    continue
                here_f = [f for f in findings if f["file"] == rel and f["line"] == line]
                ours = [f for f in here_f if f["rule"] == "uncoalesced-global"
                        and (f["facts"].get("array") in over or "?" in over)]
                if ours:
                    hits.append(row + (ours[0]["message"],))
                else:
                    other = "; ".join(sorted({f"{f['rule']}: {f['message'][:110]}" for f in here_f
                                              if f["rule"] in ("uncoalesced-global", "misaligned-global")}))
                    misses.append(row + (other or "no finding",))

    def show(tag, r):
        bench, rel, line, text, acc = r[:5]
        detail = ", ".join(f"{n} avg {v[0]:.2f} > {v[1]} ({v[2]} B)" if isinstance(v, tuple)
                           else f"{n} avg {v:.2f}" for n, v in sorted(acc.items()))
        print(f"{tag:5} {bench}/{rel}:{line}  `{text}`  [{detail}]")
        if len(r) > 5 and (tag == "MISS" or args.verbose):
            print(f"        ours: {r[5][:200]}")

    for r in hits:
        show("HIT", r)
    for r in misses:
        show("MISS", r)
    for r in not_confirmed:
        show("WITHIN", r)
    for u in unmapped:
        print("UNMAPPED", u)
    total = len(hits) + len(misses)
    pct = 100.0 * len(hits) / total if total else 0.0
    print(f"\nGPUDrano lines listed: {len(confirmed)} ({len(not_confirmed)} within what their bytes need, "
          f"{len(unmapped)} unmapped); confirmed uncoalesced: {total}")
    print(f"uncoalesced-global reports {len(hits)} of {total} ({pct:.0f}%)")


if __name__ == "__main__":
    main()
