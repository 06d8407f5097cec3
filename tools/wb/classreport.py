"""`workbook grade`: one student tree (graded by instructor.py), or with `--class DIR` every
tree below DIR graded, and the class summed up.

Each tree (a folder of DIR holding chapters/ or chapter folders) is graded by grade_tree in its
own build folder, <build-dir>/<tree>, kept between runs so a second run rebuilds only what a
student changed. The summary, in Markdown and CSV: per chapter how many trees complete and the
most common first failing check; per check how many trees pass it; the trees that do not
compile. Per-student reports (--reports) are the Markdown of a single `grade`.
"""

import csv
import io
import os
from collections import Counter
from pathlib import Path

from .common import ROOT, WorkbookError
from .instructor import grade_tree, print_report, write_grade_junit, write_grade_markdown


def class_trees(class_dir):
    """The student trees in CLASS_DIR, by name: folders holding chapters/ or a chapter folder
    (a folder name starting with a digit, or capstone)."""
    class_dir = Path(class_dir)
    if not class_dir.is_dir():
        raise WorkbookError(f"--class {class_dir.resolve()}: no such folder")
    trees, skipped = [], []
    for path in sorted(p for p in class_dir.iterdir() if p.is_dir()):
        if (path / "chapters").is_dir() or any(
                p.is_dir() and (p.name[:1].isdigit() or p.name == "capstone")
                for p in path.iterdir()):
            trees.append(path)
        else:
            skipped.append(path.name)
    if not trees:
        raise WorkbookError(f"--class {class_dir.resolve()}: no student tree in it (a folder "
                            "per student, each a copy of the repository or of chapters/)")
    return trees, skipped


def summarise(reports):
    """The class from the single reports: {chapters: [{label, graded, complete, first_failure,
    first_count, checks: [{name, passed, graded}]}], not_compiled: [(tree, label, note)],
    trees}."""
    labels = []
    for r in reports:
        for ch in r["chapters"]:
            if ch["label"] not in labels:
                labels.append(ch["label"])
    chapters, broken = [], []
    for label in labels:
        entries = [(r["tree"], ch) for r in reports for ch in r["chapters"] if ch["label"] == label]
        checks, firsts = {}, Counter()
        for tree, ch in entries:
            if not ch.get("compiled", True):
                broken.append((tree, label, ch["note"]))
            for c in ch["checks"]:
                if ch.get("compiled", True):  # a tree that does not compile fails them all
                    item = checks.setdefault(c["name"], {"name": c["name"], "passed": 0})
                    item["passed"] += c["passed"]
            first = next((c for c in ch["checks"] if not c["passed"]), None)
            if first is not None:
                firsts["(does not compile)" if not ch.get("compiled", True)
                       else first["name"]] += 1
        for item in checks.values():
            item["graded"] = len(entries)  # a tree without the check (not compiled) fails it
        top = firsts.most_common(1)
        chapters.append({"label": label, "graded": len(entries),
                         "complete": sum(ch["passed"] == len(ch["checks"]) and ch["checks"] != []
                                         for _, ch in entries),
                         "first_failure": top[0][0] if top else "",
                         "first_count": top[0][1] if top else 0,
                         "checks": list(checks.values())})
    return {"trees": [r["tree"] for r in reports], "chapters": chapters, "not_compiled": broken}


def fill_unbuilt(reports):
    """A chapter that did not compile has placeholder checks (its build folder never listed
    them): it gets, failed, the checks another tree's build of that chapter ran, so every
    tree's score counts the same checks."""
    known = {}
    for r in reports:
        for ch in r["chapters"]:
            if ch.get("compiled", True) and len(ch["checks"]) > len(known.get(ch["label"], [])):
                known[ch["label"]] = [c["name"] for c in ch["checks"]]
    for r in reports:
        for ch in r["chapters"]:
            if not ch.get("compiled", True) and ch["label"] in known:
                ch["checks"] = [{"name": n, "passed": False, "lines": [ch["note"]]}
                                for n in known[ch["label"]]]
                ch["passed"] = 0
        r["passed"] = sum(ch["passed"] for ch in r["chapters"])
        r["total"] = sum(len(ch["checks"]) for ch in r["chapters"])
        r["percent"] = 100 * r["passed"] / r["total"] if r["total"] else 0


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def class_markdown(summary, scores):
    n = len(summary["trees"])
    out = [f"# Workbook class report: {n} trees", "",
           "| chapter | complete | most common first failure |", "|---|---|---|"]
    for ch in summary["chapters"]:
        first = (f"{cell(ch['first_failure'])} ({ch['first_count']} of {ch['graded']})"
                 if ch["first_count"] else "—")
        out.append(f"| {ch['label']} | {ch['complete']}/{ch['graded']} | {first} |")
    out += ["", "## Trees", "", "| tree | score | chapters complete |", "|---|---|---|"]
    for tree, (passed, total, complete, chapters) in scores.items():
        out.append(f"| {cell(tree)} | {passed}/{total} | {complete}/{chapters} |")
    out += ["", "## Trees that do not compile", ""]
    out += [f"- **{cell(tree)}** {label}: {cell(note)}" for tree, label, note
            in summary["not_compiled"]] or ["none"]
    for ch in summary["chapters"]:
        out += ["", f"## {ch['label']}: checks passed", "", "| check | passed |", "|---|---|"]
        out += [f"| {cell(c['name'])} | {c['passed']}/{c['graded']} |" for c in ch["checks"]]
    return "\n".join(out) + "\n"


CSV_FIELDS = ["kind", "chapter", "name", "passed", "graded", "note"]


def class_csv(summary):
    """One table: a row per chapter (complete trees, the most common first failure), per check
    (trees passing it) and per tree that does not compile."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for ch in summary["chapters"]:
        writer.writerow(["chapter", ch["label"], "", ch["complete"], ch["graded"],
                         f"most common first failure: {ch['first_failure']} "
                         f"({ch['first_count']})" if ch["first_count"] else ""])
        for c in ch["checks"]:
            writer.writerow(["check", ch["label"], c["name"], c["passed"], c["graded"], ""])
    for tree, label, note in summary["not_compiled"]:
        writer.writerow(["does not compile", label, tree, 0, 1, note])
    return buffer.getvalue()


def write_atomic(path, text):
    path = Path(path)
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def grade_class(args):
    if args.junit:
        raise WorkbookError("--junit is one tree's report; with --class, --reports DIR writes "
                            "each tree's Markdown")
    trees, skipped = class_trees(args.class_dir)
    base = Path(args.build_dir or ROOT / "build" / "class")
    names = [t.name for t in trees]
    if len(set(names)) != len(names):
        raise WorkbookError("--class: two trees share a name")
    if skipped:
        print(f"not a student tree (skipped): {', '.join(skipped)}")
    reports, scores = [], {}
    for tree in trees:
        report = grade_tree(tree, base / tree.name, args.only, args.jobs, args.timeout,
                            args.extra_tests, say=lambda text: None)
        report["tree"] = tree.name
        reports.append(report)
        broken = [ch["label"] for ch in report["chapters"] if not ch.get("compiled", True)]
        print(f"{tree.name:<20} {report['passed']:4d} checks passed  "
              f"{report['complete']}/{len(report['chapters'])} chapters complete"
              + (f"  does not compile: {', '.join(broken)}" if broken else ""), flush=True)
    fill_unbuilt(reports)
    for report in reports:
        scores[report["tree"]] = (report["passed"], report["total"], report["complete"],
                                  len(report["chapters"]))
        if args.reports:
            Path(args.reports).mkdir(parents=True, exist_ok=True)
            write_grade_markdown(Path(args.reports) / f"{report['tree']}.md", report)
    summary = summarise(reports)
    text = class_markdown(summary, scores)
    print()
    print("\n".join(text.splitlines()[2:3 + len(summary["chapters"]) + 1]))
    if args.markdown:
        write_atomic(args.markdown, text)
        print(f"wrote {args.markdown}")
    if args.csv:
        write_atomic(args.csv, class_csv(summary))
        print(f"wrote {args.csv}")
    if args.reports:
        print(f"wrote {len(reports)} reports in {args.reports}")
    return 0


# `workbook grade`: one tree, or with --class a folder of trees (grade_class above).
def cmd_grade(args):
    if args.class_dir:
        return grade_class(args)
    build_dir = Path(args.build_dir or ROOT / "build" / "grade")
    report = grade_tree(args.tree, build_dir, args.only, args.jobs, args.timeout,
                        args.extra_tests, say=lambda text: print(text, flush=True))
    print_report(report, args.verbose, args.lines)
    if args.junit:
        write_grade_junit(args.junit, report)
        print(f"wrote {args.junit}")
    if args.markdown:
        write_grade_markdown(args.markdown, report)
        print(f"wrote {args.markdown}")
    return 0 if report["passed"] == report["total"] and report["total"] else 1
