#!/usr/bin/env python3
"""Self-test of hack/check-conformance.py: a stale row must fail the check.

Usage: test/docs/check_conformance_selftest.py [REPO_ROOT]

Copies docs/conformance.md to a temporary directory, adds fake rows to its table (each with one
defect: a missing file, a missing test, a missing parameterized case, an unknown status, a
deviation without notes) and asserts that the checker exits 1 and names each fake row with the
defect. Also asserts that TBD-24 is a warning by default and an error with --strict.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HEADER = "| ID | Spec statement | Status | Implemented in | Proved by | Notes |"
REAL_TEST = "`CheckInvariants.ReportsEachViolation` (`test/statemachine/decide_test.cc`)"
FAKE_ROWS = {
    "ZZ-91": ("| ZZ-91 | A file that is gone. | implemented | `src/statemachine/no_such_file.cc` | "
              + REAL_TEST + " | |", "missing file `src/statemachine/no_such_file.cc`"),
    "ZZ-92": ("| ZZ-92 | A test that is gone. | implemented | `src/statemachine/decide.cc` | "
              "`NoSuchSuite.NoSuchTest` (`test/statemachine/decide_test.cc`) | |",
              "missing test `NoSuchSuite.NoSuchTest`"),
    "ZZ-93": ("| ZZ-93 | A matrix row that is gone. | implemented | `src/statemachine/decide.cc` | "
              "`StateMachineMatrix.Row/No_Such_Row` (`test/statemachine/matrix_test.cc`) | |",
              "missing test `StateMachineMatrix.Row/No_Such_Row`"),
    "ZZ-94": ("| ZZ-94 | A test file that is gone. | implemented | `src/statemachine/decide.cc` | "
              "`CheckInvariants.ReportsEachViolation` (`test/statemachine/gone_test.cc`) | |",
              "missing file `test/statemachine/gone_test.cc`"),
    "ZZ-95": ("| ZZ-95 | An unknown status. | partial | `src/statemachine/decide.cc` | "
              + REAL_TEST + " | |", "unknown Status 'partial'"),
    "ZZ-96": ("| ZZ-96 | A deviation without notes. | deviation | `src/statemachine/decide.cc` | "
              + REAL_TEST + " |  |", "a deviation needs Notes"),
}
TBD_ROW = ("| ZZ-97 | Pending tests. | implemented | `src/statemachine/decide.cc` | TBD-24 | |")


def run(checker, root, doc, *extra):
    env = dict(os.environ)
    env.pop("CONFORMANCE_STRICT", None)
    p = subprocess.run([sys.executable, checker, root, "--doc", doc, *extra], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def with_rows(text, rows):
    lines = text.splitlines()
    at = lines.index(HEADER) + 2  # after the header and its separator
    return "\n".join(lines[:at] + rows + lines[at:]) + "\n"


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    checker = os.path.join(root, "hack", "check-conformance.py")
    with open(os.path.join(root, "docs", "conformance.md"), encoding="utf-8") as f:
        text = f.read()
    if HEADER not in text.splitlines():
        print("docs/conformance.md has no table header " + HEADER)
        return 1
    problems = []
    tmp = tempfile.mkdtemp(prefix="conformance-selftest-")
    try:
        doc = os.path.join(tmp, "conformance.md")
        # All defects at once, then each alone (so no defect hides behind another).
        cases = [("all fake rows", list(FAKE_ROWS))] + [(rid, [rid]) for rid in FAKE_ROWS]
        for name, ids in cases:
            with open(doc, "w", encoding="utf-8") as f:
                f.write(with_rows(text, [FAKE_ROWS[i][0] for i in ids]))
            rc, out = run(checker, root, doc)
            if rc != 1:
                problems.append(f"{name}: exit code {rc}, expected 1\n{out}")
            for i in ids:
                want = f"{i}: "
                if not any(want in line and FAKE_ROWS[i][1] in line for line in out.splitlines()):
                    problems.append(f"{name}: no error naming {i} with {FAKE_ROWS[i][1]!r}\n{out}")

        with open(doc, "w", encoding="utf-8") as f:
            f.write(with_rows(text, [TBD_ROW]))
        rc, out = run(checker, root, doc)
        if "warning:" not in out or "ZZ-97" not in out:
            problems.append(f"TBD-24 without --strict: no warning naming ZZ-97\n{out}")
        if any("error:" in line and "ZZ-97" in line for line in out.splitlines()):
            problems.append(f"TBD-24 without --strict is an error\n{out}")
        rc, out = run(checker, root, doc, "--strict")
        if rc != 1 or not any("error:" in l and "ZZ-97" in l for l in out.splitlines()):
            problems.append(f"TBD-24 with --strict: exit code {rc}, expected 1 and an error\n{out}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for p in problems:
        print("FAIL: " + p)
    if not problems:
        print(f"ok: the checker rejects each of {len(FAKE_ROWS)} stale rows and handles TBD-24")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
