#!/usr/bin/env python3
"""Count `cudalog check` findings per rule and severity on each corpus
(issue 8). Usage: scripts/findings_counts.py [BINARY] [CORPORA_DIR]
Runs `check --format json` with a fresh database per corpus under /tmp."""
import collections
import json
import os
import subprocess
import sys
import tempfile

binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/cudalog"
root = sys.argv[2] if len(sys.argv) > 2 else "/work/corpora"
for corpus in ["llm.c", "rodinia_3.1", "cuda-samples"]:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [binary, "check", os.path.join(root, corpus), "--db",
             os.path.join(tmp, "c.db"), "--format", "json"],
            capture_output=True, check=False)
        found = json.loads(out.stdout)
    counts = collections.Counter((f["rule"], f["severity"]) for f in found)
    print(f"{corpus}: {len(found)} findings")
    for (rule, sev), n in sorted(counts.items()):
        print(f"  {rule:22} {sev:8} {n}")
