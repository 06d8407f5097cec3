"""Reading Catch's XML reporter (2.13 and 3.x), build logs, and rendering the one screen."""

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.common import ROOT  # noqa: E402
from wb.course import parse_course  # noqa: E402
from wb.hints import hints_for, markdown_to_text  # noqa: E402
from wb.results import (Outcome, first_error, own_warnings, parse_catch_xml,  # noqa: E402
                        signal_name)
from wb.screen import check_screen, compile_error_screen  # noqa: E402
from wb.i18n import use_language  # noqa: E402

use_language("en")  # these screens are the English ones

TEST = f"{ROOT}/tests/1-tensors/test_tensors.cpp"

# Catch2 2.13's XML reporter, trimmed: a stub, a numeric failure (message kept exactly, with a
# path and a number that console wrapping used to break), a pass.
V2 = f"""<?xml version="1.0" encoding="UTF-8"?>
<Catch name="test_chapter1">
  <Group name="test_chapter1">
    <TestCase name="last_token is x[:, -1, :] and drops the T axis" tags="[indexing]" filename="{TEST}" line="53">
      <Expression success="false" filename="{TEST}" line="61">
        <Original>
          {{Unknown expression after the reported line}}
        </Original>
        <Expanded>
          {{Unknown expression after the reported line}}
        </Expanded>
        <Exception filename="{TEST}" line="61">
          wb::last_token is not implemented yet: write its body in chapters/1-tensors/tensors.cpp:15 (the chapter's README.md explains the task)
        </Exception>
      </Expression>
      <OverallResult success="false"/>
    </TestCase>
    <TestCase name="softmax subtracts the row maximum" tags="[softmax]" filename="{TEST}" line="300">
      <Info>
        x = [1000, 0]
      </Info>
      <Failure filename="{TEST}" line="310">
        values differ in 3 of 6 elements (shape [1, 1, 2, 3], tolerance 1e-05 + 1e-05*|expected|)
  first mismatch at [0, 0, 0, 2]: expected 1, actual 2.828427
  max |actual - expected| = 0.7310586 at [0, 0, 0, 2]: expected 1, actual 0.2689414
hint: subtract the row maximum before exp (q.shape(3) is d); see chapters/1-tensors/tensors.cpp:60
      </Failure>
      <Failure filename="{TEST}" line="312">
        values differ in 1 of 6 elements
hint: subtract the row maximum before exp (q.shape(3) is d); see chapters/1-tensors/tensors.cpp:60
      </Failure>
      <OverallResult success="false"/>
    </TestCase>
    <TestCase name="dot of two vectors" tags="[products]" filename="{TEST}" line="200">
      <OverallResult success="true"/>
    </TestCase>
    <OverallResults successes="1" failures="3" expectedFailures="0"/>
  </Group>
  <OverallResults successes="1" failures="3" expectedFailures="0"/>
</Catch>
"""

# Catch2 3.x: no <Group>, durations on OverallResult, a different root.
V3 = f"""<?xml version="1.0" encoding="UTF-8"?>
<Catch2TestRun name="test_chapter1" rng-seed="1" catch2-version="3.4.0">
  <TestCase name="dot of two vectors" tags="[products]" filename="{TEST}" line="200">
    <OverallResult success="true" skips="0" durationInSeconds="0.0012"/>
  </TestCase>
  <TestCase name="matmul of [2, 3] and [3, 4]" tags="[products]" filename="{TEST}" line="220">
    <Expression success="false" type="CHECK" filename="{TEST}" line="225">
      <Original>
        y.shape(1) == 4
      </Original>
      <Expanded>
        3 == 4
      </Expanded>
    </Expression>
    <OverallResult success="false" skips="0" durationInSeconds="0.002"/>
  </TestCase>
  <OverallResults successes="1" failures="1" expectedFailures="0" skips="0"/>
</Catch2TestRun>
"""


# Catch2 2.13's XML reporter as it writes INFO, CAPTURE, UNSCOPED_INFO and WARN: each failed
# assertion's <Info> elements just before it (text only), a WARN as a <Warning> where it ran.
# Written by a real 2.13 run (Debian 12); only the path is replaced.
V2_NOTES = f"""<?xml version="1.0" encoding="UTF-8"?>
<Catch name="test_chapter8">
  <Group name="test_chapter8">
    <TestCase name="an answer with its explanation" tags="[adamw_step][c:adamw_step.checked-first]" filename="{TEST}" line="3">
      <Info>
        the step is counted once: state.step goes from 0 to 1
      </Info>
      <Info>
        got := 2
      </Info>
      <Expression success="false" type="CHECK" filename="{TEST}" line="7">
        <Original>
          got == expected
        </Original>
        <Expanded>
          2 == 3
        </Expanded>
      </Expression>
      <Warning>
        a warning before the next failure
      </Warning>
      <Info>
        the step is counted once: state.step goes from 0 to 1
      </Info>
      <Info>
        got := 2
      </Info>
      <Info>
        an unscoped note
      </Info>
      <Expression success="false" type="REQUIRE" filename="{TEST}" line="11">
        <Original>
          got + 1 == expected + 1
        </Original>
        <Expanded>
          3 == 4
        </Expanded>
      </Expression>
      <OverallResult success="false"/>
    </TestCase>
    <TestCase name="a section" tags="[sdpa]" filename="{TEST}" line="14">
      <Section name="inner" filename="{TEST}" line="15">
        <Info>
          inside the section
        </Info>
        <Exception filename="{TEST}" line="15">
          wb::sdpa: boom
        </Exception>
        <OverallResults successes="0" failures="1" expectedFailures="0"/>
      </Section>
      <OverallResult success="false"/>
    </TestCase>
    <OverallResults successes="1" failures="3" expectedFailures="0"/>
    <OverallResultsCases successes="0" failures="2" expectedFailures="0"/>
  </Group>
  <OverallResults successes="1" failures="3" expectedFailures="0"/>
  <OverallResultsCases successes="0" failures="2" expectedFailures="0"/>
</Catch>
"""

# Catch2 3.x writes the same elements (tolerated: the source attributes later releases add).
V3_NOTES = f"""<?xml version="1.0" encoding="UTF-8"?>
<Catch2TestRun name="test_chapter4" rng-seed="7" xml-format-version="2" catch2-version="3.7.1">
  <TestCase name="the mask is applied before the softmax" tags="[masked_softmax][mask][c:masked_softmax.mask-before-softmax]" filename="{TEST}" line="198">
    <Info filename="{TEST}" line="211">
      with a random mask [B, N, M]
    </Info>
    <Info>
      weights:
  [0, 0, 0]: 0.25 0 0.25 0
  [0, 0, 1]: 0 0.5 0.1 0
    </Info>
    <Failure filename="{TEST}" line="217">
      values differ in 2 of 2 elements
hint: set hidden keys to -inf BEFORE the softmax
    </Failure>
    <OverallResult success="false" skips="0" durationInSeconds="0.001"/>
  </TestCase>
  <TestCase name="sdpa keeps its mask" tags="[sdpa]" filename="{TEST}" line="300">
    <Warning filename="{TEST}" line="302">
      the mask was dropped
    </Warning>
    <Expression success="false" type="CHECK" filename="{TEST}" line="305">
      <Original>
        got == c.expected
      </Original>
      <Expanded>
        true == false
      </Expanded>
    </Expression>
    <OverallResult success="false" skips="0" durationInSeconds="0.001"/>
  </TestCase>
  <OverallResults successes="0" failures="2" expectedFailures="0" skips="0"/>
  <OverallResultsCases successes="0" failures="2" expectedFailures="0" skips="0"/>
</Catch2TestRun>
"""

COURSE = parse_course(json.dumps({"reference": "none", "chapters": [
    {"label": "chapter1", "folder": "1-tensors", "title": "Chapter 1 — Tensors",
     "kind": "stub", "source": "chapters/1-tensors",
     "files": ["chapters/1-tensors/tensors.cpp", "chapters/1-tensors/tensors.hpp"],
     "guide": "chapters/1-tensors/README.md", "target": "test_chapter1"},
    {"label": "chapter2", "folder": "2-embedding", "title": "Chapter 2 — Embedding",
     "kind": "stub", "guide": "chapters/2-embedding/README.md", "target": "test_chapter2"}]}))
CHAPTER = COURSE.chapters[0]


class CatchXml(unittest.TestCase):
    def test_v2(self):
        checks = parse_catch_xml(V2, "chapter1: ")
        self.assertEqual([c.passed for c in checks], [False, False, True])
        stub, numeric, passing = checks
        self.assertEqual(stub.name, "chapter1: last_token is x[:, -1, :] and drops the T axis")
        self.assertEqual(stub.stub, ("last_token", "chapters/1-tensors/tensors.cpp", 15))
        self.assertEqual((stub.file, stub.line), ("tests/1-tensors/test_tensors.cpp", 53))
        first = numeric.failures[0]
        # The message exactly as the check wrote it: nothing re-wrapped or re-joined.
        self.assertIn("actual 2.828427\n", first.text)
        self.assertIn("(q.shape(3) is d); see chapters/1-tensors/tensors.cpp:60", first.text)
        self.assertTrue(first.text.startswith("values differ in 3 of 6"))
        self.assertEqual(first.where, "tests/1-tensors/test_tensors.cpp:310")
        self.assertEqual(first.hint, "subtract the row maximum before exp (q.shape(3) is d); "
                                     "see chapters/1-tensors/tensors.cpp:60")
        self.assertEqual(len(numeric.failures), 2)

    def test_v3(self):
        checks = parse_catch_xml(V3, "chapter1: ")
        self.assertEqual([c.passed for c in checks], [True, False])
        self.assertEqual(checks[1].failures[0].text, "CHECK( y.shape(1) == 4 )\n"
                                                     "with expansion: 3 == 4")
        self.assertAlmostEqual(checks[0].seconds, 0.0012)

    def test_v2_notes_go_with_the_failure_after_them(self):
        answer, section = parse_catch_xml(V2_NOTES, "chapter8: ")
        self.assertEqual(answer.tags, ["adamw_step", "c:adamw_step.checked-first"])
        first, second = answer.failures
        self.assertEqual(first.text, "CHECK( got == expected )\nwith expansion: 2 == 3")
        self.assertEqual(first.explanation, ["the step is counted once: state.step goes from 0 "
                                             "to 1", "got := 2"])
        self.assertEqual(second.notes[0], ["warning", "a warning before the next failure"])
        self.assertEqual(second.explanation[-1], "an unscoped note")
        self.assertEqual(section.failures[0].text, "wb::sdpa: boom")
        self.assertEqual(section.failures[0].explanation, ["inside the section"])

    def test_v3_notes_go_with_the_failure_after_them(self):
        masked, warned = parse_catch_xml(V3_NOTES, "chapter4: ")
        self.assertEqual(masked.failures[0].explanation[0], "with a random mask [B, N, M]")
        self.assertEqual(masked.failures[0].explanation[1].splitlines()[1],
                         "  [0, 0, 0]: 0.25 0 0.25 0")
        self.assertEqual(masked.failures[0].hint, "set hidden keys to -inf BEFORE the softmax")
        self.assertEqual(warned.failures[0].notes, [["warning", "the mask was dropped"]])
        self.assertEqual(warned.tags, ["sdpa"])

    def test_a_crash_cuts_the_document(self):
        cut = V2[:V2.index('<TestCase name="dot')] + \
            f'<TestCase name="last_token of T = 0" filename="{TEST}" line="112">\n'
        checks = parse_catch_xml(cut, "chapter1: ")
        self.assertEqual(len(checks), 3)
        self.assertEqual(checks[-1].title, "last_token of T = 0")
        self.assertEqual(checks[-1].signal, "CRASHED")
        self.assertFalse(checks[-1].passed)

    def test_signal_names(self):
        self.assertEqual(signal_name(-11), "SIGSEGV")
        self.assertEqual(signal_name(139), "SIGSEGV")
        self.assertEqual(signal_name(1), "")


LOG = f"""[1/3] Building CXX object CMakeFiles/wb_chapter1.dir/chapters/1-tensors/tensors.cpp.o
FAILED: CMakeFiles/wb_chapter1.dir/chapters/1-tensors/tensors.cpp.o
/usr/bin/c++ -I{ROOT}/chapters -g -c {ROOT}/chapters/1-tensors/tensors.cpp
In file included from /usr/include/xtensor/xarray.hpp:20,
                 from {ROOT}/chapters/1-tensors/tensors.hpp:5:
/usr/include/xtensor/xfunction.hpp: In instantiation of 'struct xt::xfunction<float>':
{ROOT}/chapters/1-tensors/tensors.cpp:21:23:   required from here
/usr/include/xtensor/xfunction.hpp:99:5: error: no match for 'operator*' (operand types are 'float' and 'std::vector<float>')
   99 |     return a * b;
      |            ~~^~~
/usr/include/xtensor/xoperation.hpp:40:1: note: candidate: 'template<class E1, class E2> auto xt::operator*(E1&&, E2&&)'
/usr/include/xtensor/xoperation.hpp:88:12: error: 'constexpr' call flows off the end of the function
ninja: build stopped: subcommand failed.
"""

WARN = f"""[1/2] Building CXX object CMakeFiles/wb_chapter1.dir/chapters/1-tensors/tensors.cpp.o
/usr/include/xtensor/xstrides.hpp:300:10: warning: comparison of integer expressions of different signedness [-Wsign-compare]
  300 |     if (a < b)
{ROOT}/chapters/1-tensors/tensors.cpp: In function 'wb::Tensor2 wb::last_token(const Tensor3&)':
{ROOT}/chapters/1-tensors/tensors.cpp:12:15: warning: unused variable 'unused' [-Wunused-variable]
   12 |     const int unused = 0;
      |               ^~~~~~
[2/2] Linking CXX executable test_chapter1
"""


class BuildLogs(unittest.TestCase):
    def test_first_error_whole_with_the_learners_line_first(self):
        where, lines = first_error(LOG, ["chapters/1-tensors"])
        self.assertEqual(where, "chapters/1-tensors/tensors.cpp:21")
        text = "\n".join(lines)
        self.assertIn("error: no match for 'operator*' (operand types are 'float' and "
                      "'std::vector<float>')", text)
        self.assertIn("required from here", text)
        self.assertIn("note: candidate", text)
        self.assertNotIn("flows off the end", text)   # the second error is not the first
        self.assertNotIn(str(ROOT), text)
        screen = compile_error_screen(CHAPTER, where, lines)
        self.assertIn("in your code at chapters/1-tensors/tensors.cpp:21", screen[1])

    def test_own_warnings_only(self):
        warnings = own_warnings(WARN, ["chapters/1-tensors"])
        self.assertEqual(len(warnings), 1)
        self.assertIn("unused variable 'unused'", "\n".join(warnings[0]))
        self.assertEqual(own_warnings(WARN.replace("tensors.cpp:12:15: warning", "x"),
                                      ["chapters/1-tensors"]), [])


class Screen(unittest.TestCase):
    def outcome(self, text):
        return Outcome(parse_catch_xml(text, "chapter1: "))

    def test_day_one(self):
        stubs = "".join(
            f'<TestCase name="check {i}" filename="{TEST}" line="{60 + i}"><Exception '
            f'filename="{TEST}" line="{60 + i}">wb::f{i % 5} is not implemented yet: write its '
            f'body in chapters/1-tensors/tensors.cpp:{i} (see)</Exception><OverallResult '
            'success="false"/></TestCase>' for i in range(1, 40))
        screen = check_screen(CHAPTER, COURSE, self.outcome(f"<Catch>{stubs}</Catch>"))
        self.assertLessEqual(len(screen), 40)
        self.assertEqual(screen[1].split()[:2], ["score:", "0/39"])
        self.assertTrue(any(l.startswith("next: open chapters/1-tensors/tensors.cpp:1 and write "
                                         "wb::f1") for l in screen), screen)

    def test_a_wrong_answer_first_and_in_full(self):
        screen = check_screen(CHAPTER, COURSE, self.outcome(V2))
        text = "\n".join(screen)
        self.assertIn("first failing check: softmax subtracts the row maximum", text)
        self.assertIn("    hint: subtract the row maximum before exp (q.shape(3) is d)", text)
        self.assertEqual(text.count("hint: subtract"), 1)   # said once
        self.assertIn("(and 1 more failed assertion in this check: --verbose", text)
        self.assertIn("not written yet, 1 checks: wb::last_token (1)", text)
        verbose = "\n".join(check_screen(CHAPTER, COURSE, self.outcome(V2), verbose=True))
        self.assertIn("values differ in 1 of 6 elements", verbose)

    def test_the_checks_explanation_comes_before_the_raw_values(self):
        for doc in (V2_NOTES, V3_NOTES):
            screen = check_screen(CHAPTER, COURSE, self.outcome(doc))
            text = "\n".join(screen[:25])
            said = text.index("the check says:")
            self.assertLess(said, text.index("with expansion: " if doc is V2_NOTES
                                             else "values differ"), text)
        text = "\n".join(check_screen(CHAPTER, COURSE, self.outcome(V2_NOTES))[:25])
        self.assertIn("    the step is counted once: state.step goes from 0 to 1", text)
        self.assertIn("    got := 2", text)

    def test_a_pass_names_the_next_chapter(self):
        passing = (f'<Catch><TestCase name="dot" filename="{TEST}" line="1"><OverallResult '
                   'success="true"/></TestCase></Catch>')
        text = "\n".join(check_screen(CHAPTER, COURSE, self.outcome(passing)))
        self.assertIn("chapter1 is complete. Next: chapter2 · Chapter 2 — Embedding", text)
        self.assertIn("chapters/2-embedding/README.md", text)
        self.assertIn("score: 1/1 checks pass", text)
        self.assertIn("complete", text.splitlines()[1])

    def test_a_pass_skips_chapters_on_the_reference_and_says_so(self):
        passing = (f'<Catch><TestCase name="dot" filename="{TEST}" line="1"><OverallResult '
                   'success="true"/></TestCase></Catch>')
        course = parse_course(json.dumps({"reference": "chapter2", "chapters": [
            {"label": f"chapter{i}", "folder": f"{i}-x", "title": f"Chapter {i}",
             "kind": "reference" if i == 2 else "stub", "guide": f"chapters/{i}-x/README.md"}
            for i in (1, 2, 3)]}))
        text = "\n".join(check_screen(course.chapters[0], course, self.outcome(passing)))
        self.assertIn("chapter1 is complete. Next: chapter3 · Chapter 3", text)
        self.assertIn("chapter2 is compiled from the reference (`tools/workbook use 2 student`",
                      text)

    def test_a_crash_is_named(self):
        cut = V2[:V2.index('<TestCase name="dot')] + \
            f'<TestCase name="last_token of T = 0" filename="{TEST}" line="112">\n'
        outcome = self.outcome(cut)
        outcome.checks[-1].signal = "SIGSEGV"
        text = "\n".join(check_screen(CHAPTER, COURSE, outcome))
        self.assertIn('your code crashed (segmentation fault) in check "last_token of T = 0":',
                      text)
        self.assertIn("probably an index out of range", text)
        self.assertIn("first failing check: last_token of T = 0", text)


class Hints(unittest.TestCase):
    def test_markdown_becomes_text(self):
        self.assertEqual(markdown_to_text("use `xt::view` and **never** [the guide](README.md)"),
                         "use xt::view and never the guide (README.md)")
        self.assertEqual(markdown_to_text("$\\sqrt{d_k}$, a*b*c"), "\\sqrt{d_k}, a*b*c")

    def test_the_checks_own_hint_comes_first(self):
        outcome = Outcome(parse_catch_xml(V2, "chapter1: "))
        _, hints = hints_for(outcome.checks[1], CHAPTER)
        self.assertEqual(hints[0], "subtract the row maximum before exp (q.shape(3) is d); "
                                   "see chapters/1-tensors/tensors.cpp:60")
        self.assertEqual(len(hints), len(set(hints)))


if __name__ == "__main__":
    unittest.main()


class KnownMistakes(unittest.TestCase):
    def test_a_failing_set_like_a_mutants_names_its_mistake(self):
        import tempfile
        from wb.screen import known_mistake
        doc = "".join(
            f'<TestCase name="c{i}" filename="{TEST}" line="{i}"><Failure filename="{TEST}" '
            f'line="{i}">values differ</Failure><OverallResult success="false"/></TestCase>'
            for i in range(5))
        outcome = Outcome(parse_catch_xml(f"<Catch>{doc}</Catch>", "chapter1: "))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "signatures.json"
            path.write_text(json.dumps({
                "zero-after-softmax": {"label": "chapter1", "mistake": "zeroes after the softmax",
                                       "failing": [f"c{i}" for i in range(5)]},
                "other": {"label": "chapter1", "mistake": "something else",
                          "failing": ["c0", "x1", "x2"]}}))
            self.assertEqual(known_mistake(CHAPTER, outcome, path), "zeroes after the softmax")
            outcome.checks.pop()   # 4 of 5 in common: still the same mistake
            self.assertEqual(known_mistake(CHAPTER, outcome, path), "zeroes after the softmax")
            outcome.checks[:] = outcome.checks[:1]
            self.assertIsNone(known_mistake(CHAPTER, outcome, path))

    def test_a_chinese_learner_reads_the_mistake_in_chinese(self):
        import tempfile
        from wb.i18n import use_language
        from wb.screen import MISTAKES_ZH, mistake_words
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "mistakes.zh.json"
            path.write_text(json.dumps({"zero-after-softmax": "在 softmax 之后才清零"}))
            try:
                use_language("zh")
                self.assertEqual(mistake_words("zero-after-softmax", "zeroes after", path),
                                 "在 softmax 之后才清零")
                self.assertEqual(mistake_words("untranslated", "as written", path), "as written")
                # The catalogue's own file: every mutant has its Chinese (workbook guides checks
                # the names; here one the screens show).
                self.assertIn("softmax", mistake_words("mask-zeroed-after-softmax", "", MISTAKES_ZH))
                use_language("en")
                self.assertEqual(mistake_words("zero-after-softmax", "zeroes after", path),
                                 "zeroes after")
            finally:
                use_language(None)

    def test_the_messages_tell_two_mistakes_with_the_same_checks_apart(self):
        import tempfile
        from wb.screen import known_mistake
        doc = "".join(
            f'<TestCase name="c{i}" filename="{TEST}" line="{i}"><Failure filename="{TEST}" '
            f'line="{i}">values differ in 1 of 4\n  first mismatch at [0]: expected 1, actual '
            f'{i}</Failure><OverallResult success="false"/></TestCase>' for i in range(3))
        outcome = Outcome(parse_catch_xml(f"<Catch>{doc}</Catch>", "chapter1: "))
        mine = {f"c{i}": f"values differ in 1 of 4\n  first mismatch at [0]: expected 1, actual {i}"
                for i in range(3)}
        other = {k: v.replace("actual", "actual -") for k, v in mine.items()}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "signatures.json"
            sig = {"label": "chapter1", "failing": sorted(mine)}
            path.write_text(json.dumps({
                "a": {**sig, "mistake": "inverts the mask", "messages": other},
                "b": {**sig, "mistake": "zeroes after the softmax", "messages": mine}}))
            self.assertEqual(known_mistake(CHAPTER, outcome, path), "zeroes after the softmax")
            data = json.loads(path.read_text())
            for v in data.values():
                v.pop("messages")
            path.write_text(json.dumps(data))
            self.assertEqual(known_mistake(CHAPTER, outcome, path),
                             "inverts the mask; or zeroes after the softmax")

    def test_with_a_known_mistake_the_check_that_names_it_comes_first(self):
        from wb.screen import first_failure
        doc = "".join(
            f'<TestCase name="{name}" filename="{TEST}" line="{i}"><Failure filename="{TEST}" '
            f'line="{i}">values differ</Failure><OverallResult success="false"/></TestCase>'
            for i, name in enumerate(["softmax survives scores of +-1000",
                                      "hidden keys get weight 0 and the readable ones sum to 1"]))
        outcome = Outcome(parse_catch_xml(f"<Catch>{doc}</Catch>", "chapter1: "))
        self.assertEqual(first_failure(outcome, CHAPTER).title, "softmax survives scores of +-1000")
        mistake = "zeroes the hidden keys' weights AFTER the softmax, so the readable weights " \
                  "no longer sum to 1"
        self.assertTrue(first_failure(outcome, CHAPTER, mistake).title.startswith("hidden keys"))


class Blame(unittest.TestCase):
    def test_a_check_of_two_functions_blames_the_one_its_failing_assertion_calls(self):
        import tempfile
        from wb.hints import asserted_calls
        from wb.results import Check, Failure
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "test_x.cpp"
            source.write_text('TEST_CASE("cat and stack", "[cat][stack]") {\n'
                              '    WB_CHECK_SHAPE(wb::cat(a, b, 0), S{4, 3}, "cat");\n'
                              '    WB_CHECK_SHAPE(wb::stack(a, b, 0),\n'
                              '                   S{2, 2, 3}, "stack");  // not cat(\n'
                              '}\n')
            at = {2: "cat", 3: "stack", 4: None}
            for line, expected in at.items():
                check = Check("chapter1: cat and stack", False,
                              [Failure(str(source), line, "shape differs")], str(source), 1,
                              tags=["cat", "stack"])
                self.assertEqual(asserted_calls(check, ["cat", "stack"]), expected, line)
