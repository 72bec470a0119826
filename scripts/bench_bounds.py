#!/usr/bin/env python3
"""Time `cudalog bounds` per kernel on real code bases and count the bounds found.

Usage: scripts/bench_bounds.py [--cudalog target/release/cudalog] DIR [DIR ...]

Runs `cudalog bounds DIR --format json --timing` (symbolic launch, default
per-kernel time limit) and prints, per directory and over all of them, the
number of kernels, the time per kernel (p50, p99, max; symbolic execution and
LP, parsing excluded) and, per metric, the share of kernels with a per-warp
bound.
"""
import argparse
import json
import subprocess
import sys
from collections import defaultdict

METRICS = ["sectors", "conflicts", "divwarps", "steps"]


def pct(v, p):
    v = sorted(v)
    if not v:
        return float("nan")
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudalog", default="target/release/cudalog")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    allk = {}
    print("| corpus | kernels | p50 ms | p99 ms | max ms | " + " | ".join(f"{m} bounded" for m in METRICS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(METRICS))
    reasons = defaultdict(int)
    for d in a.dirs:
        p = subprocess.run([a.cudalog, "bounds", d, "--format", "json", "--timing"], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{d}: {p.stderr.strip()}", file=sys.stderr)
            continue
        ks = {}
        for r in json.loads(p.stdout):
            k = (d, r["file"], r["kernel"])
            e = ks.setdefault(k, {"ms": r["ms"], "ok": {}})
            if r["scope"] == "per_warp":
                e["ok"][r["metric"]] = r["status"] == "ok"
                if r["status"] != "ok":
                    reasons[(r["status"], (r["reason"] or "").split(":")[-1].strip()[:70])] += 1
        allk.update(ks)
        row(d, ks)
    row("all", allk)
    print()
    print("Most frequent reasons for no bound (per-warp records):")
    for (st, why), n in sorted(reasons.items(), key=lambda x: -x[1])[:8]:
        print(f"- {n} × {st}: {why}")


def row(name, ks):
    ms = [k["ms"] for k in ks.values()]
    n = len(ks)
    shares = []
    for m in METRICS:
        ok = sum(1 for k in ks.values() if k["ok"].get(m))
        shares.append(f"{ok}/{n} ({100.0 * ok / max(n, 1):.0f}%)")
    print(f"| {name} | {n} | {pct(ms, 50):.1f} | {pct(ms, 99):.1f} | {max(ms) if ms else 0:.1f} | " + " | ".join(shares) + " |")


if __name__ == "__main__":
    sys.exit(main())
