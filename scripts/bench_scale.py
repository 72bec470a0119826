#!/usr/bin/env python3
"""Scale benchmark: cold check, restart, and single-function edits in watch.

Usage: scripts/bench_scale.py TREE [TREE ...] [--cudalog target/release/cudalog]
       [--edits 100] [--seed 7] [--json OUT]

Each TREE is a CUDA source tree (e.g. built by scripts/scale_tree.py). For
each tree, on a fresh database under a temporary directory:

1. cold:    `cudalog check TREE --db DB --format json` from an empty database
            (wall seconds, user+sys CPU seconds, CPU/wall, peak RSS).
2. restart: the same command again, nothing changed.
3. edits:   `cudalog watch TREE --db DB --format json`; then EDITS edits, one
            at a time, each changing one function's body in a .cu file picked
            at random (seeded): the first `threadIdx.x` of the file becomes
            `(threadIdx.x + 0)` and back. For each edit it records the batch's
            own `ms` (from the JSON line: read, re-derive, commit) and the
            wall time from the write to the line's arrival (adds the
            debounce period and the event latency). Reports p50/p95/max and
            the watch process's peak RSS (VmHWM).

The tree is restored at the end. Needs /usr/bin/time (GNU time).
"""
import argparse, json, os, random, re, statistics, subprocess, sys, tempfile, time


def timed(cmd):
    """Run cmd under GNU time; return (wall s, cpu s, peak RSS MB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        t0 = time.monotonic()
        r = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", tf.name] + cmd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.monotonic() - t0
        if r.returncode not in (0, 1):
            sys.exit(f"{' '.join(cmd)} failed: {r.stderr.decode(errors='replace')[-2000:]}")
        u, s, m = tf.read().split()[-3:]
        return wall, float(u) + float(s), int(m) / 1024


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def edit_candidates(tree):
    out = []
    for d, _, files in os.walk(tree):
        if ".cudalog" in d:
            continue
        for f in files:
            if f.endswith(".cu"):
                p = os.path.join(d, f)
                try:
                    t = open(p, encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    continue
                if re.search(r"\bthreadIdx\.x\b", t):
                    out.append(p)
    out.sort()
    return out


def watch_edits(cudalog, tree, db, n, seed):
    files = edit_candidates(tree)
    rng = random.Random(seed)
    proc = subprocess.Popen([cudalog, "watch", tree, "--db", db, "--format", "json",
                             "--debounce-ms", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    def next_event(kind):
        while True:
            line = proc.stdout.readline()
            if not line:
                sys.exit("watch ended early")
            v = json.loads(line)
            if v.get("event") == kind:
                return v
    next_event("ready")
    originals = {}
    batch_ms, wall_ms, rederived, index_ms, rules_ms = [], [], [], [], []
    try:
        for _ in range(n):
            p = rng.choice(files)
            text = open(p, encoding="utf-8").read()
            originals.setdefault(p, text)
            if text == originals[p]:
                new = re.sub(r"\bthreadIdx\.x\b", "(threadIdx.x + 0)", text, count=1)
            else:
                new = originals[p]
            t0 = time.monotonic()
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(new)
            v = next_event("batch")
            wall_ms.append((time.monotonic() - t0) * 1000)
            batch_ms.append(v["ms"])
            index_ms.append(v.get("index_ms", v["ms"]))
            rules_ms.append(v.get("rules_ms", 0.0))
            rederived.append(v["functions_rederived"])
        with open(f"/proc/{proc.pid}/status") as st:
            hwm = next(int(l.split()[1]) for l in st if l.startswith("VmHWM")) / 1024
    finally:
        proc.send_signal(2)
        proc.wait(timeout=600)
        for p, t in originals.items():
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(t)
    return batch_ms, wall_ms, rederived, hwm, index_ms, rules_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--cudalog", default="target/release/cudalog")
    ap.add_argument("--edits", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    cudalog = os.path.abspath(a.cudalog)
    rows = []
    print("| tree | MB | kernels | cold wall s | cold CPU s | CPU/wall | cold RSS MB | restart wall s "
          "| restart RSS MB | commit p50 ms | commit p95 ms | commit max ms | rules p50 ms "
          "| batch p95 ms | edit wall p50 ms | watch RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tree in a.trees:
        tree = os.path.abspath(tree)
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "c.db")
            cmd = [cudalog, "check", tree, "--db", db, "--format", "json"]
            cw, cc, cr = timed(cmd)
            rw, _, rr = timed(cmd)
            import sqlite3
            con = sqlite3.connect(db)
            kernels = con.execute("SELECT COUNT(*) FROM functions WHERE kind = 'kernel'").fetchone()[0]
            mb = (con.execute("SELECT SUM(bytes) FROM files").fetchone()[0] or 0) / 1e6
            con.close()
            bm, wm, rd, hwm, im, ru = watch_edits(cudalog, tree, db, a.edits, a.seed)
        row = dict(tree=tree, mb=mb, kernels=kernels, cold_wall=cw, cold_cpu=cc, cold_rss=cr,
                   restart_wall=rw, restart_rss=rr, edit_p50=pct(im, 50), edit_p95=pct(im, 95),
                   edit_max=max(im), rules_p50=pct(ru, 50), batch_p95=pct(bm, 95),
                   edit_wall_p50=pct(wm, 50), watch_rss=hwm,
                   rederived_mean=statistics.mean(rd))
        rows.append(row)
        print(f"| {os.path.basename(tree)} | {mb:.0f} | {kernels} | {cw:.1f} | {cc:.1f} | {cc / cw:.2f} "
              f"| {cr:.0f} | {rw:.1f} | {rr:.0f} | {row['edit_p50']:.1f} | {row['edit_p95']:.1f} "
              f"| {row['edit_max']:.1f} | {row['rules_p50']:.0f} | {row['batch_p95']:.0f} "
              f"| {row['edit_wall_p50']:.0f} | {hwm:.0f} |", flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
