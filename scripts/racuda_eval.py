#!/usr/bin/env python3
"""cudalog's resource bounds against RaCUDA's ground truth and RaCUDA's own bounds.

Usage:
    scripts/racuda_eval.py [--truth /work/shared/eval/racuda/truth.json]
                           [--racuda /work/corpora/racuda] [--cudalog target/release/cudalog]
                           [--csv docs/eval/racuda_bounds.csv] [--all]

For every truth record (primary records with their source file, unless --all) it
runs `cudalog bounds` on the kernel's file as it is (copied alone into a
temporary workspace, RaCUDA's dialect unchanged) with the record's block size,
evaluates the bound at the record's sizes and compares it with the measured
count: the whole-launch bound for sectors and conflicts (Nsight Compute counts
of the whole launch), the per-warp bound for divwarps and steps (RaCUDA's
simulator, one warp). RaCUDA's bound is the record's `racuda_bound_value`
(sectors, conflicts: per-warp bound times the paper's warp count) or
`racuda_bound_per_warp`. Our analysis time is the wall-clock time of the
`cudalog bounds` process for that kernel (parse, facts, all four metrics);
RaCUDA's is `racuda_time_s` (per metric). Prints Markdown tables; writes
every record to the CSV.

Records whose launch block is unknown (histogram's ncu records: 240 blocks,
blockDim not in the artifact) are evaluated with the symbolic bound (no
`--block`) at every assumed block size of ASSUMED_BLOCKS: such a record is
sound only if the bound is sound at every one of them; its `ours` value and
ratio are those at the SDK's usual size (SDK_BLOCK), and the CSV also gives
the smallest and largest ratio over the assumed sizes and the size of the
smallest. This is an assumption, printed as such.
"""

import argparse
import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

METRICS = ["sectors", "conflicts", "divwarps", "steps"]

# Block sizes assumed where the record's block is unknown: every multiple of
# the warp from 32 to 1024, and the CUDA samples' usual 192.
ASSUMED_BLOCKS = sorted(set(range(32, 1025, 32)) | {192})
SDK_BLOCK = 192


def ev(expr, env):
    """Evaluate a cudalog bound expression (+ - * /, max, min, ceil, floor, log2)."""
    py = expr
    for d in "xyz":
        py = py.replace(f"blockDim.{d}", f"blockDim_{d}").replace(f"gridDim.{d}", f"gridDim_{d}")

    def log2(x):
        return math.log2(x) if x > 0 else 0.0

    def ceil(x):
        r = round(x)
        return r if abs(x - r) <= 1e-9 * max(1.0, abs(x)) else math.ceil(x)

    def floor(x):
        r = round(x)
        return r if abs(x - r) <= 1e-9 * max(1.0, abs(x)) else math.floor(x)

    scope = {"max": max, "min": min, "ceil": ceil, "floor": floor, "log2": log2}
    scope.update(env)
    return float(eval(py, {"__builtins__": {}}, scope))  # noqa: S307 (our own output)


def run_bounds(cudalog, src, kernel, block):
    with tempfile.TemporaryDirectory() as d:
        name = os.path.basename(src).rstrip("~")
        if not name.endswith(".cu"):
            name += ".cu"
        shutil.copy(src, os.path.join(d, name))
        cmd = [cudalog, "bounds", d, "--kernel", kernel, "--format", "json"]
        if block:
            cmd += ["--block", ",".join(str(x) for x in block)]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        ms = (time.perf_counter() - t0) * 1000.0
        if p.returncode != 0:
            return None, ms, p.stderr.strip()
        recs = json.loads(p.stdout)
        return {(r["metric"], r["scope"]): r for r in recs}, ms, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", default="/work/shared/eval/racuda/truth.json")
    ap.add_argument("--racuda", default="/work/corpora/racuda")
    ap.add_argument("--cudalog", default="target/release/cudalog")
    ap.add_argument("--csv", default="docs/eval/racuda_bounds.csv")
    ap.add_argument("--all", action="store_true", help="secondary records too")
    a = ap.parse_args()
    truth = json.load(open(a.truth))
    recs = [
        r
        for r in truth["records"]
        if r["source_available"] and (a.all or r["primary"])
    ]
    cache = {}
    rows = []
    for r in recs:
        p = r["params"]
        block = p.get("blockDim")
        key = (r["source_file"], r["kernel"], tuple(block) if block else None)
        if key not in cache:
            cache[key] = run_bounds(a.cudalog, os.path.join(a.racuda, r["source_file"]), r["kernel"], block)
        got, ms, err = cache[key]
        scope = "whole_launch" if r["measured_scope"] == "whole_launch" else "per_warp"
        env = {k: v for k, v in p.items() if isinstance(v, (int, float))}
        for i, d in enumerate("xyz"):
            if block:
                env[f"blockDim_{d}"] = block[i]
            if p.get("gridDim"):
                env[f"gridDim_{d}"] = p["gridDim"][i]
        ours, status, reason = None, "error", err
        m = r["measured"]
        # Unknown block: the symbolic bound at every assumed block size.
        assumed = {}
        if got is not None:
            b = got.get((r["metric"], scope))
            status, reason = b["status"], b["reason"]
            if b["bound"] is not None:
                try:
                    if block:
                        ours = ev(b["bound"], env)
                    else:
                        for bx in ASSUMED_BLOCKS:
                            e2 = dict(env, blockDim_x=bx, blockDim_y=1, blockDim_z=1)
                            assumed[bx] = ev(b["bound"], e2)
                        ours = assumed[SDK_BLOCK]
                except Exception as e:  # a name without a value (unknown launch)
                    status, reason = "not_evaluated", f"{e}"
                    assumed = {}
        a_ratios = {bx: v / m for bx, v in assumed.items()} if (assumed and m) else {}
        worst_block = min(a_ratios, key=a_ratios.get) if a_ratios else None
        rac = r["racuda_bound_value"] if scope == "whole_launch" else r["racuda_bound_per_warp"]
        rows.append(
            {
                "id": r["id"],
                "benchmark": r["benchmark"],
                "metric": r["metric"],
                "size": ",".join(f"{k}={v}" for k, v in (r.get("key_params") or {}).items()),
                "measured": m,
                "ours": ours,
                "ours_status": status,
                "ours_ratio": (ours / m) if (ours is not None and m) else None,
                "ours_sound": (
                    all(v + 1e-6 >= m for v in assumed.values())
                    if assumed
                    else (ours + 1e-6 >= m) if ours is not None else None
                ),
                "assumed_block": (f"{SDK_BLOCK} (unknown; sound at all {len(assumed)} assumed)"
                                  if assumed and all(v + 1e-6 >= m for v in assumed.values())
                                  else f"{SDK_BLOCK} (unknown; UNSOUND at some)" if assumed else ""),
                "ours_ratio_min_blocks": min(a_ratios.values()) if a_ratios else None,
                "ours_ratio_max_blocks": max(a_ratios.values()) if a_ratios else None,
                "worst_block": worst_block,
                "ours_ms": ms,
                "racuda": rac,
                "racuda_ratio": (rac / m) if (rac is not None and m) else None,
                "racuda_sound": (rac + 1e-6 >= m) if rac is not None else None,
                "racuda_s": r["racuda_time_s"],
                "reason": reason,
            }
        )
    os.makedirs(os.path.dirname(a.csv) or ".", exist_ok=True)
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)

    def fmt(x, nd=2):
        return "–" if x is None else f"{x:.{nd}f}"

    def summary(rs, who):
        bounded = [x for x in rs if x[who] is not None]
        sound = [x for x in bounded if x[f"{who}_sound"]]
        ratios = [x[f"{who}_ratio"] for x in bounded if x["measured"]]
        zero = [x for x in bounded if not x["measured"]]
        exact0 = sum(1 for x in zero if x[who] == 0)
        return (
            f"{len(bounded)}/{len(rs)}",
            f"{len(sound)}/{len(bounded)}",
            fmt(statistics.median(ratios)) if ratios else "–",
            fmt(max(ratios)) if ratios else "–",
            f"{exact0}/{len(zero) - exact0}",
        )

    print("| metric | records | cudalog bounded | sound | median ratio | max ratio | zero truth exact/over "
          "| RaCUDA bounded | sound | median ratio | max ratio | zero truth exact/over |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for met in METRICS:
        rs = [x for x in rows if x["metric"] == met]
        if not rs:
            continue
        o, q = summary(rs, "ours"), summary(rs, "racuda")
        print(f"| {met} | {len(rs)} | " + " | ".join(o) + " | " + " | ".join(q) + " |")
    print()
    print("| benchmark | metric | sizes | cudalog median / max ratio | RaCUDA median / max ratio "
          "| cudalog ms (all metrics) | RaCUDA s (this metric) |")
    print("|---|---|---|---|---|---|---|")
    groups = defaultdict(list)
    for x in rows:
        groups[(x["benchmark"], x["metric"])].append(x)
    for (bm, met), rs in sorted(groups.items()):
        def mm(who):
            v = [x[f"{who}_ratio"] for x in rs if x[f"{who}_ratio"] is not None]
            if not v:
                nb = sum(1 for x in rs if x[who] is None)
                if nb:
                    return f"no bound ({nb})"
                return "0 = 0" if all(x[who] == 0 for x in rs) else "over on 0"
            return f"{statistics.median(v):.2f} / {max(v):.2f}"
        ms = statistics.median(x["ours_ms"] for x in rs)
        print(f"| {bm} | {met} | {len(rs)} | {mm('ours')} | {mm('racuda')} | {ms:.0f} | {fmt(rs[0]['racuda_s'], 3)} |")
    unk = [x for x in rows if x["assumed_block"]]
    if unk:
        print()
        print(f"Unknown launch block (assumption): the symbolic bound at blockDim.x = 32, 64, …, 1024 and "
              f"{SDK_BLOCK} ({len(ASSUMED_BLOCKS)} sizes), gridDim from the record; sound = sound at every size.")
        print()
        print("| benchmark | metric | sizes | sound at every block size | ratio at "
              f"{SDK_BLOCK} (median / max) | smallest ratio over the sizes (block) | largest ratio over the sizes |")
        print("|---|---|---|---|---|---|---|")
        ug = defaultdict(list)
        for x in unk:
            ug[(x["benchmark"], x["metric"])].append(x)
        for (bm, met), rs in sorted(ug.items()):
            snd = sum(1 for x in rs if x["ours_sound"])
            at = [x["ours_ratio"] for x in rs if x["ours_ratio"] is not None]
            lo = min(rs, key=lambda x: x["ours_ratio_min_blocks"] or math.inf)
            hi = max(x["ours_ratio_max_blocks"] or 0 for x in rs)
            print(f"| {bm} | {met} | {len(rs)} | {snd}/{len(rs)} | "
                  f"{statistics.median(at):.2f} / {max(at):.2f} | "
                  f"{fmt(lo['ours_ratio_min_blocks'])} ({lo['worst_block']}) | {hi:.2f} |")
    bad = [x for x in rows if x["ours_sound"] is False]
    print()
    print(f"cudalog soundness violations: {len(bad)}")
    for x in bad:
        print(f"- {x['id']}: bound {x['ours']} < measured {x['measured']}")
    nb = [x for x in rows if x["ours"] is None]
    print(f"cudalog records without a bound value: {len(nb)}")
    for x in nb[:20]:
        print(f"- {x['id']}: {x['ours_status']} ({x['reason']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
