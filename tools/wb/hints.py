"""Hints for a failing check: its own hint first, then the guide's words on its function."""

import re
import textwrap

from . import cppscan
from .common import ROOT
from .i18n import guide_of, language, say
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


def header_functions(chapter):
    """The functions a chapter's headers declare, in header order."""
    names = []
    for path in chapter.paths():
        if path.suffix == ".hpp" and path.exists():
            names += [n for n in cppscan.declared_functions(path.read_text(encoding="utf-8"))
                      if n not in names]
    return names


def declaring_header(function, chapter):
    """The chapter's header that declares FUNCTION ('chapters/8-training/optim.hpp'), or ''."""
    for path in chapter.paths():
        if path.suffix == ".hpp" and path.exists() and cppscan.declares(
                path.read_text(encoding="utf-8"), function):
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
    if len(declared) > 1:
        # A check about several functions: the one its failing assertion calls (a check of cat
        # and stack that fails on its stack line blames stack).
        called = asserted_calls(check, declared)
        if called:
            return called
    return declared[0] if declared else None


def asserted_calls(check, functions):
    """The first of FUNCTIONS that the source of CHECK's first failing assertion calls (the
    statement at the failure's line, up to its ';'), or None."""
    failure = next((f for f in check.failures if f.file and f.line), None)
    if failure is None:
        return None
    path = ROOT / failure.file
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    statement = []
    for line in lines[failure.line - 1:failure.line + 5]:
        statement.append(line)
        if line.rstrip().endswith(";"):
            break
    text = re.sub(r"//[^\n]*", "", "\n".join(statement))
    return next((f for f in functions if re.search(rf"\b{re.escape(f)}\s*\(", text)), None)


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


# The words of a guide's headings, in both languages: "hint" finds "Hints and xtensor pitfalls"
# and "提示与 xtensor 陷阱".
heading_words = {"hint": ("hint", "提示"), "pitfall": ("pitfall", "陷阱"), "task": ("task", "任务")}


def guide_items(chapter, heading_word, item=r"- "):
    """The list items (bullets, or numbered items with item=r"\\d+\\. ") of the guide's sections
    whose heading contains heading_word, in order, each joined into one line."""
    guide = ROOT / guide_of(chapter) if chapter.guide else None
    if guide is None or not guide.exists():
        return []
    words = heading_words[heading_word] if isinstance(heading_words.get(heading_word), tuple) \
        else (heading_word,)
    bullets, inside, current, fence = [], False, None, False
    for line in guide.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("```"):
            fence = not fence
        heading = None if fence else re.match(r"^(#{1,6})\s+(.*)", line)
        if heading:
            if current:
                bullets.append(current)
                current = None
            inside = any(w in heading.group(2).lower() for w in words)
            continue
        if not inside:
            continue
        start = re.match(item, line)
        if start:
            if current:
                bullets.append(current)
            current = line[start.end():].strip()
        elif current is not None and line.startswith("  ") and line.strip():
            current = join_lines(current, line.strip())
        elif current is not None and not line.strip():
            bullets.append(current)
            current = None
    if current:
        bullets.append(current)
    return bullets


def join_lines(text, more):
    """Two lines of a Markdown paragraph as one: a space between them, none between two Chinese
    characters (nor after Chinese punctuation)."""
    cjk = re.compile(r"[\u2e80-\u9fff\u3000-\u303f\uff00-\uffef]")
    if text and more and cjk.match(text[-1]) and cjk.match(more[0]):
        return text + more
    return f"{text} {more}" if text else more


def crash_text(check):
    what = say(check.signal) if check.signal in SIGNALS else check.signal.lower()
    if check.signal == "TIMEOUT":
        return say("timeout", title=check.title)
    return say("crash", what=what, title=check.title)


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
    first = [say("known_mistake_hint", mistake=mistake)] if mistake else []
    if check.crashed:
        first += [crash_text(check), say("crash_more")]
    if NOT_IMPLEMENTED in check.output:
        stub = check.stub
        if function:
            pattern = re.compile(rf"\b{re.escape(function)}\b")
            first += [say("the_task", task=t) for t in tasks if pattern.search(t)][:1]
        if not first and stub:
            first.append(say("write_stub", function=stub[0], path=stub[1], line=stub[2]))
    else:
        own = list(dict.fromkeys(f.hint for f in check.failures if f.hint))
        first += own
    if function:
        pattern = re.compile(rf"\b{re.escape(function)}\b")
        specific = [b for b in bullets if pattern.search(b)]
    else:
        specific = []
    others = [b for b in bullets if b not in specific]
    lang = language()
    ladder = [markdown_to_text(r) for r in ladder_for(chapter.folder, function, lang)]
    rungs = first + ladder + specific + ([] if ladder else others)
    return function, list(dict.fromkeys(rungs + [reference_rung(chapter, function, ROOT, lang)]))
