#!/usr/bin/env python3
"""Run cudalog on WEFT's examples (examples/ of github.com/lightsighter/Weft,
extracted outside this repository): each .cu file alone in a temporary
workspace (with the headers of its directory), timed, with its peak memory
(ru_maxrss of the child). The block size comes from the kernels' own
`__launch_bounds__`, or from WEFT's run script (`-n N` for saxpy).

Prints, per file: seconds, MiB, and the synchronisation findings (race and
named-barrier rules). The negatives/ kernels are expected to get
named-barrier errors: arrival.cu (arrivals only), deadlock.cu (cyclic wait),
different.cu (count mismatch), over.cu (over-arrival).

usage: scripts/weft_eval.py EXAMPLES_DIR [--cudalog BIN]
"""
import json, os, resource, shutil, subprocess, sys, tempfile, time

SYNC = ("shared-race", "global-race", "barrier-divergence", "analysis-incomplete")
# WEFT's run script gives these thread counts on its command line.
THREADS = {"saxpy_single.cu": 320, "saxpy_double.cu": 384}
EXPECTED = {
    "arrival.cu": "named-barrier-arrive-only",
    "deadlock.cu": "named-barrier-deadlock",
    "different.cu": "named-barrier-count-mismatch",
    "over.cu": "named-barrier-over-arrival",
}


def main():
    ex = [a for a in sys.argv[1:] if not a.startswith("-")][0]
    binary = os.path.join(os.path.dirname(__file__), "..", "target", "release", "cudalog")
    if "--cudalog" in sys.argv:
        binary = sys.argv[sys.argv.index("--cudalog") + 1]
        if binary in sys.argv[1:2]:
            ex = sys.argv[3]
    worst_t, worst_m, ok_neg = 0.0, 0.0, 0
    for sub in sorted(os.listdir(ex)):
        sd = os.path.join(ex, sub)
        if not os.path.isdir(sd):
            continue
        for name in sorted(os.listdir(sd)):
            if not name.endswith(".cu"):
                continue
            with tempfile.TemporaryDirectory() as d:
                for h in os.listdir(sd):
                    if h.endswith((".h", ".cuh")) or h == name:
                        shutil.copy(os.path.join(sd, h), d)
                if name in THREADS:
                    with open(os.path.join(d, "cudalog.toml"), "w") as t:
                        t.write("[launch]\nblock = [%d, 1, 1]\n" % THREADS[name])
                before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                start = time.time()
                p = subprocess.run([binary, "check", d, "--format", "json"],
                                   capture_output=True, text=True)
                secs = time.time() - start
                rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                mib = max(rss, before) / 1024.0
                try:
                    found = json.loads(p.stdout or "[]")
                except json.JSONDecodeError:
                    found = []
                    print("bad output", name, p.stderr[:300])
            sync = [f for f in found if f["rule"] in SYNC or f["rule"].startswith("named-barrier")]
            rules = sorted({f["rule"] for f in sync})
            worst_t = max(worst_t, secs)
            worst_m = max(worst_m, mib)
            tag = ""
            if sub == "negatives":
                good = EXPECTED.get(name) in rules
                ok_neg += good
                tag = "expected %s: %s" % (EXPECTED.get(name), "yes" if good else "NO")
            print("%-10s %-28s %6.2f s %7.1f MiB  %s %s" % (sub, name, secs, mib, ",".join(rules) or "-", tag))
            for f in sync:
                print("      %s:%d %s" % (f["rule"], f["line"], f["message"][:240]))
    print("negatives with the expected error: %d of 4" % ok_neg)
    print("slowest: %.2f s; peak memory (max over runs, ru_maxrss): %.1f MiB" % (worst_t, worst_m))


if __name__ == "__main__":
    main()
