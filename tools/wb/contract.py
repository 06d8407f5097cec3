"""`workbook contract`: every clause of the chapters' headers and the checks that prove it.

The convention (docs/instructors.md, "The contract"): a promise of a header ends with
`<!-- clause: <function>.<kebab-name> -->` (Doxygen hides it), and a TEST_CASE names the
clauses it proves with tags `[c:<id>]`. This module reads both without a build: the headers
are chapters/<folder>/*.hpp (the mini-GPT program's headers are not a chapter's), the checks
tests/<folder>/*.cpp of the same folders, and an instructor's extra checks DIR/<folder>/*.cpp.
"""

import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .common import ROOT, WorkbookError
from .cppscan import blank_comments, declared_names, doc_blocks, test_cases

MARKER = re.compile(r"<!--\s*clause:\s*(.*?)\s*-->")
LOOSE_MARKER = re.compile(r"<!--\s*clause\b")
CLAUSE_ID = re.compile(r"[A-Za-z_]\w*\.[a-z0-9]+(?:-[a-z0-9]+)*")
WIDTH = 100


@dataclass
class ChapterFiles:
    folder: str                      # 3-positions
    label: str                       # chapter3, capstone
    headers: list                    # paths
    tests: list                      # paths

    @property
    def number(self):
        return self.label[len("chapter"):] if self.label.startswith("chapter") else self.label


@dataclass
class Clause:
    id: str
    function: str                    # the id's function part: what the screen blames
    file: str
    line: int
    text: str                        # the clause's sentence, one line
    documents: str = ""              # the name the doc comment is written on
    chapter: str = ""
    checks: list = field(default_factory=list)   # [{"name", "file", "line"}]


def rel(path, root):
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def chapter_label(folder):
    m = re.match(r"(\d+)-", folder)
    return f"chapter{m.group(1)}" if m else folder


def find_chapters(root=ROOT, extra=None):
    """The chapters in course order: a folder of chapters/ with a header of its own (the shared
    chapters/common/ has none at its top); each with its checks' files."""
    root = Path(root)
    chapters = []
    for folder in sorted((root / "chapters").iterdir() if (root / "chapters").is_dir() else []):
        headers = sorted(folder.glob("*.hpp"))
        if not folder.is_dir() or not headers:
            continue
        tests = sorted((root / "tests" / folder.name).glob("*.cpp"))
        if extra:
            tests += sorted((Path(extra) / folder.name).glob("*.cpp"))
        chapters.append(ChapterFiles(folder.name, chapter_label(folder.name), headers, tests))

    def order(c):
        m = re.match(r"(\d+)-", c.folder)
        return (0, int(m.group(1)), "") if m else (1, 0, c.folder)
    return sorted(chapters, key=order)


def select(chapters, names):
    """The chapters named by NAMES ('3', 'chapter3', '3-positions', 'capstone'); all if none."""
    if not names:
        return chapters
    chosen = []
    for name in names:
        text = str(name).strip().lower()
        found = [c for c in chapters
                 if text in (c.label.lower(), c.number.lower(), c.folder.lower())]
        if not found:
            raise WorkbookError(f"unknown chapter '{name}'; known: "
                                + ", ".join(c.number for c in chapters))
        chosen += [c for c in found if c not in chosen]
    return [c for c in chapters if c in chosen]


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<=[.!?])\s+(?=[A-Z`\"(@])")


def _last_sentence(text):
    parts = [p for p in _SENTENCE_END.split(text) if p.strip(" .;,")]
    return parts[-1] if parts else text


def _one_line(text):
    return " ".join(MARKER.sub(" ", text).split()).strip(" ;,")


def header_clauses(path, root=ROOT):
    """([Clause], [problem]) of one header: each marker with its sentence — a whole @param or
    @throws paragraph (from its tag, or from the previous marker in it), else the sentence the
    marker ends."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    name = rel(path, root)
    clauses, problems, seen_lines = [], [], set()
    for block in doc_blocks(name, text):
        for para in block.paragraphs():
            joined, starts = "", []
            for number, line in para:
                starts.append((len(joined), number))
                joined += line.strip() + " "
            if joined.lstrip().startswith("@throws") and not MARKER.search(joined) \
                    and "not a promise" not in joined:
                problems.append(f"{name}:{starts[0][1]}: an @throws without a clause id "
                                "(every error a header promises is a clause; or say "
                                "'not a promise')")
            previous = 0
            for m in MARKER.finditer(joined):
                number = max(n for o, n in starts if o <= m.start())
                seen_lines.add(number)
                segment = joined[previous:m.start()]
                tagged = previous == 0 and segment.lstrip().startswith("@")
                sentence = segment if tagged or block.trailing else _last_sentence(segment)
                previous = m.end()
                clauses.append(Clause(m.group(1), m.group(1).split(".")[0], name, number,
                                      _one_line(sentence), block.name))
    for number, line in enumerate(text.splitlines(), 1):
        if number in seen_lines:
            continue
        for m in MARKER.finditer(line):
            comment = re.split(r"//+<?|/\*+|^\s*\*", line[:m.start()])[-1]
            clauses.append(Clause(m.group(1), m.group(1).split(".")[0], name, number,
                                  _one_line(comment)))
        if LOOSE_MARKER.search(line) and not MARKER.search(line):
            problems.append(f"{name}:{number}: a clause marker that is not "
                            "`<!-- clause: <function>.<kebab-name> -->`")
    for clause in clauses:
        if not CLAUSE_ID.fullmatch(clause.id):
            problems.append(f"{name}:{clause.line}: clause id '{clause.id}' is not "
                            "<function>.<kebab-name> (e.g. softmax.empty-row)")
    return clauses, problems


@dataclass
class Contract:
    chapters: list                   # ChapterFiles, the selected ones
    clauses: dict                    # label -> [Clause]
    checks: list                     # every TEST_CASE read: dicts
    unknown: list                    # [(check dict, tag)]
    duplicates: dict                 # id -> [Clause]
    problems: list                   # malformed markers, ids naming no function ...

    def without_checks(self):
        return [c for label in self.clauses for c in self.clauses[label] if not c.checks]


def read_contract(root=ROOT, names=None, extra=None):
    """Every clause of every chapter and every check's tags; the report is about the chapters
    NAMES (all when empty), but ids and tags are matched across the whole repository."""
    root = Path(root)
    every = find_chapters(root, extra)
    chosen = select(every, names)
    all_clauses, problems, by_label, declared = [], [], {}, {}
    for chapter in every:
        by_label[chapter.label] = []
        names_here = set()
        for header in chapter.headers:
            found, bad = header_clauses(header, root)
            for c in found:
                c.chapter = chapter.label
            by_label[chapter.label] += found
            all_clauses += found
            if chapter in chosen:
                problems += bad
            names_here |= declared_names(header.read_text(encoding="utf-8"))
        declared[chapter.label] = names_here
    index = {}
    for clause in all_clauses:
        index.setdefault(clause.id, []).append(clause)
    duplicates = {i: cs for i, cs in index.items() if len(cs) > 1}
    for chapter in chosen:
        for clause in by_label[chapter.label]:
            if clause.function not in declared[chapter.label] and \
                    clause.function != clause.documents:
                problems.append(f"{clause.file}:{clause.line}: clause {clause.id}: "
                                f"'{clause.function}' is declared nowhere in chapters/"
                                f"{chapter.folder}/*.hpp (the id starts with the function's "
                                "unqualified name)")

    checks, unknown = [], []
    chosen_tests = {t for c in chosen for t in c.tests}
    for chapter in every:
        for path in chapter.tests:
            text = path.read_text(encoding="utf-8", errors="replace")
            for case in test_cases(rel(path, root), text, blank_comments(text)):
                check = {"name": case.name, "file": case.file, "line": case.line,
                         "tags": case.tags, "clauses": case.clause_tags,
                         "functions": list(dict.fromkeys(t.split(".")[0]
                                                         for t in case.clause_tags)),
                         "chapter": chapter.label}
                checks.append(check)
                for tag in case.clause_tags:
                    if tag in index:
                        for clause in index[tag]:
                            clause.checks.append({"name": case.name, "file": case.file,
                                                  "line": case.line})
                    elif path in chosen_tests:
                        unknown.append((check, tag))
    clauses = {c.label: by_label[c.label] for c in chosen}
    return Contract(chosen, clauses, checks, unknown, duplicates, problems)


def plural(n, word):
    return f"{n} {word}{'s' * (n != 1)}"


def cut(text, width=WIDTH):
    return text if len(text) <= width else text[:width - 1] + "…"


def contract_lines(contract):
    out = []
    total = proven = 0
    for chapter in contract.chapters:
        clauses = contract.clauses[chapter.label]
        done = sum(1 for c in clauses if c.checks)
        tagged = sum(1 for k in contract.checks if k["chapter"] == chapter.label and k["clauses"])
        count = sum(1 for k in contract.checks if k["chapter"] == chapter.label)
        total, proven = total + len(clauses), proven + done
        out.append(f"{chapter.label} (chapters/{chapter.folder}): "
                   f"{plural(len(clauses), 'clause')}, "
                   f"{done} with a check, {len(clauses) - done} without; "
                   f"{tagged} of {count} checks name a clause")
        for clause in clauses:
            out.append(cut(f"  {clause.id}  [{clause.function}]  {clause.file}:{clause.line}"))
            out.append(cut(f"      {clause.text}"))
            for check in clause.checks:
                out.append(cut(f"      ✓ {check['file']}:{check['line']}  {check['name']}"))
            if not clause.checks:
                out.append("      ✗ no check names this clause")
    out.append(f"in all: {plural(total, 'clause')}, {proven} with a check, "
               f"{total - proven} without")
    return out


def problem_lines(contract):
    out = []
    for clause in contract.without_checks():
        out.append(f"{clause.file}:{clause.line}: clause {clause.id} has no check "
                   f"(no TEST_CASE tagged [c:{clause.id}])")
    for check, tag in contract.unknown:
        out.append(f"{check['file']}:{check['line']}: [c:{tag}] names no clause "
                   f"(check \"{cut(check['name'], 60)}\")")
    for clause_id, clauses in sorted(contract.duplicates.items()):
        out.append(f"clause id {clause_id} is used {len(clauses)} times: "
                   + ", ".join(f"{c.file}:{c.line}" for c in clauses))
    return out + contract.problems


def contract_json(contract, root=ROOT):
    return {
        "chapters": [{"label": c.label, "folder": c.folder,
                      "headers": [rel(h, root) for h in c.headers],
                      "clauses": [asdict(k) for k in contract.clauses[c.label]]}
                     for c in contract.chapters],
        "checks": [k for k in contract.checks
                   if k["chapter"] in {c.label for c in contract.chapters}],
        "problems": problem_lines(contract),
    }


def cmd_contract(args):
    root = Path(getattr(args, "root", None) or ROOT)
    contract = read_contract(root, args.chapters, args.extra_tests)
    if args.json:
        print(json.dumps(contract_json(contract, root), indent=1, ensure_ascii=False))
    else:
        for line in contract_lines(contract):
            print(line)
    problems = problem_lines(contract)
    if args.check:
        if problems:
            print(f"\n{len(problems)} problem(s) with the contract:", file=sys.stderr)
            for line in problems:
                print("  " + line, file=sys.stderr)
            return 1
        print("the contract holds: every clause has a check, every [c:...] tag names a clause")
    return 0
