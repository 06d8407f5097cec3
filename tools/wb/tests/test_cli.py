"""Every module imports, every verb has its help, and a bad argument is one line."""

import contextlib
import importlib
import io
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb import cli  # noqa: E402

VERBS = ["use", "status", "check", "watch", "next", "hint", "grade", "bench", "verify-stubs",
         "mutants", "guides", "handout", "contract", "messages"]


class Cli(unittest.TestCase):
    def test_every_module_imports(self):
        for name in ("common", "course", "results", "hints", "screen", "learner", "instructor",
                     "bench", "cli", "handout", "classreport", "cppscan", "contract",
                     "messages"):
            importlib.import_module(f"wb.{name}")

    def test_every_verb_has_its_help(self):
        for verb in VERBS:
            out = io.StringIO()
            with self.subTest(verb=verb), contextlib.redirect_stdout(out), \
                    self.assertRaises(SystemExit) as done:
                cli.main([verb, "--help"])
            self.assertEqual(done.exception.code, 0)
            self.assertIn("usage:", out.getvalue())

    def test_a_bad_argument_is_one_line(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as done:
            cli.main(["hint", "6", "x"])
        self.assertEqual(done.exception.code, 2)
        self.assertEqual(len(err.getvalue().strip().splitlines()), 1)

    def test_the_catalogue_lists(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(cli.main(["mutants", "--list"]), 0)
        self.assertIn("mask-zeroed-after-softmax", out.getvalue())


if __name__ == "__main__":
    unittest.main()
