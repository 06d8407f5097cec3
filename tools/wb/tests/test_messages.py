"""messages: requirements on exception messages read from checks, compared with @throws; and
the "likely mistake" banner that must not fire on wording alone. On a made-up tree."""

import contextlib
import io
import json
import sys
import tempfile
import types
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.messages import (cmd_messages, compare, read_all, tie_notes, unstated,  # noqa: E402
                         wording_banners)

HEADER = """#pragma once
namespace wb {
/// @param size bytes to read
/// @throws ValueError if size is too large (the message names the function and the offending
///         size) <!-- clause: read_bytes.too-large -->
void read_bytes(std::size_t size);

/// @throws ShapeError if the shapes differ (the message names the function and both shapes)
void matmul(const Array& a, const Array& b);

/// @throws ValueError if eps <= 0 (the message names the function only)
void norm(float eps);

/// @throws ShapeError as matmul
void linear(const Array& a, const Array& b);

struct Cache {
    /// @throws ValueError if full (the message names `T_max = 8` style values and `position`)
    void append(int k);
};
}  // namespace wb
"""

TESTS = r"""#include "check.hpp"
#define EXPECT(x) WB_CHECK_THROWS(wb::ValueError, x, "hint", "ignored")

TEST_CASE("read_bytes refuses a large size", "[read_bytes]") {
    WB_CHECK_THROWS(wb::ValueError, wb::read_bytes(1000), "name the size", "wb::read_bytes",
                    "1000", "6 bytes", "w_fc");
}

TEST_CASE("matmul names both shapes", "[matmul]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::matmul(a, b), "hint", "wb::matmul", "[2, 3]",
                    "(3, 4)");
    CHECK_THROWS_WITH(wb::linear(a, b), Catch::Contains("wb::linear") && Catch::Contains("[2, 3]"));
    REQUIRE_THROWS_MATCHES(wb::linear(a, b), wb::ShapeError,
                           Catch::Matchers::Message("wb::linear: shapes [2, 3]"));
}

TEST_CASE("norm refuses eps", "[norm]") {
    WB_CHECK_THROWS(wb::ValueError, wb::norm(-1.0f), "hint", "wb::norm", "eps = -1", "[2, 3]");
    WB_CHECK_THROWS(wb::ValueError, wb::norm(nan), "hint", "wb::norm", "nan",
                    "expected eps " + std::to_string(0) + " and finite");
    CHECK_THROWS_WITH(wb::norm(0.0f), Catch::Matches(".*wb::norm: eps must be > 0.*"));
    try {
        wb::norm(0.0f);
    } catch (const wb::ValueError& e) {
        CHECK(std::string(e.what()).find("eps") != std::string::npos);
    }
}

TEST_CASE("append is a member", "[cache]") {
    WB_CHECK_THROWS(wb::ValueError, cache.append(9), "hint", "wb::Cache::append", "T_max = 8",
                    "position 9");
    WB_CHECK_THROWS(wb::ValueError, [&] { auto y = wb::matmul(a, b); wb::norm(y); }(), "hint",
                    "wb::norm");
    WB_CHECK_THROWS(wb::ValueError, wb::read_bytes(std::size_t(1) << 40), "hint",
                    "wb::read_bytes", "4294967296");
    WB_CHECK_THROWS(wb::ValueError, wb::read_file("wb-bpe x3"), "hint", "x3");
}
"""


def make_tree(root):
    root = Path(root)
    (root / "chapters" / "1-io").mkdir(parents=True)
    (root / "chapters" / "1-io" / "io.hpp").write_text(HEADER)
    (root / "tests" / "1-io").mkdir(parents=True)
    (root / "tests" / "1-io" / "test_io.cpp").write_text(TESTS)
    return root


SHAPES = "ShapeError if the shapes differ (the message names the function and both shapes)"
ONLY = "ValueError if eps <= 0 (the message names the function only)"
SIZE = ("ValueError if size is too large (the message names the function and the offending "
        "size)")


class Unstated(unittest.TestCase):
    def test_the_function_name_and_offending_values_pass(self):
        self.assertEqual(unstated("wb::read_bytes", "read_bytes", SIZE, "wb::read_bytes(1000)"),
                         [])
        self.assertEqual(unstated("1000", "read_bytes", SIZE, "wb::read_bytes(1000)"), [])
        self.assertEqual(unstated("[2, 3]", "matmul", SHAPES, "wb::matmul(a, b)"), [])
        self.assertEqual(unstated("wb::kv_cache", "kv_cache_bytes", SIZE, "f()"), [])

    def test_words_the_header_does_not_state_are_flagged(self):
        self.assertEqual(unstated("6 bytes", "read_bytes", SIZE, "wb::read_bytes(1000)"),
                         ["bytes"])
        self.assertEqual(unstated("w_fc", "read_bytes", SIZE, "wb::read_bytes(1000)"), ["w_fc"])
        self.assertEqual(unstated("expected eps > 0 and finite", "norm", ONLY, "wb::norm(x)"),
                         ["expected", "and", "finite"])

    def test_numbers_and_shapes_need_a_header_that_names_values(self):
        self.assertEqual(unstated("[2, 3]", "norm", ONLY, "wb::norm(x)"), ["[2, 3]"])
        self.assertEqual(unstated("[1]", "norm", ONLY, "wb::norm(x)"), ["[1]"])
        self.assertEqual(unstated("[0]", "norm", ONLY, "wb::norm(x)"), [])      # "eps <= 0"
        self.assertEqual(unstated("7", "norm", ONLY, "wb::norm(x)"), ["7"])
        self.assertEqual(unstated("7", "norm", ONLY, "wb::norm(7.0f)"), [])     # in the call
        self.assertEqual(unstated("[2, 3]", "norm", ONLY, "wb::norm({2, 3})"), [])
        self.assertEqual(unstated("nan", "norm", ONLY, "wb::norm(x)"), ["nan"])
        self.assertEqual(unstated("nan", "read_bytes", SIZE, "wb::read_bytes(x)"), [])
        self.assertEqual(unstated("[2, 3]", "read_bytes", SIZE, "wb::read_bytes(x)"),
                         ["[2, 3]"])                     # a size is not a shape

    def test_a_header_naming_parameters_names_values(self):
        named = "ValueError if H does not divide D (the message names D and H)"
        self.assertEqual(unstated("H = 8", "f", named, "wb::f(c)"), [])
        self.assertEqual(unstated("8", "f", "ShapeError if empty (names \"wb::f\")", "wb::f(c)"),
                         ["8"])
        self.assertEqual(unstated("8", "f", "ValueError naming wb::f if the list is not valid",
                                  "wb::f(c)"), ["8"])

    def test_words_of_the_calls_own_strings_pass(self):
        self.assertEqual(unstated("x3", "read", SIZE, 'wb::read("wb-bpe x3")'), [])
        self.assertEqual(unstated("/dev/zero", "read", SIZE, 'wb::read("/dev/zero")'), [])

    def test_values_the_check_computes_pass(self):
        self.assertEqual(unstated("truncated at ‹std::to_string(n)›", "read", "truncated at "
                                  "byte N", "wb::read(p)"), [])


class Requirements(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = make_tree(self.tmp.name)
        _, self.index, self.reqs = read_all(self.root)
        self.flagged = compare(self.reqs, self.index)

    def tearDown(self):
        self.tmp.cleanup()

    def at(self, line):
        return [r for r in self.reqs if r.line == line]

    def test_every_form_is_read(self):
        self.assertEqual([(r.line, r.macro) for r in self.reqs],
                         [(5, "WB_CHECK_THROWS"), (10, "WB_CHECK_THROWS"),
                          (12, "CHECK_THROWS_WITH"), (13, "REQUIRE_THROWS_MATCHES"),
                          (18, "WB_CHECK_THROWS"), (19, "WB_CHECK_THROWS"),
                          (21, "CHECK_THROWS_WITH"), (30, "WB_CHECK_THROWS"),
                          (32, "WB_CHECK_THROWS"), (34, "WB_CHECK_THROWS"),
                          (36, "WB_CHECK_THROWS"), (25, "what")])
        self.assertEqual(self.at(12)[0].facts, ["wb::linear", "[2, 3]"])
        self.assertEqual(self.at(13)[0].facts, ["wb::linear: shapes [2, 3]"])
        self.assertEqual(self.at(19)[0].facts, ["wb::norm", "nan",
                                                "expected eps ‹std::to_string(0)› and finite"])
        self.assertEqual(self.at(5)[0].check, "read_bytes refuses a large size")

    def test_each_is_mapped_to_its_function(self):
        self.assertEqual(self.at(5)[0].function, "read_bytes")
        self.assertEqual(self.at(30)[0].function, "append")     # a member function
        self.assertEqual(self.at(32)[0].function, "norm")       # the one the facts name
        self.assertEqual(self.at(36)[0].function, "read_file")

    def test_what_is_flagged(self):
        flagged = {r.line: r for r in self.flagged}
        self.assertEqual(flagged[5].unstated, {"6 bytes": ["bytes"], "w_fc": ["w_fc"]})
        self.assertEqual(flagged[18].unstated, {"[2, 3]": ["[2, 3]"]})
        self.assertEqual(flagged[19].unstated["expected eps ‹std::to_string(0)› and finite"],
                         ["expected", "and", "finite"])
        self.assertEqual(flagged[21].unstated[flagged[21].facts[0]], ["must", "be"])  # a regex
        self.assertIn("outside WB_CHECK_THROWS", flagged[25].why)
        self.assertIn("wb::read_file has no @throws", flagged[36].why)
        for line in (10, 12, 13, 30, 32, 34):                   # "as matmul" brings its shapes
            self.assertNotIn(line, flagged)

    def test_the_verb_prints_and_exits(self):
        out = io.StringIO()
        args = types.SimpleNamespace(chapters=None, check=True, json=False, all=False,
                                     extra_tests=None, root=self.root)
        with contextlib.redirect_stdout(out):
            self.assertEqual(cmd_messages(args), 1)
        text = out.getvalue()
        self.assertIn("✗ tests/1-io/test_io.cpp:5  wb::read_bytes  (wb::read_bytes(1000))", text)
        self.assertIn('    requires "6 bytes": not stated: "bytes"', text)
        self.assertIn("    @throws: @throws ValueError if size is too large (the message names "
                      "the function and the offending size)", text)
        self.assertNotIn("test_io.cpp:10", text)
        args.json = True
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cmd_messages(args)
        self.assertIn("tests/1-io/test_io.cpp:5", json.loads(out.getvalue())["flagged"])


WORDING = ('the exception was thrown, but its message should name "6 bytes" (in this or '
           'another notation)\n  message: wb::f: count 1000')


class Banners(unittest.TestCase):
    def signatures(self, data):
        tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(data, tmp)
        tmp.close()
        self.addCleanup(Path(tmp.name).unlink)
        return tmp.name

    def test_a_banner_on_wording_alone_is_flagged(self):
        path = self.signatures({
            "trusts-the-count": {"label": "chapter2", "mistake": "trusts the count",
                                 "failing": ["f refuses a bad count"],
                                 "messages": {"f refuses a bad count": WORDING}},
            "wrong-values": {"label": "chapter2", "mistake": "adds twice",
                             "failing": ["f adds", "f adds once"],
                             "messages": {"f adds": "values differ", "f adds once": "values "
                                          "differ"}},
            "mostly-values": {"label": "chapter3", "mistake": "mostly values",
                              "failing": ["a", "b", "c"],
                              "messages": {"a": WORDING, "b": "values differ",
                                           "c": "values differ"}}})
        # The screen's rule leaves wording failures out, so no banner fires on them ...
        self.assertEqual(wording_banners(path), [])
        # ... and a screen that did fire on them would be flagged, with the checks involved.
        from unittest import mock
        with mock.patch("wb.screen.known_mistake", lambda chapter, outcome, path: "banner"):
            found = wording_banners(path)
            self.assertEqual([(name, label, checks) for name, label, checks, _ in found],
                             [("trusts-the-count", "chapter2", ["f refuses a bad count"]),
                              ("mostly-values", "chapter3", ["a"])])
            self.assertEqual([n for n, *_ in wording_banners(path, {"chapter3"})],
                             ["mostly-values"])

    def test_mistakes_failing_the_same_checks_are_listed(self):
        path = self.signatures({
            "a": {"label": "chapter4", "failing": ["x", "y"]},
            "b": {"label": "chapter4", "failing": ["y", "x"]},
            "c": {"label": "chapter4", "failing": ["x"]}})
        self.assertEqual(tie_notes(path), [("chapter4", ["a", "b"])])


if __name__ == "__main__":
    unittest.main()
