"""`workbook quiz N`: asks a chapter's numeric "Before you code" questions and checks each
answer within the tolerance its guide gives.

The questions live in one place, the chapter's guide (README.md, or README.zh.md with
--zh): each numeric one carries a marker `<!-- quiz answer=… rtol=… -->` (or `atol=`), which
`workbook guides` holds the same in both editions (guidecheck.py).
"""

import math
import re
import sys
from fractions import Fraction

from .common import ROOT, WorkbookError
from .guidecheck import questions
from .hints import markdown_to_text, wrap

NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?", re.I)


def chapter_folder(text):
    """The folder of chapter TEXT: `4`, `chapter4`, `4-sdpa` or `capstone`."""
    key = str(text).strip().lower()
    if key.startswith("chapter"):
        key = key[len("chapter"):]
    for folder in sorted((ROOT / "chapters").iterdir()):
        if not (folder / "README.md").exists():
            continue
        name = folder.name.lower()
        if key in (name, name.split("-")[0]):
            return folder
    raise WorkbookError(f"no chapter {text!r} (try 1 … 9 or capstone)")


def parse_answer(text):
    """A learner's number: 0.25, -1.5e-3, 1,024, 3/4, 25%, 1.2·10^9, 1.2×10⁹ (x 10^9). Raises
    ValueError for anything else."""
    s = text.strip().replace(" ", "").replace("\u2212", "-")
    if not s:
        raise ValueError("empty answer")
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)  # thousands separators
    supers = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
    m = re.fullmatch(r"(.+?)(?:[·*×x]10(?:\^|\*\*)?([-+]?\d+|[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+))", s)
    if m:
        mantissa, exponent = m.group(1), m.group(2).translate(supers)
        return parse_answer(mantissa) * 10.0 ** int(exponent)
    if s.endswith("%"):
        return parse_answer(s[:-1]) / 100
    if "/" in s:
        num, _, den = s.partition("/")
        try:
            value = Fraction(num) / Fraction(den)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"not a number: {text.strip()!r}") from None
        return float(value)
    if not NUMBER.fullmatch(s):
        raise ValueError(f"not a number: {text.strip()!r}")
    value = float(s)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text.strip()!r}")
    return value


def is_right(value, quiz):
    """Whether VALUE is within the question's tolerance of its answer."""
    answer = quiz["answer"]
    limit = max(quiz.get("rtol", 0.0) * abs(answer), quiz.get("atol", 0.0))
    if limit == 0.0:  # an exact count: allow for the rounding of a written decimal
        limit = 1e-9 * max(1.0, abs(answer))
    return abs(value - answer) <= limit


def numeric_questions(folder, chinese=False):
    guide = folder / ("README.zh.md" if chinese else "README.md")
    if not guide.exists():
        raise WorkbookError(f"{guide.relative_to(ROOT)}: no such guide")
    found = [q for q in questions(guide.read_text(encoding="utf-8")) if q["quiz"]]
    if not found:
        raise WorkbookError(f"{guide.relative_to(ROOT)} has no numeric questions")
    return found


def ask(qs, read=input, write=print, tries=3):
    """Asks each question; returns (right, asked). An unreadable answer is asked again (up to
    TRIES times); an empty line skips the question; the end of the input stops."""
    right = asked = 0
    for q in qs:
        write("")
        write(wrap(markdown_to_text(re.sub(r"\s*\n\s*", " ", q["text"])), indent=""))
        for _ in range(tries):
            try:
                line = read("  your answer: ")
            except EOFError:
                write("")
                return right, asked
            if not line.strip():
                write("  skipped")
                break
            try:
                value = parse_answer(line)
            except ValueError as error:
                write(f"  {error}: answer with a number (0.25, 1e-3, 3/4, 25%, 1.2·10^9)")
                continue
            asked += 1
            if is_right(value, q["quiz"]):
                right += 1
                write(f"  right ({q['quiz']['answer']:g})")
            else:
                write(f"  not quite: the answer is {q['quiz']['answer']:g}; unfold Q{q['n']}'s "
                      "answer in the guide for why")
            break
    return right, asked


def cmd_quiz(args):
    folder = chapter_folder(args.chapter)
    qs = numeric_questions(folder, chinese=args.zh)
    if args.only:
        qs = [q for q in qs if q["n"] in args.only]
        if not qs:
            raise WorkbookError(f"no numeric question {args.only} in {folder.name}")
    if args.list:
        for q in qs:
            print(markdown_to_text(re.sub(r"\s*\n\s*", " ", q["text"])))
        return 0
    print(f"{folder.name}: {len(qs)} numeric question(s); an empty line skips one.")
    interactive = sys.stdin.isatty()
    right, asked = ask(qs, read=input if interactive else _reader(sys.stdin))
    print(f"\n{right} of {len(qs)} right" + (f" ({len(qs) - asked} skipped)" if asked < len(qs)
                                            else ""))
    return 0 if right == len(qs) else 1


def _reader(stream):
    """input() for a pipe: prints the prompt, reads one line, raises EOFError at the end."""
    def read(prompt):
        sys.stdout.write(prompt)
        line = stream.readline()
        if not line:
            raise EOFError
        sys.stdout.write(line if line.endswith("\n") else line + "\n")
        return line
    return read
