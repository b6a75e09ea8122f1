#!/usr/bin/env python3
"""Re-point citations of the documents nrt-emu used before docs/ existed to docs/ sections.

Old citations look like `driver-abi.md §3.4`, `reference neff-isa-nrt.md §7.1`, `ABI §7.2`,
`ISA §11.2`, `reference §6.2`, `DESIGN §5`, `seed 003 §3`, `seed 000 "Stage 3+4"`, `(load
stage S1 of seed 000)`, and bare `§1.3` that continue the last citation of the file. Each is
rewritten to `docs/<page>.md §<n>` through the tables below (docs/README.md explains the
pages). Citations that are already of docs/ pages are left alone, so running the script twice
changes nothing the second time.

Usage: scripts/repoint-citations.py [--check | --self-test] [ROOT]
  ROOT         the workspace root (default: the parent of this script's directory)
  --check      report what would change, write nothing; exit 1 if anything would change
  --self-test  run the built-in examples (EXAMPLES) and exit

It prints, per file, how many citations it re-pointed, then every citation it could not map
(with file and line), and a summary. Only comment and documentation text is touched: the
patterns below do not occur in code.
"""

import os
import re
import sys

# ---------------------------------------------------------------------------------------------
# Mapping tables: old (document, section) -> (docs page, section). A section of None is a
# citation of the whole document. Keys are strings as written after the section sign.

DRIVER_ABI = {
    None: ("driver.md", None),
    "1": ("driver.md", "2"), "1.1": ("driver.md", "2.1"), "1.2": ("driver.md", "2.2"),
    "1.3": ("driver.md", "2.3"),
    "2": ("driver.md", "3"), "2.1": ("driver.md", "3.1"), "2.2": ("driver.md", "3.2"),
    "2.3": ("driver.md", "3.3"), "2.4": ("driver.md", "3.4"), "2.5": ("driver.md", "3.5"),
    "2.6": ("driver.md", "3.6"), "2.7": ("driver.md", "3.7"), "2.8": ("driver.md", "11"),
    "3": ("driver.md", "4"), "3.1": ("driver.md", "4.1"), "3.2": ("driver.md", "4.2"),
    "3.3": ("driver.md", "4.3"), "3.4": ("driver.md", "4.4"), "3.5": ("driver.md", "4.5"),
    "3.6": ("driver.md", "4.6"), "3.7": ("driver.md", "4.7"),
    "4": ("driver.md", "5"), "4.1": ("driver.md", "5.1"), "4.2": ("driver.md", "5.2"),
    "4.3": ("driver.md", "5.3"),
    "5": ("driver.md", "6"),
    "6": ("driver.md", "7"),
    "7": ("driver.md", "8"), "7.1": ("driver.md", "8.1"), "7.2": ("driver.md", "8.2"),
    "7.3": ("driver.md", "8.3"), "7.4": ("driver.md", "8.4"),
    "8": ("driver.md", "9"), "8.1": ("driver.md", "9.1"), "8.2": ("driver.md", "9.2"),
    "8.3": ("driver.md", "9.3"), "8.4": ("driver.md", "9.4"),
    "9": ("driver.md", "10"),
    "appendix": ("driver.md", "12"),
}

NEFF_ISA_NRT = {
    None: ("neff.md", None),
    "1": ("neff.md", "2"), "1.1": ("neff.md", "2.1"), "1.2": ("neff.md", "2.2"),
    "1.3": ("neff.md", "2.2"), "1.4": ("neff.md", "2.3"), "1.5": ("neff.md", "3"),
    "2": ("neff.md", "3.3"), "3": ("neff.md", "4"), "4": ("neff.md", "5"),
    "5": ("neff.md", "6"),
    "6": ("neff.md", "7"), "6.1": ("neff.md", "7.1"), "6.2": ("neff.md", "7.2"),
    "6.3": ("neff.md", "7.3"),
    "7": ("neff.md", "8"), "7.1": ("neff.md", "8.2"),
    "8": ("neff.md", "9"), "9": ("neff.md", "10"),
    "10": ("runtime.md", "2.1"),
    "11": ("isa.md", "2"), "11.1": ("isa.md", "2.1"), "11.2": ("isa.md", "2.2"),
    "11.2 access rules": ("isa.md", "2.3"),
    "11.3": ("isa.md", "3"), "11.4": ("isa.md", "4"),
    "12": ("c-api.md", "5"), "12.1": ("c-api.md", "3.2"), "12.2": ("c-api.md", "5.3"),
    "12.3": ("c-api.md", "2"), "12.4": ("c-api.md", "6"),
    "13": ("isa.md", "7"), "14": ("runtime.md", "1"), "15": ("runtime.md", "2.5"),
}

NEURON_ISA_OBSERVED = {
    None: ("neuron-isa.md", None),
    "0": ("neuron-isa.md", "1"), "1": ("neuron-isa.md", "2"), "2": ("neuron-isa.md", "3"),
    "3": ("neuron-isa.md", "4"), "4": ("neuron-isa.md", "5"), "5": ("neuron-isa.md", "6"),
    **{f"5.{i}": ("neuron-isa.md", f"6.{i}") for i in range(1, 13)},
    "6": ("neuron-isa.md", "7"),
    "7": ("neuron-isa.md", "8"), "7.1": ("neuron-isa.md", "8.2"),
    "7.2": ("neuron-isa.md", "8.3"), "7.3": ("neuron-isa.md", "8.4"),
    "7.4": ("neuron-isa.md", "8.5"),
    "8": ("neuron-isa.md", "9"), "9": ("neuron-isa.md", "12"), "10": ("neuron-isa.md", "10"),
    "11": ("neuron-isa.md", "11"), "12": ("neuron-isa.md", "1"),
}

NRT_C_ABI = {
    None: ("c-api.md", None),
    "1": ("c-api.md", "1"), "1.1": ("c-api.md", "1.2"), "1.2": ("c-api.md", "1.1"),
    "1.3": ("c-api.md", "1.3"),
    "2": ("c-api.md", "3"), "2.1": ("c-api.md", "2"), "2.2": ("c-api.md", "3.1"),
    "2.3": ("c-api.md", "3.2"), "2.4": ("c-api.md", "3.3"), "2.5": ("c-api.md", "3.3"),
    "3": ("c-api.md", "4"), "3.1": ("c-api.md", "4"), "3.2": ("c-api.md", "4"),
    "3.3": ("c-api.md", "4"), "3.4": ("c-api.md", "4"),
    "4": ("c-api.md", "5"), "4.1": ("c-api.md", "5.1"), "4.2": ("c-api.md", "5.1"),
    "4.3": ("c-api.md", "5.2"), "4.4": ("c-api.md", "5.3"), "4.5": ("c-api.md", "5.3"),
    "4.6": ("c-api.md", "5.4"), "4.7": ("c-api.md", "5.6"), "4.8": ("c-api.md", "5.6"),
    "4.9": ("c-api.md", "5.6"), "4.10": ("c-api.md", "5.5"), "4.11": ("c-api.md", "5.7"),
    "4.12": ("c-api.md", "5.8"), "4.13": ("c-api.md", "5.7"), "4.14": ("c-api.md", "5.9"),
    "5": ("c-api.md", "6"), "5.1": ("c-api.md", "6.1"), "5.2": ("c-api.md", "6.2"),
    "5.3": ("c-api.md", "6.3"),
    "6": ("c-api.md", "7"),
}

DESIGN = {
    "1": ("ARCHITECTURE.md", "2"),
    "2": ("ARCHITECTURE.md", "4"),
    "2 driver": ("ARCHITECTURE.md", "2.1"),
    "3": ("simulator.md", "1"),
    "3 memory": ("simulator.md", "2"),
    "3 mmio": ("simulator.md", "3"),
    "3 dma": ("simulator.md", "4"),
    "3 sequencer and engines": ("simulator.md", "5"),
    "3 numbers": ("simulator.md", "6"),
    "3 timing": ("simulator.md", "7"),
    "3 faults": ("simulator.md", "9"),
    "3 kernel abi emulation": ("ARCHITECTURE.md", "2.6"),
    "4": ("runtime.md", "1"),
    "5": ("isa.md", "1"),
    "6": ("ARCHITECTURE.md", "8"),
    "7": ("ARCHITECTURE.md", "9"),
    "8": ("c-api.md", "1"),
}

SEED_000 = {  # the load pipeline
    None: ("runtime.md", "2"),
    "s0": ("runtime.md", "2.2"), "s1": ("runtime.md", "2.3"), "stage 1": ("runtime.md", "2.3"),
    "s2": ("runtime.md", "2.4"), "stage 2": ("runtime.md", "2.4"),
    "s3": ("runtime.md", "2.5"), "s2/s3": ("runtime.md", "2.4–2.5"),
    "s4": ("runtime.md", "2.6"), "stage 3+4": ("runtime.md", "2.6"),
    "s5": ("runtime.md", "2.7"), "stage 5": ("runtime.md", "2.7"),
}

SEED_001 = {  # compute resources, name binding, lifecycle
    None: ("runtime.md", "3"),
    "1": ("runtime.md", "3.2"), "2": ("runtime.md", "3.1"), "3": ("runtime.md", "4.3"),
}

SEED_003 = {  # the submit path
    None: ("exec.md", None),
    "1": ("runtime.md", "4.1"), "2": ("runtime.md", "3"), "3": ("exec.md", "2"),
    "4": ("runtime.md", "4.2"), "5": ("exec.md", "4"), "6": ("runtime.md", "4.4"),
    "7": ("runtime.md", "6"), "8": ("runtime.md", "4.4"),
}

TABLES = {
    "driver-abi": DRIVER_ABI, "neff-isa-nrt": NEFF_ISA_NRT,
    "neuron-isa-observed": NEURON_ISA_OBSERVED, "nrt-c-abi": NRT_C_ABI,
    "DESIGN": DESIGN, "seed 000": SEED_000, "seed 001": SEED_001, "seed 003": SEED_003,
}

# Where one old section covers several docs sections, the citing file decides:
# (path regex, document, section) -> (page, section).
OVERRIDES = [
    (r"^runtime/src/exec/|^hal/src/target\.rs$", "seed 003", "3", ("exec.md", "3")),
    (r"(^|/)ticket\.rs$|^runtime/src/exec/mod\.rs$", "seed 003", "4", ("runtime.md", "4.3")),
    (r"^fixtures/", "DESIGN", "5", ("ARCHITECTURE.md", "2.5")),
]

# ---------------------------------------------------------------------------------------------
# Tokens. The joining rule matches tests/docs_citations.rs: a section continues the previous
# citation when only separators, whitespace and comment leaders lie between them.

LEADER = r"\n[ \t]*(?://[/!]?|#+|\*)?"
JOINER = re.compile(r"^[\s`,;/&–—-]*(?:(?:and|or|to)[\s`,;/&–—-]*)?$")
OLD_FILE = (r"(?P<pre>reference(?P<presep>[ \t]+|[ \t]*" + LEADER + r"[ \t]*))?"
            r"(?P<tick>`?)(?:reference/)?"
            r"(?P<old>driver-abi|neff-isa-nrt|neuron-isa-observed|nrt-c-abi)\.md(?P=tick)")
SOURCE = re.compile(
    OLD_FILE
    + r"|(?P<abbr>\b(?:ABI|ISA|reference)\b)(?=[ \t`]*§\s?\d)"
    + r"|(?P<design>\bDESIGN\b)(?=[ \t]*§\s?\d)"
    + r"|(?P<seed>\bseed 00[013]\b)"
    + r"|(?P<md>[A-Za-z0-9_][A-Za-z0-9_./-]*\.md)\b"
)
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
# Text after a citation that names the old document's section rather than ours.
QUALIFIER = re.compile(
    r"(?P<sep>,?[ \t]*)"
    r"(?:\*(?P<star>[^*\n]{1,40})\*|\"(?P<quote>[^\"]{1,60})\""
    r"|(?P<stage>S\d(?:/S\d)?)\b|(?P<stagen>Stage \d)\b|(?P<appendix>appendix)\b)"
)
OF_SEED_000 = re.compile(r"(load stages? (S\d)(?:/(S\d))?(?:, sub-layer \([a-z]\))?) of seed 000")
PROSE_SEED = re.compile(r"\b([Tt])he seed(?='s\b| releases\b| passes\b)|\b(as in) the seed\b")

ABBREVIATIONS = {"ABI": "driver-abi", "ISA": "neff-isa-nrt", "reference": "neff-isa-nrt"}


def joins(gap):
    return bool(JOINER.match(re.sub(LEADER, " ", gap)))


def lookup(doc, sec, qual, path):
    """The (page, section) of `doc` section `sec` (None: the whole document), or None."""
    for pat, d, s, target in OVERRIDES:
        if d == doc and s == sec and re.search(pat, path):
            return target
    table = TABLES[doc]
    if qual is not None:
        key = qual if sec is None else f"{sec} {qual}"
        if key in table:
            return table[key]
    return table.get(sec)


def fmt_section(sec):
    return "§" + sec.replace("–", "–§")


def qualifier(text, at):
    """The qualifier right after position `at`: (lower-cased name, end, kind) or None."""
    q = QUALIFIER.match(text, at)
    if not q:
        return None
    for kind in ("stage", "stagen", "appendix", "star", "quote"):
        if q.group(kind):
            return q.group(kind).strip().lower(), q.end(), kind, q.group("sep")
    return None


class Rewriter:
    """Rewrites one file's text; counts what it changed and records what it could not map."""

    def __init__(self, path, text):
        self.path = path
        self.text = text
        self.changed = 0
        self.unmapped = []

    def miss(self, text, at, what):
        self.unmapped.append((text.count("\n", 0, at) + 1, what))

    def run(self):
        text = self.text
        if self.path.startswith("runtime/"):
            text, n = PROSE_SEED.subn(self._prose, text)
            self.changed += n
        text = OF_SEED_000.sub(self._of_seed, text)
        return self._rewrite(text)

    @staticmethod
    def _prose(m):
        if m.group(2):
            return "as in the real runtime"
        return m.group(1) + "he real runtime"

    def _of_seed(self, m):
        a = SEED_000[m.group(2).lower()][1]
        b = SEED_000[(m.group(3) or m.group(2)).lower()][1]
        self.changed += 1
        sec = a if a == b else f"{a}–{b}"
        return f"{m.group(1)}, docs/runtime.md {fmt_section(sec)}"

    @staticmethod
    def _tokens(text):
        toks = [("src", m.start(), m.end(), m) for m in SOURCE.finditer(text)]
        toks += [("sec", m.start(), m.end(), m) for m in SECTION.finditer(text)]
        toks.sort(key=lambda t: (t[1], t[0] == "sec"))
        return toks

    def _rewrite(self, text):
        """Walks sources and sections, groups them as tests/docs_citations.rs does, emits text."""
        out, pos, last_end = [], 0, 0
        context = None  # the last citation a bare section would continue
        seen_old = False  # whether an old citation occurred earlier in the file
        group = None  # the citation sections currently attach to
        for kind, start, end, m in self._tokens(text):
            if start < last_end:
                continue
            out.append(text[pos:start])
            if kind == "src":
                group = self._source(m, text)
                emitted, pos = self._emit_source(group, m, text)
                out.append(emitted)
                if group["kind"] != "other":
                    context = group
                seen_old = seen_old or group["kind"] == "old"
                last_end = pos
                continue
            attached = group is not None and joins(text[last_end:start])
            if not attached:
                if context is None:
                    self.miss(text, start, f"{m.group(0)}: no document is cited before it")
                    out.append(m.group(0))
                    pos = last_end = end
                    group = None
                    continue
                if context["kind"] == "page" and seen_old:
                    # Old and new citations mixed in one file: which one a bare section
                    # continues cannot be told from the text.
                    self.miss(text, start, f"{m.group(0)}: ambiguous (a docs/ page follows an "
                              "old citation in this file); write the page out")
                    out.append(m.group(0))
                    pos = last_end = end
                    group = None
                    continue
                group = dict(context, emitted_page=None, mapped=True)
            emitted, pos = self._emit_section(group, m, text, attached)
            if emitted is None:
                # The same section as the one before it in this citation ("§1.2, §1.3" both
                # became one section): drop it, and the separator before it on this line.
                if out and "\n" not in out[-1]:
                    out.pop()
            else:
                out.append(emitted)
            last_end = pos
        out.append(text[pos:])
        return "".join(out)

    @staticmethod
    def _source(m, text):
        if m.group("old") or m.group("abbr") or m.group("design") or m.group("seed"):
            if m.group("old"):
                doc = m.group("old")
            elif m.group("abbr"):
                doc = ABBREVIATIONS[m.group("abbr")]
            elif m.group("design"):
                doc = "DESIGN"
            else:
                doc = m.group("seed")
            return {"kind": "old", "doc": doc, "at": m.start(), "emitted_page": None,
                    "mapped": True}
        name = m.group("md")
        kind = "page" if name.startswith("docs/") else "other"
        return {"kind": kind, "page": name, "at": m.start()}

    def _emit_source(self, group, m, text):
        """The text replacing source `m`, and the position scanning resumes at."""
        end = m.end()
        if group["kind"] != "old":
            return m.group(0), end
        nxt = SECTION.search(text, end)
        if nxt and joins(text[end:nxt.start()]):
            q = qualifier(text, nxt.end())
            target = lookup(group["doc"], nxt.group(1), q[0] if q else None, self.path)
            if target is None:
                self.miss(text, m.start(), f"{group['doc']} §{nxt.group(1)}: no mapping")
                group["mapped"] = False
                return m.group(0), end
            page = "docs/" + target[0]
            group["emitted_page"] = page
            presep = (m.group("presep") or "") if m.group("old") else ""
            if "\n" in presep:
                # "reference⏎//! `x.md` §n": keep the line break, drop the word.
                lead = presep[presep.index("\n"):]
                gap_end = end
                while gap_end < len(text) and text[gap_end] in " \t":
                    gap_end += 1
                return page + lead.rstrip(" \t") + " ", gap_end
            return page, end
        # The whole document, perhaps with a qualifier naming its old section.
        q = qualifier(text, end)
        target, resume = None, end
        if q and q[2] != "star":
            target = lookup(group["doc"], None, q[0], self.path)
            if target is not None and q[0] in TABLES[group["doc"]]:
                resume = q[1]
            else:
                target = None
        if target is None:
            target = lookup(group["doc"], None, None, self.path)
        if target is None:
            self.miss(text, m.start(), f"{group['doc']}: no mapping for the whole document")
            group["mapped"] = False
            return m.group(0), end
        page, sec = "docs/" + target[0], target[1]
        group["emitted_page"] = page
        self.changed += 1
        return page + (f" {fmt_section(sec)}" if sec else ""), resume

    def _emit_section(self, group, m, text, attached):
        """The text replacing section `m` of `group`, and the position scanning resumes at."""
        end = m.end()
        if group["kind"] in ("page", "other"):
            return (m.group(0) if attached else f"{group['page']} {m.group(0)}"), end
        if not group.get("mapped", True):
            return m.group(0), end
        sec = m.group(1)
        q = qualifier(text, end)
        qual = q[0] if q and q[2] in ("star", "quote", "stage", "stagen") else None
        target = lookup(group["doc"], sec, qual, self.path) if qual else None
        if target is None:
            target = lookup(group["doc"], sec, None, self.path)
        if target is None:
            self.miss(text, m.start(), f"{group['doc']} §{sec}: no mapping")
            return m.group(0), end
        page, new = "docs/" + target[0], target[1]
        resume = end
        if q and q[2] in ("stage", "stagen"):
            resume = q[1]  # an old stage name: ours is the section number
        prefix = "" if group.get("emitted_page") == page else f"{page} "
        self.changed += 1
        if attached and new and group.get("emitted") == (page, new) \
                and not (q and q[2] == "appendix"):
            return None, resume
        group["emitted_page"] = page
        group["emitted"] = (page, new)
        emitted = (prefix + fmt_section(new)) if new else page
        if q and q[2] == "appendix":
            emitted += f"{q[3]}§{DRIVER_ABI['appendix'][1]}"
            resume = q[1]
        return emitted, resume


SCAN_EXT = (".rs", ".toml", ".c", ".h", ".sh", ".md", ".py")
SKIP_DIRS = {"target", ".git", "corpus", "artifacts", "node_modules", "__pycache__", "docs"}
SKIP_FILES = {"docs_citations.rs", "repoint-citations.py"}


def files(root):
    for d, dirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith(".")
                         and not (x == "seeds" and os.path.basename(d) == "fuzz"))
        for n in sorted(names):
            if n.endswith(SCAN_EXT) and n not in SKIP_FILES:
                yield os.path.normpath(os.path.join(rel, n)).replace(os.sep, "/")


# (file, before, after): what the rewriting must do; `--self-test` checks these.
EXAMPLES = [
    ("hal/src/x.rs", "(driver-abi.md §3.4)", "(docs/driver.md §4.4)"),
    ("hal/src/x.rs", "(`reference/driver-abi.md` §1.2, §2)", "(docs/driver.md §2.2, §3)"),
    ("hal/src/x.rs", "(driver-abi.md §1–§9, appendix)", "(docs/driver.md §2–§10, §12)"),
    ("hal/src/x.rs", "(driver-abi.md appendix)", "(docs/driver.md §12)"),
    ("hal/src/x.rs", "ABI §7.1 then (§7.2)", "docs/driver.md §8.1 then (docs/driver.md §8.2)"),
    ("hal/src/x.rs", "(reference neff-isa-nrt.md §8, §11.3, §11.4)",
     "(docs/neff.md §9, docs/isa.md §3, §4)"),
    ("hal/src/x.rs", "do (reference\n//! `neff-isa-nrt.md` §1–§9) and",
     "do (docs/neff.md\n//! §2–§10) and"),
    ("hal/src/x.rs", "neff-isa-nrt.md §1 then (§1.2, §1.3)", "docs/neff.md §2 then (docs/neff.md §2.2)"),
    ("sim/src/x.rs", "DESIGN §3 *Memory*", "docs/simulator.md §2 *Memory*"),
    ("fixtures/src/x.rs", "DESIGN §5: the zoo", "docs/ARCHITECTURE.md §2.5: the zoo"),
    ("runtime/src/x.rs", "(load stages S2/S3 of seed 000)", "(load stages S2/S3, docs/runtime.md §2.4–§2.5)"),
    ("runtime/src/x.rs", "Load stage S4 (seed 000 \"Stage 3+4\")", "Load stage S4 (docs/runtime.md §2.6)"),
    ("runtime/src/x.rs", "(seed 000, Stage 1 \"container parse\")", "(docs/runtime.md §2.3 \"container parse\")"),
    ("runtime/src/x.rs", "(seed 003 §4, §6–§8)", "(docs/runtime.md §4.2, §4.4)"),
    ("runtime/src/exec/ring.rs", "(seed 003 §3)", "(docs/exec.md §3)"),
    ("hal/src/exec_request.rs", "(seed 003 §3)", "(docs/exec.md §2)"),
    ("runtime/src/x.rs", "as in the seed, the seed's order", "as in the real runtime, the real runtime's order"),
    ("hal/src/x.rs", "docs/driver.md §4.4, §4.5 (§3)", "docs/driver.md §4.4, §4.5 (docs/driver.md §3)"),
    ("hal/src/x.rs", "docs/driver.md §4.4", "docs/driver.md §4.4"),
]


def self_test():
    bad = 0
    for path, before, after in EXAMPLES:
        rw = Rewriter(path, before)
        got = rw.run()
        again = Rewriter(path, got).run()
        if got != after or again != got or rw.unmapped:
            bad += 1
            print(f"FAIL {path}: {before!r}\n  want {after!r}\n  got  {got!r}"
                  f"\n  again {again!r} unmapped {rw.unmapped}")
    print(f"self-test: {len(EXAMPLES) - bad}/{len(EXAMPLES)} examples ok")
    return 1 if bad else 0


def main(argv):
    if "--self-test" in argv:
        return self_test()
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    total, touched, unmapped = 0, 0, []
    for rel in files(root):
        full = os.path.join(root, rel)
        try:
            with open(full, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            continue
        rw = Rewriter(rel, text)
        new = rw.run()
        unmapped += [(rel, line, what) for line, what in rw.unmapped]
        if new != text:
            touched += 1
            total += rw.changed
            print(f"{rel}: {rw.changed} citation(s) re-pointed")
            if not check:
                with open(full, "w", encoding="utf-8") as f:
                    f.write(new)
    for rel, line, what in unmapped:
        print(f"UNMAPPED {rel}:{line}: {what}")
    verb = "would re-point" if check else "re-pointed"
    print(f"{verb} {total} citation(s) in {touched} file(s); {len(unmapped)} could not be mapped")
    return 1 if (check and touched) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
