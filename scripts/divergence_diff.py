#!/usr/bin/env python3
"""Compare the divergent-branch findings of two `cudalog check --format json`
outputs (issue 8, session 6). Usage:
  scripts/divergence_diff.py BEFORE.json AFTER.json [--show N]
Prints counts by severity and stride-tail flag, then the findings dropped,
added, and changed in severity (file:line, severity, message head)."""
import collections
import json
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
show = 40
if "--show" in sys.argv:
    show = int(sys.argv[sys.argv.index("--show") + 1])
    args = [a for a in args if a != str(show)]
before_path, after_path = args[:2]


def load(path):
    out = {}
    for f in json.load(open(path)):
        if f["rule"] != "divergent-branch" or f.get("suppressed"):
            continue
        out[(f["file"], f["line"], f["col"])] = f
    return out


b, a = load(before_path), load(after_path)
for name, d in (("before", b), ("after", a)):
    c = collections.Counter(
        (f["severity"], "tail" if f["facts"].get("stride_tail") else "branch")
        for f in d.values())
    print(f"{name}: {len(d)} {dict(sorted(c.items()))}")


def line(f):
    return f"{f['file']}:{f['line']} {f['severity']:7} {f['message'][:150]}"


dropped = [b[k] for k in sorted(b.keys() - a.keys())]
added = [a[k] for k in sorted(a.keys() - b.keys())]
changed = [(b[k], a[k]) for k in sorted(a.keys() & b.keys())
           if b[k]["severity"] != a[k]["severity"]]
print(f"dropped {len(dropped)}")
for f in dropped[:show]:
    print("  -", line(f))
print(f"added {len(added)}")
for f in added[:show]:
    print("  +", line(f))
print(f"severity changed {len(changed)}")
for x, y in changed[:show]:
    print(f"  ~ {x['severity']} -> {line(y)}")
