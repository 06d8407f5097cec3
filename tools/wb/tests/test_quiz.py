"""`workbook quiz`: a right answer, a wrong one and a bad input, on a made-up guide and on
the real chapters; and the guide checks that keep both editions' questions the same."""

import io
import subprocess
import sys
import unittest
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.common import ROOT, WorkbookError  # noqa: E402
from wb.guidecheck import check_pair, forbidden_terms, questions  # noqa: E402
from wb.quiz import ask, chapter_folder, is_right, numeric_questions, parse_answer  # noqa: E402

GUIDE = """# A chapter

## Before you code

Intro.

**Q1 (predict).** Double every score of [1, 2, 3]: the largest weight?

<!-- quiz answer=0.8668 rtol=0.002 -->

<details><summary>Answer</summary>

0.8668.

</details>

**Q2 (derive).** Why?

<details><summary>Answer</summary>

Because.

</details>

**Q3 (count).** How many?

<!-- quiz answer=0 atol=1e-9 -->

<details><summary>Answer</summary>

None.

</details>

## Tasks
"""

CHINESE = (GUIDE.replace("## Before you code", "## 动手之前").replace("(predict)", "（预测）")
           .replace("Answer</summary>", "答案</summary>"))


def run_quiz(qs, lines):
    """ask() fed with LINES; returns (right, asked, what it printed)."""
    feed = iter(lines)

    def read(prompt):
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None
    out = []
    right, asked = ask(qs, read=read, write=out.append)
    return right, asked, "\n".join(out)


class QuizTest(unittest.TestCase):
    def setUp(self):
        self.qs = [q for q in questions(GUIDE) if q["quiz"]]

    def test_questions_are_parsed(self):
        self.assertEqual([q["n"] for q in questions(GUIDE)], [1, 2, 3])
        self.assertEqual([q["n"] for q in self.qs], [1, 3])
        self.assertEqual(self.qs[0]["quiz"], {"answer": 0.8668, "rtol": 0.002})
        self.assertTrue(all(q["answered"] for q in questions(GUIDE)))

    def test_right_answer(self):
        right, asked, out = run_quiz(self.qs, ["0.867", "0"])
        self.assertEqual((right, asked), (2, 2))
        self.assertIn("right", out)

    def test_wrong_answer(self):
        right, asked, out = run_quiz(self.qs, ["0.5", "1e-3"])
        self.assertEqual((right, asked), (0, 2))
        self.assertIn("the answer is 0.8668", out)

    def test_bad_input_is_asked_again(self):
        right, asked, out = run_quiz(self.qs, ["eight", "0.8668", ""])
        self.assertEqual((right, asked), (1, 1))
        self.assertIn("not a number: 'eight'", out)
        self.assertIn("skipped", out)

    def test_end_of_input_stops(self):
        self.assertEqual(run_quiz(self.qs, [])[:2], (0, 0))

    def test_number_spellings(self):
        for text, value in [("0.25", 0.25), ("-1.5e-3", -1.5e-3), ("1,024", 1024), ("3/4", 0.75),
                            ("25%", 0.25), ("1.2·10^9", 1.2e9), ("1.2×10⁹", 1.2e9),
                            ("−2", -2.0), (" 7 ", 7.0)]:
            self.assertAlmostEqual(parse_answer(text), value, msg=text)
        for text in ["", "abc", "1/0", "inf", "nan", "1..2", "10^"]:
            with self.assertRaises(ValueError, msg=text):
                parse_answer(text)

    def test_tolerances(self):
        self.assertTrue(is_right(16, {"answer": 16.0, "rtol": 0.0}))
        self.assertFalse(is_right(17, {"answer": 16.0, "rtol": 0.0}))
        self.assertTrue(is_right(1 / 3, {"answer": 0.3333, "rtol": 0.002}))
        self.assertFalse(is_right(0.3, {"answer": 0.3333, "rtol": 0.002}))
        self.assertTrue(is_right(5e-10, {"answer": 0.0, "atol": 1e-9}))

    def test_chapter_names(self):
        self.assertEqual(chapter_folder("4").name, "4-sdpa")
        self.assertEqual(chapter_folder("chapter4").name, "4-sdpa")
        self.assertEqual(chapter_folder("Capstone").name, "capstone")
        with self.assertRaises(WorkbookError):
            chapter_folder("42")

    def test_every_chapter_has_numeric_questions(self):
        for folder in sorted((ROOT / "chapters").glob("*/README.md")):
            qs = numeric_questions(folder.parent)
            self.assertGreaterEqual(len(qs), 2, folder.parent.name)

    def test_command_line(self):
        """The verb itself: a right, a wrong and a bad answer fed through a pipe."""
        result = subprocess.run([sys.executable, str(ROOT / "tools" / "workbook"), "quiz", "4",
                                 "--only", "1", "5"], input="0.8668\nseventy\n70\n",
                                text=True, capture_output=True)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("right (0.8668)", result.stdout)
        self.assertIn("not a number: 'seventy'", result.stdout)
        self.assertIn("1 of 2 right", result.stdout)
        bad = subprocess.run([sys.executable, str(ROOT / "tools" / "workbook"), "quiz", "x"],
                             text=True, capture_output=True)
        self.assertEqual(bad.returncode, 2)


class GuideCheckTest(unittest.TestCase):
    def test_same_questions_pass(self):
        self.assertEqual(check_pair(GUIDE, CHINESE), [])

    def test_a_missing_question_is_reported(self):
        chinese = CHINESE.replace("**Q3 (count).**", "Q3 (count).")
        self.assertTrue(any("questions differ" in p for p in check_pair(GUIDE, chinese)))

    def test_a_different_answer_is_reported(self):
        chinese = CHINESE.replace("answer=0.8668", "answer=0.87")
        self.assertTrue(any("quiz markers differ" in p for p in check_pair(GUIDE, chinese)))

    def test_an_unfolded_answer_is_reported(self):
        chinese = CHINESE.replace("<details><summary>答案</summary>\n\nBecause.\n\n</details>",
                                  "Because.")
        self.assertTrue(any("no folded answer" in p for p in check_pair(GUIDE, chinese)))

    def test_forbidden_terms(self):
        text = "每个查询行的分数，加上掩码，再读取键和值。`golden` 不算，但 golden 文件算。\n"
        variants = [v for _, v, _ in forbidden_terms(text)]
        for v in ["分数", "掩码", "键", "查询（指 Query）", "golden"]:
            self.assertIn(v, variants)
        self.assertEqual(forbidden_terms("关键在于得分、Mask、Query 和 Key。`掩码`\n"), [])
        self.assertEqual(check_pair(GUIDE, CHINESE + "掩码\n", terms=False), [])

    def test_the_real_guides_pass(self):
        for english in sorted((ROOT / "chapters").glob("*/README.md")):
            chinese = english.with_name("README.zh.md")
            self.assertEqual(check_pair(english.read_text(), chinese.read_text()), [],
                             english.parent.name)


if __name__ == "__main__":
    unittest.main()
