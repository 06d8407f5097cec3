"""CMake decides which chapters come from the reference; every verb reads that decision from
course.json and understands each spelling of WB_REFERENCE exactly as CMake does."""

import functools
import json
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.common import ROOT, WorkbookError  # noqa: E402
from wb.course import parse_course, same_chapter  # noqa: E402

# A small course of real folders (test data: the tool itself keeps no list).
CHAPTERS = [("chapter1", "1-tensors"), ("chapter3", "3-positions"), ("chapter4", "4-sdpa"),
            ("capstone", "capstone")]

SCRIPT = """
cmake_minimum_required(VERSION 3.25)
include("{root}/cmake/Workbook.cmake")
foreach(entry IN ITEMS {entries})
  string(REPLACE ":" ";" entry "${{entry}}")
  list(GET entry 0 label)
  list(GET entry 1 folder)
  wb_uses_reference(${{label}} use_ref)
  if(use_ref)
    wb_course_entry(${{label}} ${{folder}} reference "{root}/solutions/${{folder}}")
  else()
    wb_course_entry(${{label}} ${{folder}} student "{root}/chapters/${{folder}}")
  endif()
endforeach()
wb_write_course("{out}")
"""


@functools.lru_cache(maxsize=None)
def course_json(reference):
    """The text of course.json that cmake/Workbook.cmake writes for -DWB_REFERENCE=REFERENCE."""
    with tempfile.TemporaryDirectory() as tmp:
        script, out = Path(tmp) / "course.cmake", Path(tmp) / "course.json"
        entries = " ".join(f"{label}:{folder}" for label, folder in CHAPTERS)
        script.write_text(SCRIPT.format(root=ROOT, entries=entries, out=out))
        subprocess.run(["cmake", f"-DWB_REFERENCE={reference}", "-P", str(script)], check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return out.read_text(encoding="utf-8")


@unittest.skipUnless(shutil.which("cmake"), "cmake is not installed")
class ReferenceSpellings(unittest.TestCase):
    # Each spelling CMake accepts, and the chapters it selects.
    CASES = {
        "Chapter3": {"chapter3"}, "chapter3": {"chapter3"}, "3": {"chapter3"},
        "CHAPTER3": {"chapter3"}, "3;Chapter4": {"chapter3", "chapter4"},
        "chapter1;CAPSTONE": {"chapter1", "capstone"}, "Capstone": {"capstone"},
        "all": {"chapter1", "chapter3", "chapter4", "capstone"},
        "ALL": {"chapter1", "chapter3", "chapter4", "capstone"},
        "none": set(), "NONE": set(), "": set(),
    }

    def test_cmake_selects_what_the_notes_say(self):
        for spelling, expected in self.CASES.items():
            with self.subTest(spelling=spelling):
                course = parse_course(course_json(spelling))
                self.assertEqual({c.label for c in course.chapters if c.kind == "reference"},
                                 expected)
                self.assertEqual(course.reference, spelling)

    def test_every_verb_reads_the_same_kinds(self):
        for spelling, expected in self.CASES.items():
            with self.subTest(spelling=spelling):
                course = parse_course(course_json(spelling))
                # status and next: the kinds as written by CMake
                kinds = {c.label: c.kind for c in course.chapters}
                # use: flipping one chapter keeps every other chapter's kind
                for chapter in course.chapters:
                    for kind in ("student", "reference"):
                        value = course.reference_value({chapter.label: kind})
                        again = parse_course(course_json(value))
                        for other in again.chapters:
                            want = ("reference" if kind == "reference" else "stub") \
                                if other.label == chapter.label else kinds[other.label]
                            self.assertEqual(other.kind, want, (spelling, chapter.label, kind))
                # check, hint, watch, bench, grade --only: each spelling of one chapter names it
                for label in expected:
                    number = label.replace("chapter", "")
                    for name in (label, label.upper(), label.title(), number):
                        self.assertEqual(course.find(name).label, label)
                        self.assertTrue(same_chapter(name, label))

    def test_the_export_describes_each_chapter(self):
        course = parse_course(course_json("none"))
        first = course.chapters[0]
        self.assertEqual((first.label, first.folder, first.kind), ("chapter1", "1-tensors", "stub"))
        self.assertTrue(first.title.startswith("Chapter 1"), first.title)
        self.assertIn("chapters/1-tensors/tensors.cpp", first.files)
        self.assertIn("chapters/1-tensors/tensors.hpp", first.files)
        self.assertEqual(first.guide, "chapters/1-tensors/README.md")
        self.assertEqual(first.target, "test_chapter1")
        self.assertEqual(course.after("chapter1").label, "chapter3")
        self.assertIsNone(course.after("capstone"))


class ChapterNames(unittest.TestCase):
    def course(self, kinds):
        return parse_course(json.dumps({"reference": "none", "chapters": [
            {"label": l, "folder": f, "kind": k} for (l, f), k in zip(CHAPTERS, kinds)]}))

    def test_unknown_chapter_is_one_error(self):
        course = self.course(["stub"] * 4)
        with self.assertRaises(WorkbookError) as error:
            course.find("nine")
        self.assertIn("unknown chapter 'nine'", str(error.exception))

    def test_reference_value(self):
        course = self.course(["stub", "reference", "stub", "stub"])
        self.assertEqual(course.reference_value({"chapter4": "reference"}), "chapter3;chapter4")
        self.assertEqual(course.reference_value({"chapter3": "student"}), "none")
        self.assertEqual(course.reference_value({c: "reference" for c in course.labels}), "all")

    def test_a_label_that_is_not_chapter_n_is_named_by_its_folder_number(self):
        course = parse_course(json.dumps({"reference": "none", "left_out": ["x"], "chapters": [
            {"label": "chapter9", "folder": "9-kv-cache"},
            {"label": "dataparallel", "folder": "10-data-parallel"},
            {"label": "capstone", "folder": "capstone"}]}))
        self.assertEqual(course.find("10").label, "dataparallel")
        self.assertEqual(course.find("dataparallel").label, "dataparallel")
        self.assertEqual(course.find("9").label, "chapter9")
        self.assertEqual(course.find("capstone").number, "capstone")
        self.assertEqual(course.get("dataparallel").number, "10")
        self.assertEqual(course.left_out, ["x"])
        self.assertTrue(same_chapter("10", "dataparallel", "10-data-parallel"))
        self.assertFalse(same_chapter("1", "dataparallel", "10-data-parallel"))

    def test_a_broken_file_is_a_user_error(self):
        with self.assertRaises(WorkbookError):
            parse_course("{not json")


if __name__ == "__main__":
    unittest.main()
