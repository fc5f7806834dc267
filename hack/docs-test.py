#!/usr/bin/env python3
"""make docs-test: runs the shell blocks of README.md and docs/*.md against the stacks they name.

Every fenced block whose language is sh, bash, shell or console carries a marker on the line
before its fence (docs/development.md, "The docs test"):

    <!-- docs-test: stack=demo -->                  run it on `make demo`'s stack
    <!-- docs-test: skip (a managed cluster's commands) -->   never run; the reason is required

The stacks are the demo targets: demo, demo-kubernetes, demo-opensandbox, demo-install. For each
file and each stack its blocks name, in the order written, the runner starts the stack (`make
STACK`: a new control plane; it refuses to run when /tmp/ayatori-STACK exists, a stack someone
else started), sources its env.sh (/tmp/ayatori-STACK/env.sh:
KUBECONFIG, kubectl and kubectl-ayatori on PATH, DOCKER_HOST), runs the file's blocks of that
stack in one `bash -e` from the repository root, then stops the stack (`make STACK-down`), also
after a failure.

A command line may end with an assertion comment:

    kubectl ayatori wait sleeper -n ci          # => exit 4 (Cancelled)
    make demo                                   # prints: hello world
    kubectl ayatori logs hello -n ci            # => exit 1, prints: "not installed" (see below)

`=> exit N`: the command exits N (without it, any exit but 0 ends the file's run). `prints:
TEXT`: its output (stdout and stderr) has a line containing TEXT, blanks compared loosely;
quote TEXT to write more after it. An asserted command runs in the current shell (state such as
`export` and `cd` carries on) with its output teed to the terminal, and leaves its exit code in
`$?` for the next line. A failing command or assertion names the file and line.

usage: docs-test.py [--stacks demo,demo-install] [--check] [--list] [FILE...]
  --check   only check that every shell block is marked (no stack is started)
  --list    print the blocks and their markers
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STACKS = ["demo", "demo-kubernetes", "demo-opensandbox", "demo-install"]
SHELL_LANGS = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)(.*)$")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
ASSERTION = re.compile(r"(?:^|\s)#\s*(=>\s*exit\s+\d+|prints:)")
EXIT = re.compile(r"=>\s*exit\s+(\d+)")
PRINTS = re.compile(r"prints:\s*(?:\"([^\"]*)\".*|(.*?))\s*$")


class DocError(Exception):
    pass


class Block:
    def __init__(self, path, line, lang, lines, marker):
        self.path = path  # as given (relative to the repository root when possible)
        self.line = line  # 1-based line of the opening fence
        self.lang = lang
        self.lines = lines  # the content, the fence's indentation removed
        self.marker = marker  # the text of the docs-test marker, or None
        self.stack = None
        self.skip = None
        if marker is not None:
            m = re.fullmatch(r"stack=([\w-]+)", marker)
            s = re.fullmatch(r"skip\s*[(:]\s*(.*?)\)?", marker)
            if m:
                self.stack = m.group(1)
            elif s and s.group(1):
                self.skip = s.group(1)

    def where(self, offset=0):
        return "%s:%d" % (self.path, self.line + 1 + offset)


def extract(path, text):
    """The fenced blocks of a Markdown text, with their markers; DocError on a bad marker."""
    blocks = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start = i
        body = []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close.group(2).startswith(fence[0] * len(fence)) and not close.group(3):
                break
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1
        # The marker: the nearest line above the fence that is not blank.
        marker = None
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            mm = MARKER.match(lines[j])
            if mm:
                marker = mm.group(1)
        blocks.append(Block(path, start + 1, lang, body, marker))
    return blocks


def check(blocks, stacks=STACKS):
    """The problems of the markers: every shell block marked, markers well formed."""
    problems = []
    for b in blocks:
        shell = b.lang in SHELL_LANGS
        if b.marker is None:
            if shell:
                problems.append("%s:%d: a %s block without a marker: put <!-- docs-test: "
                                "stack=NAME --> or <!-- docs-test: skip (reason) --> on the line "
                                "before its fence" % (b.path, b.line, b.lang))
            continue
        if b.stack is None and b.skip is None:
            problems.append("%s:%d: the marker '%s' is neither stack=NAME nor skip (reason)"
                            % (b.path, b.line, b.marker))
        elif b.stack is not None and b.stack not in stacks:
            problems.append("%s:%d: unknown stack '%s' (one of %s)"
                            % (b.path, b.line, b.stack, ", ".join(stacks)))
        elif b.stack is not None and not shell:
            problems.append("%s:%d: only sh/bash blocks run, this one is '%s'"
                            % (b.path, b.line, b.lang or "plain"))
    return problems


def logical_lines(block):
    """(first index, last index, text) of each command line, joining backslash continuations."""
    out = []
    i = 0
    while i < len(block.lines):
        first = i
        text = block.lines[i]
        while text.endswith("\\") and i + 1 < len(block.lines):
            i += 1
            text = text + "\n" + block.lines[i]
        out.append((first, i, text))
        i += 1
    return out


def parse_assertion(line):
    """(exit code, text) a command line asserts, or None; the text may be None."""
    last = line.split("\n")[-1]
    m = ASSERTION.search(last)
    if not m:
        return None
    comment = last[m.start():]
    code = EXIT.search(comment)
    prints = PRINTS.search(comment)
    text = None
    if prints:
        text = prints.group(1) if prints.group(1) is not None else prints.group(2)
        if not text:
            raise DocError("an empty 'prints:' assertion")
    return (int(code.group(1)) if code else 0, text)


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


PREAMBLE = r"""__dt_out=$(mktemp); trap 'rm -f "$__dt_out"' EXIT
__dt_trap='__dt_rc=$?; echo "docs-test: FAILED: ${__DT_WHERE[$LINENO]:-line $LINENO of the generated script}: exit code $__dt_rc" >&2'
trap "$__dt_trap" ERR
__dt_check() {  # where, exit code, expected exit code, expected text
  if [ "$2" != "$3" ]; then
    echo "docs-test: FAILED: $1: exit code $2, the doc says $3" >&2; exit 1
  fi
  if [ -n "$4" ] && ! tr -s ' \t' ' ' <"$__dt_out" | grep -qF -- "$(printf %s "$4" | tr -s ' \t' ' ')"; then
    echo "docs-test: FAILED: $1: the output has no line containing '$4'" >&2; exit 1
  fi
}
"""


def build_script(blocks, env_file=None):
    """The bash script that runs the blocks in order (run it with bash -e)."""
    body = []
    where = {}  # line of body -> FILE:LINE

    def add(text, loc=None):
        for part in text.split("\n"):
            if loc is not None:
                where[len(body)] = loc
            body.append(part)

    if env_file:
        add('if [ -f %s ]; then source %s; fi' % (shell_quote(env_file), shell_quote(env_file)))
    for b in blocks:
        add("echo %s" % shell_quote("docs-test: %s (%s)" % (b.where(-1), b.stack or "fixture")))
        for first, last, text in logical_lines(b):
            try:
                asserted = parse_assertion(text)
            except DocError as e:
                raise DocError("%s: %s" % (b.where(last), e))
            if asserted is None:
                for k, part in enumerate(text.split("\n")):
                    add(part, b.where(first + k))
                continue
            code, expect = asserted
            loc = b.where(last)
            add("__dt_prev=$?; trap - ERR; set +e")
            add("{ (exit $__dt_prev); " + text.split("\n")[0], b.where(first))
            for k, part in enumerate(text.split("\n")[1:], start=1):
                add(part, b.where(first + k))
            add('} > >(tee "$__dt_out") 2>&1')
            add('__dt_rc=$?; wait $! 2>/dev/null; set -e; trap "$__dt_trap" ERR')
            add("__dt_check %s \"$__dt_rc\" %d %s" % (shell_quote(loc), code,
                                                    shell_quote(expect or "")))
            add('(exit "$__dt_rc") && :')
    add("echo 'docs-test: all blocks passed'")
    header = ["#!/usr/bin/env bash", "set -eE"]
    pre = PREAMBLE.strip("\n").split("\n")
    offset = len(header) + 1 + len(pre)  # the map's line, then the preamble
    entries = " ".join("[%d]=%s" % (n + offset + 1, shell_quote(loc)) for n, loc in sorted(where.items()))
    return "\n".join(header + ["declare -A __DT_WHERE=(%s)" % entries] + pre + body) + "\n"


def run_script(script, log=None, cwd=ROOT, env=None):
    """Runs a script from build_script; returns (exit code, its output)."""
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(script)
        path = f.name
    try:
        proc = subprocess.Popen(["bash", "-e", path], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
        out = []
        for line in proc.stdout:
            out.append(line)
            if log is not None:
                log.write(line)
                log.flush()
        return proc.wait(), "".join(out)
    finally:
        os.unlink(path)


def make(target, log):
    log.write("docs-test: make %s\n" % target)
    log.flush()
    return subprocess.call(["make", "--no-print-directory", target], cwd=ROOT, stdout=log,
                           stderr=subprocess.STDOUT)


def doc_files(args):
    if args:
        return args
    docs = sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                  if f.endswith(".md"))
    return ["README.md"] + docs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stacks", default=",".join(STACKS),
                   help="comma- or space-separated stacks to run (default: all)")
    p.add_argument("--check", action="store_true", help="only check the markers")
    p.add_argument("--list", action="store_true", help="print the blocks and their markers")
    p.add_argument("files", nargs="*")
    a = p.parse_args()
    stacks = [s for s in re.split(r"[,\s]+", a.stacks) if s]
    for s in stacks:
        if s not in STACKS:
            sys.exit("docs-test: unknown stack '%s' (one of %s)" % (s, ", ".join(STACKS)))

    per_file = []
    problems = []
    for f in doc_files(a.files):
        with open(os.path.join(ROOT, f)) as fh:
            blocks = extract(f, fh.read())
        problems += check(blocks)
        per_file.append((f, blocks))
        if a.list:
            for b in blocks:
                if b.lang in SHELL_LANGS or b.marker is not None:
                    print("%s:%d %s %s" % (f, b.line, b.lang or "plain",
                                            "stack=" + b.stack if b.stack else
                                            "skip (%s)" % b.skip if b.skip else "UNMARKED"))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    if a.check or a.list:
        return

    logdir = "/tmp/ayatori-docs-test"
    os.makedirs(logdir, exist_ok=True)
    results = []
    for stack in stacks:
        for f, blocks in per_file:
            chosen = [b for b in blocks if b.stack == stack]
            if not chosen:
                continue
            name = "%s [%s]" % (f, stack)
            logpath = os.path.join(logdir, "%s-%s.log" % (f.replace("/", "_"), stack))
            start = time.time()
            print("docs-test: %s: %d block(s); stack log %s" % (name, len(chosen), logpath),
                  flush=True)
            script = build_script(chosen, "/tmp/ayatori-%s/env.sh" % stack)
            if os.path.exists("/tmp/ayatori-%s" % stack):
                # Not ours to stop: someone's `make STACK` (the demos share these directories).
                why = ("/tmp/ayatori-%s exists: a %s stack is up (yours? stop it with make %s-down)"
                       % (stack, stack, stack))
                print("docs-test: FAILED: %s" % why, flush=True)
                results.append((name, False, 0.0, why))
                continue
            with open(logpath, "w") as log:
                if make(stack, log) != 0:
                    make(stack + "-down", log)
                    results.append((name, False, time.time() - start,
                                    "make %s failed (log %s)" % (stack, logpath)))
                    print("docs-test: FAILED: make %s (log %s)" % (stack, logpath), flush=True)
                    continue
                try:
                    rc, _ = run_script(script, log=sys.stdout)
                finally:
                    make(stack + "-down", log)
            results.append((name, rc == 0, time.time() - start, ""))
    print()
    for name, ok, secs, why in results:
        print("docs-test: %-40s %s %4.0fs %s" % (name, "PASS" if ok else "FAIL", secs, why))
    if not results:
        sys.exit("docs-test: no block names the stacks %s" % ", ".join(stacks))
    sys.exit(0 if all(ok for _, ok, _, _ in results) else 1)


if __name__ == "__main__":
    main()
