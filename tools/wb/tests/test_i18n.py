"""The screens in Chinese: the language chosen, the templates complete and in the glossary's
terms, the one screen of check in Chinese."""

import json
import os
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.course import parse_course  # noqa: E402
from wb.guidecheck import forbidden_terms  # noqa: E402
from wb.i18n import (MESSAGES, chinese_templates, language, locale_language,  # noqa: E402
                     pad, strip_fields, use_language, width)
from wb.results import Outcome, parse_catch_xml  # noqa: E402
from wb.screen import check_screen, para  # noqa: E402
from wb.common import ROOT  # noqa: E402

TEST = f"{ROOT}/tests/1-tensors/test_tensors.cpp"
COURSE = parse_course(json.dumps({"reference": "none", "chapters": [
    {"label": "chapter1", "folder": "1-tensors", "title": "Chapter 1 — Tensors", "kind": "stub",
     "source": "chapters/1-tensors",
     "files": ["chapters/1-tensors/tensors.cpp", "chapters/1-tensors/tensors.hpp"],
     "guide": "chapters/1-tensors/README.md", "target": "test_chapter1"},
    {"label": "chapter2", "folder": "2-embedding", "title": "Chapter 2 — Embedding",
     "kind": "stub", "guide": "chapters/2-embedding/README.md", "target": "test_chapter2"}]}))
STUBS = "".join(
    f'<TestCase name="check {i}" filename="{TEST}" line="{60 + i}"><Exception '
    f'filename="{TEST}" line="{60 + i}">wb::last_token is not implemented yet: write its body in '
    f'chapters/1-tensors/tensors.cpp:{i} (the chapter\'s README.md explains the task)</Exception>'
    '<OverallResult success="false"/></TestCase>' for i in range(1, 6))


def latin_words(lines):
    """The English words of LINES outside paths, commands and code names."""
    import re
    text = "\n".join(lines)
    text = re.sub(r"`[^`]*`|\S*[/.:_]\S*|wb::\w+", " ", text)
    kept = {"softmax", "Query", "Key", "Value", "Mask", "Embedding", "Linear", "Block", "Cache",
            "RoPE", "LayerNorm", "Prefill", "Decode", "Transformer", "xtensor", "verbose"}
    return [w for w in re.findall(r"[A-Za-z]{3,}", text) if w not in kept]


class Language(unittest.TestCase):
    def tearDown(self):
        use_language("en")

    def test_the_locale_decides_when_nothing_is_kept(self):
        self.assertEqual(locale_language({"LANG": "zh_CN.UTF-8"}), "zh")
        self.assertEqual(locale_language({"LANG": "en_GB.UTF-8"}), "en")
        self.assertEqual(locale_language({"LC_ALL": "C.UTF-8", "LANG": "zh_TW.UTF-8"}), "zh")
        self.assertEqual(locale_language({"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN"}), "en")
        self.assertEqual(locale_language({}), "en")

    def test_the_progress_file_keeps_a_choice(self):
        use_language(None)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "progress.json"
            old = dict(os.environ)
            try:
                os.environ["WB_PROGRESS_FILE"] = str(path)
                os.environ["LANG"] = "zh_CN.UTF-8"
                os.environ.pop("LC_ALL", None)
                os.environ.pop("LC_MESSAGES", None)
                self.assertEqual(language(), "zh")
                path.write_text(json.dumps({"lang": "en"}))
                self.assertEqual(language(), "en")
            finally:
                os.environ.clear()
                os.environ.update(old)

    def test_every_template_in_both_languages_with_the_same_fields(self):
        import re
        for key, (en, zh) in MESSAGES.items():
            self.assertTrue(en and zh, key)
            fields = lambda t: sorted(set(re.findall(r"\{(\w+)", t)))  # noqa: E731
            self.assertLessEqual(set(fields(zh)), set(fields(en)) | {"name", "where"}, key)

    def test_the_chinese_templates_use_the_glossarys_terms(self):
        text = "\n".join(strip_fields(t) for t in chinese_templates())
        self.assertEqual(forbidden_terms(text), [])
        # and the check fires: on a "How to check" section too
        self.assertTrue(forbidden_terms("## 如何检查\n\n运行因果掩码的检查。\n"))

    def test_columns_of_chinese_text(self):
        self.assertEqual(width("第 1 章"), 7)
        self.assertEqual(width(pad("第 1 章", 9)), 9)
        lines = para("下一步：打开 chapters/9-kv-cache/gqa.cpp:16，编写 wb::gqa_attention（规格是 "
                     "chapters/9-kv-cache/gqa.hpp 中它的注释；任务见 chapters/9-kv-cache/README.zh.md）")
        self.assertTrue(all(width(l) <= 100 for l in lines))
        self.assertIn("chapters/9-kv-cache/gqa.hpp", "".join(lines))


class ChineseScreen(unittest.TestCase):
    def tearDown(self):
        use_language("en")

    def test_day_one_is_in_chinese_and_names_the_chinese_guide(self):
        use_language("zh")
        outcome = Outcome(parse_catch_xml(f"<Catch>{STUBS}</Catch>", "chapter1: "))
        screen = check_screen(COURSE.chapters[0], COURSE, outcome)
        text = "\n".join(screen)
        self.assertTrue(screen[0].startswith("第 1 章"), screen[0])
        self.assertIn("进度：0/5 项检查通过", text)
        self.assertIn("wb::last_token 尚未实现", text)
        self.assertIn("chapters/1-tensors/README.zh.md", text)
        self.assertEqual(latin_words(screen), [], text)

    def test_a_pass_names_the_next_chapter_in_chinese(self):
        use_language("zh")
        passing = (f'<Catch><TestCase name="dot" filename="{TEST}" line="1"><OverallResult '
                   'success="true"/></TestCase></Catch>')
        screen = check_screen(COURSE.chapters[0], COURSE,
                              Outcome(parse_catch_xml(passing, "chapter1: ")))
        text = "\n".join(screen)
        self.assertIn("第 1 章已完成。下一章：第 2 章", text)
        self.assertIn("chapters/2-embedding/README.zh.md", text)
        self.assertEqual(latin_words(screen), [], text)


if __name__ == "__main__":
    unittest.main()
