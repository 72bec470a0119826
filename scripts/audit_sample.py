#!/usr/bin/env python3
"""Audit support for `cudalog check` on the three corpora (issues 8 and 11).

Usage:
  scripts/audit_sample.py sample [--seed S] [--n N]   # stratified random sample
  scripts/audit_sample.py sync                        # every race / barrier finding
  scripts/audit_sample.py counts                      # findings per corpus and rule
Options: --bin target/release/cudalog  --corpora /work/corpora  --cache DIR
         --rules R1,R2 (sample only these rules' findings)
         (reuse the JSON of an earlier run in DIR instead of running check)

`check DIR --db /tmp/X.db --format json` runs once per corpus with a fresh
database and no configuration (so only rules that are on by default count).
Suppressed findings are left out. The sample is stratified by (corpus, rule):
every stratum with findings gets one draw, the rest of N is shared in
proportion to the strata's sizes (largest remainder), and each stratum is
drawn with random.Random(seed) from its findings sorted by (file, line, col).
"""
import argparse
import collections
import json
import os
import random
import subprocess
import tempfile

CORPORA = [
    ("rodinia", "rodinia_3.1/cuda"),
    ("cuda-samples", "cuda-samples"),
    ("llm.c", "llm.c"),
]
SYNC = ("shared-race", "global-race", "barrier-divergence")


def run(binary, root, cache):
    out = {}
    for name, rel in CORPORA:
        path = os.path.join(cache, f"{name}.json") if cache else None
        if path and os.path.exists(path):
            with open(path) as fh:
                out[name] = json.load(fh)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            res = subprocess.run(
                [binary, "check", os.path.join(root, rel), "--db",
                 os.path.join(tmp, "x.db"), "--format", "json"],
                capture_output=True, check=False)
        found = json.loads(res.stdout)
        if path:
            os.makedirs(cache, exist_ok=True)
            with open(path, "w") as fh:
                json.dump(found, fh)
        out[name] = found
    for name in out:
        out[name] = [f for f in out[name] if not f.get("suppressed")]
    return out


def key(f):
    return (f["file"], f["line"], f["col"], f["rule"])


def sample(found, seed, n):
    strata = collections.OrderedDict()
    for name, _ in CORPORA:
        by_rule = collections.defaultdict(list)
        for f in found[name]:
            by_rule[f["rule"]].append(f)
        for rule in sorted(by_rule):
            strata[(name, rule)] = sorted(by_rule[rule], key=key)
    total = sum(len(v) for v in strata.values())
    alloc = {k: 1 for k in strata}
    rest = n - len(strata)
    if rest > 0:
        shares = {k: rest * len(v) / total for k, v in strata.items()}
        for k in strata:
            alloc[k] += int(shares[k])
        left = n - sum(alloc.values())
        order = sorted(strata, key=lambda k: -(shares[k] - int(shares[k])))
        for k in order[:left]:
            alloc[k] += 1
    rng = random.Random(seed)
    picked = []
    for k, items in strata.items():
        m = min(alloc[k], len(items))
        for f in rng.sample(items, m):
            picked.append((k[0], f))
    return picked, {k: (len(v), min(alloc[k], len(v))) for k, v in strata.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["sample", "sync", "counts"])
    ap.add_argument("--bin", default="target/release/cudalog")
    ap.add_argument("--corpora", default="/work/corpora")
    ap.add_argument("--cache")
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--rules", help="comma-separated rules to keep (default: all)")
    a = ap.parse_args()
    found = run(a.bin, a.corpora, a.cache)
    if a.rules:
        keep = set(a.rules.split(","))
        found = {k: [f for f in v if f["rule"] in keep] for k, v in found.items()}
    if a.mode == "counts":
        for name, _ in CORPORA:
            c = collections.Counter((f["rule"], f["severity"]) for f in found[name])
            print(f"{name}: {len(found[name])} findings (not suppressed)")
            for (rule, sev), k in sorted(c.items()):
                print(f"  {rule:28} {sev:8} {k}")
    elif a.mode == "sync":
        for name, _ in CORPORA:
            for f in sorted((f for f in found[name] if f["rule"] in SYNC), key=key):
                print(f"{name}\t{f['file']}:{f['line']}\t{f['rule']}\t{f['severity']}\t"
                      f"{f['function']}\t{f['message']}")
    else:
        picked, strata = sample(found, a.seed, a.n)
        print(f"# seed {a.seed}, n {a.n}; strata (corpus, rule): findings, drawn")
        for (c, r), (tot, m) in strata.items():
            print(f"#   {c:13} {r:28} {tot:5} {m:3}")
        for i, (name, f) in enumerate(picked, 1):
            print(f"{i}\t{name}\t{f['file']}:{f['line']}\t{f['rule']}\t{f['severity']}\t"
                  f"{f['function']}\t{f['message']}")


if __name__ == "__main__":
    main()
