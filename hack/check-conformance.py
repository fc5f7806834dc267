#!/usr/bin/env python3
"""Checks docs/conformance.md against the repository.

Usage: hack/check-conformance.py [REPO_ROOT] [--doc PATH] [--strict]

For every row of the conformance table:
  - the ID is well formed (e.g. S-01, TTL-05) and unique;
  - Status is `implemented` or `deviation`, and a deviation has Notes;
  - every backticked path in `Implemented in` and `Proved by` exists in the repository;
  - every backticked test `Suite.Name` in `Proved by` is a TEST(Suite, Name), TEST_F(...) or
    TEST_P(...) in the test file named in the same cell or anywhere under test/. A parameterized
    case `Suite.Name/Param` (optionally `Prefix/Suite.Name/Param`) needs TEST_P(Suite, Name) and a
    string literal in that file that is, or names, `Param` (gtest names made from descriptions are
    matched by their CamelCase form);
  - `Proved by` is not empty: it names tests, or says `none` (with a reason), or `TBD-24`.

`TBD-24` (rows whose tests are being written for issue 24) is a warning, or an error with
--strict or CONFORMANCE_STRICT=1 in the environment. Prints each failure with its row ID and
exits 1 if there is any. Python 3 standard library only.
"""
import argparse
import os
import re
import sys

COLUMNS = ["ID", "Spec statement", "Status", "Implemented in", "Proved by", "Notes"]
STATUSES = {"implemented", "deviation"}
ID_RE = re.compile(r"^[A-Z]{1,4}-\d{2,3}$")
TEST_RE = re.compile(r"^(?:[A-Za-z_]\w*/)?([A-Z]\w*)\.([A-Za-z_]\w*)(?:/(\w+))?$")
TEST_DEF_RE = re.compile(r"\b(?:TEST|TEST_F|TEST_P)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)", re.S)
STRING_RE = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
ADJACENT_STRINGS_RE = re.compile(r'"\s*\n?\s*"')
SOURCE_EXTS = (".cc", ".h", ".cpp", ".hpp")
TBD = "TBD-24"


def split_row(line):
    """Splits a markdown table row into cells; `\\|` is a literal bar."""
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    cells, cur, i = [], "", 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line) and line[i + 1] == "|":
            cur += "|"
            i += 2
            continue
        if line[i] == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += line[i]
        i += 1
    cells.append(cur.strip())
    return cells


def parse_table(text):
    """Returns (rows, error): rows as (line number, {column: cell})."""
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if line.lstrip().startswith("|") and split_row(line) == COLUMNS:
            rows = []
            for m in range(n + 2, len(lines)):
                if not lines[m].lstrip().startswith("|"):
                    break
                cells = split_row(lines[m])
                rows.append((m + 1, dict(zip(COLUMNS, cells + [""] * len(COLUMNS))), len(cells)))
            return rows, None
    return [], "no table with the columns " + " | ".join(COLUMNS)


def backticked(cell):
    return re.findall(r"`([^`]+)`", cell)


def camel(description):
    """The gtest name test/integration/crd_validation_test.cc makes of a description."""
    out, upper = "", True
    for ch in description:
        if not ch.isalnum():
            upper = True
            continue
        out += ch.upper() if upper else ch
        upper = False
    return out


class TestIndex:
    def __init__(self, root):
        self.root = root
        self.files = {}  # path -> (set of "Suite.Name", set of param names)
        for d, _, names in os.walk(os.path.join(root, "test")):
            for name in sorted(names):
                if name.endswith(SOURCE_EXTS):
                    self.load(os.path.relpath(os.path.join(d, name), root))

    def load(self, rel):
        if rel in self.files:
            return self.files[rel]
        try:
            with open(os.path.join(self.root, rel), encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            self.files[rel] = (set(), set())
            return self.files[rel]
        tests = {f"{a}.{b}" for a, b in TEST_DEF_RE.findall(text)}
        joined = ADJACENT_STRINGS_RE.sub("", text)  # "a " "b" -> "a b"
        literals = set(STRING_RE.findall(joined))
        params = literals | {camel(s) for s in literals}
        self.files[rel] = (tests, params)
        return self.files[rel]

    def find(self, suite_name, param, preferred):
        """Returns None if found, else the reason it was not."""
        candidates = [p for p in preferred if p.endswith(SOURCE_EXTS)]
        candidates += [p for p in sorted(self.files) if p not in candidates]
        defined_in = [p for p in candidates if suite_name in self.load(p)[0]]
        if not defined_in:
            return "no TEST/TEST_F/TEST_P " + suite_name.replace(".", ", ", 1) + " under test/"
        if param is None:
            return None
        if any(param in self.load(p)[1] for p in defined_in):
            return None
        return f"no parameter named {param} next to {suite_name} in " + ", ".join(defined_in)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("root", nargs="?", default=os.path.dirname(here))
    ap.add_argument("--doc", help="the table to check (default: ROOT/docs/conformance.md)")
    ap.add_argument("--strict", action="store_true", help="TBD-24 is an error, not a warning")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    doc = args.doc or os.path.join(root, "docs", "conformance.md")
    strict = args.strict or os.environ.get("CONFORMANCE_STRICT", "") not in ("", "0")

    try:
        with open(doc, encoding="utf-8") as f:
            rows, err = parse_table(f.read())
    except OSError as e:
        print(f"{doc}: {e}", file=sys.stderr)
        return 1
    if err:
        print(f"{doc}: {err}", file=sys.stderr)
        return 1

    index = TestIndex(root)
    failures, warnings, seen = [], [], {}
    tests_checked = 0

    for line, row, ncells in rows:
        rid = row["ID"] or f"line {line}"

        def fail(msg):
            failures.append(f"{doc}:{line}: {rid}: {msg}")

        if ncells != len(COLUMNS):
            fail(f"{ncells} cells, expected {len(COLUMNS)}")
        if not ID_RE.match(row["ID"]):
            fail(f"malformed ID {row['ID']!r} (expected e.g. S-01)")
        elif row["ID"] in seen:
            fail(f"duplicate ID (also line {seen[row['ID']]})")
        else:
            seen[row["ID"]] = line
        if not row["Spec statement"]:
            fail("empty Spec statement")
        if row["Status"] not in STATUSES:
            known = ", ".join(sorted(STATUSES))
            fail(f"unknown Status {row['Status']!r} (expected one of {known})")
        if row["Status"] == "deviation" and not row["Notes"].strip():
            fail("a deviation needs Notes: the decision, its reason and where docs/api.md "
                 "explains it")

        impl = backticked(row["Implemented in"])
        if not impl:
            fail("Implemented in names no backticked path")
        for p in impl:
            if not os.path.exists(os.path.join(root, p)):
                fail(f"Implemented in: missing file `{p}`")

        proved = row["Proved by"]
        tokens = backticked(proved)
        bare = re.sub(r"`[^`]*`", "", proved)
        if TBD in bare:
            (failures if strict else warnings).append(
                f"{doc}:{line}: {rid}: Proved by is {TBD} (tests pending for issue 24)")
        if not tokens and TBD not in bare and not bare.strip().lower().startswith("none"):
            fail("Proved by is empty: name tests, or write `none` with the reason, or TBD-24")
        cell_files = [t for t in tokens if os.path.exists(os.path.join(root, t))]
        for t in tokens:
            if t in cell_files:
                continue
            m = TEST_RE.match(t)
            if m:
                tests_checked += 1
                why = index.find(f"{m.group(1)}.{m.group(2)}", m.group(3), cell_files)
                if why:
                    fail(f"Proved by: missing test `{t}`: {why}")
            else:
                fail(f"Proved by: missing file `{t}`")

    for w in warnings:
        print("warning: " + w, file=sys.stderr)
    for f in failures:
        print("error: " + f, file=sys.stderr)
    print(f"{doc}: {len(rows)} rows, {tests_checked} test references, "
          f"{len(failures)} errors, {len(warnings)} warnings")
    return 1 if failures or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
