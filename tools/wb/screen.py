"""The one screen of `check` and `watch`: the score, the first failing check in full, a line per
other failing check, the next step."""

import re
from pathlib import Path

from .common import ROOT
from .hints import (crash_text, declared_functions, declaring_header, definition,
                    failing_function, hints_for)
from .results import NOT_IMPLEMENTED

WIDTH = 100
ERROR_LINES = 50   # a compile error longer than this is cut (--verbose shows it all)


def bar(done, total, width=30):
    filled = int(round(width * done / total)) if total else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


def cut(text, width=WIDTH):
    """One line of at most WIDTH characters (the indent kept)."""
    indent = text[:len(text) - len(text.lstrip())]
    text = indent + " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def para(text, indent="", more="      "):
    import textwrap
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=more,
                         break_on_hyphens=False, break_long_words=False)


NOTE_LINES = 8    # lines of one note of a check (INFO, WARN) on the screen; --verbose: all


def note_lines(failure, verbose=False, indent="  "):
    """What the check said about FAILURE (its INFO, UNSCOPED_INFO, CAPTURE and WARN texts), as
    screen lines: the check's explanation, shown before the raw values."""
    if not failure.notes:
        return []
    out = [f"{indent}the check says:"]
    for kind, text in failure.notes:
        lines = text.splitlines() or [""]
        if kind == "warning":
            lines[0] = "warning: " + lines[0]
        shown = lines if verbose else lines[:NOTE_LINES]
        for line in shown:
            if len(line) + len(indent) + 2 > WIDTH and line == line.lstrip():
                out += para(line, indent + "  ", indent + "  ")  # a sentence: wrapped
            else:
                out.append(f"{indent}  {line}")
        if len(shown) < len(lines):
            out.append(f"{indent}  … {len(lines) - len(shown)} more lines (--verbose)")
    return out


def heading(chapter):
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
    names = ", ".join(c.label for c in skipped)
    return para(f"  {names} {'is' if len(skipped) == 1 else 'are'} compiled from the reference "
                f"(`tools/workbook use {skipped[0].number} student` to work on "
                f"{'it' if len(skipped) == 1 else 'one'})", "", "    ")


def next_chapter_lines(chapter, course):
    after, skipped = next_mine(chapter, course)
    if after is None:
        return [f"{chapter.label} is complete: that was your last chapter. `tools/workbook "
                "status` shows the whole course."] + skipped_lines(skipped)
    return ([f"{chapter.label} is complete. Next: {heading(after)}"] + skipped_lines(skipped)
            + [f"  read {after.guide}, then `{_cmd('check', after)}` (or "
               "`tools/workbook watch`)"])


def warning_lines(warnings, verbose=False):
    if not warnings:
        return []
    out = [f"warnings in your code ({len(warnings)}):"]
    for block in warnings if verbose else warnings[:3]:
        out += ["  " + l for l in block[:12]]
    if len(warnings) > 3 and not verbose:
        out.append(f"  … {len(warnings) - 3} more warnings (--verbose)")
    return out


def compile_error_screen(chapter, where, lines, verbose=False):
    out = [heading(chapter), "does not compile. The first error"
           + (f", in your code at {where}:" if where else ":")]
    shown = lines if verbose else lines[:ERROR_LINES]
    out += ["  " + l for l in shown]
    if len(shown) < len(lines):
        out.append(f"  … {len(lines) - len(shown)} more lines of this error (--verbose for the "
                   "whole build log)")
    out.append("")
    out.append(f"next: fix {where or 'the line named above'} and save; then "
               f"`{_cmd('check', chapter)}` again (or `{_cmd('watch', chapter)}`)")
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
        words = _words(mistake)
        return max(written, key=lambda c: len(_words(c.title) & words))  # first of the best
    return (crashed or written or failed)[0]


SIGNATURES = ROOT / "tools" / "mutants" / "signatures.json"


def known_mistake(chapter, outcome, path=SIGNATURES):
    """The catalogued mistake (tools/mutants/) whose failing checks are the learner's, or None:
    the checks it fails are the same as those failing now (at least 80 % in common), and none of
    the learner's failures is an unwritten function."""
    import json
    failing = {c.title for c in outcome.failed}
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
        theirs = set(sig.get("failing", []))
        jaccard = len(theirs & failing) / len(theirs | failing) if theirs | failing else 0
        if jaccard >= 0.8:
            # Ties (two mistakes failing the same checks) are told apart by the messages.
            same = sum(said.get(t) == m for t, m in sig.get("messages", {}).items())
            scored.append(((jaccard, same), sig.get("mistake", name)))
    if not scored:
        return None
    best = max(score for score, _ in scored)
    mistakes = list(dict.fromkeys(m for score, m in scored if score == best))
    # Two mistakes that fail the same checks: both are named.
    return mistakes[0] if len(mistakes) == 1 else "; or ".join(mistakes[:2])


def your_code_lines(check, chapter):
    """'  your code: wb::f, file:line' for the function CHECK declares (its tags), and the other
    functions it declares, if any."""
    declared = declared_functions(check, chapter)
    if not declared:
        return []
    function, others = declared[0], declared[1:]
    where = definition(function, chapter)
    out = [f"  your code: wb::{function}" + (f", {where}" if where else "")]
    if others:
        out.append("    (the check also calls " + ", ".join(f"wb::{f}" for f in others) + ")")
    return out


def check_screen(chapter, course, outcome, warnings=(), verbose=False):
    """The lines of the one screen for CHAPTER's OUTCOME."""
    total, passed = len(outcome.checks), len(outcome.passed)
    out = [heading(chapter), f"score: {passed}/{total} checks pass  {bar(passed, total)}"
           + ("  complete" if total and passed == total else "")]
    if total == 0:
        return out + ["no checks ran: is Catch2 installed (tools/setup.sh)?"]
    if not outcome.failed:
        out += warning_lines(warnings, verbose)
        return out + [""] + next_chapter_lines(chapter, course)

    mistake = known_mistake(chapter, outcome)
    first = first_failure(outcome, chapter, mistake)
    function = failing_function(first, chapter)
    out.append("")
    if mistake:
        out += para(f"likely mistake (these {len(outcome.failed)} checks fail together for a "
                    f"known one): {mistake}", "", "  ")
    out.append(f"first failing check: {first.title}")
    out.append(f"  check: {first.file}:{first.line}")
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
            out.append(f"  failed at {failure.where}:")
        elif failure.notes and not failure.stub:
            out.append("  what failed:")
        out += ["    " + l for l in failure.text.splitlines()]
    more = len(first.failures) - len(failures)
    if more:
        out.append(f"  (and {more} more failed assertion{'s' * (more > 1)} in this check: "
                   "--verbose shows them)")

    others = [c for c in outcome.failed if c is not first]
    if others:
        out.append("")
        out.append(f"other failing checks ({len(others)}):")
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
                    out += ["      " + l for l in f.text.splitlines()]
                if c.crashed:
                    out.append("      " + crash_text(c))
                continue
            shown += 1
            if shown > 12:
                continue
            reason = ("crashed (" + c.signal + ")" if c.crashed else
                      (c.failures[0].text.splitlines() or [""])[0] if c.failures else "failed")
            out.append(cut(f"  ✗ {c.title}: {reason}"))
        if shown > 12:
            out.append(f"  … {shown - 12} more (--verbose)")
        if stubs:
            names = ", ".join(f"wb::{n} ({len(cs)})" for n, cs in stubs.items())
            text = f"not written yet, {sum(len(v) for v in stubs.values())} checks: {names}"
            out += para(text, "  ", "    ")

    out.append("")
    if stub:
        name, path, line = stub
        mine = any(str(p).endswith(path) for p in chapter.paths())
        header = declaring_header(name, chapter)
        if mine:
            out += para(f"next: open {path}:{line} and write wb::{name}"
                        + (f" (its spec is its comment in {header};" if header else " (")
                        + f" the task is in {chapter.guide})")
        else:
            owner = next((c for c in course.chapters if path.startswith(f"chapters/{c.folder}/")),
                         None)
            use = f"`tools/workbook use {owner.number} reference`" if owner else \
                "`tools/workbook use N reference`"
            out += para(f"next: this check calls wb::{name} of an earlier chapter: write it in "
                        f"{path}:{line}, or build that chapter from the reference ({use})")
    else:
        _, hints = hints_for(first, chapter, mistake)
        header = declaring_header(function, chapter) if function else ""
        what = (f"wb::{function}" + (f" (its spec is its comment in {header})" if header else "")
                if function else f"the code that check calls ({first.file}:{first.line})")
        out += para(f"next: fix {what} and save"
                    + (f"; `{_cmd('hint', chapter)}` for a hint ({len(hints)} available)"
                       if hints else ""))
    out.append(f"  then `{_cmd('check', chapter)}` again, or `{_cmd('watch', chapter)}` to "
               "check on every save")
    out += warning_lines(warnings, verbose) and [""] + warning_lines(warnings, verbose)
    return out
