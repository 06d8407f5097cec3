"""The instructor's kit: the handout's file selection, presets and leak check; what a student
reads of a check (no test code, no instructor's paths); the class summary."""

import csv
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.classreport import (class_csv, class_markdown, class_trees, fill_unbuilt,  # noqa: E402
                            summarise)
from wb.common import ROOT, WorkbookError  # noqa: E402
from wb.course import Chapter, Course  # noqa: E402
from wb.cppscan import blank_comments, function_definitions  # noqa: E402
from wb.handout import filter_presets, find_leaks, left_out  # noqa: E402
from wb.instructor import extra_tests_dir, readable_lines  # noqa: E402
from wb.results import parse_catch_xml  # noqa: E402

REFERENCE = """\
// Chapter 9 -- reference.
#include "9-x/x.hpp"
#define WB_FAST inline __attribute__((always_inline))

namespace wb {
inline namespace WB_IMPL {
namespace {

WB_FAST float halve(float v) { return v * 0.5f; }

}  // namespace

Tensor2 scaled_rows(const Tensor2& x, float scale) {
    if (x.dimension() != 2) { throw ShapeError("scaled_rows: x must be 2-D"); }
    auto each = [&](float v) { return halve(v) * scale; };  /* a lambda { } */
    Tensor2 out = xt::zeros<float>({x.shape(0), x.shape(1)});
    for (std::size_t i = 0; i < x.shape(0); ++i) {
        for (std::size_t j = 0; j < x.shape(1); ++j) { out(i, j) = each(x(i, j)); }
    }
    return out;
}

}  // namespace WB_IMPL
}  // namespace wb
"""

STUB = """\
namespace wb {
inline namespace WB_IMPL {
Tensor2 scaled_rows(const Tensor2& x, float scale) {
    (void)x;
    WB_STUB();
}
}  // namespace WB_IMPL
}  // namespace wb
"""


class Handout(unittest.TestCase):
    def test_what_is_left_out(self):
        for path in ("solutions/1-tensors/tensors.cpp", "solutions/capstone/readable/k.cpp",
                     ".ci/run", "tools/mutants/4-sdpa.txt"):
            self.assertTrue(left_out(path), path)
        for path in ("chapters/1-tensors/tensors.cpp", "tools/mutants/signatures.json",
                     "tools/mutants/README.md", "tests/1-tensors/test_tensors.cpp", "README.md"):
            self.assertFalse(left_out(path), path)

    def test_presets_that_need_solutions_go_with_their_workflows(self):
        presets = {
            "version": 6,
            "configurePresets": [
                {"name": "base", "hidden": True},
                {"name": "solutions", "inherits": "base", "cacheVariables": {"WB_REFERENCE": "all"}},
                {"name": "readable", "inherits": "base", "cacheVariables": {
                    "WB_IMPL_DIR_capstone": "${sourceDir}/solutions/capstone/readable"}},
                {"name": "readable-asan", "inherits": ["readable"]}],
            "buildPresets": [{"name": "solutions", "configurePreset": "solutions"},
                             {"name": "readable", "configurePreset": "readable"}],
            "testPresets": [{"name": "readable", "configurePreset": "readable"}],
            "workflowPresets": [
                {"name": "solutions", "steps": [{"type": "configure", "name": "solutions"},
                                                {"type": "build", "name": "solutions"}]},
                {"name": "readable", "steps": [{"type": "configure", "name": "readable"},
                                               {"type": "build", "name": "readable"}]}]}
        text, gone = filter_presets(json.dumps(presets))
        data = json.loads(text)
        self.assertEqual([p["name"] for p in data["configurePresets"]], ["base", "solutions"])
        self.assertEqual([p["name"] for p in data["buildPresets"]], ["solutions"])
        self.assertEqual(data["testPresets"], [])
        self.assertEqual([w["name"] for w in data["workflowPresets"]], ["solutions"])
        self.assertEqual(gone, ["readable", "readable-asan"])
        unchanged = json.dumps({"version": 6, "configurePresets": [{"name": "student"}]})
        self.assertEqual(filter_presets(unchanged), (unchanged, []))

    def test_comments_go_strings_stay_lines_kept(self):
        code = blank_comments('a = "// not a comment"; // gone\n/* two\nlines */ b;\n')
        self.assertIn('"// not a comment"', code)
        self.assertNotIn("gone", code)
        self.assertEqual(code.count("\n"), 3)

    def test_function_definitions(self):
        found = {name: (line, body) for name, line, body in function_definitions(REFERENCE)}
        self.assertEqual(sorted(found), ["halve", "scaled_rows"])  # no if/for, no macro
        line, body = found["scaled_rows"]
        self.assertEqual(line, 13)
        self.assertIn("return out;", body)
        self.assertTrue(any("each(x(i, j))" in b for b in body))  # the lambda is inside
        self.assertFalse(any("a lambda" in b for b in body))     # comments are not

    def test_a_leaked_body_is_found_and_a_shared_line_is_not(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            (tmp / "solutions" / "9-x").mkdir(parents=True)
            (tmp / "solutions" / "9-x" / "x.cpp").write_text(REFERENCE)
            (tmp / "stub.cpp").write_text(STUB + "Tensor2 out = xt::zeros<float>({x.shape(0), "
                                          "x.shape(1)});\n")
            handout = tmp / "handout"
            (handout / "chapters").mkdir(parents=True)
            (handout / "chapters" / "x.cpp").write_text(STUB)
            (handout / "lib.a").write_bytes(b"\0\x7fELF scaled_rows: x must be 2-D\0")
            leaks, checked = find_leaks(handout, tmp / "solutions", [tmp / "stub.cpp"])
            self.assertEqual((leaks, checked), ([], 1))  # halve is too short to tell apart
            (handout / "docs.md").write_text("    for (std::size_t j = 0; j < x.shape(1); ++j) "
                                             "{ out(i, j) = each(x(i, j)); }\n")
            leaks, _ = find_leaks(handout, tmp / "solutions", [tmp / "stub.cpp"])
            self.assertEqual([(f, name) for f, name, _, _ in leaks], [("9-x/x.cpp", "scaled_rows")])
            self.assertIn("docs.md", leaks[0][3])

    def test_a_handouts_ladders_keep_no_key_line(self):
        import json
        from wb.handout import key_line_report, withhold_key_lines
        from wb.ladders import key_lines
        keys = key_lines(ROOT)
        self.assertGreater(len(keys), 20)
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            (tmp / "hints").mkdir()
            for path in sorted((ROOT / "hints").glob("*.json")):
                (tmp / "hints" / path.name).write_text(path.read_text(encoding="utf-8"),
                                                        encoding="utf-8")
            self.assertTrue(key_line_report(tmp))  # the full ladders give them
            for path in sorted((tmp / "hints").glob("*.json")):
                withhold_key_lines(path)
            self.assertEqual(key_line_report(tmp), [])
            data = json.loads((tmp / "hints" / "4-sdpa.en.json").read_text())
            self.assertEqual(list(data["functions"]["sdpa"]), ["idea", "approach"])
            # A key line pasted anywhere else in the handout is found.
            folder, function, code = keys[0]
            (tmp / "notes.md").write_text(f"the answer: `{code}`\n")
            self.assertEqual(key_line_report(tmp), [("notes.md", 1, code)])


XML = """<?xml version="1.0" encoding="UTF-8"?>
<Catch name="test_chapter4">
  <Group name="test_chapter4">
    <TestCase name="hidden: weights of a 2x2 example" filename="{extra}/4-sdpa/test_hidden.cpp" line="9">
      <Expression success="false" type="REQUIRE" filename="{extra}/4-sdpa/test_hidden.cpp" line="14">
        <Original>
          w(0, 1) == secret_expected_value
        </Original>
        <Expanded>
          0.25f == 0.5f
        </Expanded>
      </Expression>
      <OverallResult success="false"/>
    </TestCase>
    <TestCase name="hidden: a message" filename="{extra}/4-sdpa/test_hidden.cpp" line="20">
      <Failure filename="{extra}/4-sdpa/test_hidden.cpp" line="25">
        weights differ: expected 0.5, actual 0.25
hint: divide by sqrt(d_k)
      </Failure>
      <OverallResult success="false"/>
    </TestCase>
  </Group>
</Catch>
"""


class StudentReport(unittest.TestCase):
    def test_no_test_code_and_no_instructor_path(self):
        extra = Path("/home/teacher/hidden")
        build_dir = Path("/home/teacher/build/grade")
        # As the compiler writes it: absolute, or relative to the build folder (ccache with
        # CCACHE_BASEDIR rewrites paths so).
        for written in (str(extra), "../../hidden"):
            with self.subTest(written=written):
                checks = parse_catch_xml(XML.format(extra=written), "chapter4: ")
                first = readable_lines(checks[0], extra, build_dir)
                text = "\n".join(first)
                self.assertNotIn("secret_expected_value", text)
                self.assertNotIn("hidden", text)
                self.assertIn("a check failed", text)
                self.assertIn("values: 0.25f == 0.5f", text)
                second = readable_lines(checks[1], extra, build_dir)
                self.assertEqual(second, ["weights differ: expected 0.5, actual 0.25",
                                          "hint: divide by sqrt(d_k)"])

    def test_extra_tests_folder_per_chapter(self):
        course = Course([Chapter("chapter1", "1-tensors"), Chapter("chapter4", "4-sdpa")])
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            with self.assertRaisesRegex(WorkbookError, "no <chapter folder>"):
                extra_tests_dir(tmp, course)
            (tmp / "test_loose.cpp").write_text("")
            with self.assertRaisesRegex(WorkbookError, "in no chapter's folder"):
                extra_tests_dir(tmp, course)
            (tmp / "test_loose.cpp").unlink()
            (tmp / "chapter4").mkdir()
            with self.assertRaisesRegex(WorkbookError, "no chapter has the folder chapter4"):
                extra_tests_dir(tmp, course)
            (tmp / "chapter4").rmdir()
            (tmp / "4-sdpa").mkdir()
            (tmp / "4-sdpa" / "test_hidden.cpp").write_text("")
            self.assertEqual(extra_tests_dir(tmp, course), tmp.resolve())
        with self.assertRaisesRegex(WorkbookError, "no such folder"):
            extra_tests_dir("/nonexistent/extra", course)


def chapter(label, results, compiled=True, note=""):
    checks = [{"name": n, "passed": p, "lines": [] if p else ["failed"]} for n, p in results]
    if not compiled:
        checks = [{"name": "(check 1: not built)", "passed": False, "lines": [note]}]
    return {"label": label, "source": "", "passed": sum(p for _, p in results if compiled),
            "checks": checks, "note": note, "compiled": compiled}


class Class(unittest.TestCase):
    def reports(self):
        one = [("a", True), ("b", True)]
        four = [("w", True), ("x", True), ("y", True)]
        stub = [("w", False), ("x", False), ("y", False)]
        broken = "does not compile: 1-tensors/tensors.cpp:3: error: expected ';'"
        return [
            {"tree": "alice", "chapters": [chapter("chapter1", one), chapter("chapter4", four)]},
            {"tree": "bob", "chapters": [chapter("chapter1", one), chapter("chapter4", stub)]},
            {"tree": "carol", "chapters": [chapter("chapter1", one, False, broken),
                                           chapter("chapter4", four, False, broken)]},
            {"tree": "dan", "chapters": [chapter("chapter1", [("a", True), ("b", False)]),
                                         chapter("chapter4", stub)]}]

    def test_the_class_table(self):
        summary = summarise(self.reports())
        one, four = summary["chapters"]
        self.assertEqual((one["label"], one["graded"], one["complete"]), ("chapter1", 4, 2))
        self.assertEqual([(c["name"], c["passed"], c["graded"]) for c in one["checks"]],
                         [("a", 3, 4), ("b", 2, 4)])
        self.assertEqual((four["complete"], four["first_failure"], four["first_count"]),
                         (1, "w", 2))
        self.assertEqual((one["first_failure"], one["first_count"]), ("(does not compile)", 1))
        self.assertEqual([(t, l) for t, l, _ in summary["not_compiled"]],
                         [("carol", "chapter1"), ("carol", "chapter4")])

    def test_a_tree_that_does_not_compile_is_scored_on_every_check(self):
        reports = self.reports()
        fill_unbuilt(reports)
        carol = reports[2]
        self.assertEqual([c["name"] for c in carol["chapters"][1]["checks"]], ["w", "x", "y"])
        self.assertEqual((carol["passed"], carol["total"]), (0, 5))
        self.assertEqual((reports[0]["passed"], reports[0]["total"]), (5, 5))

    def test_markdown_and_csv(self):
        summary = summarise(self.reports())
        text = class_markdown(summary, {"alice": (5, 5, 2, 2)})
        self.assertIn("| chapter4 | 1/4 | w (2 of 4) |", text)
        self.assertIn("- **carol** chapter1: does not compile: 1-tensors/tensors.cpp:3", text)
        rows = list(csv.DictReader(io.StringIO(class_csv(summary))))
        self.assertEqual(rows[0], {"kind": "chapter", "chapter": "chapter1", "name": "",
                                   "passed": "2", "graded": "4",
                                   "note": "most common first failure: (does not compile) (1)"})
        self.assertIn({"kind": "check", "chapter": "chapter4", "name": "y", "passed": "1",
                       "graded": "4", "note": ""}, rows)
        self.assertEqual([r["name"] for r in rows if r["kind"] == "does not compile"],
                         ["carol", "carol"])

    def test_which_folders_are_trees(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            (tmp / "alice" / "chapters").mkdir(parents=True)
            (tmp / "bob" / "4-sdpa").mkdir(parents=True)
            (tmp / "notes").mkdir()
            trees, skipped = class_trees(tmp)
            self.assertEqual([t.name for t in trees], ["alice", "bob"])
            self.assertEqual(skipped, ["notes"])
            with self.assertRaisesRegex(WorkbookError, "no student tree"):
                class_trees(tmp / "notes")


if __name__ == "__main__":
    unittest.main()
