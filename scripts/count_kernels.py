#!/usr/bin/env python3
"""Count `__global__` function definitions in a directory, independently of
tree-sitter: a text scan that strips comments and string literals, skips
preprocessor lines and `#if 0` blocks, and calls a `__global__` a definition
when a `{` follows it (at parenthesis depth 0) before any `;`.

Usage: count_kernels.py DIR [--summary]
Prints `path:line:name` per definition (path relative to DIR), or with
--summary `files=N globals=M`.

It does not evaluate other `#if`s: a kernel in a branch the preprocessor
drops (e.g. `#ifndef X` after `#define X`) is still counted here.
"""
import os, re, sys

EXTS = (".cu", ".cuh", ".h", ".hpp", ".cuhpp")


def strip(src):
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(c + " " * max(0, min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def blank_preprocessor(src):
    lines, out, depth_if0 = src.split("\n"), [], 0
    cont = False
    for line in lines:
        s = line.strip()
        if depth_if0:
            if re.match(r"#\s*(if|ifdef|ifndef)\b", s):
                depth_if0 += 1
            elif re.match(r"#\s*endif\b", s) or (depth_if0 == 1 and re.match(r"#\s*(else|elif)\b", s)):
                depth_if0 -= 1
            out.append("")
            continue
        if cont or s.startswith("#"):
            if re.match(r"#\s*if\s+0\b", s):
                depth_if0 = 1
            cont = line.rstrip().endswith("\\")
            out.append("")
            continue
        out.append(line)
    return "\n".join(out)


def definitions(text):
    s = blank_preprocessor(strip(text))
    for m in re.finditer(r"\b__global__\b", s):
        i, depth = m.end(), 0
        while i < len(s):
            ch = s[i]
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif depth == 0 and ch in "{;":
                break
            i += 1
        if i < len(s) and s[i] == "{":
            header = re.sub(r"__launch_bounds__\s*\([^()]*(\([^()]*\)[^()]*)*\)", " ", s[m.end():i])
            names = re.findall(r"([A-Za-z_]\w*)\s*(?:<[^<>]*>)?\s*\(", header)
            yield s.count("\n", 0, m.start()) + 1, (names[0] if names else "?")


def main():
    root = sys.argv[1]
    files = total = 0
    rows = []
    for dp, dn, fn in os.walk(root):
        dn[:] = sorted(d for d in dn if not d.startswith("."))
        for f in sorted(fn):
            if not f.endswith(EXTS):
                continue
            p = os.path.join(dp, f)
            with open(p, encoding="latin-1") as fh:
                text = fh.read()
            found = list(definitions(text))
            if found:
                files += 1
            for line, name in found:
                total += 1
                rows.append(f"{os.path.relpath(p, root)}:{line}:{name}")
    if "--summary" in sys.argv:
        print(f"files={files} globals={total}")
    else:
        print("\n".join(rows))


if __name__ == "__main__":
    main()
