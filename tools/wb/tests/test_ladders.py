"""Hint ladders: data files per chapter and language, the two languages compared, the ideas
kept in the guides, the key lines kept out of them, the reference last."""

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.common import ROOT  # noqa: E402
from wb.cppscan import stub_functions  # noqa: E402
from wb.ladders import (KINDS, idea_headings, key_line_leaks, key_lines,  # noqa: E402
                        ladder_for, ladder_problems, load_ladders, reference_rung)
from wb.i18n import use_language  # noqa: E402

use_language("en")  # these screens are the English ones

ENGLISH = {"weighted_sum": {"idea": "each (b, h) is one matrix product",
                            "approach": "loop over b and h",
                            "key": "`Tensor2 o = xt::linalg::dot(a, vh);` per (b, h)"},
           "sdpa": {"idea": "chain the three", "approach": "scores, softmax, sum",
                    "key": "`return {weighted_sum(w, v), w};`"}}
CHINESE = {"weighted_sum": {"idea": "每个 (b, h) 是一次矩阵乘法", "approach": "对 b、h 循环",
                            "key": "`Tensor2 o = xt::linalg::dot(a, vh);`"},
           "sdpa": {"idea": "串起三步", "approach": "得分、softmax、加权和",
                    "key": "`return {weighted_sum(w, v), w};`"}}

GUIDE = """# Chapter 4

## Ideas, one per function

`tools/workbook hint 4` gives the rest.

### `wb::weighted_sum`

each (b, h) is one matrix product

### `wb::sdpa`

chain the three

## Hints and pitfalls

### `wb::not_an_idea`
"""


class Chapter:
    number, folder, guide = "4", "4-sdpa", "chapters/4-sdpa/README.md"


def tree(tmp, ladders=(("en", ENGLISH), ("zh", CHINESE)), reference=None):
    """A made-up repository: hints/4-sdpa.<lang>.json and solutions/4-sdpa/sdpa.cpp."""
    root = Path(tmp)
    (root / "hints").mkdir()
    for lang, functions in ladders:
        (root / "hints" / f"4-sdpa.{lang}.json").write_text(json.dumps(
            {"chapter": "4-sdpa", "language": lang, "functions": functions},
            ensure_ascii=False))
    (root / "solutions" / "4-sdpa").mkdir(parents=True)
    (root / "solutions" / "4-sdpa" / "sdpa.cpp").write_text(reference or (
        "Tensor4 weighted_sum(const Tensor4& w, const Tensor4& v) {\n"
        "    Tensor2 o = xt::linalg::dot(a, vh);  // return {weighted_sum(w, v), w};\n}\n"))
    return root


class LadderTests(unittest.TestCase):
    def test_rungs_in_order_with_the_languages_labels(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = tree(tmp)
            rungs = ladder_for("4-sdpa", "weighted_sum", "en", root)
            self.assertEqual(rungs[0], "Idea. each (b, h) is one matrix product")
            self.assertTrue(rungs[2].startswith("Key line. `Tensor2 o"))
            self.assertEqual(ladder_for("4-sdpa", "sdpa", "zh", root)[1], "做法。得分、softmax、加权和")
            self.assertEqual(ladder_for("4-sdpa", "nothing", "en", root), [])
            self.assertEqual(list(load_ladders("4-sdpa", "en", root)), ["weighted_sum", "sdpa"])

    def test_a_missing_chinese_ladder_falls_back_to_english(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = tree(tmp, ladders=(("en", ENGLISH),))
            self.assertEqual(ladder_for("4-sdpa", "sdpa", "zh", root)[0], "Idea. chain the three")

    def test_the_two_languages_agree(self):
        self.assertEqual(ladder_problems(ENGLISH, CHINESE, ["weighted_sum", "sdpa"]), [])

    def test_a_missing_rung_or_function_is_named(self):
        fewer = {**CHINESE, "sdpa": {"idea": "串起三步", "approach": "得分"}}
        self.assertTrue(any("Chinese hint ladder of sdpa" in p
                            for p in ladder_problems(ENGLISH, fewer)))
        other = {"weighted_sum": CHINESE["weighted_sum"]}
        problems = ladder_problems(ENGLISH, other, ["weighted_sum", "sdpa"])
        self.assertTrue(any("hint ladders differ" in p for p in problems))
        self.assertIn("no Chinese hint ladder for wb::sdpa", problems)

    def test_rungs_in_the_wrong_order_are_refused(self):
        swapped = {**ENGLISH, "sdpa": {"approach": "x", "idea": "y", "key": "z"}}
        self.assertTrue(any("English hint ladder of sdpa" in p
                            for p in ladder_problems(swapped, CHINESE)))
        self.assertEqual(KINDS, ("idea", "approach", "key"))

    def test_the_guide_keeps_the_ideas(self):
        self.assertEqual(idea_headings(GUIDE), ["weighted_sum", "sdpa"])
        self.assertEqual(idea_headings(GUIDE.replace("Ideas, one per function", "每个函数的思路")),
                         ["weighted_sum", "sdpa"])

    def test_a_key_line_of_the_reference_is_found_in_a_page(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = tree(tmp)
            keys = key_lines(root)
            # The first key is a line of the reference; the second is only in a comment there.
            self.assertEqual([k[2] for k in keys], ["Tensor2 o = xt::linalg::dot(a, vh);"])
            page = root / "README.md"
            page.write_text("ok\n3. **Key line.** `Tensor2 o = xt::linalg::dot(a,  vh);`\n")
            self.assertEqual(key_line_leaks([page], keys, root),
                             [("README.md", 2, "Tensor2 o = xt::linalg::dot(a, vh);")])
            page.write_text("`xt::linalg::dot(qh, xt::transpose(kh))` is [N, M]\n")
            self.assertEqual(key_line_leaks([page], keys, root), [])

    def test_the_reference_rung_names_the_switch_and_the_file(self):
        rung = reference_rung(Chapter, "sdpa", ROOT)
        self.assertIn("tools/workbook use 4 reference", rung)
        self.assertIn("tools/workbook use 4 student", rung)
        self.assertIn("solutions/4-sdpa/sdpa.cpp", rung)
        self.assertIn("参考答案", reference_rung(Chapter, "sdpa", ROOT, "zh"))

    def test_every_chapter_has_its_ladders_and_no_guide_a_key_line(self):
        for path in sorted((ROOT / "chapters").glob("*/README.md")):
            folder = path.parent.name
            en, zh = load_ladders(folder, "en"), load_ladders(folder, "zh")
            self.assertEqual(ladder_problems(en, zh, stub_functions(path.parent)), [], folder)
            self.assertEqual(idea_headings(path.read_text()), list(en), folder)
        guides = sorted((ROOT / "chapters").glob("**/README*.md"))
        self.assertEqual(key_line_leaks(guides, key_lines(), ROOT), [])

    def test_stub_functions_are_the_bodies_that_are_still_stubs(self):
        names = stub_functions(ROOT / "chapters" / "8-training")
        self.assertIn("rope_backward", names)
        self.assertIn("gelu_backward", names)
        self.assertNotIn("Φ", names)  # a comment's "x Φ(x)" is not a function


if __name__ == "__main__":
    unittest.main()
