"""A chapter's checks: running them, reading Catch's XML reporter, and what a build log says.

Results come from Catch's machine-readable XML reporter (Catch2 2.13 and 3.x both have it), so
nothing is re-wrapped: a message is exactly what the check wrote.
"""

import json
import os
import re
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .common import ROOT

NOT_IMPLEMENTED = "is not implemented yet"
STUB_RE = re.compile(r"wb::(\w+) is not implemented yet: write its body in (\S+?):(\d+)")
SIGNALS = {"SIGSEGV": "segmentation fault", "SIGBUS": "bus error", "SIGFPE":
           "arithmetic error (an integer division by zero?)", "SIGABRT": "abort",
           "SIGILL": "illegal instruction"}


# The build folder whose compiler and checks wrote the text being read: a compiler run from it
# (ccache's base_dir, for one) writes the repository's files as ../../chapters/..., relative to it.
_BUILD_PREFIX = []


def use_build_dir(build_dir):
    """Paths that the compiler or the checks write relative to BUILD_DIR are read as paths of
    the repository from now on."""
    prefix = os.path.relpath(ROOT, Path(build_dir).resolve())
    _BUILD_PREFIX[:] = [] if prefix == "." else [prefix + os.sep]


def relative(text):
    """Paths inside the repository, written relative to it (also when the compiler wrote them
    relative to the build folder, see use_build_dir)."""
    text = str(text).replace(str(ROOT) + os.sep, "")
    for prefix in _BUILD_PREFIX:
        text = re.sub(r"(?<![\w./-])" + re.escape(prefix), "", text)
    return text


@dataclass
class Failure:
    file: str
    line: int
    text: str     # the check's message, exactly as written (expected, actual, hint ...)
    # What the check said about this assertion before it failed, in order: its INFO,
    # UNSCOPED_INFO and CAPTURE texts and the WARN texts that came before it, each
    # [kind, text] with kind "info" or "warning".
    notes: list = field(default_factory=list)

    @property
    def explanation(self):
        """The check's own words about this failure: its notes' texts, in order."""
        return [text for _, text in self.notes]

    @property
    def where(self):
        return f"{self.file}:{self.line}" if self.file else ""

    @property
    def hint(self):
        """The text after 'hint: ' in the message, or ''."""
        m = re.search(r"(?:^|\n)hint: (.*)", self.text, re.S)
        return m.group(1).strip() if m else ""

    @property
    def stub(self):
        """(function, file, line) when the failure is an unwritten stub, else None."""
        m = STUB_RE.search(self.text)
        return (m.group(1), m.group(2), int(m.group(3))) if m else None


@dataclass
class Check:
    name: str                    # as ctest names it: "chapter1: last_token is ..."
    passed: bool
    failures: list = field(default_factory=list)
    file: str = ""               # where the TEST_CASE is
    line: int = 0
    signal: str = ""             # SIGSEGV when the check crashed
    seconds: float = 0.0
    tags: list = field(default_factory=list)   # its Catch tags, without brackets

    @property
    def title(self):
        return short_name(self.name)

    @property
    def output(self):
        text = "\n".join(f.text for f in self.failures)
        return text + (f"\n{self.signal}" if self.signal else "")

    @property
    def stub(self):
        """(function, file, line) of the unwritten function this check stops at, or None."""
        return next((f.stub for f in self.failures if f.stub), None)

    @property
    def crashed(self):
        return bool(self.signal)


@dataclass
class Outcome:
    checks: list = field(default_factory=list)
    compiled: bool = True
    build_log: str = ""
    time: float = 0.0
    warnings: list = field(default_factory=list)   # the learner's own, [[lines]]

    @property
    def passed(self):
        return [c for c in self.checks if c.passed]

    @property
    def failed(self):
        return [c for c in self.checks if not c.passed]


def label_of(test_name):
    """'chapter6: causal mask ...' -> 'chapter6'."""
    return test_name.split(":", 1)[0].strip()


def short_name(test_name):
    return re.sub(r"^[\w-]+:\s*", "", test_name)


# ---- Catch's XML reporter -------------------------------------------------------------------


def _text(element):
    """An element's text as the check wrote it: the reporter indents only its first line."""
    return relative((element.text or "").strip())


def _failures(case):
    """The failed assertions of one <TestCase> (any depth of sections), in order, each with the
    notes the check wrote before it. Catch writes a failed assertion's INFO, UNSCOPED_INFO and
    CAPTURE messages as <Info> elements just before it (2.13: text only; 3.x: with filename and
    line), and a WARN as a <Warning> where it happened; both are kept with the next failure."""
    out, notes = [], []
    inner = {id(e.find("Exception")) for e in case.iter("Expression")
             if e.find("Exception") is not None}
    for element in case.iter():
        where = (relative(element.get("filename", "")), int(element.get("line", 0) or 0))
        if element.tag in ("Info", "Warning"):
            text = _text(element)
            if text:
                notes.append(["info" if element.tag == "Info" else "warning", text])
            continue
        failure = None
        if element.tag == "Expression" and element.get("success") == "false":
            exception = element.find("Exception")
            fatal = element.find("FatalErrorCondition")
            original = element.find("Original")
            expanded = element.find("Expanded")
            if fatal is not None:
                continue  # reported on its own below
            if exception is not None:
                failure = Failure(*where, _text(exception))
            else:
                text = _text(original) if original is not None else ""
                text = f"{element.get('type', 'CHECK')}( {text} )"
                if expanded is not None and _text(expanded) != _text(original):
                    text += "\nwith expansion: " + _text(expanded)
                failure = Failure(*where, text)
        elif element.tag in ("Failure", "FatalErrorCondition"):
            failure = Failure(*where, _text(element))
        elif element.tag == "Exception" and id(element) not in inner:
            failure = Failure(*where, _text(element))
        if failure is not None:
            failure.notes, notes = notes, []
            out.append(failure)
    return out


def _tags(element):
    """['optim', 'adamw'] of tags="[optim][adamw]"."""
    return re.findall(r"\[([^\]]+)\]", element.get("tags", "") or "")


def parse_catch_xml(text, prefix=""):
    """The checks in the text of Catch's XML reporter (2.13 or 3.x). A document cut short by a
    crash still gives the checks that finished, and the one that was running with
    signal='CRASHED'."""
    checks, parser = [], ET.XMLPullParser(events=("start", "end"))
    start = text.find("<?xml")
    open_case = None
    try:
        parser.feed(text[start:] if start >= 0 else text)
        parser.close()
    except ET.ParseError:
        pass
    for event, element in parser.read_events():
        if element.tag != "TestCase":
            continue
        if event == "start":
            open_case = element
            continue
        open_case = None
        result = element.find("OverallResult")
        passed = result is not None and result.get("success") == "true"
        failures = _failures(element)
        fatal = next((f for f in failures if re.match(r"SIG[A-Z]+\b", f.text)), None)
        checks.append(Check(prefix + element.get("name", ""), passed and not failures, failures,
                            relative(element.get("filename", "")), int(element.get("line", 0)),
                            fatal.text.split()[0] if fatal else "",
                            float(result.get("durationInSeconds", 0) or 0)
                            if result is not None else 0.0, _tags(element)))
    if open_case is not None:  # the process died inside this check
        failures = _failures(open_case)
        checks.append(Check(prefix + open_case.get("name", ""), False, failures,
                            relative(open_case.get("filename", "")),
                            int(open_case.get("line", 0)), "CRASHED",
                            tags=_tags(open_case)))
    return checks


# ---- running the checks ---------------------------------------------------------------------


def ctest_tests(build_dir, label):
    """[(name, command)] of the checks labelled LABEL, as ctest knows them (the build step
    that ctest runs first and the progress step it runs last are left out)."""
    result = subprocess.run(["ctest", "--test-dir", str(build_dir), "--show-only=json-v1",
                             "-L", f"^{re.escape(label)}$"], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        tests = json.loads(result.stdout).get("tests", [])
    except ValueError:
        return []
    out = []
    for test in tests:
        props = {p.get("name"): p.get("value") for p in test.get("properties", [])}
        command = test.get("command") or []
        if "FIXTURES_SETUP" in props or "FIXTURES_CLEANUP" in props or len(command) < 2:
            continue
        # The reporter ctest uses is replaced by the XML one.
        args, skip = [], False
        for a in command[1:]:
            if skip:
                skip = False
                continue
            if a in ("-r", "--reporter"):
                skip = True
                continue
            if a.startswith(("--reporter ", "--reporter=", "-r ")):  # Catch.cmake's one argument
                continue
            args.append(a)
        out.append((test.get("name", ""), [command[0], *args]))
    return out


def signal_name(returncode):
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    if returncode > 128 and returncode - 128 in {s.value for s in signal.Signals}:
        return signal.Signals(returncode - 128).name
    return ""


def _run_xml(command, timeout, cwd=ROOT):
    try:
        result = subprocess.run([*command, "-r", "xml", "--order", "decl"], cwd=cwd,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, timeout=timeout)
        return result.stdout.decode("utf-8", "replace"), result.returncode
    except subprocess.TimeoutExpired as error:
        out = error.stdout.decode("utf-8", "replace") if error.stdout else ""
        return out, "TIMEOUT"


def run_checks(build_dir, label, jobs=2, timeout=300):
    """Runs every check of LABEL and returns an Outcome. The test program runs once; if a check
    crashes it, the checks that had not run yet run one per process, so one crash costs one
    check."""
    started = time.time()
    build_dir = Path(build_dir)
    use_build_dir(build_dir)
    tests = ctest_tests(build_dir, label)
    prefix = f"{label}: "
    exe = build_dir / f"test_{label}"
    if not tests and not exe.exists():
        return Outcome([], True, time=started)  # no checks built (no Catch2)
    if tests:
        exe = Path(tests[0][1][0])
    text, code = _run_xml([str(exe)], timeout, build_dir)  # where ctest runs them
    checks = parse_catch_xml(text, prefix)
    crashed = code == "TIMEOUT" or bool(signal_name(code)) or (
        checks and checks[-1].signal == "CRASHED")
    if crashed:
        if checks and checks[-1].signal == "CRASHED":
            checks[-1].signal = "TIMEOUT" if code == "TIMEOUT" else (signal_name(code)
                                                                     or "SIGSEGV")
        done = {short_name(c.name) for c in checks}
        rest = [(name, cmd) for name, cmd in tests if short_name(name) not in done]

        def one(item):
            name, cmd = item
            out, rc = _run_xml(cmd, timeout, build_dir)
            got = parse_catch_xml(out, prefix)
            if not got:
                got = [Check(name, False, [], signal="")]
            if rc == "TIMEOUT":
                got[-1].passed, got[-1].signal = False, "TIMEOUT"
            elif signal_name(rc):
                got[-1].passed, got[-1].signal = False, signal_name(rc)
            return got

        with ThreadPoolExecutor(max(1, jobs)) as pool:
            for got in pool.map(one, rest):
                checks += got
    # ctest's names (with the label) and course order (the checks' source order).
    names = {short_name(n): n for n, _ in tests}
    for c in checks:
        c.name = names.get(short_name(c.name), c.name)
    order = {short_name(n): i for i, (n, _) in enumerate(tests)}
    checks.sort(key=lambda c: (c.file, c.line, order.get(short_name(c.name), 0)))
    return Outcome(checks, True, time=started)


# ---- results kept between runs --------------------------------------------------------------
#
# Each run of a chapter's checks is kept in <build>/workbook/results/<label>.json (for `hint`)
# and summed up in .workbook-progress.json beside chapters/ (for `status` and `next`; it
# survives deleting the build).

PROGRESS = ROOT / ".workbook-progress.json"


def progress_file():
    """The learner's progress file (WB_PROGRESS_FILE, else .workbook-progress.json beside
    chapters/): the results of each chapter, the hints seen, the language of the screens."""
    return Path(os.environ.get("WB_PROGRESS_FILE", PROGRESS))


def write_progress(data, path=None):
    _write_json(Path(path or progress_file()), data)


def results_dir(build_dir):
    return Path(build_dir) / "workbook" / "results"


def _write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def save_outcome(build_dir, label, outcome):
    _write_json(results_dir(build_dir) / f"{label}.json", asdict(outcome))


def load_outcome(build_dir, label):
    use_build_dir(build_dir)  # for the paths of its build log
    path = results_dir(build_dir) / f"{label}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        checks = [Check(**{**c, "failures": [Failure(**f) for f in c["failures"]]})
                  for c in data.pop("checks", [])]
        return Outcome(checks, **data)
    except TypeError:
        return None  # kept by another version of the tool: run the checks again


def read_progress(path=None):
    try:
        data = json.loads(Path(path or progress_file()).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def complete(outcome):
    """A chapter is complete when it compiles, has checks, and every one passes: the one rule
    of check, status, next, watch, the progress file and grade."""
    return bool(outcome.compiled and outcome.checks and not outcome.failed)


def record_progress(chapter, outcome, path=None, first=None):
    """Notes the result of a run of CHAPTER's checks in the progress file; FIRST is the failing
    check the screen shows first (default: the first in source order)."""
    data = read_progress(path)
    chapters = data.setdefault("chapters", {})
    first = first or (outcome.failed[0] if outcome.failed else None)
    chapters[chapter.label] = {
        "time": outcome.time or time.time(), "kind": chapter.kind,
        "passed": len(outcome.passed), "total": len(outcome.checks),
        "compiled": outcome.compiled, "complete": complete(outcome),
        "first_failure": first.title if first else ""}
    _write_json(Path(path or progress_file()), data)


def record_complete(record):
    """True when a progress record says its chapter is complete (records kept before the
    "complete" field: every check passed)."""
    if "complete" in record:
        return bool(record["complete"])
    return bool(record.get("compiled", True) and record.get("total")
                and record.get("passed") == record.get("total"))


def last_edit(chapter):
    """The time of the learner's last save of one of CHAPTER's files (0 when none exist)."""
    times = [p.stat().st_mtime for p in chapter.paths() if p.exists()]
    return max(times, default=0.0)


# ---- build logs -----------------------------------------------------------------------------

DIAGNOSTIC = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? "
                        r"(?P<kind>(?:fatal )?error|warning|note): ")
CONTEXT = re.compile(r"^([^\s:][^:]*: )?(In file included from|In function|In member function|"
                     r"In instantiation of|In static member function|In constructor|"
                     r"In lambda function|In substitution of|At global scope|"
                     r"\s*required (?:from|by)|\s*from )")


def _blocks(log):
    """The compiler's diagnostics in LOG, each [lines], in order: the context lines (In
    function, In instantiation of ... required from here) belong to the error after them."""
    blocks, current, pending = [], None, []
    for line in log.splitlines():
        if re.match(r"^\[\d+/\d+\] |^FAILED: |^ninja: |^/usr/bin/c\+\+ |^/usr/bin/g\+\+ |"
                    r"^\S*(?:c\+\+|g\+\+|clang\+\+) ", line):
            current, pending = None, []
            continue
        m = DIAGNOSTIC.match(line)
        if m and m.group("kind") != "note" and not CONTEXT.match(line):
            current = pending + [line]
            pending = []
            blocks.append((m.group("kind"), current))
        elif CONTEXT.match(line) and (current is None or not line.startswith(" ")):
            if current is not None and re.match(r"^\s*required (from|by)", line):
                current.append(line)
            else:
                pending.append(line)
                current = None
        elif current is not None:
            current.append(line)
        elif pending:
            pending.append(line)
    return blocks


def _learner_line(lines, folders):
    """The first file:line in LINES inside one of the learner's FOLDERS: where the error is, or
    the line of theirs that instantiated it ("required from here"), before the includes."""
    def found(line):
        for m in re.finditer(r"((?:/[^\s:]+/)?[^\s:]+):(\d+)(?::\d+)?", line):
            path = relative(m.group(1))
            if any(path.startswith(f.rstrip("/") + "/") for f in folders):
                return f"{path}:{m.group(2)}"
        return ""
    ranked = [l for l in lines if DIAGNOSTIC.match(l) or "required from" in l] + \
        [l for l in lines if "In file included" not in l and not l.lstrip().startswith("from ")]
    for line in ranked + lines:
        where = found(line)
        if where:
            return where
    return ""


def first_error(log, folders):
    """(where, lines) of the first compile or link error in LOG: the learner's file and line
    (inside FOLDERS, when the error reaches them) and the error with its context and notes."""
    for kind, lines in _blocks(log):
        if "error" in kind:
            return _learner_line(lines, folders), [relative(l) for l in lines]
    link = [l for l in log.splitlines() if "undefined reference" in l or "ld returned" in l]
    if link:
        return _learner_line(link, folders), [relative(l) for l in link[:12]]
    tail = [relative(l) for l in log.splitlines() if l.strip()][-12:]
    return "", tail


def own_warnings(log, folders):
    """The warnings whose file is one of the learner's (library headers' warnings are not
    theirs), each [lines]."""
    out = []
    for kind, lines in _blocks(log):
        head = next((l for l in lines if DIAGNOSTIC.match(l) and not CONTEXT.match(l)), "")
        m = DIAGNOSTIC.match(head)
        if kind == "warning" and m and any(relative(m.group("path")).startswith(f.rstrip("/") + "/")
                                           for f in folders):
            out.append([relative(l) for l in lines])
    return out


def build_target(build_dir, target, jobs=2):
    """(ok, log) of building one target (or a list of targets)."""
    use_build_dir(build_dir)
    targets = [target] if isinstance(target, str) else list(target)
    result = subprocess.run(["cmake", "--build", str(build_dir), "-j", str(jobs), "--target",
                             *targets], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    return result.returncode == 0, result.stdout


def syntax_warnings(build_dir, sources, folders):
    """The learner's warnings for SOURCES, from the compiler run with -fsyntax-only on their
    commands in compile_commands.json (when another build, e.g. ctest's, compiled them)."""
    import shlex
    try:
        entries = json.loads((Path(build_dir) / "compile_commands.json").read_text())
    except (OSError, ValueError):
        return []
    wanted = {str(Path(s).resolve()) for s in sources}
    out = []
    for entry in entries:
        if str(Path(entry.get("file", "")).resolve()) not in wanted:
            continue
        args = entry.get("arguments") or shlex.split(entry.get("command", ""))
        cmd, skip = [], False
        for a in args:
            if skip:
                skip = False
            elif a == "-o":
                skip = True
            elif a not in ("-c",):
                cmd.append(a)
        result = subprocess.run(cmd + ["-fsyntax-only"], cwd=entry.get("directory", ROOT),
                                text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out += own_warnings(result.stdout, folders)
    return out
