"""Hint ladders: each exercise function's rungs (idea, approach, key line), as a guide writes
them under "## Hint ladders" (English) or "## 提示阶梯" (Chinese):

    ### `wb::weighted_sum`

    1. **Idea.** ...
    2. **Approach.** ...
    3. **Key line.** `...`

The tool adds the last rung, the reference itself (reference_rung), so a guide never gives
the answer as its second hint."""

import re
from pathlib import Path

LADDER_HEADINGS = ("hint ladders", "提示阶梯")
RUNG_LABELS = {"en": ("Idea.", "Approach.", "Key line."), "zh": ("思路。", "做法。", "关键一行。")}


def parse_ladders(text):
    """{function name: [rung text, ...]} of a guide's ladder section, in the guide's order
    (rung texts joined into one line each, the bold label kept). {} when there is none."""
    ladders, current, rung, inside, fence = {}, None, None, False, False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fence = not fence
            continue
        heading = None if fence else re.match(r"^(#{2,6})\s+(.*?)\s*$", line)
        if heading and len(heading.group(1)) == 2:
            inside = heading.group(2).strip().lower() in LADDER_HEADINGS
            current = None
            continue
        if not inside:
            continue
        if heading:
            name = re.fullmatch(r"`(?:wb::)?(\w+)`", heading.group(2).strip())
            current = name.group(1) if name else None
            if current is not None:
                ladders.setdefault(current, [])
            rung = None
            continue
        if current is None:
            continue
        start = re.match(r"^\d+\.\s+(.*)", line)
        if start:
            ladders[current].append(start.group(1).strip())
            rung = len(ladders[current]) - 1
        elif rung is not None and line.startswith("   ") and line.strip():
            ladders[current][rung] += " " + line.strip()
        elif not line.strip():
            rung = None
    return ladders


def ladder_for(guide, function):
    """The rungs the guide at path GUIDE writes for FUNCTION ([] when none)."""
    path = Path(guide) if guide else None
    if not function or path is None or not path.exists():
        return []
    return parse_ladders(path.read_text(encoding="utf-8")).get(function, [])


def reference_rung(chapter, function, root):
    """The last rung: the reference itself, and how to get back to one's own code."""
    where = ""
    folder = Path(root) / "solutions" / chapter.folder
    for path in sorted(folder.glob("*.cpp")) if folder.is_dir() else []:
        if function and re.search(rf"^[A-Za-z_].*\b{re.escape(function)}\s*\(",
                                  path.read_text(encoding="utf-8"), re.M):
            where = f" (its {function} is in solutions/{chapter.folder}/{path.name})"
            break
    return (f"the reference: `tools/workbook use {chapter.number} reference` builds this "
            f"chapter from the reference{where}, so you can go on to the next chapter; "
            f"`tools/workbook use {chapter.number} student` brings your code back")


def ladder_problems(english, chinese):
    """Differences between the two editions' ladders (texts), as lines; [] when they agree."""
    a, b = parse_ladders(english), parse_ladders(chinese)
    problems = []
    if list(a) != list(b):
        problems.append(f"hint ladders differ: English has {list(a)}, Chinese {list(b)}")
    for name in a:
        if name in b and len(a[name]) != len(b[name]):
            problems.append(f"hint ladder of {name}: {len(a[name])} rungs in English, "
                            f"{len(b[name])} in Chinese")
    for edition, ladders, labels in (("English", a, RUNG_LABELS["en"]),
                                     ("Chinese", b, RUNG_LABELS["zh"])):
        for name, rungs in ladders.items():
            got = [next((l for l in labels if r.startswith(f"**{l}**")), None) for r in rungs]
            if tuple(got) != labels:
                problems.append(f"{edition} hint ladder of {name}: expected the rungs "
                                f"{', '.join(labels)} in that order, each starting with its "
                                "bold label")
    return problems


def stub_functions(folder):
    """The exercise functions of chapters/FOLDER: those whose body in a stub is WB_STUB()."""
    names = []
    for path in sorted(Path(folder).glob("*.cpp")):
        text = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
        for match in re.finditer(r"\b(\w+)\s*\([^;{]*\)\s*(?:const\s*)?\{(?:(?!\n\}).)*?WB_STUB\(\)",
                                 text, re.S):
            if match.group(1) not in names:
                names.append(match.group(1))
    return names
