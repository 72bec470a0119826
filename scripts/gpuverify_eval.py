#!/usr/bin/env python3
"""Run cudalog on GPUVerify's CUDA test suite (testsuite/CUDA of
github.com/mc-imperial/gpuverify, extracted outside this repository) and
compare with the suite's labels.

Each test directory holds a kernel.cu whose first lines are `//pass` or
`//xfail:REASON`, then the GPUVerify flags (`--blockDim=...`,
`--gridDim=...`) and, for failing tests, the expected error. Each test runs
alone in a temporary workspace whose cudalog.toml sets `[launch] block` and
`grid` from those flags.

Labels: a failing test is a *race* test when its header names a race (race,
racy, "Write by thread") or, for the few headers that name nothing, when the
kernel's only defect is a race (listed in RACE_BY_READING with the reason);
the cooperative-groups divergence tests are *barrier-divergence* tests.

usage: scripts/gpuverify_eval.py SUITE_DIR [--cudalog BIN] [-v]
"""
import json, os, re, shutil, subprocess, sys, tempfile, time

RACE_RULES = {"shared-race", "global-race"}
BARRIER_RULES = {"barrier-divergence"}
# Failing tests whose header names no error; read by hand: each is a race.
RACE_BY_READING = {
    "fail_tests/race_on_shared": "every thread writes A[0]",
    "fail_tests/shared_int": "every thread writes the __shared__ scalar",
    "pointeranalysistests/testbasicaliasing": "every thread writes p[100]",
    "globalarray/fail": "threads whose A[i] != i all write p[0]",
}
# Session 5: `warpsync/equality_abstraction_issue` was listed above until
# then ("every thread writes A[0..2] and A[tid]"), but its header's error is
# the `__assert` at kernel.cu:10: under its own `--warp-sync=32` (one warp)
# and `--equality-abstraction`, lines 6-8 store the same constant from every
# lane in one lock-step statement (benign) and `A[tid] = 0` runs after them,
# so its defect is the failed assertion, not a race. It counts as "other".
DIVERGENCE = re.compile(r"cooperative_groups/fail/(block_)?divergence")


def dims(flag, header):
    m = re.search(r"--" + flag + r"=\[?([0-9, ]+)\]?", header)
    if not m:
        return None
    v = [int(x) for x in m.group(1).replace(" ", "").split(",") if x]
    return (v + [1, 1, 1])[:3]


def label(rel, header):
    first = header.splitlines()[0].strip()
    if first.startswith("//pass"):
        return "pass"
    if not first.startswith("//xfail:NOT_ALL_VERIFIED"):
        return "other"
    if DIVERGENCE.search(rel):
        return "divergence"
    if re.search(r"race|racy|Write by thread", header, re.I) or rel in RACE_BY_READING:
        return "race"
    return "other"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    verbose = "-v" in sys.argv
    binary = os.path.join(os.path.dirname(__file__), "..", "target", "release", "cudalog")
    if "--cudalog" in sys.argv:
        binary = sys.argv[sys.argv.index("--cudalog") + 1]
        args.remove(binary)
    suite = args[0]
    tests = []
    for root, _, files in os.walk(suite):
        if "kernel.cu" in files:
            tests.append(os.path.relpath(root, suite))
    tests.sort()
    counts = {}
    rows = []
    start = time.time()
    for rel in tests:
        path = os.path.join(suite, rel, "kernel.cu")
        text = open(path, encoding="utf-8", errors="replace").read()
        header = "\n".join(text.splitlines()[:6])
        lab = label(rel, header)
        block = dims("blockDim", header) or [256, 1, 1]
        # GPUVerify accepts blocks beyond CUDA's limits (--blockDim=2048);
        # cudalog.toml rejects them, so clamp to 1024 threads in all.
        block = [min(block[0], 1024), min(block[1], 1024), min(block[2], 64)]
        while block[0] * block[1] * block[2] > 1024:
            i = max(range(3), key=lambda k: block[k])
            block[i] = max(1, block[i] // 2)
        grid = dims("gridDim", header) or [1, 1, 1]
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(path, os.path.join(d, "kernel.cu"))
            for extra in os.listdir(os.path.join(suite, rel)):
                if extra.endswith((".h", ".cuh")):
                    shutil.copy(os.path.join(suite, rel, extra), d)
            with open(os.path.join(d, "cudalog.toml"), "w") as t:
                t.write("[launch]\nblock = %s\ngrid = %s\n" % (block, grid))
                # GPUVerify's --warp-sync: lanes of a warp in lock-step.
                if "--warp-sync" in header:
                    t.write("warp_lockstep = true\n")
            p = subprocess.run([binary, "check", d, "--format", "json"],
                               capture_output=True, text=True)
            try:
                found = json.loads(p.stdout or "[]")
            except json.JSONDecodeError:
                found = []
                print("bad output for", rel, p.stderr[:300], file=sys.stderr)
        rules = sorted({f["rule"] for f in found if not f.get("suppressed")})
        race = bool(RACE_RULES & set(rules))
        barrier = bool(BARRIER_RULES & set(rules))
        key = (lab, race, barrier)
        counts[key] = counts.get(key, 0) + 1
        rows.append((rel, lab, rules, found))
    elapsed = time.time() - start
    def n(lab, pred):
        return sum(v for (l, r, b), v in counts.items() if l == lab and pred(r, b))
    total = {l: n(l, lambda r, b: True) for l in ("pass", "race", "divergence", "other")}
    print("tests: %d (pass %d, race %d, barrier divergence %d, other failures %d)" % (
        len(tests), total["pass"], total["race"], total["divergence"], total["other"]))
    print("race tests reported as races: %d of %d" % (n("race", lambda r, b: r), total["race"]))
    # The strongest severity of the race findings of each race test found.
    rank = {"error": 3, "warning": 2, "note": 1}
    by_sev = {}
    for rel, lab, rules, found in rows:
        sevs = [rank.get(f["severity"], 0) for f in found
                if f["rule"] in RACE_RULES and not f.get("suppressed")]
        if lab == "race" and sevs:
            top = {3: "error", 2: "warning", 1: "note"}.get(max(sevs), "?")
            by_sev[top] = by_sev.get(top, 0) + 1
    print("  of which, by strongest severity: %s" % ", ".join(
        "%s %d" % (k, by_sev.get(k, 0)) for k in ("error", "warning", "note")))
    print("divergence tests reported as barrier-divergence: %d of %d" % (
        n("divergence", lambda r, b: b), total["divergence"]))
    print("passing tests with a race or barrier error: %d of %d" % (
        n("pass", lambda r, b: r or b), total["pass"]))
    print("wall time: %.1f s" % elapsed)
    for rel, lab, rules, found in rows:
        hit = bool((RACE_RULES | BARRIER_RULES) & set(rules))
        miss = (lab in ("race", "divergence") and not hit) or (lab == "pass" and hit)
        if miss or verbose:
            tag = "MISSED" if lab != "pass" and miss else ("FALSE" if miss else "ok")
            print("%-6s %-10s %s %s" % (tag, lab, rel, ",".join(rules)))
            if verbose or lab == "pass":
                for f in found:
                    if f["rule"] in RACE_RULES | BARRIER_RULES:
                        print("         %s:%d %s %s" % (f["rule"], f["line"], f["severity"], f["message"][:300]))


if __name__ == "__main__":
    main()
