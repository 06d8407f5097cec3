"""`workbook quiz`: a right answer, a wrong one and a bad input, on a made-up guide and on
the real chapters; the precision a question states; the quiz in Chinese; and the guide checks
that keep both editions' questions the same."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.common import ROOT, WorkbookError  # noqa: E402
from wb.guidecheck import check_pair, forbidden_terms, questions  # noqa: E402
from wb.quiz import (ask, chapter_folder, is_right, judge, numeric_questions,  # noqa: E402
                     parse_answer, quiz_language, read_number)

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

**Q4 (compute).** One third, to 2 decimals?

<!-- quiz answer=0.333333 decimals=2 -->

<details><summary>Answer</summary>

0.33.

</details>

## Tasks

**P1 (predict).** A prediction in the text, to 3 significant figures?

<!-- quiz answer=123456 sig=3 -->

<details><summary>Answer</summary>

123,000.

</details>
"""

CHINESE = (GUIDE.replace("## Before you code", "## 动手之前").replace("(predict)", "（预测）")
           .replace("Answer</summary>", "答案</summary>")
           .replace("to 2 decimals", "保留 2 位小数").replace("to 3 significant figures",
                                                             "保留 3 位有效数字"))


def run_quiz(qs, lines, language="en"):
    """ask() fed with LINES; returns (right, asked, what it printed, the prompts)."""
    feed = iter(lines)
    prompts = []

    def read(prompt):
        prompts.append(prompt)
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None
    out = []
    right, asked = ask(qs, read=read, write=out.append, language=language)
    return right, asked, "\n".join(out), prompts


def real_question(chapter, answer, chinese=False):
    """The numeric question of CHAPTER's guide whose marker's answer is ANSWER."""
    found = [q for q in numeric_questions(chapter_folder(chapter), chinese=chinese)
             if q["quiz"]["answer"] == answer]
    assert len(found) == 1, (chapter, answer, found)
    return found[0]


class QuizTest(unittest.TestCase):
    def setUp(self):
        self.qs = [q for q in questions(GUIDE) if q["quiz"]]

    def test_questions_are_parsed(self):
        self.assertEqual([q["id"] for q in questions(GUIDE)], ["Q1", "Q2", "Q3", "Q4", "P1"])
        self.assertEqual([q["id"] for q in self.qs], ["Q1", "Q3", "Q4", "P1"])
        self.assertEqual(self.qs[0]["quiz"], {"answer": 0.8668, "rtol": 0.002})
        self.assertEqual(self.qs[2]["quiz"], {"answer": 0.333333, "decimals": 2})
        self.assertEqual(self.qs[3]["quiz"], {"answer": 123456, "sig": 3})
        self.assertTrue(all(q["answered"] for q in questions(GUIDE)))

    def test_right_answer(self):
        right, asked, out, _ = run_quiz(self.qs, ["0.867", "0", "0.33", "1.23e5"])
        self.assertEqual((right, asked), (4, 4))
        self.assertIn("right", out)

    def test_wrong_answer_gets_a_second_try(self):
        right, asked, out, _ = run_quiz(self.qs, ["0.5", "0.8668"])
        self.assertEqual((right, asked), (1, 1))
        self.assertIn("try once more", out)
        self.assertNotIn("the answer is", out)

    def test_two_wrong_answers_show_the_key(self):
        right, asked, out, _ = run_quiz(self.qs, ["0.5", "0.6", "1e-3", "2"])
        self.assertEqual((right, asked), (0, 2))
        self.assertIn("the answer is 0.8668; unfold Q1's answer", out)
        self.assertIn("the answer is 0; unfold Q3's answer", out)

    def test_fewer_digits_asks_for_more(self):
        """0.3 is 1/3 to 1 decimal: the quiz asks for the 2 decimals before it says wrong."""
        right, asked, out, _ = run_quiz(self.qs[2:3], ["0.3", "0.33"])
        self.assertEqual((right, asked), (1, 1))
        self.assertIn("0.3 is the answer rounded to fewer digits: give more digits (to 2 "
                      "decimals)", out)
        self.assertNotIn("not quite", out)
        right, asked, out, _ = run_quiz(self.qs[3:4], ["1.2e5", "123000"])
        self.assertEqual((right, asked), (1, 1))
        self.assertIn("give more digits (to 3 significant figures)", out)

    def test_the_prompt_says_the_precision(self):
        prompts = run_quiz(self.qs, ["0.867", "0", "0.33", "123000"])[3]
        self.assertEqual(prompts[2], "  your answer (to 2 decimals): ")
        self.assertEqual(prompts[3], "  your answer (to 3 significant figures): ")
        self.assertIn("the exact number", run_quiz([real_question(4, 72)], ["72"])[3][0])

    def test_bad_input_is_asked_again(self):
        right, asked, out, _ = run_quiz(self.qs, ["eight", "0.8668", ""])
        self.assertEqual((right, asked), (1, 1))
        self.assertIn("not a number: 'eight'", out)
        self.assertIn("skipped", out)

    def test_precision_rules(self):
        third = {"answer": 0.333333, "decimals": 2}
        for text, verdict in [("0.33", "right"), ("0.333", "right"), ("1/3", "right"),
                              ("33%", "right"), ("0.3", "more digits"), ("0", "more digits"),
                              ("0.34", "wrong"), ("0.32", "wrong"), ("0.4", "wrong")]:
            self.assertEqual(judge(text, third), verdict, text)
        flops = {"answer": 17716740096, "sig": 3}
        for text, verdict in [("1.77e10", "right"), ("1.77·10^10", "right"),
                              ("17,716,740,096", "right"), ("1.8e10", "more digits"),
                              ("18000000000", "more digits"), ("1.7e10", "wrong"),
                              ("1.78e10", "wrong")]:
            self.assertEqual(judge(text, flops), verdict, text)
        count = {"answer": 72}
        for text, verdict in [("72", "right"), ("72.0", "right"), ("70", "wrong"),
                              ("7e1", "more digits"), ("73", "wrong")]:
            self.assertEqual(judge(text, count), verdict, text)
        self.assertEqual(read_number("0.87"), (0.87, 0.01))
        self.assertEqual(read_number("3/4"), (0.75, None))
        self.assertEqual(read_number("1200"), (1200.0, 100.0))

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

    def test_right_answers_to_the_stated_precision_are_accepted(self):
        """Answers rounded as the questions ask, in both editions of the real guides."""
        cases = [(4, 0.333333, "0.33"),      # four equal scores, one masked: 1/3
                 (4, 0.866813, "0.87"),      # doubled scores: the largest weight
                 (7, -1.341641, "-1.34"),    # LayerNorm of [1, 2, 3, 4]: the first output
                 (9, 0.506480, "0.51"),      # logits [2, 1, 0] at τ = 2
                 (8, -0.841471, "-0.84")]    # RoPE's backward: dx₁
        for chinese in (False, True):
            for chapter, answer, text in cases:
                q = real_question(chapter, answer, chinese)
                self.assertEqual(judge(text, q["quiz"]), "right", (chapter, q["id"], text))
                words = "保留 2 位小数" if chinese else "to 2 decimals"
                self.assertIn(words, " ".join(q["text"].split()), (chapter, q["id"]))
                right, asked, out, _ = run_quiz([q], [text], "zh" if chinese else "en")
                self.assertEqual((right, asked), (1, 1), out)

    def test_indices_count_from_0(self):
        """A question that asks for an index says where counting starts."""
        for chapter, answer in [(1, 1), (5, 8), (3, 3)]:
            english = real_question(chapter, answer)["text"]
            chinese = real_question(chapter, answer, chinese=True)["text"]
            self.assertRegex(" ".join(english.split()), r"(?i)counting \w+( and \w+)? from 0")
            self.assertIn("从 0 开始", chinese)

    def test_differences_are_oriented(self):
        """Chapter 3's RoPE gap: the question says which position is subtracted."""
        q = real_question(3, -2)
        self.assertIn("the Key's position minus the Query's, n − m", " ".join(q["text"].split()))
        self.assertIn("Key 的位置减去 Query 的位置 n − m", real_question(3, -2, True)["text"])

    def test_command_line(self):
        """The verb itself: a right, a wrong and a bad answer fed through a pipe."""
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, LANG="C.UTF-8", LC_ALL="",
                       WB_PROGRESS_FILE=str(Path(tmp) / "progress.json"))
            result = subprocess.run([sys.executable, str(ROOT / "tools" / "workbook"), "quiz",
                                     "4", "--only", "1", "4"],
                                    input="0.87\nseventy\n70\n71\n", text=True,
                                    capture_output=True, env=env)
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
            self.assertIn("your answer (to 2 decimals):", result.stdout)
            self.assertIn("right (0.866813)", result.stdout)
            self.assertIn("not a number: 'seventy'", result.stdout)
            self.assertIn("try once more", result.stdout)
            self.assertIn("the answer is 72", result.stdout)
            self.assertIn("1 of 2 right", result.stdout)
            # In Chinese: chosen by LANG when the progress file says nothing.
            zh = subprocess.run([sys.executable, str(ROOT / "tools" / "workbook"), "quiz", "4",
                                 "--only", "1"], input="0.87\n", text=True,
                                capture_output=True, env=dict(env, LANG="zh_CN.UTF-8"))
            self.assertEqual(zh.returncode, 0, zh.stdout + zh.stderr)
            self.assertIn("你的答案（保留 2 位小数）：", zh.stdout)
            self.assertIn("对了（0.866813）", zh.stdout)
            self.assertIn("答对 1 / 1 题", zh.stdout)
        bad = subprocess.run([sys.executable, str(ROOT / "tools" / "workbook"), "quiz", "x"],
                             text=True, capture_output=True)
        self.assertEqual(bad.returncode, 2)


class LanguageTest(unittest.TestCase):
    def language(self, progress=None, **env):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "progress.json"
            if progress is not None:
                path.write_text(json.dumps(progress))
            clean = {k: v for k, v in os.environ.items()
                     if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
            with mock.patch.dict(os.environ, dict(clean, WB_PROGRESS_FILE=str(path), **env),
                                 clear=True):
                return quiz_language()

    def test_the_progress_file_wins_over_the_locale(self):
        self.assertEqual(self.language({"lang": "zh"}, LANG="en_US.UTF-8"), "zh")
        self.assertEqual(self.language({"lang": "en"}, LANG="zh_CN.UTF-8"), "en")

    def test_the_locale_when_unset(self):
        self.assertEqual(self.language({"chapters": {}}, LANG="zh_CN.UTF-8"), "zh")
        self.assertEqual(self.language(None, LANG="zh_TW.UTF-8"), "zh")
        self.assertEqual(self.language(None, LANG="de_DE.UTF-8"), "en")
        self.assertEqual(self.language(None, LC_ALL="zh_CN.UTF-8", LANG="en_US.UTF-8"), "zh")
        self.assertEqual(self.language(None), "en")
        self.assertEqual(quiz_language("zh"), "zh")

    def test_chinese_screens(self):
        qs = [q for q in questions(CHINESE) if q["quiz"]]
        right, asked, out, prompts = run_quiz(qs[2:3], ["0.3", "0.33"], "zh")
        self.assertEqual((right, asked), (1, 1))
        self.assertIn("请多给几位（保留 2 位小数）", out)
        self.assertIn("对了", out)
        self.assertEqual(prompts[0], "  你的答案（保留 2 位小数）：")
        right, asked, out, _ = run_quiz(qs[:1], ["0.5", "0.6"], "zh")
        self.assertIn("再试一次", out)
        self.assertIn("答案是 0.8668", out)


class GuideCheckTest(unittest.TestCase):
    def test_same_questions_pass(self):
        self.assertEqual(check_pair(GUIDE, CHINESE), [])

    def test_unstated_precision_is_reported(self):
        english = GUIDE.replace("One third, to 2 decimals?", "One third?")
        self.assertTrue(any('Q4: the question does not say "to 2 decimals"' in p
                            for p in check_pair(english, CHINESE)))

    def test_predictions_are_numbered_apart(self):
        chinese = CHINESE.replace("**P1", "**P2")
        problems = check_pair(GUIDE.replace("**P1", "**P2"), chinese)
        self.assertTrue(any("the P questions are not numbered" in p for p in problems))

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

    def test_the_experiments_page_passes(self):
        """docs/experiments.md and its Chinese edition: the same structure and questions, and
        `workbook quiz experiments` finds them."""
        from wb.instructor import guide_structure
        english = (ROOT / "docs" / "experiments.md").read_text()
        chinese = (ROOT / "docs" / "experiments.zh.md").read_text()
        self.assertEqual(check_pair(english, chinese), [])
        self.assertEqual(guide_structure(english), guide_structure(chinese))
        qs = numeric_questions(ROOT / "docs" / "experiments.md")
        self.assertEqual([q["id"] for q in qs], ["P1", "P2", "P3", "P4", "P5", "P6"])
        self.assertNotIn("RESULT_", english + chinese)

    def test_the_real_guides_pass(self):
        for english in sorted((ROOT / "chapters").glob("*/README.md")):
            chinese = english.with_name("README.zh.md")
            self.assertEqual(check_pair(english.read_text(), chinese.read_text()), [],
                             english.parent.name)


if __name__ == "__main__":
    unittest.main()
