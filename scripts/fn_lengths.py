#!/usr/bin/env python3
"""Lists the longest Rust functions of a tree: `fn` items found in .rs files, measured in
lines from the `fn` keyword's line to the line of the brace that closes the body.

Brace matching skips line and block comments (nested), string literals (with escapes), raw
strings (r"…", r#"…"#, any number of #), byte strings, and character literals, well enough for
this codebase; lifetimes ('a) are told apart from char literals. Functions without a body
(trait declarations ending in `;`) are skipped. Standard library only.

Usage: scripts/fn_lengths.py [ROOT] [--top N]   (default: ., 10)
Prints `LINES  path:line  name`, longest first. The `target/` directories are skipped.
"""

import os
import re
import sys


def code_mask(src):
    """`src` with comments and literal contents replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif re.match(r'b?r#*"', src[i:i + 300]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', src[i:])
            close = '"' + m.group(2)
            j = src.find(close, i + len(m.group(0)))
            j = n if j < 0 else j + len(close)
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == '"' or (c == "b" and src.startswith('b"', i) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|[^\\'])'", src[i:i + 16])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime or label
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def functions(path):
    src = open(path, encoding="utf-8", errors="replace").read()
    code = code_mask(src)
    line_of = [0] * (len(code) + 1)
    ln = 1
    for k, ch in enumerate(code):
        line_of[k] = ln
        if ch == "\n":
            ln += 1
    line_of[len(code)] = ln
    for m in FN.finditer(code):
        # The body starts at the first `{` at bracket depth 0 after the signature; a `;` first
        # means a declaration without a body.
        j, depth = m.end(), 0
        while j < len(code):
            ch = code[j]
            if ch in "([<":
                depth += 1
            elif ch in ")]>":
                # `->` is not a closing angle bracket.
                if not (ch == ">" and code[j - 1] == "-"):
                    depth = max(0, depth - 1)
            elif ch == ";" and depth == 0:
                j = -1
                break
            elif ch == "{" and depth == 0:
                break
            j += 1
        if j < 0 or j >= len(code):
            continue
        k, depth = j, 0
        while k < len(code):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        start, end = line_of[m.start()], line_of[min(k, len(code))]
        yield end - start + 1, start, m.group(1)


def main():
    args = sys.argv[1:]
    top = 10
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    root = args[0] if args else "."
    rows = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in ("target", ".git"))
        for f in sorted(files):
            if f.endswith(".rs"):
                p = os.path.join(d, f)
                for lines, line, name in functions(p):
                    rows.append((lines, os.path.relpath(p, root), line, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    for lines, p, line, name in rows[:top]:
        print(f"{lines:5}  {p}:{line}  {name}")


if __name__ == "__main__":
    main()
