"""The learner's verbs: check, watch, hint, next, status, use."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .common import ROOT, WorkbookError, configure, progress_bar, require_build
from .course import load_course
from .hints import definition, hints_for
from .i18n import (LANGUAGES, chapter_name, guide_of, language, pad, say, source_word,
                   use_language, width)
from .results import (Outcome, build_target, complete, first_error, last_edit, load_outcome,
                      own_warnings, progress_file, read_progress, record_complete,
                      record_progress, run_checks, save_outcome, syntax_warnings,
                      write_progress)
from .screen import (ERROR_LINES, cut, failure_text, para, check_screen, compile_error_screen, first_failure, heading,
                     known_mistake, next_chapter_lines, next_mine, note_lines, skipped_lines,
                     your_code_lines)



def learner_folders(chapter):
    """The folders whose files are the learner's own for CHAPTER (warnings, first error)."""
    folders = {chapter.source, f"chapters/{chapter.folder}"}
    return sorted(f for f in folders if f)


def check_chapter(build_dir, course, chapter, verbose=False, jobs=2):
    """Builds CHAPTER's checks, runs them, keeps the result; returns (outcome, screen lines)."""
    started = time.time()
    ok, log = build_target(build_dir, chapter.target, jobs)
    folders = learner_folders(chapter)
    previous = load_outcome(build_dir, chapter.label)
    if not ok:
        where, lines = first_error(log, folders)
        outcome = Outcome([], compiled=False, build_log=log[-20000:], time=started)
        save_outcome(build_dir, chapter.label, outcome)
        record_progress(chapter, outcome, progress_file())
        screen = compile_error_screen(chapter, where, lines, verbose)
        if verbose:
            screen += ["", "the whole build log:"] + log.splitlines()
        return outcome, screen
    warnings = own_warnings(log, folders)
    sources = [p for p in chapter.paths() if p.suffix == ".cpp"]
    if not any(f"/{chapter.folder}/" in l and "Building CXX" in l for l in log.splitlines()):
        # Not compiled by this build: the last warnings still hold, unless the files changed
        # since (another build, e.g. ctest's, compiled them): then ask the compiler again.
        if previous is not None and previous.compiled and previous.time >= last_edit(chapter):
            warnings = previous.warnings or []
        else:
            warnings = syntax_warnings(build_dir, sources, folders)
    outcome = run_checks(build_dir, chapter.label, jobs)
    outcome.time = started
    outcome.warnings = warnings
    save_outcome(build_dir, chapter.label, outcome)
    record_progress(chapter, outcome, progress_file(), shown_first(chapter, outcome))
    return outcome, check_screen(chapter, course, outcome, warnings, verbose)


def shown_first(chapter, outcome):
    """The failing check that `check` shows first (None when none fails)."""
    if not outcome.failed:
        return None
    return first_failure(outcome, chapter, known_mistake(chapter, outcome))


def cmd_record(args):
    """What a plain `ctest -L chapterN` runs last: the chapter's checks once more, through the
    XML reporter, kept in the progress file exactly as `check` keeps them (so `status` and
    `next` know what ctest saw). One line, and never a failure of its own: the checks that
    ctest ran already said what failed. A chapter compiled from the reference (or an override
    folder) is not the learner's code: nothing is run or kept."""
    build_dir = require_build(args.build_dir)
    chapter = load_course(build_dir, refresh=False).find(args.chapter)
    if chapter.kind != "stub":
        print(say("record_not_mine", label=chapter.label, name=chapter_name(chapter),
                  kind=source_word(chapter.kind)))
        return 0
    outcome = run_checks(build_dir, chapter.label)
    outcome.time = time.time()
    # The progress file only: the build folder's saved outcome is check's, with the warnings
    # of the build it ran (ctest's build shows none), so check still asks the compiler.
    record_progress(chapter, outcome, progress_file(), shown_first(chapter, outcome))
    n, ok = len(outcome.checks), len(outcome.passed)
    print(say("record_kept", label=chapter.label, name=chapter_name(chapter), passed=ok, total=n,
              complete=say("record_complete") if complete(outcome) else ""))
    return 0


def show(lines):
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def cmd_check(args):
    build_dir = require_build(args.build_dir)
    course = load_course(build_dir)
    if args.chapter.lower() != "all":
        chapter = course.find(args.chapter)
        outcome, screen = check_chapter(build_dir, course, chapter, args.verbose, args.jobs)
        show(screen)
        return 0 if outcome.compiled and outcome.checks and not outcome.failed else 1
    # Every chapter: one line each, then the first chapter that fails.
    first_bad, total, passed = None, 0, 0
    for chapter in course.chapters:
        outcome, screen = check_chapter(build_dir, course, chapter, False, args.jobs)
        n, ok = len(outcome.checks), len(outcome.passed)
        total, passed = total + n, passed + ok
        first = shown_first(chapter, outcome)
        note = (say("all_no_compile") if not outcome.compiled else
                say("all_complete") if complete(outcome) else say("all_first", title=first.title)
                if first else say("all_no_checks"))
        print(cut(f"{pad(chapter_name(chapter), 9)} {pad(source_word(chapter.kind), 10)} "
                  f"{ok:3d}/{n:<3d} {note}", 110), flush=True)
        if first_bad is None and not complete(outcome):
            first_bad = chapter
    print(say("all_total", passed=passed, total=total, bar=progress_bar(passed, total)))
    if first_bad:
        print(say("all_next", number=first_bad.number))
    return 0 if first_bad is None else 1


def wait_for_save(paths, since, interval=0.3):
    """Returns the first of PATHS saved after SINCE (polling: no extra module needed)."""
    while True:
        for path in paths:
            try:
                if path.stat().st_mtime > since:
                    return path
            except OSError:
                continue
        time.sleep(interval)


def cmd_watch(args):
    build_dir = require_build(args.build_dir)
    course = load_course(build_dir)
    chapter = course.find(args.chapter) if args.chapter else current_chapter(course, build_dir)
    if chapter is not None and chapter.kind != "stub":
        mine, skipped = next_mine(chapter, course)
        show(skipped_lines([chapter] + skipped))
        chapter = mine
    if chapter is None:
        print(say("watch_nothing"))
        return 0
    tty = sys.stdout.isatty()
    reason = say("watch_start")
    try:
        while True:
            since = time.time()
            if tty:
                sys.stdout.write("\033[H\033[2J")
            print(say("watch_head", time=time.strftime('%H:%M:%S'), number=chapter.number,
                      name=chapter_name(chapter), reason=reason), flush=True)
            outcome, screen = check_chapter(build_dir, course, chapter, False, args.jobs)
            show(screen)
            if complete(outcome):
                following, _ = next_mine(chapter, course)  # the screen named the skipped ones
                if following is None:
                    print(say("watch_all_done"))
                    return 0
                chapter = following
                print(say("watch_next", label=chapter.label, name=chapter_name(chapter),
                          heading=heading(chapter)), flush=True)
            else:
                names = ", ".join(p.name for p in chapter.paths() if p.suffix == ".cpp")
                print(say("watch_files", names=names), flush=True)
            saved = wait_for_save(chapter.paths(), since)
            time.sleep(0.2)  # an editor may write a file in several steps
            reason = say("watch_saved", file=saved.name)
    except KeyboardInterrupt:
        print(say("watch_stopped"))
        return 0


def stale(chapter, record):
    """Why a recorded result no longer describes the learner's code, or ''."""
    if record.get("kind") != chapter.kind:
        return say("stale_recorded", kind=source_word(record.get("kind")))
    if last_edit(chapter) > record.get("time", 0):
        return say("stale_edited")
    return ""


def current_chapter(course, build_dir):
    """The learner's chapter: the first of theirs (a stub) not yet recorded as passing."""
    progress = read_progress(progress_file()).get("chapters", {})
    for chapter in course.chapters:
        if chapter.kind != "stub":
            continue
        record = progress.get(chapter.label)
        if not record or stale(chapter, record) or not record_complete(record):
            return chapter
    return None


def cmd_next(args):
    build_dir = require_build(args.build_dir)
    course = load_course(build_dir)
    chapter = current_chapter(course, build_dir)
    if chapter is None:
        print(say("next_all_done"))
        return 0
    print(say("next_head", heading=heading(chapter)))
    print(say("next_guide", guide=guide_of(chapter)))
    print(say("next_files", files=", ".join(f for f in chapter.files)))
    outcome = load_outcome(build_dir, chapter.label)
    if outcome and outcome.compiled and outcome.failed:
        first = first_failure(outcome, chapter, known_mistake(chapter, outcome))
        stub = first.stub
        if stub:
            print(say("next_first_function", function=stub[0], path=stub[1], line=stub[2]))
        else:
            print(say("next_first_check", title=first.title))
    print(say("next_run", number=chapter.number))
    return 0


def check_counts(build_dir):
    """{label: number of checks} as ctest knows them (no check is run; the build and
    keep-progress steps left out)."""
    result = subprocess.run(["ctest", "--test-dir", str(build_dir), "--show-only=json-v1"],
                            cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    counts = {}
    try:
        for test in json.loads(result.stdout).get("tests", []):
            props = {p.get("name") for p in test.get("properties", [])}
            if "FIXTURES_SETUP" in props or "FIXTURES_CLEANUP" in props:
                continue  # the build step and the keep-progress step: no checks
            if test.get("name", "").endswith("(first build)"):
                continue  # not built yet: the number of checks is not known
            label = test.get("name", "").split(":", 1)[0].strip()
            counts[label] = counts.get(label, 0) + 1
    except ValueError:
        pass
    return counts


def cmd_status(args):
    build_dir = require_build(args.build_dir)
    course = load_course(build_dir)
    counts = check_counts(build_dir)
    progress = read_progress(progress_file()).get("chapters", {})
    done = total = completed = mine = 0
    print(say("status_head", chapter=pad(say("col_chapter"), 9), source=pad(say("col_source"), 10)))
    for chapter in course.chapters:
        source = source_word(chapter.kind)
        record = progress.get(chapter.label)
        n = counts.get(chapter.label, record.get("total", 0) if record else 0)
        why = stale(chapter, record) if record else ""
        if not record:
            text = say("not_checked_n" if n else "not_checked", n=n, number=chapter.number)
            passed = 0
        elif not record.get("compiled", True):
            text, passed = say("status_no_compile"), 0
        else:
            passed = record.get("passed", 0)
            n = max(n, record.get("total", 0))
            text = say("status_passed", passed=passed, n=n)
            if why:
                text += say("stale", why=why)
            if record_complete(record) and passed == n:
                text += say("status_complete")
            elif record.get("first_failure"):
                room = max(20, 100 - width(text))
                first = record["first_failure"]
                if len(first) > room:  # cut between words
                    first = first[:room - 1].rsplit(" ", 1)[0] + " …"
                text += say("status_first", title=first)
        print(f"{pad(chapter_name(chapter), 9)} {pad(source, 10)} {text}")
        if chapter.kind == "stub":
            mine += 1
            counted = 0 if why else passed
            done += counted
            completed += bool(n) and counted == n and record_complete(record)
        total += n if chapter.kind == "stub" else 0
    pct = 100 * done / total if total else 0
    print(say("course_line", bar=progress_bar(done, total), pct=pct, done=done, total=total,
              complete=completed, mine=mine)
          + (say("course_others", n=len(course.chapters) - mine)
             if mine < len(course.chapters) else ""))
    if not mine:
        print(say("all_reference"))
    else:
        chapter = current_chapter(course, build_dir)
        if chapter:
            print(say("status_next", heading=heading(chapter), number=chapter.number,
                      guide=guide_of(chapter)))
    return 0


def hint_key(check):
    """What the hints seen are kept under: the check, and whether it stopped at an unwritten
    function (once it is written, its hints start again from the first)."""
    return check.title + (" (not written)" if check.stub else "")


def hints_shown(chapter, check):
    """How many hints of CHECK (of CHAPTER) the learner has seen: kept in the progress file."""
    state = read_progress(progress_file()).get("hints", {}).get(chapter.label, {})
    value = state.get(hint_key(check), 0)
    return value if isinstance(value, int) else 0


def keep_hints_shown(chapter, check, n):
    data = read_progress(progress_file())
    data.setdefault("hints", {}).setdefault(chapter.label, {})[hint_key(check)] = n
    write_progress(data, progress_file())


def cmd_hint(args):
    if args.n is not None and args.n < 1:
        raise WorkbookError(say("hint_number", n=args.n))
    build_dir = require_build(args.build_dir)
    course = load_course(build_dir)
    chapter = course.find(args.chapter)
    outcome = load_outcome(build_dir, chapter.label)
    if args.rerun or outcome is None or outcome.time < last_edit(chapter) or (
            outcome.compiled and not outcome.checks):
        print(say("running_checks", name=chapter_name(chapter)), flush=True)
        outcome, screen = check_chapter(build_dir, course, chapter, False, 2)
    if not outcome.compiled:
        where, lines = first_error(outcome.build_log, learner_folders(chapter))
        show(compile_error_screen(chapter, where, lines)[:20])
        return 0
    if not outcome.checks:
        raise WorkbookError(f"{chapter.label} has no checks in {build_dir}")
    if not outcome.failed:
        show([say("hint_complete", name=chapter_name(chapter), n=len(outcome.checks))]
             + next_chapter_lines(chapter, course))
        return 0
    mistake = known_mistake(chapter, outcome)
    check = first_failure(outcome, chapter, mistake)
    function, hints = hints_for(check, chapter, mistake)
    where = definition(function, chapter) if function else ""
    show(para(say("hint_head_stub" if check.stub else "hint_head", name=chapter_name(chapter),
                   failed=len(outcome.failed), total=len(outcome.checks), title=check.title,
                   where=f"{check.file}:{check.line}"), "", "  "))
    if check.stub:
        show([say("your_code", function=function,
                  where=say("your_code_where", where=where) if where else "")])
    elif function:
        show(your_code_lines(check, chapter))
    if check.crashed:
        print(say("crashed_line", signal=check.signal))
    elif check.failures:
        if not check.stub:
            show(note_lines(check.failures[0]))
        for line in failure_text(check.failures[0]).splitlines():
            if not line.startswith("hint: "):
                print(f"    {line}")
    if not hints:
        print(say("no_hints", guide=guide_of(chapter)))
        return 0
    shown = hints_shown(chapter, check)
    n = args.n if args.n is not None else shown + 1
    if n > len(hints):
        print(say("no_more_hints", n=len(hints), number=chapter.number))
        return 0
    print(say("hint_n", n=n, total=len(hints)))
    own = {f.hint for f in check.failures}
    # The check's own hint exactly as the check wrote it; the guide's words wrapped.
    print(hints[n - 1] if hints[n - 1] in own else "\n".join(
        l for part in hints[n - 1].split("\n") for l in (para(part, "", "") or [""])))
    if n < len(hints):
        print(say("hint_again", number=chapter.number, n=n + 1))
    keep_hints_shown(chapter, check, max(shown, n))
    return 0


def dependent_targets(build_dir, chapters):
    """What to rebuild after CHAPTERS changed source: each one's library and test program, and
    every program already built that links one of them (found in Ninja's build graph: a later
    chapter's checks, the minigpt command ...). Nothing that was never built is built now."""
    build_dir = Path(build_dir)
    wanted = [t for c in chapters for t in (f"wb_{c.label}", c.target) if t]
    if not (build_dir / "build.ninja").exists():
        return wanted  # another generator: the chapters' own targets
    # A chapter taken from a handout's prebuilt/ library is an imported target: nothing to build.
    wanted = [t for t in wanted if subprocess.run(
        ["ninja", "-C", str(build_dir), "-t", "query", t], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0]
    seen, todo, found = set(), [f"libwb_{c.label}.a" for c in chapters], []
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        result = subprocess.run(["ninja", "-C", str(build_dir), "-t", "query", node], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        outputs = result.stdout.split("outputs:", 1)[1].split() if "outputs:" in \
            result.stdout else []
        for out in outputs:
            path = build_dir / out
            if out.endswith(".a"):
                todo.append(out)
            elif not Path(out).is_absolute() and "." not in path.name and path.is_file() and \
                    os.access(path, os.X_OK):
                found.append(path.name)  # a program built before (the target is its name)
    return list(dict.fromkeys(wanted + found))


def cmd_use(args):
    build_dir = require_build(args.build_dir)
    course = load_course(build_dir)
    targets = course.chapters if args.chapter.lower() == "all" else [course.find(args.chapter)]
    value = course.reference_value({c.label: args.kind for c in targets})
    before = {c.label: c.kind for c in course.chapters}
    configure(build_dir, WB_REFERENCE=value)
    course = load_course(build_dir)
    print(f"WB_REFERENCE={value}")
    for chapter in course.chapters:
        print(f"  {pad(chapter_name(chapter), 9)} {source_word(chapter.kind)}")
    changed = [c for c in course.chapters if before.get(c.label) != c.kind] or \
        [c for c in course.chapters if c.label in {t.label for t in targets}]
    wanted = dependent_targets(build_dir, changed)
    started = time.time()
    print(say("use_building", targets=", ".join(wanted)), flush=True)
    ok, log = build_target(build_dir, wanted, args.jobs)
    if not ok:
        where, lines = first_error(log, sorted({f for c in changed
                                                for f in learner_folders(c)}))
        show([say("no_compile_at", where=where) if where else say("no_compile")]
             + ["  " + l for l in lines[:ERROR_LINES]])
        return 1
    print(say("use_rebuilt", names=", ".join(chapter_name(c) for c in changed), build=build_dir,
              seconds=time.time() - started))
    return 0


def cmd_lang(args):
    """`workbook lang [zh|en]`: the language of the screens, kept in the progress file."""
    path = progress_file()
    if args.language:
        data = read_progress(path)
        data["lang"] = args.language
        write_progress(data, path)
        use_language(args.language)
        print(say("lang_now", name=LANGUAGES[args.language], why=say("lang_kept", path=path)))
        return 0
    chosen = read_progress(path).get("lang")
    print(say("lang_now", name=LANGUAGES[language()],
              why=say("lang_kept", path=path) if chosen in LANGUAGES else say("lang_locale")))
    return 0
