#!/usr/bin/env python3
"""Growth benchmark (issue 7): cold `check` times of two or more trees,
run interleaved and repeated so that a drift in machine load hits every
tree alike.

Usage: scripts/bench_growth.py TREE [TREE ...] [--reps 3] [--cudalog target/release/cudalog]

Each repetition runs `cudalog check TREE --db FRESH --format json` once per
tree, in the order given, each on a fresh database under a temporary
directory. Prints every run (wall s, user+sys CPU s, peak RSS MB), then per
tree the median wall and CPU time, and for each tree after the first the
ratio of its median wall time to the previous tree's (and the ratio within
each repetition: min / median / max). Needs GNU time (/usr/bin/time).
"""
import argparse, os, statistics, subprocess, sys, tempfile, time


def cold(cudalog, tree):
    with tempfile.TemporaryDirectory() as tmp, tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        cmd = ["/usr/bin/time", "-f", "%U %S %M", "-o", tf.name, cudalog, "check", tree,
               "--db", os.path.join(tmp, "c.db"), "--format", "json"]
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.monotonic() - t0
        if r.returncode not in (0, 1):
            sys.exit(f"{' '.join(cmd)} failed: {r.stderr.decode(errors='replace')[-2000:]}")
        u, s, m = tf.read().split()[-3:]
        return wall, float(u) + float(s), int(m) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cudalog", default="target/release/cudalog")
    a = ap.parse_args()
    cudalog = os.path.abspath(a.cudalog)
    trees = [os.path.abspath(t) for t in a.trees]
    runs = {t: [] for t in trees}
    for rep in range(a.reps):
        for t in trees:
            w, c, m = cold(cudalog, t)
            runs[t].append((w, c, m))
            print(f"rep {rep + 1} {os.path.basename(t)}: wall {w:.1f} s, CPU {c:.1f} s, RSS {m:.0f} MB",
                  flush=True)
    print("| tree | wall s (median) | CPU s (median) | RSS MB (max) | wall / previous tree | per-rep ratios min / median / max |")
    print("|---|---:|---:|---:|---:|---|")
    prev = None
    for t in trees:
        ws = [r[0] for r in runs[t]]
        cs = [r[1] for r in runs[t]]
        mw, mc = statistics.median(ws), statistics.median(cs)
        ratio, per = "", ""
        if prev is not None:
            ratio = f"{mw / statistics.median([r[0] for r in runs[prev]]):.2f}"
            rs = sorted(x[0] / y[0] for x, y in zip(runs[t], runs[prev]))
            per = f"{rs[0]:.2f} / {statistics.median(rs):.2f} / {rs[-1]:.2f}"
        print(f"| {os.path.basename(t)} | {mw:.1f} | {mc:.1f} | {max(r[2] for r in runs[t]):.0f} | {ratio} | {per} |")
        prev = t


if __name__ == "__main__":
    main()
