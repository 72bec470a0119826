#!/usr/bin/env python3
"""Build a large CUDA tree from real corpora for the scale benchmark.

Usage: scripts/scale_tree.py OUT COPIES CORPUS_DIR [CORPUS_DIR ...]
       [--cudalog target/release/cudalog]

OUT/copyK/<corpus name>/... receives copy K (K = 0 .. COPIES-1) of every
CUDA source or header (.cu .cuh .h .hpp .hh .hxx .inl: what cudalog reads) of each corpus.
In copy K every function that the corpus itself defines (names taken from
`cudalog index` of the corpus: kernels, device and host functions) is renamed
to NAME_cK at every whole-word occurrence in that copy's files, so that no two
copies share function names (cross-function lookups then see 1x, 2x, ... more
distinct names, as in a real monorepo). `main`, operators, names starting
with `__` and names shorter than 3 characters keep their spelling.
"""
import argparse, os, re, sqlite3, subprocess, sys, tempfile

EXTS = (".cu", ".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl")
KEEP = {"main"}


def defined_names(cudalog, corpus):
    tmp = tempfile.mkdtemp()
    db = os.path.join(tmp, "c.db")
    subprocess.run([cudalog, "index", corpus, "--db", db, "--json"], check=True,
                   capture_output=True)
    con = sqlite3.connect(db)
    names = {n for (n,) in con.execute("SELECT DISTINCT name FROM functions")}
    return {n for n in names
            if n not in KEEP and not n.startswith("__") and len(n) >= 3
            and re.fullmatch(r"[A-Za-z_]\w*", n)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("copies", type=int)
    ap.add_argument("corpora", nargs="+")
    ap.add_argument("--cudalog", default="target/release/cudalog")
    a = ap.parse_args()
    total_files = total_bytes = 0
    for corpus in a.corpora:
        corpus = os.path.abspath(corpus)
        cname = os.path.basename(corpus.rstrip("/"))
        names = defined_names(a.cudalog, corpus)
        pat = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b") if names else None
        files = []
        for d, dirs, fs in os.walk(corpus):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for f in fs:
                if f.endswith(EXTS):
                    p = os.path.join(d, f)
                    if os.path.islink(p) or not os.path.isfile(p):
                        continue
                    files.append(os.path.relpath(p, corpus))
        for rel in files:
            with open(os.path.join(corpus, rel), "rb") as fh:
                data = fh.read()
            text = data.decode("latin-1")
            for k in range(a.copies):
                t = pat.sub(lambda m: m.group(1) + "_c%d" % k, text) if pat else text
                dst = os.path.join(a.out, "copy%d" % k, cname, rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with open(dst, "wb") as fh:
                    fh.write(t.encode("latin-1"))
                total_files += 1
                total_bytes += len(t)
        print(f"{cname}: {len(files)} files, {len(names)} renamed names", file=sys.stderr)
    print(f"{a.out}: {total_files} files, {total_bytes / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
