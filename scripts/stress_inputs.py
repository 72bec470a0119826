#!/usr/bin/env python3
"""Generate the hostile inputs of issue 8, run the release binary on each
under `/usr/bin/time -v`, and print a Markdown table: wall time, peak RSS,
exit status and the diagnostics the run left (code: count).

Usage: scripts/stress_inputs.py [--bin target/release/cudalog] [--keep DIR]

Every input is written by this script (no corpus code). Limits checked
(issue 8): each run <= 10 s and <= 500 MB peak RSS; the script exits 1 when
one is exceeded.
"""
import argparse, os, re, shutil, stat, subprocess, sys, tempfile

KERNEL = """__global__ void k{i}(float* a, int n) {{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) a[j] = a[j] * 2.0f + {i};
}}
"""


def gen_self_bomb(d):
    w(d, "k.cu", "#define X X X X\n__global__ void k(float* a) {\n"
      "  __shared__ float s[X];\n  a[threadIdx.x] = s[0];\n}\n")


def gen_nested_bomb(d):
    s = "#define A0 1\n"
    for i in range(1, 14):
        p = f"A{i-1}"
        s += f"#define A{i} ({p} + {p} + {p} + {p})\n"
    s += "__global__ void k(float* a) {\n  __shared__ float s[A13];\n  a[threadIdx.x] = s[A13 - 1];\n}\n"
    w(d, "k.cu", s)


def huge_text(mb, errors):
    """About `mb` MB of kernels, with a comment block and (optionally) a
    syntax error every 50 kernels (error recovery all along the file)."""
    parts, size, i = [], 0, 0
    while size < mb << 20:
        t = KERNEL.format(i=i)
        if i % 50 == 0:
            t = "// generated block %d\n// second comment line\n" % i + t
        if errors and i % 50 == 25:
            t += "int broken%d = (1 + ;\n" % i
        parts.append(t)
        size += len(t)
        i += 1
    return "".join(parts)


def gen_huge_default(d):
    w(d, "huge.cu", huge_text(50, True))


def gen_huge_raised(d):
    w(d, "huge.cu", huge_text(50, True))
    w(d, "cudalog.toml", "[index]\nmax_file_bytes = 100000000\n")


def gen_half_saved(d):
    w(d, "k.cu", KERNEL.format(i=0) + "__global__ void late(float* a) { a[0] = 1; " + "{(" * 8)


def gen_unreadable(d):
    w(d, "ok.cu", KERNEL.format(i=0))
    w(d, "locked.cu", KERNEL.format(i=1))
    os.chmod(os.path.join(d, "locked.cu"), 0)
    os.makedirs(os.path.join(d, "lockdir"))
    w(d, "lockdir/x.cu", KERNEL.format(i=2))
    os.chmod(os.path.join(d, "lockdir"), 0)
    out = tempfile.mkdtemp()
    w(out, "real.cu", KERNEL.format(i=3))
    os.symlink(os.path.join(out, "real.cu"), os.path.join(d, "link.cu"))
    os.symlink(os.path.join(d, "nowhere.cu"), os.path.join(d, "dangling.cu"))


def w(d, rel, text):
    p = os.path.join(d, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)


def timed(cmd):
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", r.stderr)
    secs = float(wall.group(3)) + 60 * int(wall.group(2)) + 3600 * int(wall.group(1) or 0)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    return r, secs, rss / 1024


def diagnostics(binary, d):
    db = os.path.join(d, ".cudalog", "cudalog.db")
    if not os.path.exists(db):
        return "-"
    r = subprocess.run([binary, "query", "--format", "csv", "--db", db,
                        "SELECT code, count(*) FROM diagnostics GROUP BY code ORDER BY code"],
                       capture_output=True, text=True)
    rows = [l.split(",") for l in r.stdout.splitlines()[1:]]
    return ", ".join(f"{c}: {n}" for c, n in rows) or "none"


def kernels(binary, d):
    db = os.path.join(d, ".cudalog", "cudalog.db")
    r = subprocess.run([binary, "query", "--format", "csv", "--db", db,
                        "SELECT count(*) FROM functions WHERE kind = 'kernel'"],
                       capture_output=True, text=True)
    lines = r.stdout.splitlines()
    return lines[1] if len(lines) > 1 else "-"


CASES = [
    ("`#define X X X X` as an array size", gen_self_bomb),
    ("13 nested macros, each using the previous 4 times", gen_nested_bomb),
    ("50 MB .cu, errors every 50 kernels (default max_file_bytes)", gen_huge_default),
    ("50 MB .cu, errors every 50 kernels (max_file_bytes raised)", gen_huge_raised),
    ("kernel + 8 unclosed `{(` (half-saved file)", gen_half_saved),
    ("unreadable file and directory, symlink, dangling symlink", gen_unreadable),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/cudalog")
    ap.add_argument("--keep")
    a = ap.parse_args()
    binary = os.path.abspath(a.bin)
    root = a.keep or tempfile.mkdtemp(prefix="cudalog-stress-")
    ok = True
    print("| input | wall s | peak RSS MB | exit | kernels | diagnostics |")
    print("|---|---:|---:|---:|---:|---|")
    for n, (label, gen) in enumerate(CASES):
        d = os.path.join(root, f"case{n}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        gen(d)
        r, secs, rss = timed([binary, "index", d])
        diags = diagnostics(binary, d)
        print(f"| {label} | {secs:.2f} | {rss:.0f} | {r.returncode} | {kernels(binary, d)} | {diags} |")
        if secs > 10 or rss > 500 or r.returncode not in (0, 1):
            ok = False
            sys.stderr.write(r.stderr[-2000:])
    # query on an endless result: --limit and --timeout, output closed early.
    d = os.path.join(root, "case0")
    db = os.path.join(d, ".cudalog", "cudalog.db")
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
    for label, extra in [("query endless CTE, --limit 1000000", ["--limit", "1000000"]),
                         ("query endless CTE, --timeout 3", ["--timeout", "3"])]:
        cmd = ["/usr/bin/time", "-v", binary, "query", "--format", "csv", "--db", db] + extra + [endless]
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", r.stderr)
        secs = float(wall.group(3)) + 60 * int(wall.group(2))
        rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) / 1024
        print(f"| {label} | {secs:.2f} | {rss:.0f} | {r.returncode} | - | - |")
        if secs > 10 or rss > 500:
            ok = False
    for dirpath, dirnames, filenames in os.walk(root):
        for x in dirnames + filenames:
            p = os.path.join(dirpath, x)
            if not os.path.islink(p):
                os.chmod(p, stat.S_IRWXU)
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
