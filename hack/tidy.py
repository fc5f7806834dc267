#!/usr/bin/env python3
"""clang-tidy on every given source file, with a per-machine cache of clean results.

Usage: hack/tidy.py BUILD_DIR JOBS FILE...

A file's result depends only on what clang-tidy reads: the preprocessed translation unit (the file
and every header it includes), the compile flags, the .clang-tidy configuration and the clang-tidy
version. The key hashes exactly those (the preprocessor runs without line markers, so the same
sources in another clone give the same key; the clone's path is replaced too). A file whose key was clean before is not checked
again; anything else runs clang-tidy, and only a clean run is remembered. A warning is never
cached, so it shows on every run until it is fixed.

The cache lives outside the repository, like the control plane and ccache:
${AYATORI_CACHE:-~/.cache/ayatori}/tidy. Delete it to check everything again.
"""

import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

SUMMARY = re.compile(r"^\d+ (warning|error)s? (and \d+ errors? )?generated\.$")


def compile_commands(build_dir):
    with open(os.path.join(build_dir, "compile_commands.json"), encoding="utf-8") as f:
        return {os.path.realpath(e["file"]): e for e in json.load(f)}


def preprocess_args(entry):
    """The compile command with -E -P instead of -c/-o: the translation unit clang-tidy parses."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        out.append(a)
    return out + ["-E", "-P"]


def cache_key(root, entry, tidy_version, config):
    """Hash of what the result depends on, or None when the file cannot be preprocessed."""
    pre = subprocess.run(preprocess_args(entry), cwd=entry["directory"], capture_output=True)
    if pre.returncode != 0:
        return None
    rel = os.path.relpath(entry["file"], root)
    # Flags without the paths of this clone: include directories are part of the preprocessed
    # text already.
    flags = [a for a in preprocess_args(entry)[1:]
             if not a.startswith("-I") and not a.startswith(root) and a != entry["file"]]
    h = hashlib.sha256()
    for part in (tidy_version, config, rel, " ".join(flags)):
        h.update(part.encode())
        h.update(b"\0")
    # __FILE__ (gtest's EXPECT macros) expands to this clone's absolute path: the result does not
    # depend on where the clone is, so neither does the key.
    h.update(pre.stdout.replace(root.encode(), b"<root>"))
    return h.hexdigest()


def check(root, build_dir, cache_dir, entry, tidy_version, config):
    key = cache_key(root, entry, tidy_version, config)
    marker = os.path.join(cache_dir, key) if key else None
    if marker and os.path.exists(marker):
        return entry["file"], True, "", True
    run = subprocess.run(["clang-tidy", "-p", build_dir, "--quiet", "--warnings-as-errors=*",
                          entry["file"]], capture_output=True, text=True)
    output = "\n".join(line for line in (run.stdout + run.stderr).splitlines()
                       if not SUMMARY.match(line.strip()))
    clean = run.returncode == 0
    if clean and marker:
        with open(marker, "w", encoding="utf-8") as f:
            f.write(os.path.relpath(entry["file"], root) + "\n")
    return entry["file"], clean, output, False


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: hack/tidy.py BUILD_DIR JOBS FILE...")
    build_dir, jobs, files = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    root = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    commands = compile_commands(build_dir)
    cache_dir = os.path.join(os.environ.get("AYATORI_CACHE",
                                            os.path.expanduser("~/.cache/ayatori")), "tidy")
    os.makedirs(cache_dir, exist_ok=True)
    tidy_version = subprocess.run(["clang-tidy", "--version"], capture_output=True,
                                  text=True, check=True).stdout
    with open(os.path.join(root, ".clang-tidy"), encoding="utf-8") as f:
        config = f.read()

    missing = [f for f in files if os.path.realpath(os.path.join(root, f)) not in commands]
    if missing:
        print("tidy: not in %s/compile_commands.json (configure first): %s"
              % (build_dir, " ".join(missing)), file=sys.stderr)
        return 1
    entries = [commands[os.path.realpath(os.path.join(root, f))] for f in files]
    failed, cached = [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for path, clean, output, from_cache in pool.map(
                lambda e: check(root, build_dir, cache_dir, e, tidy_version, config), entries):
            cached += from_cache
            if output.strip():
                print(output)
            if not clean:
                failed.append(os.path.relpath(path, root))
    if failed:
        print("tidy: clang-tidy found problems in %d file(s): %s" % (len(failed), " ".join(failed)),
              file=sys.stderr)
        return 1
    print("tidy: %d files clean (%d checked now, %d unchanged since a clean check in %s)"
          % (len(files), len(files) - cached, cached, cache_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
