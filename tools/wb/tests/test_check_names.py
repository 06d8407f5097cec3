"""Every check's name survives ctest's discovery on Catch2 2 and 3."""

import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.common import ROOT  # noqa: E402


class CheckNameTests(unittest.TestCase):
    def test_no_check_name_has_an_unbalanced_square_bracket(self):
        # catch_discover_tests keeps the names in a CMake list, where "[" ... "]" protects the
        # ";" between names: one "[0, V)" glued every later check of its program into one test
        # on Catch2 3 (Debian 13).
        bad = []
        for path in sorted((ROOT / "tests").rglob("*.cpp")):
            for name in re.findall(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"', path.read_text("utf-8")):
                depth = 0
                for ch in name:
                    depth += {"[": 1, "]": -1}.get(ch, 0)
                    if depth < 0:
                        break
                if depth != 0:
                    bad.append(f"{path.relative_to(ROOT)}: {name}")
        self.assertEqual(bad, [], "write a range as 0..V-1 or below V, not [0, V)")

    def test_no_check_name_has_a_semicolon(self):
        # A ";" in a name splits it in two in CMake's list of the discovered checks: ctest then
        # runs two tests that match nothing.
        bad = [f"{path.relative_to(ROOT)}: {name}"
               for path in sorted((ROOT / "tests").rglob("*.cpp"))
               for name in re.findall(r'TEST_CASE\(\s*"((?:[^"\\\n]|\\.)*)"', path.read_text("utf-8"))
               if ";" in name]
        self.assertEqual(bad, [], "write ', and' or ': ' instead of ';' in a check's name")


if __name__ == "__main__":
    unittest.main()
