"""The learner's verbs: status, check, hint, use."""

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
from .results import *  # noqa: F401,F403

# ---- verbs ----------------------------------------------------------------------------------


def cmd_use(args):
    build_dir = Path(args.build_dir)
    if not (build_dir / "CMakeCache.txt").exists():
        raise WorkbookError(f"{build_dir} is not configured yet: run `cmake --preset student` first")
    labels = chapters_of(build_dir)
    current = cache_value(build_dir, "WB_REFERENCE") or "none"
    selected = labels[:] if current.lower() == "all" else [
        chapter_label(c, labels) for c in current.split(";") if c and c.lower() != "none"]
    targets = labels if args.chapter == "all" else [chapter_label(args.chapter, labels)]
    for label in targets:
        if args.kind == "reference" and label not in selected:
            selected.append(label)
        if args.kind == "student" and label in selected:
            selected.remove(label)
    value = "all" if set(selected) == set(labels) else (
        ";".join(l for l in labels if l in selected) or "none")
    configure(build_dir, WB_REFERENCE=value)
    print(f"WB_REFERENCE={value}")
    for label in labels:
        print(f"  {label:<9} {'reference' if label in selected else 'student'}")
    build(build_dir)
    print(f"rebuilt {build_dir}")



# ---- learner's verbs ------------------------------------------------------------------------


def cmd_status(args):
    build_dir = require_build(args.build_dir)
    labels = chapters_of(build_dir)
    selected, overrides = reference_selection(build_dir, labels)
    counts = check_counts(build_dir)
    done = total = complete = student = 0
    print(f"{'chapter':<9} {'source':<10} checks")
    for label in COURSE:
        if label not in labels:
            print(f"{label:<9} {'-':<10} not in this build")
            continue
        source = "override" if label in overrides else (
            "reference" if label in selected else "student")
        outcome, stale = latest_results(build_dir, label)
        n = counts.get(label, len(outcome.checks) if outcome else 0)
        if outcome is None or not outcome.checks:
            text = f"no results yet ({n} checks): tools/workbook check {label}"
            passed = 0
        else:
            passed = len(outcome.passed)
            n = max(n, len(outcome.checks))
            text = f"{passed:3d}/{n:<3d} passed"
            if passed == n:
                text += "  done"
            elif outcome.failed:
                text += f"  first failure: {short_name(outcome.failed[0].name)[:48]}"
            if stale:
                text += "  (rebuilt since: run check again)"
        print(f"{label:<9} {source:<10} {text}")
        if source == "student":
            student += 1
            done += 0 if stale else passed
            total += n
            complete += bool(n) and passed == n and not stale
    course_total = sum(counts.get(l, 0) for l in COURSE if l in labels) or total
    pct = 100 * done / course_total if course_total else 0
    taken = len([l for l in COURSE if l in labels]) - student
    print(f"\ncourse   {progress_bar(done, course_total)} {pct:3.0f}%  {done}/{course_total} "
          f"checks pass on your code, {complete}/{len([l for l in COURSE if l in labels])} "
          "chapters complete" + (f", {taken} taken from the reference" if taken else ""))
    if not student:
        print("every chapter is the reference: `tools/workbook use N student` to work on one")
    return 0


def cmd_check(args):
    build_dir = require_build(args.build_dir)
    labels = chapters_of(build_dir)
    targets = labels if args.chapter == "all" else [chapter_label(args.chapter, labels)]
    build(build_dir, None if args.chapter == "all" else f"test_{targets[0]}")
    outcomes, code = run_ctest(build_dir, targets, quiet=False)
    n = sum(len(o.checks) for o in outcomes.values())
    ok = sum(len(o.passed) for o in outcomes.values())
    print(f"{ok}/{n} checks pass; `tools/workbook status` for the course, "
          f"`tools/workbook hint {args.chapter}` for help with the first failure")
    return code


def hint_state(build_dir):
    import json
    path = Path(build_dir) / "workbook" / "hints.json"
    try:
        return path, json.loads(path.read_text())
    except (OSError, ValueError):
        return path, {}


def cmd_hint(args):
    import json
    if args.n is not None and args.n < 1:
        raise WorkbookError(f"hint number must be 1 or more, got {args.n}")
    build_dir = require_build(args.build_dir)
    labels = chapters_of(build_dir)
    label = chapter_label(args.chapter, labels)
    outcome, stale = latest_results(build_dir, label)
    if args.rerun or outcome is None or not outcome.checks or stale:
        print(f"running {label}'s checks ...", flush=True)
        build(build_dir, f"test_{label}")
        outcome = run_ctest(build_dir, [label])[0][label]
    if not outcome.checks:
        raise WorkbookError(f"{label} has no checks in {build_dir}")
    if not outcome.failed:
        print(f"{label}: all {len(outcome.checks)} checks pass, no hint needed")
        return 0
    check = outcome.failed[0]
    folder = folder_of(build_dir, label)
    function, hints = hints_for(check, folder)
    print(f"{label}: {len(outcome.failed)} of {len(outcome.checks)} checks fail; the first:")
    print(f"  {short_name(check.name)}")
    for line in failure_lines(check.output):
        print(wrap(line, "    ", 110))
    if function:
        print(f"  function: wb::{function} (chapters/{folder}/)")
    if not hints:
        print("  no hints for this check: read the guide, chapters/" + folder + "/README.md")
        return 0
    path, state = hint_state(build_dir)
    shown = state.get(check.name, 0)
    n = args.n if args.n is not None else shown + 1
    if n > len(hints):
        print(f"\n  no more hints: all {len(hints)} shown "
              f"(`tools/workbook hint {args.chapter} 1` shows the first again)")
        return 0
    print(f"\n  hint {n} of {len(hints)}:")
    print(wrap(hints[n - 1]))
    if n < len(hints):
        print(f"\n  (`tools/workbook hint {args.chapter}` again for hint {n + 1})")
    state[check.name] = max(shown, n)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, path)
    return 0


