"""Running a chapter's checks, reading their results, and the hints for a failing check."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from .common import *  # noqa: F401,F403

# ---- running checks -------------------------------------------------------------------------


@dataclass
class Check:
    name: str
    passed: bool
    output: str


@dataclass
class Outcome:
    checks: list = field(default_factory=list)

    @property
    def passed(self):
        return [c for c in self.checks if c.passed]

    @property
    def failed(self):
        return [c for c in self.checks if not c.passed]


def run_checks(build_dir, label, jobs=2):
    """Runs the checks labelled exactly `label` and returns each one's result."""
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        subprocess.run(["ctest", "--test-dir", str(build_dir), "-L", f"^{label}$", "-j", str(jobs),
                        "--output-junit", str(junit)], cwd=ROOT, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        if not junit.exists():
            return Outcome()
        outcome = Outcome()
        for case in ET.parse(junit).getroot().iter("testcase"):
            out = case.find("system-out")
            outcome.checks.append(Check(case.get("name", ""), case.get("status") == "run",
                                        out.text if out is not None and out.text else ""))
        return outcome



# ---- results, kept in the build directory ---------------------------------------------------
#
# `check` and `grade` save each run's JUnit file under <build>/workbook/results/<label>.xml
# (one file per chapter); `status` and `hint` read them. `hint` remembers in
# <build>/workbook/hints.json how many hints of each check it has shown.

COURSE = ["chapter1", "chapter2", "chapter3", "chapter4", "chapter5", "chapter6", "chapter7",
          "chapter8", "chapter9", "capstone"]


def results_dir(build_dir):
    return Path(build_dir) / "workbook" / "results"


def parse_junit(path):
    """The checks of one ctest JUnit file, in the order ctest ran them."""
    outcome = Outcome()
    for case in ET.parse(path).getroot().iter("testcase"):
        out = case.find("system-out")
        failure = case.find("failure")
        text = out.text if out is not None and out.text else ""
        if failure is not None and failure.get("message") and not text:
            text = failure.get("message")
        outcome.checks.append(Check(case.get("name", ""), case.get("status") == "run", text))
    return outcome


def label_of(test_name):
    """'chapter6: causal mask ...' -> 'chapter6'."""
    return test_name.split(":", 1)[0].strip()


def short_name(test_name):
    return re.sub(r"^[\w-]+:\s*", "", test_name)


def save_results(build_dir, junit):
    """Splits one ctest JUnit file into per-chapter files under <build>/workbook/results."""
    out_dir = results_dir(build_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    by_label = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        by_label.setdefault(label_of(case.get("name", "")), []).append(case)
    for label, cases in by_label.items():
        suite = ET.Element("testsuite", name=label, tests=str(len(cases)),
                           failures=str(sum(c.get("status") != "run" for c in cases)))
        suite.extend(cases)
        tmp = out_dir / f".{label}.xml.tmp"
        ET.ElementTree(suite).write(tmp, encoding="unicode")
        os.replace(tmp, out_dir / f"{label}.xml")
    return sorted(by_label)


def run_ctest(build_dir, labels, jobs=2, timeout=300, quiet=True):
    """Runs the checks of `labels`, saves the per-chapter results, returns {label: Outcome}."""
    results_dir(build_dir).mkdir(parents=True, exist_ok=True)
    junit = results_dir(build_dir) / ".last-run.xml"
    junit.unlink(missing_ok=True)
    pattern = "^(" + "|".join(labels) + ")$"
    cmd = ["ctest", "--test-dir", str(build_dir), "-L", pattern, "-j", str(jobs),
           "--timeout", str(timeout), "--output-junit", str(junit.resolve())]
    if not quiet:
        cmd.append("--output-on-failure")
    result = subprocess.run(cmd, cwd=ROOT, text=True,
                            stdout=subprocess.DEVNULL if quiet else None,
                            stderr=subprocess.DEVNULL if quiet else None)
    outcomes = {label: Outcome() for label in labels}
    if junit.exists():
        save_results(build_dir, junit)
        for check in parse_junit(junit).checks:
            outcomes.setdefault(label_of(check.name), Outcome()).checks.append(check)
    return outcomes, result.returncode


def latest_results(build_dir, label):
    """(Outcome, stale) of the last run of `label`, or (None, False) if it never ran."""
    path = results_dir(build_dir) / f"{label}.xml"
    if not path.exists():
        return None, False
    exe = Path(build_dir) / f"test_{label}"
    stale = exe.exists() and exe.stat().st_mtime > path.stat().st_mtime
    return parse_junit(path), stale


def check_counts(build_dir):
    """{label: number of checks} as ctest knows them (no check is run)."""
    result = subprocess.run(["ctest", "--test-dir", str(build_dir), "--show-only=json-v1"],
                            cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    counts = {}
    try:
        import json
        for test in json.loads(result.stdout).get("tests", []):
            counts[label_of(test.get("name", ""))] = counts.get(label_of(test.get("name", "")), 0) + 1
    except ValueError:
        pass
    return counts



def reference_selection(build_dir, labels):
    """The labels compiled from solutions/ (WB_REFERENCE), and those overridden by a folder."""
    current = cache_value(build_dir, "WB_REFERENCE") or "none"
    if current.lower() == "all":
        selected = set(labels)
    else:
        selected = set()
        for c in current.split(";"):
            if c and c.lower() != "none":
                label = f"chapter{c}" if c.isdigit() else c
                selected.add(label)
    overrides = {l: cache_value(build_dir, f"WB_IMPL_DIR_{l}") for l in labels}
    return selected, {l: v for l, v in overrides.items() if v}



# ---- failure messages and hints -------------------------------------------------------------


def failure_lines(output, limit=8):
    """The key lines of a Catch2 failure: where, which function, expected vs got, the hint."""
    lines = output.splitlines()
    keep = []
    for i, line in enumerate(lines):
        if "FAILED:" not in line:
            continue
        where = re.sub(r"^.*?((?:tests|chapters|solutions)/\S+?):(\d+).*", r"\1:\2", line)
        keep.append(f"at {where.rstrip(':')}")
        previous = ""
        for follow in lines[i + 1:]:
            s = follow.strip()
            if follow.startswith(("----", "====")) or "FAILED:" in follow:
                break
            if not s or s.startswith("{Unknown expression") or s in (
                    "due to unexpected exception with message:", "explicitly with message:",
                    "with expansion:"):
                continue
            if re.match(r"^\S+\.cpp:\d+: (passed|FAILED)", s):
                break
            if keep and len(previous) >= 60 and not re.match(
                    r"(hint:|expected|actual|first mismatch|max \||message:)", s):
                # Catch2 wraps its messages at 80 columns: join the pieces again.
                glue = "" if re.search(r"([^ ][/-]|\.[a-z]+:)$", keep[-1]) or re.match(r"[|),.;:]", s) else " "
                keep[-1] += glue + s
            else:
                keep.append(s)
            previous = follow
        break  # the first failure is the one to fix
    if not keep:  # no Catch2 block (a crash, a timeout): the last lines say what happened
        keep = [l.strip() for l in lines if l.strip()][-limit:] or ["(no output)"]
    return keep[:limit]


def header_functions(folder):
    """The exercise functions a chapter declares, in header order."""
    names = []
    for header in sorted((ROOT / "chapters" / folder).glob("*.hpp")):
        text = re.sub(r"//[^\n]*", "", header.read_text())
        for name in re.findall(r"^[A-Za-z_][\w:<>, ]*?[\s&*]+(\w+)\s*\(", text, re.M):
            if name not in names and name not in ("if", "for", "while", "return", "operator"):
                names.append(name)
    return names


def failing_function(check, folder):
    """The chapter function a failing check is about: the one its message names (wb::f), else
    the first one its name mentions."""
    functions = header_functions(folder)
    text = check.output
    named = re.findall(r"wb::(\w+)", text)
    for name in named:
        if name in functions:
            return name
    title = short_name(check.name)
    for name in sorted(functions, key=len, reverse=True):
        if re.search(rf"\b{re.escape(name)}\b", title) or re.search(
                rf"\b{re.escape(name.replace('_', ' '))}\b", title):
            return name
    return None


def guide_items(folder, heading_word, item=r"- "):
    """The list items (bullets, or numbered items with item=r"\\d+\\. ") of the guide's sections
    whose heading contains heading_word, in order, each joined into one line."""
    guide = ROOT / "chapters" / folder / "README.md"
    if not guide.exists():
        return []
    bullets, inside, current = [], False, None
    for line in guide.read_text().splitlines():
        heading = re.match(r"^(#{1,6})\s+(.*)", line)
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


def guide_hints(folder):
    """The bullets of the guide's hint sections (headings containing 'hint'), in order."""
    return guide_items(folder, "hint")


def hints_for(check, folder):
    """The hints for one failing check, most specific first: the guide's bullets that name the
    function, then the check's own hint, then the chapter's other pitfalls."""
    function = failing_function(check, folder)
    bullets = guide_hints(folder)
    own = [l[5:].strip() for l in failure_lines(check.output, 20) if l.startswith("hint:")]
    if function:
        pattern = re.compile(rf"(`{re.escape(function)}\b|\b{re.escape(function)}\()")
        specific = [b for b in bullets if pattern.search(b)]
        tasks = [t for t in guide_items(folder, "task", r"\d+\.\s+") if pattern.search(t)]
    else:
        specific, tasks = [], []
    others = [b for b in bullets if b not in specific]
    # An unwritten function first needs its task; a wrong one, the check's own hint.
    first = [f"(the task) {t}" for t in tasks[:1]] if NOT_IMPLEMENTED in check.output else []
    hints = first + specific + others
    if not hints:  # a guide without hints: the check's own (already shown with the failure)
        hints = [f"(from the check) {h}" for h in own[:1]]
    return function, hints


def wrap(text, indent="    ", width=96):
    import textwrap
    return textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent)


