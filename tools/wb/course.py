"""The course as CMake describes it: <build>/workbook/course.json, written by cmake/Workbook.cmake.

The tool keeps no chapter list of its own and never parses CMake files: the labels, folders,
titles, files, and whether each chapter is compiled from the stub, the reference or an
override folder all come from that file.
"""

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .common import ROOT, WorkbookError

COURSE_FILE = Path("workbook") / "course.json"


@dataclass
class Chapter:
    label: str                # chapter3, capstone: what `ctest -L` takes
    folder: str               # 3-positions
    title: str = ""           # the guide's first heading
    kind: str = "stub"        # stub, reference or override
    source: str = ""          # the folder compiled (relative to the repository when inside it)
    files: list = field(default_factory=list)   # the learner's files: compiled .cpp and headers
    tests: list = field(default_factory=list)   # the checks' source files
    guide: str = ""
    target: str = ""

    @property
    def number(self):
        """'3' for chapter3, 'capstone' for capstone: the short name used on the command line."""
        return self.label[len("chapter"):] if self.label.startswith("chapter") else self.label

    def paths(self):
        """The absolute paths of the learner's files (what `watch` polls)."""
        return [Path(p) if Path(p).is_absolute() else ROOT / p for p in self.files]


def same_chapter(text, label):
    """True when TEXT names chapter LABEL, by the rule of wb_uses_reference in
    cmake/Workbook.cmake: case does not matter, and a chapter is its label or its number."""
    text = str(text).strip().lower()
    number = label[len("chapter"):] if label.startswith("chapter") else label
    return text in (label.lower(), number.lower())


@dataclass
class Course:
    chapters: list
    reference: str = "none"   # WB_REFERENCE as the user wrote it
    build_dir: Path = None

    @property
    def labels(self):
        return [c.label for c in self.chapters]

    def find(self, text):
        """The chapter named by '3', 'chapter3', 'Chapter3' or 'capstone'."""
        for chapter in self.chapters:
            if same_chapter(text, chapter.label):
                return chapter
        from .i18n import say
        raise WorkbookError(say("unknown_chapter", text=text,
                                known=", ".join(c.number for c in self.chapters)))

    def get(self, label):
        return next(c for c in self.chapters if c.label == label)

    def after(self, label):
        """The chapter that follows LABEL in course order, or None."""
        labels = self.labels
        i = labels.index(label)
        return self.chapters[i + 1] if i + 1 < len(labels) else None

    def reference_value(self, changes):
        """The WB_REFERENCE value after CHANGES ({label: 'student' | 'reference'}): the labels
        compiled from solutions/, `all` or `none`."""
        selected = {c.label for c in self.chapters if c.kind == "reference"}
        for label, kind in changes.items():
            (selected.add if kind == "reference" else selected.discard)(label)
        if selected == set(self.labels):
            return "all"
        return ";".join(label for label in self.labels if label in selected) or "none"


def parse_course(text, build_dir=None):
    """A Course from the text of course.json."""
    try:
        data = json.loads(text)
        chapters = [Chapter(**{k: v for k, v in c.items() if k in Chapter.__dataclass_fields__})
                    for c in data["chapters"]]
    except (ValueError, KeyError, TypeError) as error:
        raise WorkbookError(f"{COURSE_FILE} is not a course description ({error}): "
                            "configure again (cmake --preset student)")
    return Course(chapters, str(data.get("reference", "none")), build_dir)


def load_course(build_dir, refresh=True):
    """The course of a configured build folder. A build configured before course.json existed
    is re-configured once (nothing else changes)."""
    build_dir = Path(build_dir)
    if not (build_dir / "CMakeCache.txt").exists():
        from .i18n import say
        raise WorkbookError(say("not_configured", build=build_dir))
    path = build_dir / COURSE_FILE
    if not path.exists() and refresh:
        subprocess.run(["cmake", str(build_dir)], cwd=ROOT, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    if not path.exists():
        raise WorkbookError(f"{path} is missing: configure again (cmake -S . -B {build_dir})")
    return parse_course(path.read_text(encoding="utf-8"), build_dir)


def any_course(build_dir):
    """The course of BUILD_DIR if it is configured, else of any configured build of this
    repository (to name a chapter before a build exists), else of BUILD_DIR once configured."""
    build_dir = Path(build_dir)
    if (build_dir / "CMakeCache.txt").exists():
        return load_course(build_dir)
    found = sorted(ROOT.glob("build/*/" + str(COURSE_FILE)), key=lambda p: p.stat().st_mtime)
    if found:
        return parse_course(found[-1].read_text(encoding="utf-8"), found[-1].parents[1])
    return None
