#!/usr/bin/env python3
"""Index real CUDA corpora and compare with an independent kernel count.

Usage: scripts/evaluate_index.py [--cudalog target/release/cudalog] NAME=DIR ...

For each corpus: runs `cudalog index DIR --json` pinned to one core
(taskset -c 0 when available), counts `__global__` definitions with
scripts/count_kernels.py (a text-level scan, independent of tree-sitter), and
prints one Markdown row: files, bytes, kernels present, kernels indexed, the
ones missing (path:name), parse-error diagnostics, files with parse errors,
seconds, MB/s, and kernels with at least one recorded access.
"""
import argparse, collections, json, os, shutil, sqlite3, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def ground_truth(directory):
    out = subprocess.run([sys.executable, os.path.join(HERE, "count_kernels.py"), directory],
                         check=True, capture_output=True, text=True).stdout
    c = collections.Counter()
    for line in out.splitlines():
        parts = line.rsplit(":", 2)
        if len(parts) == 3:
            c[(parts[0], parts[2])] += 1
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudalog", default="target/release/cudalog")
    ap.add_argument("corpora", nargs="+", help="NAME=DIR")
    a = ap.parse_args()
    print("| corpus | files | MB | `__global__` defs | indexed as kernel | missing | parse-error diagnostics | files with errors | seconds | MB/s | kernels with accesses |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for spec in a.corpora:
        name, directory = spec.split("=", 1)
        tmp = tempfile.mkdtemp()
        db = os.path.join(tmp, "c.db")
        cmd = [a.cudalog, "index", directory, "--db", db, "--json"]
        if shutil.which("taskset"):
            cmd = ["taskset", "-c", "0"] + cmd
        s = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        con = sqlite3.connect(db)
        got = collections.Counter(
            (p, n) for p, n in con.execute(
                "SELECT f.path, fn.name FROM functions fn JOIN files f ON f.id = fn.file_id WHERE fn.kind = 'kernel'"))
        gt = ground_truth(directory)
        found = sum((gt & got).values())
        missing = gt - got
        err_files = con.execute("SELECT count(*) FROM files WHERE parse_errors > 0").fetchone()[0]
        with_acc = con.execute(
            "SELECT count(*) FROM functions fn WHERE kind = 'kernel' AND EXISTS "
            "(SELECT 1 FROM accesses a WHERE a.function_id = fn.id)").fetchone()[0]
        miss = ", ".join(f"{p}:{n}" for p, n in sorted(missing)) or "—"
        print(f"| {name} | {s['files']} | {s['bytes']/1e6:.2f} | {sum(gt.values())} | {found} | {miss} | "
              f"{s['parse_errors']} | {err_files} | {s['seconds']:.2f} | {s['bytes']/1e6/s['seconds']:.2f} | "
              f"{with_acc} |")
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
