"""The one screen of `check` and `watch`: the score, the first failing check in full, a line per
other failing check, the next step."""

import re
from pathlib import Path

from .common import ROOT
from .hints import (crash_text, declared_functions, declaring_header, definition,
                    failing_function, hints_for)
from .i18n import chapter_name, chinese_title, guide_of, say, width, zh
from .results import NOT_IMPLEMENTED

WIDTH = 100
ERROR_LINES = 50   # a compile error longer than this is cut (--verbose shows it all)


def bar(done, total, width=30):
    filled = int(round(width * done / total)) if total else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


def cut(text, columns=WIDTH):
    """One line of at most COLUMNS columns (the indent kept; a Chinese character takes two)."""
    indent = text[:len(text) - len(text.lstrip())]
    text = indent + " ".join(text.split())
    if width(text) <= columns:
        return text
    while width(text) > columns - 1:
        text = text[:-1]
    return text + "…"


CJK = "\u2e80-\u9fff\u3000-\u303f\uff00-\uffef"
TOKEN = re.compile(f"[{CJK}]|[^\\s{CJK}]+|\\s+")


def para(text, indent="", more="      "):
    """TEXT wrapped to WIDTH columns: between words, and between any two Chinese characters
    (a Chinese line has no spaces to break at); never inside a `command`."""
    glue = "\x00"
    text = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", glue), text)
    if not re.search(f"[{CJK}]", text):
        import textwrap
        return [l.replace(glue, " ") for l in textwrap.wrap(
            text, WIDTH, initial_indent=indent, subsequent_indent=more, break_on_hyphens=False,
            break_long_words=False)]
    return [l.replace(glue, " ") for l in _wrap_columns(text, indent, more)]


def _wrap_columns(text, indent, more):
    lines, line = [], indent
    for token in TOKEN.findall(text):
        if token.isspace():
            token = " "
        if width(line) + width(token) > WIDTH and line.strip():
            lines.append(line.rstrip())
            line = more
            if token == " ":
                continue
        line += token
    if line.strip():
        lines.append(line.rstrip())
    return lines


NOTE_LINES = 8    # lines of one note of a check (INFO, WARN) on the screen; --verbose: all


def note_lines(failure, verbose=False, indent="  "):
    """What the check said about FAILURE (its INFO, UNSCOPED_INFO, CAPTURE and WARN texts), as
    screen lines: the check's explanation, shown before the raw values."""
    if not failure.notes:
        return []
    out = [indent + say("check_says").lstrip()]
    for kind, text in failure.notes:
        lines = text.splitlines() or [""]
        if kind == "warning":
            lines[0] = say("warning_note", text=lines[0])
        shown = lines if verbose else lines[:NOTE_LINES]
        for line in shown:
            if width(line) + len(indent) + 2 > WIDTH and line == line.lstrip():
                out += para(line, indent + "  ", indent + "  ")  # a sentence: wrapped
            else:
                out.append(f"{indent}  {line}")
        if len(shown) < len(lines):
            out.append(f"{indent}  " + say("more_lines", n=len(lines) - len(shown)))
    return out


def failure_text(failure):
    """A failure's message as the screen shows it: as the check wrote it, except an unwritten
    function's, which the tool says in the learner's language."""
    stub = failure.stub
    if stub and zh():
        return say("stub_text", function=stub[0], path=stub[1], line=stub[2])
    return failure.text


def heading(chapter):
    """'chapter4 · Chapter 4 — ...' (in Chinese: the Chinese guide's title)."""
    if zh():
        return chinese_title(chapter) or chapter_name(chapter)
    return f"{chapter.label} · {chapter.title}" if chapter.title else chapter.label


def _cmd(verb, chapter):
    return f"tools/workbook {verb} {chapter.number}"


def next_mine(chapter, course):
    """(the learner's next chapter after CHAPTER, [the chapters skipped on the way: compiled from
    the reference or a folder]); the first is None after the last chapter."""
    skipped, after = [], course.after(chapter.label)
    while after is not None and after.kind != "stub":
        skipped.append(after)
        after = course.after(after.label)
    return after, skipped


def skipped_lines(skipped):
    if not skipped:
        return []
    names = ("、" if zh() else ", ").join(chapter_name(c) for c in skipped)
    key = "skipped_one" if len(skipped) == 1 else "skipped_many"
    return para(say(key, names=names, number=skipped[0].number), "", "    ")


def next_chapter_lines(chapter, course):
    after, skipped = next_mine(chapter, course)
    if after is None:
        return [say("last_complete", name=chapter_name(chapter))] + skipped_lines(skipped)
    return ([say("complete_next", name=chapter_name(chapter), heading=heading(after))]
            + skipped_lines(skipped)
            + [say("read_then", guide=guide_of(after), check=_cmd('check', after))])


def warning_lines(warnings, verbose=False):
    if not warnings:
        return []
    out = [say("warnings", n=len(warnings))]
    for block in warnings if verbose else warnings[:3]:
        out += ["  " + l for l in block[:12]]
    if len(warnings) > 3 and not verbose:
        out.append(say("more_warnings", n=len(warnings) - 3))
    return out


def compile_error_screen(chapter, where, lines, verbose=False):
    out = [heading(chapter), say("no_compile_at", where=where) if where else say("no_compile")]
    shown = lines if verbose else lines[:ERROR_LINES]
    out += ["  " + l for l in shown]
    if len(shown) < len(lines):
        out.append(say("more_error_lines", n=len(lines) - len(shown)))
    out.append("")
    out += para(say("next_fix_error", where=where or say("line_named_above"),
                    check=_cmd('check', chapter), watch=_cmd('watch', chapter)))
    return out


def _words(text):
    """The content words of TEXT, lower case, a plural or possessive "s" aside."""
    return {re.sub(r"(?:'s|s'|s)$", "", w) for w in re.findall(r"[a-z_']{4,}", text.lower())}


def first_failure(outcome, chapter, mistake=None):
    """The failing check to show in full: a crash, then a wrong answer, then a stub (the code
    the learner wrote comes first), each group in the checks' source order. When the failures
    are those of a known MISTAKE, the check whose name says most of what the mistake breaks
    comes first (its hint is about that mistake, not about whatever check is first)."""
    failed = outcome.failed
    crashed = [c for c in failed if c.crashed]
    written = [c for c in failed if NOT_IMPLEMENTED not in c.output]
    if mistake and written and not crashed:
        words = _words(getattr(mistake, "english", mistake))
        return max(written, key=lambda c: len(_words(c.title) & words))  # first of the best
    return (crashed or written or failed)[0]


SIGNATURES = ROOT / "tools" / "mutants" / "signatures.json"
# The catalogue's mistakes in Chinese, by mutant name (kept beside the signatures, so a class
# handout, which has no catalogue, still names a mistake in Chinese).
MISTAKES_ZH = ROOT / "tools" / "mutants" / "mistakes.zh.json"


class Mistake(str):
    """A known mistake as the screen shows it (the learner's language), keeping its English:
    the checks' names it is matched with are English."""
    def __new__(cls, shown, english):
        obj = super().__new__(cls, shown)
        obj.english = english
        return obj


def mistake_words(name, english, path=MISTAKES_ZH):
    """The catalogued mistake NAME in the screen's language (ENGLISH when no translation)."""
    if not zh():
        return english
    import json
    try:
        return json.loads(Path(path).read_text(encoding="utf-8")).get(name) or english
    except (OSError, ValueError):
        return english


# The start of a failure that is only about a message's wording (tests/support/check.cpp).
WORDING_FAILURE = "the exception was thrown, but its message should name"


def known_mistake(chapter, outcome, path=SIGNATURES):
    """The catalogued mistake (tools/mutants/) whose failing checks are the learner's, or None:
    the checks it fails are the same as those failing now (at least 80 % in common), and none of
    the learner's failures is an unwritten function."""
    import json
    # A failure only of a message's wording (the message lacks a fact) says nothing about which
    # mistake was made: a banner never fires on wording alone.
    wording = {c.title for c in outcome.failed
               if c.failures and c.failures[0].text.startswith(WORDING_FAILURE)}
    failing = {c.title for c in outcome.failed} - wording
    said = {c.title: "\n".join(c.failures[0].text.splitlines()[:2])
            for c in outcome.failed if c.failures}
    if not failing or any(c.stub for c in outcome.failed):
        return None
    try:
        signatures = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    scored = []
    for name, sig in signatures.items():
        if sig.get("label") != chapter.label:
            continue
        theirs = set(sig.get("failing", [])) - {
            t for t, m in sig.get("messages", {}).items() if m.startswith(WORDING_FAILURE)}
        jaccard = len(theirs & failing) / len(theirs | failing) if theirs | failing else 0
        if jaccard >= 0.8:
            # Ties (two mistakes failing the same checks) are told apart by the messages.
            same = sum(said.get(t) == m for t, m in sig.get("messages", {}).items())
            english = sig.get("mistake", name)
            scored.append(((jaccard, same), Mistake(mistake_words(name, english), english)))
    if not scored:
        return None
    best = max(score for score, _ in scored)
    mistakes = list(dict.fromkeys(m for score, m in scored if score == best))
    # Two mistakes that fail the same checks: both are named.
    if len(mistakes) == 1:
        return mistakes[0]
    return Mistake(("；或" if zh() else "; or ").join(mistakes[:2]),
                   "; or ".join(m.english for m in mistakes[:2]))


def your_code_lines(check, chapter):
    """'  your code: wb::f, file:line' for the function CHECK declares (its tags), and the other
    functions it declares, if any."""
    declared = declared_functions(check, chapter)
    if not declared:
        return []
    function = failing_function(check, chapter) or declared[0]
    others = [f for f in declared if f != function]
    where = definition(function, chapter)
    out = [say("your_code", function=function,
               where=say("your_code_where", where=where) if where else "")]
    if others:
        out.append(say("also_calls", names=", ".join(f"wb::{f}" for f in others)))
    return out


def check_screen(chapter, course, outcome, warnings=(), verbose=False):
    """The lines of the one screen for CHAPTER's OUTCOME."""
    total, passed = len(outcome.checks), len(outcome.passed)
    out = [heading(chapter), say("score", passed=passed, total=total, bar=bar(passed, total))
           + (say("complete_mark") if total and passed == total else "")]
    if total == 0:
        return out + [say("no_checks_ran")]
    if not outcome.failed:
        out += warning_lines(warnings, verbose)
        return out + [""] + next_chapter_lines(chapter, course)

    mistake = known_mistake(chapter, outcome)
    first = first_failure(outcome, chapter, mistake)
    function = failing_function(first, chapter)
    out.append("")
    if mistake:
        out += para(say("likely_mistake", n=len(outcome.failed), mistake=mistake), "", "  ")
    # A stub's check is named by where it is in Chinese: its title is English, and the tool's
    # own line below says what to do.
    out.append(say("first_failing_stub" if first.stub else "first_failing", title=first.title,
                   where=f"{first.file}:{first.line}"))
    if not (first.stub and zh()):
        out.append(say("check_at", where=f"{first.file}:{first.line}"))
    if first.crashed:
        out.append("  " + crash_text(first))
    stub = first.stub
    if function and not stub:
        out += your_code_lines(first, chapter)
    failures = first.failures if verbose else first.failures[:1]
    for failure in failures:
        if not failure.stub:
            out += note_lines(failure, verbose)
        if failure.where and failure.where != f"{first.file}:{first.line}" and not stub:
            out.append(say("failed_at", where=failure.where))
        elif failure.notes and not failure.stub:
            out.append(say("what_failed"))
        for line in failure_text(failure).splitlines():
            # A check's hint is one long line: wrapped like the check's explanation above it.
            if line.startswith("hint: ") and width(line) + 4 > WIDTH:
                out += para(line, "    ", "          ")
            else:
                out.append("    " + line)
    more = len(first.failures) - len(failures)
    if more:
        out.append(say("more_assertions", n=more, s="s" * (more > 1)))

    others = [c for c in outcome.failed if c is not first]
    if others:
        out.append("")
        out.append(say("other_failing", n=len(others)))
        stubs, shown = {}, 0
        for c in others:
            s = c.stub
            if s and not verbose:
                stubs.setdefault(s[0], []).append(c)
                continue
            if verbose:
                out.append(f"  ✗ {c.title}")
                for f in c.failures:
                    out += note_lines(f, True, "      ")
                    out += ["      " + l for l in failure_text(f).splitlines()]
                if c.crashed:
                    out.append("      " + crash_text(c))
                continue
            shown += 1
            if shown > 12:
                continue
            reason = (say("crashed_short", signal=c.signal) if c.crashed else
                      (failure_text(c.failures[0]).splitlines() or [""])[0] if c.failures
                      else say("failed_short"))
            out.append(cut(f"  ✗ {c.title}: {reason}"))
        if shown > 12:
            out.append(say("more_checks", n=shown - 12))
        if stubs:
            names = ", ".join(f"wb::{n} ({len(cs)})" for n, cs in stubs.items())
            text = say("not_written", n=sum(len(v) for v in stubs.values()), names=names)
            out += para(text, "  ", "    ")

    out.append("")
    if stub:
        name, path, line = stub
        mine = any(str(p).endswith(path) for p in chapter.paths())
        header = declaring_header(name, chapter)
        if mine:
            out += para(say("next_write", path=path, line=line, function=name,
                            spec=say("spec_in", header=header) if header else "",
                            guide=guide_of(chapter)))
        else:
            owner = next((c for c in course.chapters if path.startswith(f"chapters/{c.folder}/")),
                         None)
            use = f"`tools/workbook use {owner.number} reference`" if owner else \
                "`tools/workbook use N reference`"
            out += para(say("next_earlier", function=name, path=path, line=line, use=use))
    else:
        _, hints = hints_for(first, chapter, mistake)
        header = declaring_header(function, chapter) if function else ""
        what = ((say("fix_function_spec", function=function, header=header) if header else
                 say("fix_function", function=function)) if function else
                say("fix_code", where=f"{first.file}:{first.line}"))
        out += para(say("next_fix", what=what)
                    + (say("next_fix_hints", command=_cmd('hint', chapter), n=len(hints))
                       if hints else ""))
    out.append(say("then_again", check=_cmd('check', chapter), watch=_cmd('watch', chapter)))
    out += warning_lines(warnings, verbose) and [""] + warning_lines(warnings, verbose)
    return out
