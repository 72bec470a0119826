#!/usr/bin/env python3
"""Merge the two blind auditors' tables of one audit sample into
docs/eval/audit_SEED.md (issue 8). Usage:
  scripts/audit_merge.py --seed S --sample SAMPLE.tsv --commit C --title T \
      PART_A.md PART_B.md > docs/eval/audit_S.md
Each part is a markdown table `| # | corpus | file:line | rule | severity |
verdict | reason |` (rows in any order) ending with a `DONE:` line; the
verdicts are TRUE, TRUE*, DEBATABLE, FALSE (DEBATABLE counts as not true)."""
import argparse
import collections
import re

ap = argparse.ArgumentParser()
ap.add_argument("--seed", required=True)
ap.add_argument("--sample", required=True)
ap.add_argument("--commit", required=True)
ap.add_argument("--title", required=True)
ap.add_argument("parts", nargs="+")
a = ap.parse_args()

rows = {}
for part in a.parts:
    for line in open(part):
        m = re.match(r"\|\s*(\d+)\s*\|", line)
        if m:
            rows[int(m.group(1))] = line.rstrip("\n")
verdicts = collections.Counter()
for line in rows.values():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    v = cells[5].split()[0] if len(cells) > 5 and cells[5] else "?"
    verdicts[v] += 1
n = len(rows)
true = verdicts["TRUE"] + verdicts["TRUE*"]
strata = [l.rstrip("\n") for l in open(a.sample) if l.startswith("#")]
print(f"# Audit sample, seed {a.seed} ({a.title})\n")
print(f"Seed {a.seed}, n = {n}, drawn with")
print(f"`python3 scripts/audit_sample.py sample --n {n} --seed {a.seed} --bin BIN --cache DIR`")
print("(stratified by corpus and rule; every finding not suppressed, notes included; default configuration, fresh database per corpus).")
print(f"Binary: main at **{a.commit}**. Two blind auditors (rows 1-{n // 2}, {n // 2 + 1}-{n}), who did not see earlier audits,")
print("read each finding in the source with its kernel and launch site(s). Verdicts: TRUE / TRUE* (true, and the message says why it")
print("may not matter) / DEBATABLE (true by the letter but harmless and not said; counts as not true) / FALSE.\n")
print(f"**TRUE {true} of {n} = {round(100 * true / n)} %** ({verdicts['TRUE']} TRUE, {verdicts['TRUE*']} TRUE*); "
      f"DEBATABLE {verdicts['DEBATABLE']}; FALSE {verdicts['FALSE']}.\n")
print("Strata (corpus, rule: findings, drawn):\n\n```")
for s in strata:
    print(s.lstrip("# ").rstrip() if s.startswith("# seed") else s[1:])
print("```\n")
print("| # | corpus | file:line | rule | severity | verdict | reason |")
print("|---|---|---|---|---|---|---|")
for k in sorted(rows):
    print(rows[k])
