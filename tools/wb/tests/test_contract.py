"""contract: clauses read from headers, the checks naming them, and what --check reports; on a
made-up tree (chapters/, tests/, an instructor's extra checks)."""

import contextlib
import io
import json
import sys
import tempfile
import types
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb import cli  # noqa: E402
from wb.contract import cmd_contract, contract_json, problem_lines, read_contract  # noqa: E402
from wb.cppscan import blank_comments, literal, pieces, split_args, test_cases  # noqa: E402

HEADER = """/// @file sdpa.hpp
/// @brief Chapter 4.
#pragma once
namespace wb {

/// Scores of every query against every key.
///
/// The scale is applied before anything is summed. Not a promise: the loop order.
/// The output is assigned, never accumulated. <!-- clause: attention_scores.assigned -->
/// @param q `[B, H, N, d]`; d > 0 <!-- clause: attention_scores.positive-d -->
/// @param k `[B, H, M, d]`
/// @return `[B, H, N, M]`
/// @throws ShapeError if q and k differ in B, H or d (the message names the function and
///         both shapes) <!-- clause: attention_scores.shape-mismatch -->
Tensor4 attention_scores(const Tensor4& q, const Tensor4& k);

/// Options.
struct Options {
    float scale = 1.0f;  ///< multiplies the scores; must be finite <!-- clause: Options.finite-scale -->
};

/// A function whose clause id names another.
/// @throws ValueError always <!-- clause: no_such_function.always -->
void weighted_sum(int x);

/// Bad marker. <!-- clause: weighted_sum.Bad_Id -->
/// Unfinished marker <!-- clause weighted_sum.x
void other();

/// An error promised with no clause id.
/// @throws ValueError if x < 0
void unmarked(int x);

/// An error said not to be a promise.
/// @throws std::bad_alloc when memory runs out (not a promise: the allocator decides)
void allowed(int x);
}  // namespace wb
"""

TESTS = r"""#include "check.hpp"

TEST_CASE("attention_scores rejects mismatched shapes",
          "[attention_scores][c:attention_scores.shape-mismatch]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_scores(q, k), "hint", "wb::attention_scores");
}

TEST_CASE("a name " "in two \"parts\"", "[attention_scores][c:attention_scores.assigned]"
          "[c:attention_scores.shape-mismatch]") {
}

// TEST_CASE("commented out", "[c:attention_scores.positive-d]") {}
/* TEST_CASE("also commented out", "[c:attention_scores.positive-d]") {} */

TEST_CASE("a tag naming no clause", "[c:attention_scores.no-such-clause]") {
    const char* s = "TEST_CASE(\"in a string\", \"[c:attention_scores.positive-d]\")";
}
"""

MINIGPT = """/// @throws FileError always <!-- clause: gpt_load.always -->
void gpt_load();
"""


def put(root, relative, text):
    """Writes `text` to the file `relative` (a path with / in it) below `root`, making its
    folders."""
    path = Path(root, *relative.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_tree(root):
    root = Path(root)
    put(root, "chapters/4-sdpa/sdpa.hpp", HEADER)
    put(root, "chapters/capstone/kernel.hpp",
        "/// Runs. <!-- clause: kernel.runs -->\nvoid kernel();\n"
        "/// Same id as chapter 4's. <!-- clause: attention_scores.assigned -->\n"
        "void attention_scores();\n")
    put(root, "chapters/capstone/minigpt/gpt.hpp", MINIGPT)
    put(root, "chapters/common/workbook/core.hpp", MINIGPT)
    put(root, "tests/4-sdpa/test_sdpa.cpp", TESTS)
    put(root, "tests/minigpt/test_gpt.cpp",
        'TEST_CASE("loads", "[c:gpt_load.always][c:nothing.here]") {}\n')
    put(root, "extra/capstone/test_more.cpp",
        'TEST_CASE("the kernel runs", "[kernel][c:kernel.runs]") {}\n')
    return root


class Scanning(unittest.TestCase):
    def test_comments_are_blanked_and_literals_kept(self):
        text = 'a // x "y"\nb /* c\n d */ "e // f" \'"\' 1\'000\n'
        code = blank_comments(text)
        self.assertEqual(len(code), len(text))
        self.assertEqual(code.count("\n"), text.count("\n"))
        self.assertNotIn("x", code)
        self.assertNotIn("c", code.replace("\"e // f\"", ""))
        self.assertIn('"e // f"', code)

    def test_arguments_split_at_top_level_commas_only(self):
        text = 'f(a(1, 2), {3, 4}, "x, y", R"(p, q)", \',\')'
        args, end = split_args(text, 2)
        self.assertEqual([a for _, a in args],
                         ["a(1, 2)", "{3, 4}", '"x, y"', 'R"(p, q)"', "','"])
        self.assertEqual(text[end], ")")
        self.assertEqual(split_args("g()", 2)[0], [])

    def test_literals_and_pieces(self):
        self.assertEqual(literal('"ab" "c\\"d"'), 'abc"d')
        self.assertIsNone(literal("name"))
        self.assertEqual(pieces('"at byte " + std::to_string(n)'),
                         [(True, "at byte "), (False, "+ std::to_string(n)")])

    def test_test_cases_with_their_tags(self):
        cases = test_cases("t.cpp", TESTS)
        self.assertEqual([c.name for c in cases],
                         ["attention_scores rejects mismatched shapes", 'a name in two "parts"',
                          "a tag naming no clause"])
        self.assertEqual(cases[1].clause_tags, ["attention_scores.assigned",
                                                "attention_scores.shape-mismatch"])
        self.assertEqual(cases[0].line, 3)


class Contract(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = make_tree(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def clauses(self, contract, label="chapter4"):
        return {c.id: c for c in contract.clauses[label]}

    def test_each_clause_has_its_sentence(self):
        clauses = self.clauses(read_contract(self.root, ["4"]))
        self.assertEqual(clauses["attention_scores.assigned"].text,
                         "The output is assigned, never accumulated.")
        self.assertEqual(clauses["attention_scores.positive-d"].text,
                         "@param q `[B, H, N, d]`; d > 0")
        self.assertEqual(clauses["attention_scores.shape-mismatch"].text,
                         "@throws ShapeError if q and k differ in B, H or d (the message names "
                         "the function and both shapes)")
        self.assertEqual(clauses["attention_scores.shape-mismatch"].line, 14)
        self.assertEqual(clauses["Options.finite-scale"].text,
                         "multiplies the scores; must be finite")
        self.assertEqual(clauses["attention_scores.shape-mismatch"].function, "attention_scores")
        self.assertEqual(clauses["attention_scores.shape-mismatch"].documents, "attention_scores")

    def test_checks_prove_clauses(self):
        clauses = self.clauses(read_contract(self.root, ["4"]))
        proof = clauses["attention_scores.shape-mismatch"].checks
        self.assertEqual([(c["file"], c["line"]) for c in proof],
                         [("tests/4-sdpa/test_sdpa.cpp", 3), ("tests/4-sdpa/test_sdpa.cpp", 8)])
        self.assertEqual(clauses["attention_scores.positive-d"].checks, [])  # comments, strings

    def test_minigpt_and_common_headers_are_no_chapter(self):
        contract = read_contract(self.root)
        self.assertEqual([c.label for c in contract.chapters], ["chapter4", "capstone"])
        ids = {c.id for label in contract.clauses for c in contract.clauses[label]}
        self.assertNotIn("gpt_load.always", ids)
        self.assertFalse(any("minigpt" in k["file"] for k in contract.checks))

    def test_check_names_every_problem(self):
        problems = "\n".join(problem_lines(read_contract(self.root, ["4"])))
        self.assertIn("chapters/4-sdpa/sdpa.hpp:10: clause attention_scores.positive-d has no "
                      "check", problems)
        self.assertIn("tests/4-sdpa/test_sdpa.cpp:15: [c:attention_scores.no-such-clause] names "
                      "no clause", problems)
        self.assertIn("clause id attention_scores.assigned is used 2 times", problems)
        self.assertIn("'weighted_sum.Bad_Id' is not <function>.<kebab-name>", problems)
        self.assertIn("sdpa.hpp:27: a clause marker that is not", problems)
        self.assertIn("'no_such_function' is declared nowhere", problems)
        self.assertNotIn("Options.finite-scale' is declared", problems)   # a type's member
        self.assertNotIn("proven", problems)
        self.assertIn("sdpa.hpp:31: an @throws without a clause id", problems)
        self.assertNotIn("sdpa.hpp:35: an @throws", problems)

    def test_extra_checks_count(self):
        plain = self.clauses(read_contract(self.root, ["capstone"]), "capstone")
        self.assertEqual(plain["kernel.runs"].checks, [])
        extra = self.clauses(read_contract(self.root, ["capstone"], self.root / "extra"),
                             "capstone")
        self.assertEqual([c["name"] for c in extra["kernel.runs"].checks], ["the kernel runs"])

    def run_verb(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        parsed = types.SimpleNamespace(chapters=None, check=False, json=False, extra_tests=None,
                                       root=self.root)
        for a in argv:
            if a.startswith("--"):
                setattr(parsed, a[2:].replace("-", "_"), True)
            else:
                parsed.chapters = [a]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cmd_contract(parsed)
        return code, out.getvalue(), err.getvalue()

    def test_the_verb_lists_and_checks(self):
        code, out, _ = self.run_verb("4")
        self.assertEqual(code, 0)
        self.assertIn("chapter4 (chapters/4-sdpa): 6 clauses, 2 with a check, 4 without; 3 of 3 checks", out)
        self.assertIn("  attention_scores.shape-mismatch  [attention_scores]", out)
        self.assertIn("      ✓ tests/4-sdpa/test_sdpa.cpp:3  attention_scores rejects", out)
        self.assertIn("      ✗ no check names this clause", out)
        code, _, err = self.run_verb("4", "--check")
        self.assertEqual(code, 1)
        self.assertIn("problem(s) with the contract", err)

    def test_json_for_other_tools(self):
        code, out, _ = self.run_verb("4", "--json")
        data = json.loads(out)
        self.assertEqual(data["chapters"][0]["label"], "chapter4")
        check = next(k for k in data["checks"] if k["line"] == 8)
        self.assertEqual(check["functions"], ["attention_scores"])
        self.assertEqual(check["clauses"], ["attention_scores.assigned",
                                            "attention_scores.shape-mismatch"])
        self.assertTrue(data["problems"])

    def test_a_kept_contract_passes_check(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            put(root, "chapters/1-a/a.hpp",
                "/// @throws ValueError if x < 0 <!-- clause: f.negative -->\nint f(int x);\n")
            put(root, "tests/1-a/t.cpp", 'TEST_CASE("f refuses -1", "[f][c:f.negative]") {}\n')
            parsed = types.SimpleNamespace(chapters=None, check=True, json=False,
                                           extra_tests=None, root=root)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(cmd_contract(parsed), 0)
            self.assertIn("1 clause, 1 with a check, 0 without; 1 of 1 checks", out.getvalue())
            self.assertIn("the contract holds", out.getvalue())

    def test_an_unknown_chapter_is_one_line(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli.main(["contract", "--chapters", "42"])
        self.assertEqual(code, 2)
        self.assertIn("unknown chapter '42'", err.getvalue())


class OnThisRepository(unittest.TestCase):
    def test_reads_every_chapter_quickly(self):
        import time
        start = time.process_time()
        contract = read_contract()
        self.assertGreater(len(contract.checks), 100)
        self.assertLess(time.process_time() - start, 2.0)



class DeclaredLabels(unittest.TestCase):
    def test_the_label_comes_from_the_cmakelists(self):
        from wb.contract import chapter_label
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "CMakeLists.txt").write_text(
                "wb_chapter(chapter9 9-kv-cache   DEPENDS chapter8)\n"
                "  wb_chapter(dataparallel 10-data-parallel DEPENDS chapter8)\n")
            self.assertEqual(chapter_label("10-data-parallel", tmp), "dataparallel")
            self.assertEqual(chapter_label("9-kv-cache", tmp), "chapter9")
            self.assertEqual(chapter_label("11-new", tmp), "chapter11")
            self.assertEqual(chapter_label("capstone", tmp), "capstone")


if __name__ == "__main__":
    unittest.main()
