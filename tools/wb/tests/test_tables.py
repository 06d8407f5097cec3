import unittest

from wb.course import Chapter
from wb.tables import table_problems, table_rows


class Course:
    def __init__(self, *chapters):
        self.chapters = [Chapter(label=label, folder=folder) for label, folder in chapters]


TABLE = """| label | chapter |
|---|---|
| `chapter1` | [tensors](chapters/1-tensors/README.md) | x |
| `chapter2` | [embedding](chapters/2-embedding/README.md#top) | y |
"""


class TablesTest(unittest.TestCase):
    def test_rows_are_read_with_their_links(self):
        self.assertEqual(table_rows(TABLE), [("chapter1", "chapters/1-tensors/README.md"),
                                             ("chapter2", "chapters/2-embedding/README.md")])

    def test_a_table_that_matches_the_course_passes(self):
        course = Course(("chapter1", "1-tensors"), ("chapter2", "2-embedding"))
        self.assertEqual(table_problems(course, "README.md", TABLE, "README.md"), [])

    def test_a_chapter_missing_from_the_table_is_named(self):
        course = Course(("chapter1", "1-tensors"), ("chapter2", "2-embedding"),
                        ("chapter10", "10-data-parallel"))
        problems = table_problems(course, "README.md", TABLE, "README.md")
        self.assertEqual(len(problems), 1)
        self.assertIn("no row for chapter10", problems[0])

    def test_a_row_the_build_lacks_a_wrong_link_and_the_order_are_named(self):
        course = Course(("chapter1", "1-tensors"))
        self.assertIn("which the build does not have",
                      table_problems(course, "README.md", TABLE, "README.md")[0])
        course = Course(("chapter1", "1-tensors"), ("chapter2", "2-embedding"))
        self.assertIn("expected chapters/1-tensors/README.zh.md",
                      table_problems(course, "README.zh.md", TABLE, "README.zh.md")[0])
        swapped = Course(("chapter2", "2-embedding"), ("chapter1", "1-tensors"))
        self.assertIn("course order", table_problems(swapped, "README.md", TABLE, "README.md")[0])


if __name__ == "__main__":
    unittest.main()
