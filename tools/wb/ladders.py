"""Hint ladders: each exercise function's rungs (idea, approach, key line), kept as data, one
file per chapter and language, hints/<chapter folder>.<en|zh>.json:

    {"chapter": "4-sdpa", "language": "en", "guide": "chapters/4-sdpa/README.md",
     "functions": {"weighted_sum": {"idea": "...", "approach": "...", "key": "..."}, ...}}

Each text is Markdown. `workbook hint` reveals one rung per call; the guides keep only the
ideas (under "## Ideas, one per function" / "## 每个函数的思路", a `### \\`wb::f\\`` heading
each) and say how to ask for the rest. The tool adds the last rung, the reference itself
(reference_rung), so a ladder never gives the answer as its second hint. A class handout
carries the files without their key lines (handout.py)."""

import json
import re
from pathlib import Path

from .common import ROOT

KINDS = ("idea", "approach", "key")
RUNG_LABELS = {"en": ("Idea.", "Approach.", "Key line."), "zh": ("思路。", "做法。", "关键一行。")}
IDEA_HEADINGS = {"en": "Ideas, one per function", "zh": "每个函数的思路"}


def hint_file(folder, lang, root=ROOT):
    return Path(root) / "hints" / f"{folder}.{lang}.json"


def load_ladders(folder, lang, root=ROOT):
    """{function: {kind: Markdown text}} of chapter FOLDER in LANG ({} when it has no file)."""
    try:
        data = json.loads(hint_file(folder, lang, root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    functions = data.get("functions", {}) if isinstance(data, dict) else {}
    return {name: rungs for name, rungs in functions.items() if isinstance(rungs, dict)}


def ladder_for(folder, function, lang="en", root=ROOT):
    """The rungs of FUNCTION's ladder (Markdown, each opening with its label), [] when none. A
    Chinese ladder that is missing falls back to the English one."""
    if not function:
        return []
    ladders = load_ladders(folder, lang, root)
    if function not in ladders and lang != "en":
        return ladder_for(folder, function, "en", root)
    rungs = ladders.get(function, {})
    labels = RUNG_LABELS.get(lang, RUNG_LABELS["en"])
    return [f"{label}{'' if lang == 'zh' else ' '}{rungs[kind]}"
            for kind, label in zip(KINDS, labels) if rungs.get(kind)]


def reference_rung(chapter, function, root, lang="en"):
    """The last rung: the reference itself, and how to get back to one's own code."""
    where, name = "", ""
    folder = Path(root) / "solutions" / chapter.folder
    for path in sorted(folder.glob("*.cpp")) if folder.is_dir() else []:
        if function and re.search(rf"^[A-Za-z_].*\b{re.escape(function)}\s*\(",
                                  path.read_text(encoding="utf-8"), re.M):
            name = path.name
            break
    if lang == "zh":
        if name:
            where = f"（它的 {function} 在 solutions/{chapter.folder}/{name} 中）"
        return (f"参考答案：`tools/workbook use {chapter.number} reference` 用参考答案构建本章"
                f"{where}，你就可以继续下一章；`tools/workbook use {chapter.number} student` "
                "换回你自己的代码")
    if name:
        where = f" (its {function} is in solutions/{chapter.folder}/{name})"
    return (f"the reference: `tools/workbook use {chapter.number} reference` builds this "
            f"chapter from the reference{where}, so you can go on to the next chapter; "
            f"`tools/workbook use {chapter.number} student` brings your code back")


def ladder_problems(english, chinese, functions=()):
    """Differences between the two languages' ladders ({function: {kind: text}} each), and the
    FUNCTIONS (the chapter's exercises) that have no ladder, as lines; [] when all is well."""
    problems = []
    if list(english) != list(chinese):
        problems.append(f"hint ladders differ: English has {list(english)}, Chinese "
                        f"{list(chinese)}")
    for edition, ladders in (("English", english), ("Chinese", chinese)):
        for name, rungs in ladders.items():
            got = tuple(k for k in rungs)
            if got != KINDS or not all(isinstance(rungs[k], str) and rungs[k].strip()
                                       for k in got):
                problems.append(f"{edition} hint ladder of {name}: expected the rungs "
                                f"{', '.join(KINDS)} in that order, each a text")
        for function in functions:
            if function not in ladders:
                problems.append(f"no {edition} hint ladder for wb::{function}")
    return problems


def idea_headings(text):
    """The functions whose idea a guide keeps: the `### \\`wb::f\\`` headings of its section of
    ideas, in order."""
    names, inside, fence = [], False, False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fence = not fence
            continue
        heading = None if fence else re.match(r"^(#{2,6})\s+(.*?)\s*$", line)
        if heading and len(heading.group(1)) == 2:
            inside = heading.group(2).strip() in IDEA_HEADINGS.values()
        elif heading and inside:
            name = re.fullmatch(r"`(?:wb::)?(\w+)`", heading.group(2).strip())
            if name:
                names.append(name.group(1))
    return names


def code_spans(markdown):
    """The `code spans` of a Markdown text, in order."""
    return re.findall(r"`([^`\n]+)`", markdown)


def _squeeze(text):
    return re.sub(r"\s+", "", text)


def key_lines(root=ROOT, minimum=12):
    """The key lines of the reference that the ladders hold: [(folder, function, code)] for
    each code span of a key rung (either language) at least MINIMUM characters long that is
    part of a line of solutions/<folder>/*.cpp (spaces aside). These must appear nowhere a
    learner reads without asking: no guide, no class handout."""
    root = Path(root)
    out = []
    for path in sorted((root / "hints").glob("*.json")):
        folder = path.name.split(".", 1)[0]
        sources = sorted((root / "solutions" / folder).glob("*.cpp"))
        from .cppscan import blank_comments
        reference = [_squeeze(l) for s in sources
                     for l in blank_comments(s.read_text(encoding="utf-8")).splitlines()]
        try:
            functions = json.loads(path.read_text(encoding="utf-8")).get("functions", {})
        except ValueError:
            continue
        for function, rungs in functions.items():
            for code in code_spans(rungs.get("key", "") if isinstance(rungs, dict) else ""):
                squeezed = _squeeze(code)
                if len(squeezed) >= minimum and any(squeezed in l for l in reference):
                    out.append((folder, function, code))
    return list(dict.fromkeys(out))


def key_line_leaks(paths, keys, base=None):
    """[(file, line number, key code)] where one of the KEYS (key_lines) appears in one of
    PATHS (text files), spaces aside."""
    found = []
    wanted = [(k, _squeeze(k[2])) for k in keys]
    for path in paths:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(lines, 1):
            squeezed = _squeeze(line)
            for key, code in wanted:
                if code in squeezed:
                    shown = Path(path).relative_to(base) if base else Path(path)
                    found.append((str(shown), number, key[2]))
    return found

