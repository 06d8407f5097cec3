"""Hints for a failing check: its own hint first, then the guide's words on its function."""

import re
import textwrap

from .common import ROOT
from .ladders import ladder_for, reference_rung
from .results import NOT_IMPLEMENTED, SIGNALS


def markdown_to_text(text):
    """Markdown as terminal text: `code` and **bold** lose their marks, [text](link) keeps the
    text and the link, $x$ loses its dollars."""
    text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1 (\2)", text)
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", text)
    text = re.sub(r"`([^`]+)`", r"\1", text)
    text = re.sub(r"\$([^$]+)\$", r"\1", text)
    text = text.replace("<br>", " ")
    return text


def wrap(text, indent="  ", width=96):
    return "\n".join(textwrap.fill(part, width=width, initial_indent=indent,
                                   subsequent_indent=indent) if part.strip() else ""
                     for part in text.split("\n"))


def _code(path):
    """A C++ file's text without its comments."""
    text = path.read_text(encoding="utf-8")
    return re.sub(r"/\*.*?\*/", "", re.sub(r"//[^\n]*", "", text), flags=re.S)


def header_functions(chapter):
    """The functions a chapter's headers declare, in header order."""
    names = []
    for path in chapter.paths():
        if path.suffix != ".hpp" or not path.exists():
            continue
        for name in re.findall(r"^[A-Za-z_][\w:<>, ]*?[\s&*]+(\w+)\s*\(", _code(path), re.M):
            if name not in names and name not in ("if", "for", "while", "return", "operator"):
                names.append(name)
    return names


def declaring_header(function, chapter):
    """The chapter's header that declares FUNCTION ('chapters/8-training/optim.hpp'), or ''."""
    for path in chapter.paths():
        if path.suffix == ".hpp" and path.exists() and re.search(
                rf"^[A-Za-z_][\w:<>, ]*?[\s&*]+{re.escape(function)}\s*\(", _code(path), re.M):
            return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    return ""


def declared_functions(check, chapter):
    """The exercise functions a check declares it is about, most precise first: the first
    component of each clause tag [c:<function>.<name>], then each tag that names a function the
    chapter's headers declare ([adamw_step]). [] when its tags name none: the screen then names
    no function rather than guess one."""
    out = []
    for tag in check.tags:
        if tag.startswith("c:") and "." in tag:
            out.append(tag[2:].split(".", 1)[0])
    functions = header_functions(chapter)
    out += [tag for tag in check.tags if tag in functions]
    return list(dict.fromkeys(out))


def failing_function(check, chapter):
    """The function to blame for a failing check: the unwritten one it stopped at, else the
    first its tags declare (declared_functions), else None."""
    stub = check.stub
    if stub:
        return stub[0]
    declared = declared_functions(check, chapter)
    return declared[0] if declared else None


def definition(function, chapter):
    """'chapters/1-tensors/tensors.cpp:12', where the learner's FUNCTION is defined, or ''."""
    for path in chapter.paths():
        if path.suffix != ".cpp" or not path.exists():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(rf"^[A-Za-z_].*\b{re.escape(function)}\s*\(", line) and not \
                    line.rstrip().endswith(";"):
                return f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}"
    return ""


def guide_items(chapter, heading_word, item=r"- "):
    """The list items (bullets, or numbered items with item=r"\\d+\\. ") of the guide's sections
    whose heading contains heading_word, in order, each joined into one line."""
    guide = ROOT / chapter.guide if chapter.guide else None
    if guide is None or not guide.exists():
        return []
    bullets, inside, current, fence = [], False, None, False
    for line in guide.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("```"):
            fence = not fence
        heading = None if fence else re.match(r"^(#{1,6})\s+(.*)", line)
        if heading:
            if current:
                bullets.append(current)
                current = None
            inside = heading_word in heading.group(2).lower()
            continue
        if not inside:
            continue
        start = re.match(item, line)
        if start:
            if current:
                bullets.append(current)
            current = line[start.end():].strip()
        elif current is not None and line.startswith("  ") and line.strip():
            current += " " + line.strip()
        elif current is not None and not line.strip():
            bullets.append(current)
            current = None
    if current:
        bullets.append(current)
    return bullets


def crash_text(check):
    what = SIGNALS.get(check.signal, check.signal.lower())
    if check.signal == "TIMEOUT":
        return (f"your code did not finish in check \"{check.title}\": probably a loop that "
                "never ends (check its bounds and that the counter moves)")
    return (f"your code crashed ({what}) in check \"{check.title}\": probably an index out of "
            "range; check the sizes before indexing")


CRASH_MORE = ("the student preset's index checks (WB_BOUNDS_CHECKS) cover xtensor's operator() "
              "and at(), not views, raw pointers or data(): an index such as T - 1 with T == 0 "
              "wraps around to a huge number and reads outside the tensor")


def hints_for(check, chapter, mistake=None):
    """(function, [hint]) for one failing check, most specific first: the check's own hint
    (exactly as the check wrote it), or its task when the function is not written yet, or the
    crash; then the function's ladder in the guide (idea, approach, key line) and the guide's
    bullets that name it (the chapter's other pitfalls when it has no ladder); last, the
    reference itself — never earlier."""
    function = failing_function(check, chapter)
    bullets = [markdown_to_text(b) for b in guide_items(chapter, "hint") +
               guide_items(chapter, "pitfall") if b]
    bullets = list(dict.fromkeys(bullets))
    tasks = [markdown_to_text(t) for t in guide_items(chapter, "task", r"\d+\.\s+")]
    first = [f"a known mistake fails exactly these checks: {mistake}"] if mistake else []
    if check.crashed:
        first += [crash_text(check), CRASH_MORE]
    if NOT_IMPLEMENTED in check.output:
        stub = check.stub
        if function:
            pattern = re.compile(rf"\b{re.escape(function)}\b")
            first += [f"the task: {t}" for t in tasks if pattern.search(t)][:1]
        if not first and stub:
            first.append(f"write wb::{stub[0]} in {stub[1]}:{stub[2]}; its spec is the comment "
                         "above its declaration in the chapter's header")
    else:
        own = list(dict.fromkeys(f.hint for f in check.failures if f.hint))
        first += own
    if function:
        pattern = re.compile(rf"\b{re.escape(function)}\b")
        specific = [b for b in bullets if pattern.search(b)]
    else:
        specific = []
    others = [b for b in bullets if b not in specific]
    ladder = [markdown_to_text(r) for r in ladder_for(chapter.folder, function)]
    rungs = first + ladder + specific + ([] if ladder else others)
    return function, list(dict.fromkeys(rungs + [reference_rung(chapter, function, ROOT)]))
