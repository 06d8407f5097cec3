"""The instructor's verbs: verify-stubs, mutants, guides, grade."""

import json
import os
import re
import shutil
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from .common import MINIGPT_DIR, ROOT, WorkbookError, build, configure, progress_bar, run
from .course import load_course
from .guidecheck import check_pair, normalise_fence, normalise_formula
from .cppscan import stub_functions
from .ladders import (hint_file, idea_headings, key_line_leaks, key_lines, ladder_problems,
                      load_ladders)
from .results import (NOT_IMPLEMENTED, Outcome, build_target, first_error, relative, run_checks,
                      save_outcome, short_name)
from .learner import check_counts


def cmd_verify_stubs(args):
    """Chapter by chapter: every check fails on the stub (with the not-implemented message,
    the other chapters on the reference) and passes on the reference."""
    build_dir = Path(args.build_dir)
    configure(build_dir, WB_REFERENCE="all", **{"WB_IMPL_DIR_*": None})
    course = load_course(build_dir)
    labels = [course.find(c).label for c in args.only] if args.only else course.labels

    def build_checks(chosen):
        # Only the check programs of CHOSEN and what they link: a chapter on its stub changes
        # no other chapter's run here, and the programs beside the checks are not run at all.
        build(build_dir, [course.get(label).target for label in chosen])
    build_checks(labels)
    problems = 0
    reference = {label: run_checks(build_dir, label) for label in labels}
    for label in labels:
        others = ";".join(l for l in course.labels if l != label)
        configure(build_dir, WB_REFERENCE=others or "none")
        build_checks([label])
        stub = run_checks(build_dir, label)
        ref = reference[label]
        honest = [c for c in stub.failed if NOT_IMPLEMENTED in c.output]
        bad = []
        if not ref.checks:
            bad.append("no checks")
        if ref.failed:
            bad.append(f"{len(ref.failed)} fail on the reference: "
                       + ", ".join(c.name for c in ref.failed[:3]))
        if stub.passed:
            bad.append(f"{len(stub.passed)} pass on the stub: "
                       + ", ".join(c.name for c in stub.passed[:3]))
        silent = [c for c in stub.failed if c not in honest]
        if silent:
            bad.append(f"{len(silent)} fail without the not-implemented message: "
                       + ", ".join(c.name for c in silent[:3]))
        verdict = "OK" if not bad else "PROBLEM: " + "; ".join(bad)
        problems += bool(bad)
        print(f"{label:<9} {len(ref.checks):3d} checks  reference {len(ref.passed):3d} pass  "
              f"stub {len(stub.failed):3d} fail ({len(honest)} not implemented)  {verdict}",
              flush=True)
    configure(build_dir, WB_REFERENCE="all")
    print("all chapters honest" if not problems else f"{problems} chapter(s) with problems")
    return 1 if problems else 0


@dataclass
class Mutant:
    name: str
    folder: str
    file: str = ""
    mistake: str = ""
    find: str = ""
    replace: str = ""
    function: str = ""   # the function the edit is in (optional: else read from the file)


def parse_catalogue(path):
    """Reads one tools/mutants/<folder>.txt file (format in tools/mutants/README.md)."""
    mutants, current, block = [], None, None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        where = f"{path.relative_to(ROOT)}:{number}"
        if block is not None:
            if line.strip() == "end" and block == "replace":
                mutants.append(current)
                current, block = None, None
            elif line.strip() == "replace:" and block == "find":
                block = "replace"
            else:
                setattr(current, block, getattr(current, block) + line + "\n")
            continue
        if not line.strip() or line.startswith("#"):
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "mutant":
            if current is not None:
                raise WorkbookError(f"{where}: mutant '{current.name}' has no find/replace/end")
            current = Mutant(value, path.stem)
        elif current is None:
            raise WorkbookError(f"{where}: expected 'mutant: NAME'")
        elif key in ("file", "mistake", "function"):
            setattr(current, key, value)
        elif key == "find":
            block = "find"
        else:
            raise WorkbookError(f"{where}: unknown key '{key}'")
    if current is not None or block is not None:
        raise WorkbookError(f"{path.relative_to(ROOT)}: the last mutant is not closed by 'end'")
    for m in mutants:
        if not (m.file and m.mistake and m.find):
            raise WorkbookError(f"{path.relative_to(ROOT)}: mutant '{m.name}' needs file, "
                                "mistake and find")
    return mutants


def first_lines(check):
    """What tells two mistakes with the same failing checks apart: the first two lines of the
    check's first failure (which elements differ, and their values)."""
    return "\n".join(check.failures[0].text.splitlines()[:2]) if check.failures else ""


def write_signatures(path, signatures, labels):
    """Keeps, for every caught mutant, the checks it fails: the chapters run now replace their
    entries, the others' stay."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        old = {}
    kept = {k: v for k, v in old.items() if v.get("label") not in labels}
    kept.update(signatures)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dict(sorted(kept.items())), indent=1, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def enclosing_function(text, index):
    """The name of the C++ function whose body holds TEXT[index:], or ''."""
    from .cppscan import DEFINITION, NOT_FUNCTIONS, blank_comments
    # Comments blanked in place (same length), so INDEX still points at the same code.
    code = blank_comments(text)
    code = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                  code, flags=re.M)
    best, pos = "", 0
    while True:
        m = DEFINITION.search(code, pos)
        if not m or m.start() > index:
            return best
        start, depth, i = m.end(), 1, m.end()
        while i < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        if m.group(1) not in NOT_FUNCTIONS and start <= index < i:
            best = m.group(1)   # the innermost definition that holds it (a lambda's is a body)
            pos = start
        else:
            pos = i if m.group(1) not in NOT_FUNCTIONS else start


def mutated_function(mutant, text):
    """The function a catalogued MUTANT changes in TEXT (its reference file); outside any
    function (a constant of the file), the name the edit defines."""
    found = mutant.function or enclosing_function(text, text.index(mutant.find))
    if not found:
        defined = re.search(r"(\w+)\s*(?:=|\{|;)", mutant.find)
        found = defined.group(1) if defined else ""
    return found


def callers(helper, text, exported):
    """The functions of EXPORTED whose bodies in TEXT call or read HELPER (a function or a
    constant of the file; directly or through other helpers): who its mistake belongs to."""
    from .cppscan import function_definitions
    bodies = {}
    for name, _, body in function_definitions(text):  # overloads: one body of them all
        bodies[name] = bodies.get(name, "") + " " + " ".join(body)
    found, todo = set(), [helper]
    while todo:
        name = todo.pop()
        for other, body in bodies.items():
            if other not in found and other != name and name and \
                    re.search(rf"\b{re.escape(name)}\b", body):
                found.add(other)
                todo.append(other)
    return [f for f in exported if f in found]


def blame_line(chapter, outcome):
    """(function named on `your code:`, the checks' first failure) as `check` shows them."""
    from .hints import failing_function
    from .screen import first_failure, known_mistake
    first = first_failure(outcome, chapter, known_mistake(chapter, outcome))
    return (failing_function(first, chapter) if not first.stub else None), first


TEST_CASE = re.compile(r'\bTEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)(?:,\s*((?:"(?:[^"\\]|\\.)*"\s*)+))?\)')


def declared_checks(folder):
    """{title: (file, line, [tags])} of the TEST_CASEs in tests/FOLDER/*.cpp."""
    found = {}
    for path in sorted((ROOT / "tests" / folder).glob("*.cpp")):
        text = path.read_text(encoding="utf-8")
        for m in TEST_CASE.finditer(text):
            title = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
            tags = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            found[title] = (str(path.relative_to(ROOT)), text.count("\n", 0, m.start()) + 1,
                            re.findall(r"\[([^\]]+)\]", tags))
    return found


def blame_from_signatures(catalogue, course, wanted):
    """The blame survey without compiling: each catalogued mutant's failing checks as the last
    `mutants --signatures` recorded them (tools/mutants/signatures.json), their tags read from
    the checks' sources, and the screen's choice of check and function made on them. A quick
    estimate over the whole catalogue; the compiled survey is `mutants --blame`."""
    from .hints import failing_function, header_functions
    from .results import Check, Failure, Outcome
    from .screen import SIGNATURES, first_failure, known_mistake
    signatures = json.loads(SIGNATURES.read_text(encoding="utf-8"))
    named = total = 0
    for label in course.labels:
        if label not in wanted:
            continue
        chapter = course.get(label)
        checks = declared_checks(chapter.folder)
        exported = header_functions(chapter)
        for m in (m for m in catalogue if m.folder == chapter.folder):
            sig = signatures.get(m.name)
            if not sig:
                print(f"NO SIGNATURE {label:<9} {m.name}")
                continue
            failed = []
            for title in sig.get("failing", []):
                file, line, tags = checks.get(title, ("", 0, []))
                text = sig.get("messages", {}).get(title, "")
                # Where the assertion failed, when the run recorded it (else unknown).
                at_file, _, at_line = sig.get("at", {}).get(title, "").rpartition(":")
                failure = Failure(at_file, int(at_line or 0), text)
                failed.append(Check(f"{label}: {title}", False, [failure], file, line, tags=tags))
            failed.sort(key=lambda c: (c.file, c.line))
            outcome = Outcome(failed)
            first = first_failure(outcome, chapter, known_mistake(chapter, outcome))
            blamed = failing_function(first, chapter)
            text = (ROOT / "solutions" / chapter.folder / m.file).read_text(encoding="utf-8")
            changed = mutated_function(m, text)
            owners = [changed] if changed in exported else callers(changed, text, exported) or \
                [changed]
            hit = blamed in owners
            total += 1
            named += hit
            print(f"{'NAMED ' if hit else 'MISSED'} {label:<9} {m.name:<40} changed wb::{changed}"
                  + (f" (read by {', '.join(owners)})" if owners != [changed] else "")
                  + f", your code: {'wb::' + blamed if blamed else '(none)'}")
    share = 100 * named / total if total else 0
    print(f"your code: names the changed function for {named}/{total} catalogued mutants "
          f"({share:.0f}%; from the recorded signatures, nothing compiled)")
    return 0


def cmd_mutants(args):
    build_dir = Path(args.build_dir)
    catalogue = []
    for path in sorted((ROOT / "tools" / "mutants").glob("*.txt")):
        catalogue += parse_catalogue(path)
    names = [m.name for m in catalogue]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise WorkbookError(f"duplicate mutant names: {', '.join(sorted(dupes))}")
    if args.list:
        for m in catalogue:
            print(f"{m.folder:<14} {m.name:<32} {m.mistake}")
        return 0
    if args.from_signatures:
        from .course import any_course
        course = any_course(build_dir)
        if course is None:
            raise WorkbookError("no configured build to read the chapters from: cmake --preset "
                                "solutions first (or pass --build-dir)")
        wanted = {course.find(c).label for c in args.only} if args.only else set(course.labels)
        return blame_from_signatures(catalogue, course, wanted)

    if not any((ROOT / "solutions").glob("*/*.cpp")):
        raise WorkbookError("the mistakes are edits of the reference sources (solutions/), which "
                            "this tree does not have (a class handout?)")
    configure(build_dir, WB_REFERENCE="all", **{"WB_IMPL_DIR_*": None})
    course = load_course(build_dir)
    labels = course.labels
    wanted = {course.find(c).label for c in args.only} if args.only else set(labels)
    scratch = build_dir / "mutant-src"
    counts = {"CAUGHT": 0, "SURVIVED": 0, "BROKEN": 0}
    signatures = {}  # mutant: the checks it fails (for `check` to recognise a known mistake)
    blame = {"named": 0, "caught": 0}
    sample = None
    if args.sample:
        import random
        rng = random.Random(args.seed)
        sample = set()
        for folder in dict.fromkeys(m.folder for m in catalogue):
            mine = [m.name for m in catalogue if m.folder == folder]
            sample.update(rng.sample(mine, min(args.sample, len(mine))))
    for label in labels:
        folder = course.get(label).folder
        mutants = [m for m in catalogue if m.folder == folder and (sample is None or m.name in sample)]
        if label not in wanted or not mutants:
            continue
        work = scratch / folder
        shutil.rmtree(work, ignore_errors=True)
        # Fresh time stamps (shutil.copy, not copytree's copy2): objects left in the build folder
        # by an earlier run's last mutant are newer than the reference's own dates, and would
        # otherwise be linked as if they were this copy.
        shutil.copytree(ROOT / "solutions" / folder, work, copy_function=shutil.copy)
        configure(build_dir, **{f"WB_IMPL_DIR_{label}": work.resolve()})
        reference = {path.name: path.read_text()
                     for path in sorted((ROOT / "solutions" / folder).glob("*.cpp"))}
        for m in mutants:
            start = time.time()
            if m.file not in reference:
                raise WorkbookError(f"mutant {m.name}: no file solutions/{folder}/{m.file}")
            text = reference[m.file]
            if text.count(m.find) != 1:
                raise WorkbookError(
                    f"mutant {m.name}: its find text occurs {text.count(m.find)} times in "
                    f"solutions/{folder}/{m.file} (must be exactly once); update the catalogue")
            # Rewrite only the files whose text changes (the previous mutant's file goes back to
            # the reference, this mutant's file gets its mistake): a rewritten file gets a new
            # time stamp, so the build recompiles exactly those and nothing stale survives.
            for name, wanted_text in reference.items():
                if name == m.file:
                    wanted_text = text.replace(m.find, m.replace)
                if (work / name).read_text() != wanted_text:
                    (work / name).write_text(wanted_text)
            built = run(["cmake", "--build", str(build_dir), "-j", "2", "--target",
                         f"test_{label}"], check=False)
            if built.returncode != 0:
                verdict, detail = "BROKEN", "does not compile: " + " ".join(
                    l for l in built.stdout.splitlines() if "error" in l)[:200]
            else:
                outcome = run_checks(build_dir, label)
                if outcome.failed:
                    signatures[m.name] = {"label": label, "mistake": m.mistake,
                                          "failing": sorted(c.title for c in outcome.failed),
                                          "messages": {c.title: first_lines(c)
                                                       for c in outcome.failed},
                                          # where each check's first assertion failed: the
                                          # survey's blame reads what that line calls
                                          "at": {c.title: c.failures[0].where
                                                 for c in outcome.failed
                                                 if c.failures and c.failures[0].where}}
                    verdict = "CAUGHT"
                    detail = (f"{len(outcome.failed)}/{len(outcome.checks)} checks fail, e.g. "
                              + re.sub(rf"^{label}:\s*", "", outcome.failed[0].name))
                    if args.blame:
                        from .hints import header_functions
                        chapter = course.get(label)
                        changed = mutated_function(m, text)
                        named, first = blame_line(chapter, outcome)
                        exported = header_functions(chapter)
                        owners = [changed] if changed in exported else \
                            callers(changed, text, exported) or [changed]
                        hit = named in owners
                        blame["caught"] += 1
                        blame["named"] += hit
                        detail = (f"{'NAMED ' if hit else 'MISSED'} changed wb::{changed}"
                                  + (f" (a helper of {', '.join(owners)})"
                                     if owners != [changed] else "")
                                  + f", your code: {'wb::' + named if named else '(none)'}"
                                  f"; first check: {first.title}")
                else:
                    verdict = "SURVIVED"
                    detail = f"all {len(outcome.checks)} checks pass: {m.mistake}"
            counts[verdict] += 1
            print(f"{verdict:<8} {label:<9} {m.name:<34} {detail}  ({time.time() - start:.0f} s)",
                  flush=True)
        configure(build_dir, **{f"WB_IMPL_DIR_{label}": None})
        shutil.rmtree(work, ignore_errors=True)
    if args.signatures:
        write_signatures(Path(args.signatures), signatures, wanted)
        print(f"wrote {args.signatures}")
    total = sum(counts.values())
    print(f"{counts['CAUGHT']}/{total} mutants caught, {counts['SURVIVED']} survived, "
          f"{counts['BROKEN']} broken")
    if args.blame:
        share = 100 * blame["named"] / blame["caught"] if blame["caught"] else 0
        print(f"your code: names the changed function for {blame['named']}/{blame['caught']} "
              f"caught mutants ({share:.0f}%)")
    return 0 if counts["CAUGHT"] == total and total else 1


def guide_structure(text):
    """The parts of a guide that both editions must share, in order."""
    fences = re.findall(r"^[ \t]*```([^\n]*)\n(.*?)^[ \t]*```", text, re.S | re.M)
    prose = re.sub(r"^[ \t]*```.*?^[ \t]*```[^\n]*$", "", text, flags=re.S | re.M)
    return {
        "headings": [len(h) for h in re.findall(r"^(#{1,6}) ", prose, re.M)],
        # \text{} words, mermaid labels and plain diagrams may be translated (guidecheck.py)
        "formulas": [normalise_formula(f) for f in re.findall(r"\$\$(.+?)\$\$", prose, re.S)],
        "code blocks": [normalise_fence(lang, body) for lang, body in fences],
        "tables": [line.count("|") for line in prose.splitlines()
                   if re.match(r"^\s*\|[-:| ]+\|\s*$", line)],
    }


def mistakes_zh_text():
    """(name, text) of the catalogue's Chinese mistakes, for the glossary check."""
    from .screen import MISTAKES_ZH
    try:
        data = json.loads(MISTAKES_ZH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    return str(MISTAKES_ZH.relative_to(ROOT)), "\n".join(str(v) for v in data.values())


def code_fragments(text):
    """The words of TEXT that are code or figures (x[:, -1, :] gives 'x[:,', '-1,' and ':]';
    sqrt(d_k), 1e-9), without the prose's punctuation and the brackets of an aside."""
    out = []
    for word in text.split():
        if word.endswith(":") and word != "[:":
            word = word[:-1]
        changed = True
        while changed and word:
            changed = True
            if word[-1] in ",;." and not word.endswith("..."):
                word = word[:-1]
            elif word.endswith("'s"):
                word = word[:-2]
            elif word[0] == "(" and word.count("(") > word.count(")"):
                word = word[1:]
            elif word[-1] == ")" and word.count(")") > word.count("("):
                word = word[:-1]
            elif len(word) > 1 and word[0] == "(" and word[-1] == ")" and \
                    word[1:-1].count("(") == word[1:-1].count(")"):
                word = word[1:-1]
            elif word[0] in "\"'" or word[-1] in "\"'":
                word = word.strip("\"'")
            else:
                changed = False
        if word and re.search(r"[\[\]()_:0-9]", word):
            out.append(word)
    return out


def mistakes_zh_problems():
    """Prints and counts what is wrong with the Chinese mistakes: a catalogued mutant without
    one, one for no mutant, an empty text, or a code fragment of the English left out."""
    from .screen import MISTAKES_ZH
    english = {m.name: m.mistake for path in sorted((ROOT / "tools" / "mutants").glob("*.txt"))
               for m in parse_catalogue(path)}
    if not english:
        return 0  # a class handout: no catalogue to compare with
    name = str(MISTAKES_ZH.relative_to(ROOT))
    try:
        data = json.loads(MISTAKES_ZH.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"{name}: unreadable ({e})")
        return 1
    lines = [f"no Chinese for mutant {m}" for m in english if not str(data.get(m, "")).strip()]
    lines += [f"{m} is no catalogued mutant" for m in data if m not in english]
    for m, text in english.items():
        for code in code_fragments(text):
            if m in data and code not in str(data[m]):
                lines.append(f"{m}: the Chinese lacks {code!r} of the English")
    for line in lines:
        print(f"{name} {line}")
    return len(lines)


def cmd_guides(args):
    """Every guide (chapters, the mini-GPT program, the top-level README) has a Chinese edition
    (README.zh.md) of the same structure."""
    problems = 0
    # The chapter guides, the mini-GPT program's guide and the top-level README.
    # The chapter guides, the mini-GPT program's guide, the top-level README, and the pages of
    # docs/ that have a Chinese edition (the experiments, the measurements, the main page).
    guides = sorted((ROOT / "chapters").glob("*/README.md")) + [
        MINIGPT_DIR / "README.md", ROOT / "README.md"] + sorted(
        p for p in (ROOT / "docs").glob("*.md") if p.with_suffix(".zh.md").exists()
        and not p.name.endswith(".zh.md"))
    for english in guides:
        chinese = english.with_name("README.zh.md") if english.name == "README.md" else \
            english.with_suffix(".zh.md")
        name = ("README" if english.parent == ROOT else english.parent.name) \
            if english.name == "README.md" else f"docs/{english.stem}"
        if not chinese.exists():
            print(f"{name:<14} no README.zh.md yet")
            problems += args.require_all
            continue
        a, b = guide_structure(english.read_text()), guide_structure(chinese.read_text())
        differ = [k for k in a if a[k] != b[k]]
        for key in differ:
            print(f"{name:<14} {key} differ: English has {len(a[key])}, Chinese {len(b[key])}"
                  + ("" if len(a[key]) != len(b[key]) else " (same count, different content)"))
        chapter_guide = english.parent.parent == ROOT / "chapters"
        for line in check_pair(english.read_text(), chinese.read_text(), terms=True):
            print(f"{name:<14} {line}")
            differ.append(line)
        if chapter_guide:  # every exercise function: a ladder in both languages, its idea
            folder = english.parent.name
            ladders = {lang: load_ladders(folder, lang) for lang in ("en", "zh")}
            lines = ladder_problems(ladders["en"], ladders["zh"], stub_functions(english.parent))
            for lang in ("en", "zh"):
                if not hint_file(folder, lang).exists():
                    lines.append(f"no {hint_file(folder, lang).relative_to(ROOT)}")
            for edition, guide in (("English", english), ("Chinese", chinese)):
                ideas = idea_headings(guide.read_text())
                if ideas != list(ladders["en"]):
                    lines.append(f"{edition} guide: the ideas kept are {ideas}, the ladders "
                                 f"{list(ladders['en'])} (### `wb::f` under ## "
                                 f"{'Ideas, one per function' if edition == 'English' else '每个函数的思路'})")
            for line in lines:
                print(f"{name:<14} {line}")
            differ += lines
        if not differ:
            print(f"{name:<14} OK: {len(a['headings'])} headings, {len(a['formulas'])} formulas, "
                  f"{len(a['code blocks'])} code blocks, {len(a['tables'])} tables")
        problems += bool(differ)
    # Every other Chinese text a learner reads is held to the glossary too: the Chinese hint
    # ladders, any other Chinese page, and the tool's own Chinese screens (wb/i18n.py).
    from .guidecheck import forbidden_terms
    from .i18n import chinese_templates, strip_fields
    texts = [(str(p.relative_to(ROOT)), "\n".join(
        t for rungs in load_ladders(p.name.split(".")[0], "zh").values() for t in rungs.values()))
        for p in sorted((ROOT / "hints").glob("*.zh.json"))]
    paired = {g.with_name("README.zh.md") if g.name == "README.md" else g.with_suffix(".zh.md")
              for g in guides}
    pages = [p for top in ROOT.iterdir() if top.is_dir() and top.name not in ("build", "prebuilt")
             and not top.name.startswith(".") for p in top.rglob("*.zh.md")]
    texts += [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted(pages) if p not in paired]
    texts.append(("tools/wb/i18n.py", "\n".join(strip_fields(t) for t in chinese_templates())))
    texts.append(mistakes_zh_text())
    problems += mistakes_zh_problems()
    for name, text in texts:
        for snippet, variant, term in forbidden_terms(text):
            print(f"{name:<14} Chinese uses {variant} (glossary: {term}): {snippet}")
            problems += 1
    # No key line of the reference in any guide: the ladders give them, one rung at a time.
    keys = key_lines()
    pages = [p for g in guides for p in (g, g.with_name("README.zh.md")) if p.exists()]
    pages += sorted((ROOT / "docs").glob("**/*.md"))
    leaks = key_line_leaks(pages, keys, ROOT)
    for path, line, code in leaks:
        print(f"{path}:{line}: a key line of the reference, given by `workbook hint` only: {code}")
    print(f"key lines: {len(keys)} of the reference in the ladders, "
          f"{len(leaks)} in the guides")
    problems += bool(leaks)
    return 1 if problems else 0



# ---- instructor's verbs ---------------------------------------------------------------------


def student_chapters_dir(tree, folders):
    tree = Path(tree).resolve()
    if not tree.is_dir():
        raise WorkbookError(f"--tree {tree}: no such folder")
    if (tree / "chapters").is_dir():
        return tree / "chapters"
    if any((tree / f).is_dir() for f in folders):
        return tree
    raise WorkbookError(f"--tree {tree}: neither a copy of the repository nor a chapters/ folder "
                        f"(expected folders such as 1-tensors, 6-masks)")


def failure_lines(check):
    """A failing check in a few lines: its crash, or its first failure's message."""
    if check.crashed:
        from .hints import crash_text
        return [crash_text(check)]
    if not check.failures:
        return ["failed"]
    first = check.failures[0]
    notes = [l for text in first.explanation for l in text.splitlines() if l.strip()]
    lines = [l for l in first.text.splitlines() if l.strip()]
    return ([f"at {first.where}"] if first.where else []) + notes + lines


def write_grade_junit(path, report):
    root = ET.Element("testsuites", name="workbook grade",
                      tests=str(report["total"]), failures=str(report["total"] - report["passed"]))
    for chapter in report["chapters"]:
        suite = ET.SubElement(root, "testsuite", name=chapter["label"],
                              tests=str(len(chapter["checks"])),
                              failures=str(sum(not c["passed"] for c in chapter["checks"])))
        for c in chapter["checks"]:
            case = ET.SubElement(suite, "testcase", name=c["name"], classname=chapter["label"])
            if not c["passed"]:
                failure = ET.SubElement(case, "failure", message=(c["lines"] or [""])[0])
                failure.text = "\n".join(c["lines"])
    tmp = Path(str(path) + ".tmp")
    ET.ElementTree(root).write(tmp, encoding="unicode", xml_declaration=True)
    os.replace(tmp, path)


def write_grade_markdown(path, report):
    def cell(text):
        return text.replace("|", "\\|").replace("\n", " ")
    out = [f"# Workbook grade: {report['tree']}", "",
           f"**Score: {report['passed']}/{report['total']} checks "
           f"({report['percent']:.0f}%)**, {report['complete']}/{len(report['chapters'])} "
           "chapters complete.", "", "| chapter | source | passed | note |", "|---|---|---|---|"]
    for ch in report["chapters"]:
        out.append(f"| {ch['label']} | {cell(ch['source'])} | {ch['passed']}/{len(ch['checks'])} "
                   f"| {cell(ch['note'])} |")
    for ch in report["chapters"]:
        failed = [c for c in ch["checks"] if not c["passed"]]
        if not failed or ch["note"].startswith(("does not compile", "not started")):
            continue
        out += ["", f"## {ch['label']}: {len(failed)} failing", ""]
        for c in failed:
            out.append(f"- **{cell(c['name'])}**: " + cell("; ".join(c["lines"][:4])))
    tmp = Path(str(path) + ".tmp")
    tmp.write_text("\n".join(out) + "\n")
    os.replace(tmp, path)


def extra_tests_dir(path, course):
    """The instructor's own checks: DIR/<chapter folder>/*.cpp (the folders named as in tests/),
    checked before CMake sees them."""
    extra = Path(path).resolve()
    if not extra.is_dir():
        raise WorkbookError(f"--extra-tests {extra}: no such folder")
    folders = {c.folder for c in course.chapters}
    loose = sorted(p.name for p in extra.glob("*.cpp"))
    if loose:
        raise WorkbookError(f"--extra-tests {extra}: {', '.join(loose)} is in no chapter's folder; "
                            "put each file in the folder of its chapter, named as in tests/ "
                            f"(e.g. {extra / course.chapters[0].folder})")
    unknown = sorted(p.name for p in extra.iterdir() if p.is_dir() and p.name not in folders)
    if unknown:
        raise WorkbookError(f"--extra-tests {extra}: no chapter has the folder "
                            f"{', '.join(unknown)}; known: {', '.join(sorted(folders))}")
    if not list(extra.glob("*/*.cpp")):
        raise WorkbookError(f"--extra-tests {extra}: no <chapter folder>/*.cpp in it")
    return extra


EXPRESSION = re.compile(r"^(?:REQUIRE|CHECK|REQUIRE_FALSE|CHECK_FALSE|REQUIRE_THAT|CHECK_THAT|"
                        r"REQUIRE_NOTHROW|CHECK_NOTHROW|REQUIRE_THROWS\w*|CHECK_THROWS\w*)\( .*\)$")


def path_forms(path, build_dir):
    """The ways a compiler or a check may write the folder PATH: absolute, relative to this
    repository, or relative to BUILD_DIR (as ccache writes paths under CCACHE_BASEDIR); the
    longest first."""
    path = Path(path).resolve()
    forms = {str(path), relative(str(path)), os.path.relpath(path, Path(build_dir).resolve())}
    return sorted((f for f in forms if f not in (".", "")), key=len, reverse=True)


def readable_lines(check, hidden, build_dir):
    """What a student reads of a failing check: its message and hint, the crash explained; no
    assertion's source text (a REQUIRE( ... ) line gives way to its values), no traceback, and
    no location inside HIDDEN (the instructor's own checks, built in BUILD_DIR)."""
    lines = []
    forms = path_forms(hidden, build_dir) if hidden else []
    for line in failure_lines(check):
        form = next((f for f in forms if f in line), None)
        if form:
            if line.startswith("at "):
                continue  # where an instructor's check is: theirs to know
            line = line.replace(form + os.sep, "")
        if EXPRESSION.match(line):
            line = "a check failed"
        elif line.startswith("with expansion: "):
            line = "values: " + line[len("with expansion: "):]
        lines.append(line)
    return lines


def grade_tree(tree, build_dir, only=None, jobs=2, timeout=300, extra=None, say=print):
    """Builds TREE (a copy of the repository or its chapters/ folder) in BUILD_DIR, runs the
    checks of the chapters ONLY (default: all; the others come from the reference) and returns
    the report: {tree, chapters: [{label, source, passed, checks, note, compiled}], passed, total,
    complete, percent}. EXTRA, a folder of the instructor's checks, is compiled in too."""
    if not Path(tree).is_dir():
        raise WorkbookError(f"--tree {Path(tree).resolve()}: no such folder")
    build_dir = Path(build_dir)
    # The course first (a plain configure), then the student's folders in place of the stubs.
    # Unset the previous tree's folders first: that tree may be gone, and CMake would refuse it.
    configure(build_dir, **{"WB_IMPL_DIR_*": None, "WB_EXTRA_TESTS": None})
    course = load_course(build_dir)
    student = student_chapters_dir(tree, [c.folder for c in course.chapters])
    tree_root = student.parent if student.name == "chapters" else student
    graded = [course.find(c).label for c in only] if only else course.labels
    variables = {"WB_REFERENCE": ";".join(l for l in course.labels if l not in graded) or "none"}
    if extra:
        extra = extra_tests_dir(extra, course)
        variables["WB_EXTRA_TESTS"] = extra
    notes = {}
    for chapter in course.chapters:
        source = student / chapter.folder
        if chapter.label not in graded:
            variables[f"WB_IMPL_DIR_{chapter.label}"] = None
            continue
        if not source.is_dir() or not list(source.glob("*.cpp")):
            notes[chapter.label] = f"missing from the tree: graded as the stub chapters/{chapter.folder}"
            source = ROOT / "chapters" / chapter.folder
        variables[f"WB_IMPL_DIR_{chapter.label}"] = source

    def shown(path):
        """A path relative to the graded tree (or to this repository)."""
        path = Path(path)
        for base in (tree_root, ROOT):
            try:
                return str(path.resolve().relative_to(base.resolve()))
            except ValueError:
                continue
        return str(path)

    # The tree's own place, as the compiler and the checks write it (absolute, or relative to
    # this repository when the tree is inside it): no report shows it.
    roots = [f + os.sep for f in path_forms(tree_root, build_dir)]

    def unrooted(text):
        for root in roots:
            text = text.replace(root, "")
        return text

    say(f"grading {student} in {build_dir} ...")
    configure(build_dir, **variables)
    course = load_course(build_dir)
    expected = check_counts(build_dir)
    report = {"tree": tree_root.name, "chapters": [], "passed": 0, "total": 0, "complete": 0}
    for chapter in course.chapters:
        label = chapter.label
        if label not in graded:
            continue
        # A test program left from an earlier grade must not stand in for one that fails to build.
        (build_dir / f"test_{label}").unlink(missing_ok=True)
        say(f"  building and checking {label} ...")
        ok, log = build_target(build_dir, chapter.target, jobs)
        note = notes.get(label, "")
        if ok:
            outcome = run_checks(build_dir, label, jobs, timeout)
        else:
            outcome = Outcome([], compiled=False, build_log=log[-20000:], time=time.time())
            where, lines = first_error(log, [shown(variables[f"WB_IMPL_DIR_{label}"]),
                                             f"chapters/{chapter.folder}"])
            error = next((l for l in lines if "error" in l), lines[0] if lines else "")
            if extra and any(f in error for f in path_forms(extra, build_dir)):
                # The instructor's check itself does not compile: theirs to fix, not the student's.
                say(f"  {label}: an extra check does not compile: {error.strip()}")
                where, error = "", "an instructor's check does not compile (the grader is told)"
            note = (note + "; " if note else "") + "does not compile: " + (
                where + ": " if where else "") + unrooted(error.strip())[:200]
        save_outcome(build_dir, label, outcome)  # for `hint N --build-dir` on the graded tree
        checks = [{"name": short_name(c.name), "passed": c.passed,
                   "lines": [] if c.passed else [unrooted(l) for l in readable_lines(c, extra, build_dir)]}
                  for c in outcome.checks]
        if not checks:
            n = expected.get(label) or 1
            checks = [{"name": f"(check {i + 1}: not built)", "passed": False,
                       "lines": [note or "no checks ran"]} for i in range(n)]
        passed = sum(c["passed"] for c in checks)
        blocked = {}  # checks that fail on another chapter's unwritten function
        for c in checks:
            text = " ".join(c["lines"])
            for other in re.findall(r"is not implemented yet: write its body in chapters/([\w.-]+)/",
                                    text):
                if other != chapter.folder:
                    blocked[other] = blocked.get(other, 0) + 1
        if blocked:
            note = (note + "; " if note else "") + ", ".join(
                f"{n} fail on the stub of chapters/{f}" for f, n in blocked.items())
        if checks and passed == len(checks):
            report["complete"] += 1
        elif not note and checks and all(NOT_IMPLEMENTED in " ".join(c["lines"])
                                         for c in checks if not c["passed"]) and passed == 0:
            note = "not started (every check: is not implemented yet)"
        report["chapters"].append({"label": label,
                                   "source": shown(variables[f"WB_IMPL_DIR_{label}"]),
                                   "passed": passed, "checks": checks, "note": note,
                                   "compiled": ok})
        report["passed"] += passed
        report["total"] += len(checks)
    report["percent"] = 100 * report["passed"] / report["total"] if report["total"] else 0
    return report


def print_report(report, verbose=False, lines=4):
    for ch in report["chapters"]:
        whole = ch["checks"] and ch["passed"] == len(ch["checks"])
        print(f"\n{ch['label']:<9} {ch['passed']:3d}/{len(ch['checks']):<3d} passed"
              + ("  complete" if whole else "") + (f"  {ch['note']}" if ch["note"] else ""))
        if ch["note"].startswith(("does not compile", "not started")) and not verbose:
            continue  # one line says it all
        for c in ch["checks"]:
            if c["passed"] and not verbose:
                continue
            print(f"  {'PASS' if c['passed'] else 'FAIL'} {c['name']}")
            for line in c["lines"][:lines]:
                print(f"         {line}")
    print(f"\nscore: {report['passed']}/{report['total']} checks ({report['percent']:.0f}%), "
          f"{report['complete']}/{len(report['chapters'])} chapters complete  "
          f"{progress_bar(report['passed'], report['total'])}")
