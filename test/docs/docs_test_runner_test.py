#!/usr/bin/env python3
"""docs_test_runner_test (unit): hack/docs-test.py's extraction, markers and assertions on the
fixtures of this folder; the generated scripts run in bash (no stack is started)."""
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
spec = importlib.util.spec_from_file_location("docs_test", os.path.join(ROOT, "hack", "docs-test.py"))
dt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dt)


def blocks_of(name):
    with open(os.path.join(HERE, name)) as f:
        return dt.extract("test/docs/" + name, f.read())


def run(blocks):
    return dt.run_script(dt.build_script(blocks), cwd=HERE)


class ExtractTest(unittest.TestCase):
    def test_blocks_markers_and_indentation(self):
        blocks = blocks_of("fixture.md")
        self.assertEqual([(b.line, b.lang, b.stack, b.skip) for b in blocks], [
            (4, "sh", "demo", None),
            (14, "", None, None),
            (21, "sh", None, "a managed cluster's commands"),
            (26, "bash", "demo", None),
        ])
        self.assertEqual(blocks[2].lines, ["kubectl logs -n ayatori-system deploy/ayatori-controller"])
        self.assertEqual(dt.check(blocks), [])

    def test_bad_markers_are_named_with_file_and_line(self):
        problems = dt.check(blocks_of("failing.md"))
        self.assertEqual(len(problems), 3, problems)
        self.assertTrue(problems[0].startswith("test/docs/failing.md:18: a sh block without a marker"))
        self.assertTrue(problems[1].startswith("test/docs/failing.md:23: unknown stack 'nowhere'"))
        self.assertTrue(problems[2].startswith("test/docs/failing.md:28: the marker 'skip'"))


class AssertionTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(dt.parse_assertion("make demo   # prints: hello world"), (0, "hello world"))
        self.assertEqual(dt.parse_assertion("x   # => exit 4: Cancelled"), (4, None))
        self.assertEqual(dt.parse_assertion('x  # => exit 1, prints: "not installed" (below)'),
                         (1, "not installed"))
        self.assertIsNone(dt.parse_assertion("kubectl ayatori get   # NAME STATE CLASS"))
        self.assertIsNone(dt.parse_assertion("echo '#=> not a comment'x"))
        with self.assertRaises(dt.DocError):
            dt.parse_assertion("x   # prints:")

    def test_continuation_lines_are_one_command(self):
        b = blocks_of("fixture.md")[3]
        self.assertEqual([(f, l) for f, l, _ in dt.logical_lines(b)], [(0, 1), (2, 2), (3, 3)])


class RunTest(unittest.TestCase):
    def test_passing_blocks(self):
        blocks = [b for b in blocks_of("fixture.md") if b.stack]
        rc, out = run(blocks)
        self.assertEqual(rc, 0, out)
        self.assertIn("docs-test: test/docs/fixture.md:4 (demo)", out)
        self.assertIn("docs-test: all blocks passed", out)

    def test_each_failure_names_file_and_line(self):
        blocks = [b for b in blocks_of("failing.md") if b.stack == "demo"]
        rc, out = run(blocks[0:1])
        self.assertNotEqual(rc, 0)
        self.assertIn("docs-test: FAILED: test/docs/failing.md:3: the output has no line "
                      "containing 'goodbye'", out)
        rc, out = run(blocks[1:2])
        self.assertNotEqual(rc, 0)
        self.assertIn("docs-test: FAILED: test/docs/failing.md:9: exit code 1", out)
        self.assertNotIn("never", out.replace("echo never", ""))
        rc, out = run(blocks[2:3])
        self.assertNotEqual(rc, 0)
        self.assertIn("docs-test: FAILED: test/docs/failing.md:15: exit code 2, the doc says 3", out)


class RepositoryDocsTest(unittest.TestCase):
    def test_every_shell_block_of_the_docs_is_marked(self):
        problems = []
        for f in dt.doc_files([]):
            with open(os.path.join(ROOT, f)) as fh:
                problems += dt.check(dt.extract(f, fh.read()))
        self.assertEqual(problems, [])


if __name__ == "__main__":
    unittest.main()
