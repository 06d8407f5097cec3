"""Blame: the function a failing check is about comes from what the check declares (its tags),
the header named is the one that declares it, and the mutant survey finds the function a
catalogued edit changes."""

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.course import parse_course  # noqa: E402
from wb.hints import declared_functions, declaring_header, failing_function  # noqa: E402
from wb.instructor import Mutant, callers, enclosing_function, mutated_function  # noqa: E402
from wb.results import Check, Failure, Outcome  # noqa: E402
from wb.screen import check_screen  # noqa: E402
from wb.i18n import use_language  # noqa: E402

use_language("en")  # these screens are the English ones

COURSE = parse_course(json.dumps({"reference": "none", "chapters": [
    {"label": "chapter8", "folder": "8-training", "title": "Chapter 8",
     "kind": "stub", "source": "chapters/8-training",
     "files": ["chapters/8-training/checkpoint.hpp", "chapters/8-training/layers.hpp",
               "chapters/8-training/model.hpp", "chapters/8-training/optim.hpp",
               "chapters/8-training/optim.cpp", "chapters/8-training/model.cpp"],
     "guide": "chapters/8-training/README.md", "target": "test_chapter8"}]}))
CHAPTER = COURSE.chapters[0]


def failing(tags, text="CHECK( state.step == 1 )\nwith expansion: 6 == 1\n"
                       "wb::parameters: grads have 3 tensors"):
    return Check("chapter8: AdamW rejects NaN hyper-parameters", False,
                 [Failure("tests/8-training/test_optim_checkpoint.cpp", 326, text,
                          [["info", "a rejected step changes nothing"]])],
                 "tests/8-training/test_optim_checkpoint.cpp", 298, tags=tags)


class Declared(unittest.TestCase):
    def test_a_clause_tag_names_the_function(self):
        check = failing(["optim", "c:adamw_step.checked-before-change"])
        self.assertEqual(declared_functions(check, CHAPTER), ["adamw_step"])
        self.assertEqual(failing_function(check, CHAPTER), "adamw_step")

    def test_a_tag_naming_a_declared_function(self):
        self.assertEqual(failing_function(failing(["optim", "adamw_step"]), CHAPTER),
                         "adamw_step")

    def test_no_guess_from_the_message(self):
        # The message names wb::parameters; the tags name no function: nothing is blamed.
        self.assertIsNone(failing_function(failing(["optim", "adamw", "errors"]), CHAPTER))

    def test_the_header_that_declares_it(self):
        self.assertEqual(declaring_header("adamw_step", CHAPTER), "chapters/8-training/optim.hpp")
        self.assertEqual(declaring_header("gpt_forward", CHAPTER), "chapters/8-training/model.hpp")

    def test_the_screen_blames_the_declared_function_and_its_header(self):
        outcome = Outcome([failing(["optim", "c:adamw_step.checked-before-change"])])
        text = "\n".join(check_screen(CHAPTER, COURSE, outcome))
        self.assertIn("your code: wb::adamw_step, chapters/8-training/optim.cpp:", text)
        self.assertIn("chapters/8-training/optim.hpp", text)
        self.assertNotIn("checkpoint.hpp", text)
        self.assertNotIn("wb::parameters,", text)
        text = "\n".join(check_screen(CHAPTER, COURSE, Outcome([failing(["optim"])])))
        self.assertNotIn("your code:", text)
        self.assertIn("next: fix the code that check calls "
                      "(tests/8-training/test_optim_checkpoint.cpp:298)", text)


CODE = """namespace {
// a helper { with a brace in a comment
int scale(int x) { return 2 * x; }
int twice(int x) { return scale(x) + 0; }
}  // namespace

int f(int x) {
    auto g = [](int y) { return y + 1; };
    return twice(g(x));
}

int h(int x) {
    if (x > 0) {
        return x - 1;
    }
    return 0;
}
"""


class Mutated(unittest.TestCase):
    def test_the_function_around_an_edit(self):
        self.assertEqual(enclosing_function(CODE, CODE.index("return x - 1")), "h")
        self.assertEqual(enclosing_function(CODE, CODE.index("return 2 * x")), "scale")
        self.assertEqual(enclosing_function(CODE, CODE.index("return twice")), "f")
        self.assertEqual(enclosing_function(CODE, CODE.index("namespace {")), "")

    def test_a_declared_function_wins_over_the_file(self):
        mutant = Mutant("m", "x", find="return x - 1;", function="k")
        self.assertEqual(mutated_function(mutant, CODE), "k")
        mutant.function = ""
        self.assertEqual(mutated_function(mutant, CODE), "h")

    def test_a_helpers_mistake_belongs_to_its_callers(self):
        self.assertEqual(callers("scale", CODE, ["f", "h"]), ["f"])

    def test_a_constant_of_the_file_belongs_to_the_functions_that_read_it(self):
        code = "constexpr int kAxis = 3;\nint f(int x) { return x + kAxis; }\nint g() { return 1; }\n"
        mutant = Mutant("m", "x", find="constexpr int kAxis = 3;\n")
        self.assertEqual(mutated_function(mutant, code), "kAxis")
        self.assertEqual(callers("kAxis", code, ["f", "g"]), ["f"])
        self.assertEqual(callers("", code, ["f", "g"]), [])


if __name__ == "__main__":
    unittest.main()
