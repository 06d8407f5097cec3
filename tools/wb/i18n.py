"""The learner's screens in English or Chinese.

The language is the one `workbook lang zh|en` keeps in the progress file; when it keeps none,
a locale that starts with zh (LC_ALL, LC_MESSAGES, then LANG, as the C library reads them)
means Chinese, anything else English. Every sentence the learner's verbs print (check, hint,
next, status, watch, use, record) is a template of MESSAGES, in both languages; the Chinese
ones use the glossary of the Chinese guides (chapter 1's README.zh.md), which
`workbook guides` holds them to. What the checks and the compiler write is shown as written.
"""

import os
import re
import unicodedata
from pathlib import Path

from .common import ROOT

LANGUAGES = {"en": "English", "zh": "中文"}
_forced = []   # set by tests and by `lang`


def locale_language(environ=None):
    """'zh' when the locale is Chinese, else 'en'."""
    environ = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(name, "")
        if value and value not in ("C", "POSIX") and not value.startswith("C."):
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def language():
    """The language of the screens now: the progress file's choice, else the locale's."""
    if _forced:
        return _forced[-1]
    from .results import read_progress
    chosen = read_progress().get("lang")
    return chosen if chosen in LANGUAGES else locale_language()


def use_language(lang):
    """Forces LANG for this process (None: back to the progress file and the locale)."""
    _forced.clear()
    if lang:
        _forced.append(lang)


def zh():
    return language() == "zh"


def say(key, **values):
    """The template KEY of MESSAGES in the current language, filled with VALUES."""
    en, chinese = MESSAGES[key]
    if not zh():
        return en.format(**values)
    # No space after Chinese punctuation where a filled-in value ended the clause, nor between
    # two Chinese words where a filled-in value was Chinese.
    text = re.sub(r"([）：；，。、])[ ]+(?=\S)", r"\1", chinese.format(**values))
    return re.sub(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff（])", "", text)


def width(text):
    """The columns TEXT takes on a terminal (a Chinese character takes two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text, columns):
    return text + " " * max(0, columns - width(text))


def guide_of(chapter):
    """The chapter's guide in the language of the screens (README.zh.md in Chinese, when the
    chapter has one)."""
    guide = chapter.guide or ""
    if zh() and guide.endswith("README.md"):
        chinese = guide[:-len("README.md")] + "README.zh.md"
        path = Path(chinese) if Path(chinese).is_absolute() else ROOT / chinese
        if path.exists():
            return chinese
    return guide


def chinese_title(chapter):
    """The first heading of the chapter's Chinese guide, or ''."""
    guide = guide_of(chapter)
    path = Path(guide) if Path(guide).is_absolute() else ROOT / guide
    if not guide.endswith(".zh.md") or not path.exists():
        return ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def chapter_name(chapter):
    """'chapter4' in English, '第 4 章' in Chinese (the capstone: '综合练习')."""
    if not zh():
        return chapter.label
    number = chapter.number
    return f"第 {number} 章" if number.isdigit() else "综合练习"


def source_word(kind):
    return say({"stub": "source_stub", "reference": "source_reference",
                "override": "source_override"}.get(kind, "source_stub"))


# key: (English, Chinese). Chinese in the glossary's terms: 检查 (a check), 桩 (a stub),
# 参考答案 (the reference), Mask, Query, Key, Value as in English.
MESSAGES = {
    # the one screen of check and watch
    "score": ("score: {passed}/{total} checks pass  {bar}", "进度：{passed}/{total} 项检查通过  {bar}"),
    "complete_mark": ("  complete", "  本章完成"),
    "no_checks_ran": ("no checks ran: is Catch2 installed (tools/setup.sh)?",
                      "没有运行任何检查：Catch2 安装了吗（tools/setup.sh）？"),
    "likely_mistake": ("likely mistake (these {n} checks fail together for a known one): {mistake}",
                       "可能的错误（这 {n} 项检查一起失败，与一个已知错误相符）：{mistake}"),
    "first_failing": ("first failing check: {title}", "第一个失败的检查：{title}"),
    "first_failing_stub": ("first failing check: {title}", "第一个失败的检查：{where}"),
    "check_at": ("  check: {where}", "  检查所在：{where}"),
    "your_code": ("  your code: wb::{function}{where}", "  你的代码：wb::{function}{where}"),
    "your_code_where": (", {where}", "，{where}"),
    "also_calls": ("    (the check also calls {names})", "    （这项检查还调用了 {names}）"),
    "check_says": ("  the check says:", "  检查的说明："),
    "warning_note": ("warning: {text}", "警告：{text}"),
    "more_lines": ("… {n} more lines (--verbose)", "…… 另有 {n} 行（--verbose 显示全部）"),
    "failed_at": ("  failed at {where}:", "  失败之处：{where}："),
    "what_failed": ("  what failed:", "  失败的断言："),
    "more_assertions": ("  (and {n} more failed assertion{s} in this check: --verbose shows them)",
                        "  （这项检查中另有 {n} 个断言失败：--verbose 显示）"),
    "other_failing": ("other failing checks ({n}):", "其他失败的检查（{n} 项）："),
    "more_checks": ("  … {n} more (--verbose)", "  …… 另有 {n} 项（--verbose）"),
    "not_written": ("not written yet, {n} checks: {names}", "尚未编写，{n} 项检查：{names}"),
    "crashed_short": ("crashed ({signal})", "崩溃（{signal}）"),
    "failed_short": ("failed", "失败"),
    "stub_text": ("wb::{function} is not implemented yet: write its body in {path}:{line}",
                  "wb::{function} 尚未实现：在 {path}:{line} 写出它的函数体（任务见本章的 "
                  "README.zh.md）"),
    "next_write": ("next: open {path}:{line} and write wb::{function} ({spec}the task is in "
                   "{guide})", "下一步：打开 {path}:{line}，编写 wb::{function}（{spec}任务见 {guide}）"),
    "spec_in": ("its spec is its comment in {header}; ", "规格是 {header} 中它的注释；"),
    "next_earlier": ("next: this check calls wb::{function} of an earlier chapter: write it in "
                     "{path}:{line}, or build that chapter from the reference ({use})",
                     "下一步：这项检查调用了前面章节的 wb::{function}：在 {path}:{line} 写出它，"
                     "或者用参考答案构建那一章（{use}）"),
    "next_fix": ("next: fix {what} and save", "下一步：修改 {what} 并保存"),
    "next_fix_hints": ("; `{command}` for a hint ({n} available)",
                       "；`{command}` 给出提示（共 {n} 条）"),
    "fix_function": ("wb::{function}", "wb::{function}"),
    "fix_function_spec": ("wb::{function} (its spec is its comment in {header})",
                          "wb::{function}（规格是 {header} 中它的注释）"),
    "fix_code": ("the code that check calls ({where})", "这项检查调用的代码（{where}）"),
    "then_again": ("  then `{check}` again, or `{watch}` to check on every save",
                   "  然后再次运行 `{check}`，或用 `{watch}` 在每次保存时检查"),
    "warnings": ("warnings in your code ({n}):", "你的代码中的警告（{n} 条）："),
    "more_warnings": ("  … {n} more warnings (--verbose)", "  …… 另有 {n} 条警告（--verbose）"),
    "no_compile_at": ("does not compile. The first error, in your code at {where}:",
                      "无法编译。第一个错误，在你的代码 {where}："),
    "no_compile": ("does not compile. The first error:", "无法编译。第一个错误："),
    "more_error_lines": ("  … {n} more lines of this error (--verbose for the whole build log)",
                         "  …… 这个错误另有 {n} 行（--verbose 显示完整的构建日志）"),
    "next_fix_error": ("next: fix {where} and save; then `{check}` again (or `{watch}`)",
                       "下一步：修改 {where} 并保存；然后再次运行 `{check}`（或 `{watch}`）"),
    "line_named_above": ("the line named above", "上面指出的那一行"),
    "last_complete": ("{name} is complete: that was your last chapter. `tools/workbook status` "
                      "shows the whole course.",
                      "{name}已完成：这是你的最后一章。`tools/workbook status` 显示整个课程。"),
    "complete_next": ("{name} is complete. Next: {heading}", "{name}已完成。下一章：{heading}"),
    "read_then": ("  read {guide}, then `{check}` (or `tools/workbook watch`)",
                  "  先读 {guide}，再运行 `{check}`（或 `tools/workbook watch`）"),
    "skipped_one": ("  {names} is compiled from the reference (`tools/workbook use {number} "
                    "student` to work on it)",
                    "  {names}使用参考答案编译（要自己完成它：`tools/workbook use {number} student`）"),
    "skipped_many": ("  {names} are compiled from the reference (`tools/workbook use {number} "
                     "student` to work on one)",
                     "  {names}使用参考答案编译（要自己完成其中一章：`tools/workbook use {number} "
                     "student`）"),
    # crashes
    "crash": ("your code crashed ({what}) in check \"{title}\": probably an index out of range; "
              "check the sizes before indexing",
              "你的代码在检查“{title}”中崩溃（{what}）：很可能是下标越界；取下标之前先检查大小"),
    "timeout": ("your code did not finish in check \"{title}\": probably a loop that never ends "
                "(check its bounds and that the counter moves)",
                "你的代码在检查“{title}”中没有结束：很可能是一个停不下来的循环（检查循环的边界，"
                "以及计数器是否在前进）"),
    "crash_more": ("the student preset's index checks (WB_BOUNDS_CHECKS) cover xtensor's "
                   "operator() and at(), not views, raw pointers or data(): an index such as "
                   "T - 1 with T == 0 wraps around to a huge number and reads outside the tensor",
                   "student 预设的下标检查（WB_BOUNDS_CHECKS）只覆盖 xtensor 的 operator() 和 at()，"
                   "不覆盖视图、裸指针和 data()：T == 0 时，T - 1 这样的下标会回绕成一个巨大的数，"
                   "读到张量之外"),
    "SIGSEGV": ("segmentation fault", "段错误"),
    "SIGBUS": ("bus error", "总线错误"),
    "SIGFPE": ("arithmetic error (an integer division by zero?)", "算术错误（整数除以 0？）"),
    "SIGABRT": ("abort", "异常终止"),
    "SIGILL": ("illegal instruction", "非法指令"),
    # hints
    "known_mistake_hint": ("a known mistake fails exactly these checks: {mistake}",
                           "一个已知错误恰好让这些检查失败：{mistake}"),
    "the_task": ("the task: {task}", "任务：{task}"),
    "write_stub": ("write wb::{function} in {path}:{line}; its spec is the comment above its "
                   "declaration in the chapter's header",
                   "在 {path}:{line} 编写 wb::{function}；它的规格是本章头文件中它的声明上方的注释"),
    "running_checks": ("running {name}'s checks ...", "正在运行{name}的检查……"),
    "hint_complete": ("{name} is complete: all {n} checks pass, no hint needed",
                      "{name}已完成：{n} 项检查全部通过，不需要提示"),
    "hint_head": ("{name}: {failed} of {total} checks fail; the first: {title}",
                  "{name}：{total} 项检查中有 {failed} 项失败；第一个：{title}"),
    "hint_head_stub": ("{name}: {failed} of {total} checks fail; the first: {title}",
                       "{name}：{total} 项检查中有 {failed} 项失败；第一个在 {where}"),
    "crashed_line": ("  crashed: {signal}", "  崩溃：{signal}"),
    "no_hints": ("  no hints for this check: read the guide, {guide}",
                 "  这项检查没有提示：请读指南 {guide}"),
    "no_more_hints": ("\nno more hints: all {n} shown (`tools/workbook hint {number} 1` shows the "
                      "first again)",
                      "\n没有更多提示了：{n} 条已全部显示（`tools/workbook hint {number} 1` 重新显示"
                      "第一条）"),
    "hint_n": ("\nhint {n} of {total}:", "\n提示 {n}/{total}："),
    "hint_again": ("\n(`tools/workbook hint {number}` again for hint {n})",
                   "\n（再次运行 `tools/workbook hint {number}` 查看第 {n} 条）"),
    "hint_number": ("hint number must be 1 or more, got {n}", "提示的编号至少是 1，收到的是 {n}"),
    # check all
    "all_no_compile": ("does not compile", "无法编译"),
    "all_complete": ("complete", "已完成"),
    "all_first": ("first failure: {title}", "第一个失败：{title}"),
    "all_no_checks": ("no checks", "没有检查"),
    "all_total": ("\n{passed}/{total} checks pass  {bar}", "\n{passed}/{total} 项检查通过  {bar}"),
    "all_next": ("next: `tools/workbook check {number}` shows its first failure in full",
                 "下一步：`tools/workbook check {number}` 完整显示它的第一个失败"),
    # watch
    "watch_head": ("── {time} check {number} ({reason}) ──", "── {time} 检查{name}（{reason}）──"),
    "watch_start": ("start", "开始"),
    "watch_saved": ("{file} saved", "已保存 {file}"),
    "watch_all_done": ("\nevery chapter of yours is complete. Well done.",
                       "\n你的每一章都已完成。干得好！"),
    "watch_next": ("\nwatching {label} now ({heading}): save one of its files to check it; Ctrl-C "
                   "to stop", "\n现在监视{name}（{heading}）：保存它的任一文件即检查；Ctrl-C 停止"),
    "watch_files": ("\nwatching {names}: save to check again; Ctrl-C to stop",
                    "\n正在监视 {names}：保存即重新检查；Ctrl-C 停止"),
    "watch_stopped": ("\nwatch stopped.", "\n已停止监视。"),
    "watch_nothing": ("every chapter of yours is complete: nothing to watch (`tools/workbook "
                      "status`)", "你的每一章都已完成：没有需要监视的（`tools/workbook status`）"),
    # next
    "next_all_done": ("every chapter of yours is complete (`tools/workbook status` shows them)",
                      "你的每一章都已完成（`tools/workbook status` 列出它们）"),
    "next_head": ("next: {heading}", "下一章：{heading}"),
    "next_guide": ("  guide: {guide}", "  指南：{guide}"),
    "next_files": ("  your files: {files}", "  你的文件：{files}"),
    "next_first_function": ("  first function to write: wb::{function} ({path}:{line})",
                            "  第一个要写的函数：wb::{function}（{path}:{line}）"),
    "next_first_check": ("  first failing check: {title}", "  第一个失败的检查：{title}"),
    "next_run": ("  run: `tools/workbook check {number}` or `tools/workbook watch {number}`",
                 "  运行：`tools/workbook check {number}` 或 `tools/workbook watch {number}`"),
    # status
    "status_head": ("{chapter} {source} checks", "{chapter} {source} 检查"),
    "col_chapter": ("chapter", "章节"),
    "col_source": ("source", "来源"),
    "source_stub": ("student", "你的代码"),
    "source_reference": ("reference", "参考答案"),
    "source_override": ("override", "指定目录"),
    "not_checked_n": ("not checked yet ({n} checks): tools/workbook check {number}",
                      "尚未检查（{n} 项检查）：tools/workbook check {number}"),
    "not_checked": ("not checked yet: tools/workbook check {number}",
                    "尚未检查：tools/workbook check {number}"),
    "status_no_compile": ("does not compile", "无法编译"),
    "status_passed": ("{passed:3d}/{n:<3d} passed", "{passed:3d}/{n:<3d} 通过"),
    "stale": ("  (stale: {why}; check again)", "  （已过时：{why}；请重新检查）"),
    "stale_recorded": ("recorded on the {kind}", "记录时是{kind}"),
    "stale_edited": ("edited since", "之后又编辑过"),
    "status_complete": ("  complete", "  已完成"),
    "status_first": ("  first failure: {title}", "  第一个失败：{title}"),
    "course_line": ("\ncourse   {bar} {pct:3.0f}%  {done}/{total} checks pass on your code, "
                    "{complete}/{mine} of your chapters complete",
                    "\n课程     {bar} {pct:3.0f}%  你的代码通过 {done}/{total} 项检查，你的 {mine} "
                    "章中 {complete} 章已完成"),
    "course_others": (", {n} taken from the reference or a folder", "，另有 {n} 章来自参考答案或指定目录"),
    "all_reference": ("every chapter is the reference: `tools/workbook use N student` to work on "
                      "one", "每一章都是参考答案：运行 `tools/workbook use N student` 开始完成其中一章"),
    "status_next": ("next: {heading}: `tools/workbook check {number}` (guide: {guide})",
                    "下一章：{heading}：`tools/workbook check {number}`（指南：{guide}）"),
    # errors a learner can fix
    "not_configured": ("{build} is not configured yet: run `cmake --preset student` first (or pass "
                       "--build-dir)", "{build} 还没有配置：先运行 `cmake --preset student`（或给出 "
                       "--build-dir）"),
    "unknown_chapter": ("unknown chapter '{text}'; known: {known}",
                        "没有“{text}”这一章；已有：{known}"),
    # use, record, lang
    "use_building": ("building {targets} ...", "正在构建 {targets}……"),
    "use_rebuilt": ("rebuilt what depends on {names} in {build} ({seconds:.0f} s)",
                    "已重新构建依赖{names}的部分，位于 {build}（{seconds:.0f} 秒）"),
    "record_not_mine": ("{label}: compiled from the {kind}, not your code: no progress kept",
                        "{name}：使用{kind}编译，不是你的代码：不记录进度"),
    "record_kept": ("{label}: {passed}/{total} checks pass{complete} (kept for `tools/workbook "
                    "status` and `next`)",
                    "{name}：{passed}/{total} 项检查通过{complete}（已记录，供 `tools/workbook "
                    "status` 和 `next` 使用）"),
    "record_complete": (", complete", "，本章完成"),
    "lang_now": ("language: {name} ({why})", "语言：{name}（{why}）"),
    "lang_kept": ("kept in {path}", "保存在 {path}"),
    "lang_locale": ("from the locale; `tools/workbook lang zh|en` keeps a choice",
                    "来自区域设置；`tools/workbook lang zh|en` 可以保存一个选择"),
}


def chinese_templates():
    """Every Chinese template (for the glossary check)."""
    return [chinese for _, chinese in MESSAGES.values()]


def strip_fields(template):
    return re.sub(r"\{[^{}]*\}", "", template)
