"""Hint ladders: parsing a guide's section, comparing the two editions, the reference last."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.common import ROOT  # noqa: E402
from wb.ladders import (ladder_problems, parse_ladders, reference_rung,  # noqa: E402
                        stub_functions)

ENGLISH = """# Chapter 4

## Tasks

1. **`weighted_sum(weights, v)`** — the product.

## Hint ladders

Intro text.

### `wb::weighted_sum`

1. **Idea.** each (b, h) is one matrix product
   of the weights and the values.
2. **Approach.** loop over b and h.
3. **Key line.** `out(b, h) = dot(w, v);`

### `wb::sdpa`

1. **Idea.** chain the three.
2. **Approach.** scores, softmax, sum.
3. **Key line.** `return {weighted_sum(w, v), w};`

## Hints and pitfalls

1. not a rung
"""

CHINESE = """# 第 4 章

## 提示阶梯

### `wb::weighted_sum`

1. **思路。** 每个 (b, h) 是一次矩阵乘法。
2. **做法。** 对 b、h 循环。
3. **关键一行。** `out(b, h) = dot(w, v);`

### `wb::sdpa`

1. **思路。** 串起三步。
2. **做法。** 分数、softmax、加权和。
3. **关键一行。** `return {weighted_sum(w, v), w};`
"""


class Chapter:
    number, folder, guide = "4", "4-sdpa", "chapters/4-sdpa/README.md"


class LadderTests(unittest.TestCase):
    def test_parse_keeps_order_joins_wrapped_rungs_and_stops_at_the_next_section(self):
        ladders = parse_ladders(ENGLISH)
        self.assertEqual(list(ladders), ["weighted_sum", "sdpa"])
        self.assertEqual(len(ladders["weighted_sum"]), 3)
        self.assertEqual(ladders["weighted_sum"][0],
                         "**Idea.** each (b, h) is one matrix product of the weights and the values.")
        self.assertNotIn("not a rung", " ".join(sum(ladders.values(), [])))

    def test_the_two_editions_agree(self):
        self.assertEqual(ladder_problems(ENGLISH, CHINESE), [])

    def test_a_missing_rung_or_function_is_named(self):
        fewer = CHINESE.replace("3. **关键一行。** `out(b, h) = dot(w, v);`\n", "")
        problems = ladder_problems(ENGLISH, fewer)
        self.assertTrue(any("weighted_sum: 3 rungs in English, 2 in Chinese" in p
                            for p in problems), problems)
        other = CHINESE.replace("`wb::sdpa`", "`wb::attention_scores`")
        self.assertTrue(any("hint ladders differ" in p for p in ladder_problems(ENGLISH, other)))

    def test_rungs_in_the_wrong_order_are_refused(self):
        swapped = ENGLISH.replace("1. **Idea.** chain", "1. **Approach.** chain").replace(
            "2. **Approach.** scores", "2. **Idea.** scores")
        self.assertTrue(any("English hint ladder of sdpa" in p
                            for p in ladder_problems(swapped, CHINESE)))

    def test_the_reference_rung_names_the_switch_and_the_file(self):
        rung = reference_rung(Chapter, "sdpa", ROOT)
        self.assertIn("tools/workbook use 4 reference", rung)
        self.assertIn("tools/workbook use 4 student", rung)
        self.assertIn("solutions/4-sdpa/sdpa.cpp", rung)

    def test_stub_functions_are_the_bodies_that_are_still_stubs(self):
        names = stub_functions(ROOT / "chapters" / "8-training")
        self.assertIn("rope_backward", names)
        self.assertIn("gelu_backward", names)
        self.assertNotIn("Φ", names)  # a comment's "x Φ(x)" is not a function


if __name__ == "__main__":
    unittest.main()
