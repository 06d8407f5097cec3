"""The chapter tables of README.md and README.zh.md against the course as CMake describes it
(<build>/workbook/course.json): the same chapters, in course order, each row linking the
chapter's own guide in the table's language. A chapter added to the build and not to the
tables (or a row left behind) fails here, in CI.
"""

import re

from .common import ROOT, WorkbookError
from .course import any_course

# A table row of the chapters: | `chapter3` | [title](chapters/3-positions/README.md) | ...
ROW = re.compile(r"^\|\s*`(?P<label>[\w-]+)`\s*\|\s*\[[^\]]*\]\((?P<link>[^)#]+)[^)]*\)")
TABLES = {"README.md": "README.md", "README.zh.md": "README.zh.md"}


def table_rows(markdown):
    """[(label, link)] of the chapter table rows of a README."""
    return [(m.group("label"), m.group("link")) for m in map(ROW.match, markdown.splitlines())
            if m]


def table_problems(course, readme, markdown, guide_name):
    """What differs between the README's chapter table and the course, as sentences."""
    wanted = [(c.label, f"chapters/{c.folder}/{guide_name}") for c in course.chapters]
    found = table_rows(markdown)
    problems = []
    for label, link in wanted:
        if label not in [f[0] for f in found]:
            problems.append(f"{readme}: no row for {label} (its guide is {link})")
    for label, link in found:
        if label not in [w[0] for w in wanted]:
            problems.append(f"{readme}: a row for {label}, which the build does not have")
        elif (label, link) not in wanted:
            problems.append(f"{readme}: the row of {label} links {link}, expected "
                            f"{dict(wanted)[label]}")
    order = [f[0] for f in found if f[0] in dict(wanted)]
    if not problems and order != [w[0] for w in wanted]:
        problems.append(f"{readme}: rows in the order {', '.join(order)}, expected course order")
    return problems


def cmd_tables(args):
    """Checks the chapter tables of the READMEs against course.json."""
    course = any_course(args.build_dir)
    if course is None:
        raise WorkbookError("no configured build: run `cmake --preset solutions` first")
    problems = []
    for readme, guide_name in TABLES.items():
        problems += table_problems(course, readme, (ROOT / readme).read_text(encoding="utf-8"),
                                   guide_name)
    for p in problems:
        print(p)
    if not problems:
        print(f"the chapter tables of {' and '.join(TABLES)} list the {len(course.chapters)} "
              "chapters of the build, in course order")
    return 1 if problems else 0
