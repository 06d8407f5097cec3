"""`workbook quiz N`: asks a chapter's numeric questions and checks each answer to the
precision the question states.

The questions live in one place, the chapter's guide (README.md, or README.zh.md in Chinese):
the predictions in the text and the "Before you code" questions, each numeric one with a marker
`<!-- quiz answer=… decimals=… -->` (or `sig=`, or nothing for an exact count), which
`workbook guides` holds the same in both editions and checks against the precision the
question's words state (guidecheck.py).

An answer is right when it rounds like the answer to the precision asked (0.33 for 1/3 "to 2
decimals"). An answer that is the answer rounded to fewer digits (0.3) is not wrong: the quiz
asks for more digits. A wrong answer gets a second try before the answer is shown.

The quiz speaks the learner's language: --lang (or --zh), else the "lang" key of the progress
file (`workbook lang`), else zh when LC_ALL, LC_MESSAGES or LANG starts with zh.
"""

import math
import os
import re
import sys
import unicodedata
from fractions import Fraction
from pathlib import Path

from .common import ROOT, WorkbookError
from .guidecheck import precision_words, questions
from .hints import markdown_to_text
from .results import read_progress

NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?", re.I)

TEXTS = {
    "en": {
        "header": "{folder}: {n} numeric question(s), each to the precision it states; an "
                  "empty line skips one.",
        "prompt": "  your answer ({precision}): ",
        "exact": "the exact number",
        "right": "  right ({answer})",
        "more digits": "  {given} is the answer rounded to fewer digits: give more digits "
                       "({precision})",
        "try again": "  not quite: try once more (an empty line skips)",
        "wrong": "  not quite: the answer is {answer}; unfold {id}'s answer in the guide for why",
        "skipped": "  skipped",
        "unreadable": "  {error}: answer with a number (0.25, 1e-3, 3/4, 25%, 1.2·10^9)",
        "not a number": "not a number: {text!r}",
        "summary": "{right} of {n} right",
        "skipped count": " ({skipped} skipped)",
        "no chapter": "no chapter {text!r} (try 1 … 9, capstone or experiments)",
        "no guide": "{guide}: no such guide",
        "no questions": "{guide} has no numeric questions",
        "no such question": "no numeric question {only} in {folder}",
    },
    "zh": {
        "header": "{folder}：{n} 道数值题，按题目说明的精度作答；空行跳过一题。",
        "prompt": "  你的答案（{precision}）：",
        "exact": "精确值",
        "right": "  对了（{answer}）",
        "more digits": "  {given} 是答案舍入到更少位数的结果：请多给几位（{precision}）",
        "try again": "  不太对：再试一次（空行跳过）",
        "wrong": "  还是不对：答案是 {answer}；展开指南中 {id} 的答案看原因",
        "skipped": "  已跳过",
        "unreadable": "  {error}：请用数字作答（0.25、1e-3、3/4、25%、1.2·10^9）",
        "not a number": "不是数字：{text!r}",
        "summary": "答对 {right} / {n} 题",
        "skipped count": "（跳过 {skipped} 题）",
        "no chapter": "没有第 {text!r} 章（可用 1 … 9、capstone 或 experiments）",
        "no guide": "{guide}：没有这份指南",
        "no questions": "{guide} 中没有数值题",
        "no such question": "{folder} 中没有数值题 {only}",
    },
}


def say(language, key, **fields):
    """The quiz's line KEY in LANGUAGE, filled in."""
    return TEXTS[language][key].format(**fields)


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
    raise WorkbookError(say("en", "no chapter", text=text))


def read_number(text):
    """A learner's number and the unit of its last written digit: (0.87, 0.01) for "0.87",
    (1.8e10, 1e9) for "1.8e10", (1200, 100) for "1200", (0.25, 0.01) for "25%"; the unit is
    None for a fraction (3/4 is exact). Spellings: 0.25, -1.5e-3, 1,024, 3/4, 25%, 1.2·10^9,
    1.2×10⁹ (x 10^9). Raises ValueError for anything else."""
    value, unit, _ = _read(text)
    return value, unit


def _read(text):
    """read_number's (value, unit) and whether the text is a plain integer (digits only: 1200,
    not 1.2e3)."""
    s = text.strip().replace(" ", "").replace("\u2212", "-")
    if not s:
        raise ValueError("empty answer")
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)  # thousands separators
    supers = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
    m = re.fullmatch(r"(.+?)(?:[·*×x]10(?:\^|\*\*)?([-+]?\d+|[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+))", s)
    if m:
        mantissa, exponent = m.group(1), int(m.group(2).translate(supers))
        value, unit, _ = _read(mantissa)
        return (value * 10.0 ** exponent, None if unit is None else unit * 10.0 ** exponent,
                False)
    if s.endswith("%"):
        value, unit, _ = _read(s[:-1])
        return value / 100, None if unit is None else unit / 100, False
    if "/" in s:
        num, _, den = s.partition("/")
        try:
            value = Fraction(num) / Fraction(den)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"not a number: {text.strip()!r}") from None
        return float(value), None, False
    if not NUMBER.fullmatch(s):
        raise ValueError(f"not a number: {text.strip()!r}")
    value = float(s)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text.strip()!r}")
    mantissa, _, exponent = s.lower().lstrip("+-").partition("e")
    if "." in mantissa:
        unit = 10.0 ** -len(mantissa.partition(".")[2])
    else:  # an integer: its trailing zeros are not digits given (1200 is 1.2·10³)
        digits = mantissa.lstrip("0")
        unit = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if digits else 1.0
    return value, unit * 10.0 ** int(exponent or 0), "." not in mantissa and not exponent


def parse_answer(text):
    """A learner's number (see read_number). Raises ValueError for anything else."""
    return read_number(text)[0]


def wanted_unit(quiz):
    """The unit of the last digit the question asks for (0.01 for 2 decimals), 0 for an exact
    number."""
    answer = quiz["answer"]
    if "decimals" in quiz:
        return 10.0 ** -quiz["decimals"]
    if "sig" in quiz:
        exponent = math.floor(math.log10(abs(answer))) if answer else 0
        return 10.0 ** (exponent - quiz["sig"] + 1)
    return 2 * max(quiz.get("rtol", 0.0) * abs(answer), quiz.get("atol", 0.0))


def is_right(value, quiz):
    """Whether VALUE is the answer to the precision the question asks: within half a unit of
    its last digit (0.33 and 0.334 for 0.3333 "to 2 decimals"); an exact number allows for the
    rounding of a written decimal only."""
    answer = quiz["answer"]
    limit = wanted_unit(quiz) / 2
    if limit == 0.0:
        limit = 1e-9 * max(1.0, abs(answer))
    return abs(value - answer) <= limit * (1 + 1e-9) + 1e-12 * abs(answer)


def judge(text, quiz):
    """The verdict on the answer TEXT: "right", "more digits" (the answer rounded to the
    fewer digits TEXT gives: 0.9 for 0.8668 "to 2 decimals") or "wrong". Raises ValueError when
    TEXT is not a number."""
    value, unit, plain_integer = _read(text)
    if is_right(value, quiz):
        return "right"
    answer = quiz["answer"]
    if plain_integer and not any(k in quiz for k in ("decimals", "sig", "rtol", "atol")):
        unit = 1.0  # a count's trailing zeros are digits: 70 is not 72 rounded
    if (unit is not None and unit > wanted_unit(quiz) * (1 + 1e-9)
            and abs(value - answer) <= unit / 2 * (1 + 1e-9)):
        return "more digits"
    return "wrong"


def show(number):
    """A number as the quiz prints it: 0.8668, 72, 1.77·10^10."""
    text = f"{number:g}"
    m = re.fullmatch(r"(-?[\d.]+)e([-+]\d+)", text)
    return f"{m.group(1)}·10^{int(m.group(2))}" if m else text


def precision_of(quiz, language):
    return precision_words(quiz, language) or say(language, "exact")


# Guides with questions that are not a chapter's: `workbook quiz experiments`.
PAGES = {"experiments": ROOT / "docs" / "experiments.md"}


def guide_of(text):
    """The English guide named TEXT: a chapter (see chapter_folder) or a page of PAGES."""
    key = str(text).strip().lower()
    if key in PAGES:
        return PAGES[key]
    return chapter_folder(text) / "README.md"


def numeric_questions(folder, chinese=False):
    """The numeric questions of the guide in FOLDER (a chapter's folder, or a guide's path)."""
    english = folder if folder.suffix == ".md" else folder / "README.md"
    guide = english.with_name(english.stem + ".zh.md") if chinese else english
    language = "zh" if chinese else "en"
    if not guide.exists():
        raise WorkbookError(say(language, "no guide", guide=guide.relative_to(ROOT)))
    found = [q for q in questions(guide.read_text(encoding="utf-8")) if q["quiz"]]
    if not found:
        raise WorkbookError(say(language, "no questions", guide=guide.relative_to(ROOT)))
    return found


def display_width(text):
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrap(text, width=96):
    """TEXT in lines of at most WIDTH columns (a CJK character takes two): broken at spaces,
    or between CJK characters."""
    tokens = re.findall(r"\s+|[\u2E80-\u9FFF\uF900-\uFAFF\uFF00-\uFFEF]|[^\s\u2E80-\u9FFF"
                        r"\uF900-\uFAFF\uFF00-\uFFEF]+", text.strip())
    lines, line = [], ""
    for token in tokens:
        if token.isspace():
            token = " "
        closing = token in "，。？！：；）、》」』,.;:!?)"  # never at the start of a line
        if line and display_width(line + token.rstrip()) > width and not closing:
            lines.append(line.rstrip())
            line = "" if token == " " else token
        else:
            line += token
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


def question_text(q):
    text = markdown_to_text(re.sub(r"\s*\n\s*", " ", q["text"]))
    return wrap(re.sub(r"(?<=[。：）])\s+", "", text))  # no space after a Chinese stop


def ask(qs, read=input, write=print, language="en", tries=2, unreadable=3):
    """Asks each question; returns (right, asked). A wrong answer gets TRIES tries in all; an
    answer rounded to fewer digits than asked is asked again without costing one; an
    unreadable answer is asked again (up to UNREADABLE times); an empty line skips the
    question; the end of the input stops."""
    right = asked = 0
    for q in qs:
        quiz = q["quiz"]
        precision = precision_of(quiz, language)
        write("")
        write(question_text(q))
        wrong = bad = more = 0
        while True:
            try:
                line = read(say(language, "prompt", precision=precision))
            except EOFError:
                write("")
                return right, asked
            if not line.strip():
                write(say(language, "skipped"))
                break
            try:
                verdict = judge(line, quiz)
            except ValueError:
                bad += 1
                write(say(language, "unreadable",
                          error=say(language, "not a number", text=line.strip())))
                if bad >= unreadable:
                    write(say(language, "skipped"))
                    break
                continue
            if verdict == "more digits" and more < unreadable:
                more += 1
                write(say(language, "more digits", given=line.strip(), precision=precision))
                continue
            if verdict == "right":
                right += 1
                asked += 1
                write(say(language, "right", answer=show(quiz["answer"])))
                break
            wrong += 1
            if wrong < tries:
                write(say(language, "try again"))
                continue
            asked += 1
            write(say(language, "wrong", answer=show(quiz["answer"]), id=q["id"]))
            break
    return right, asked


def progress_file():
    return Path(os.environ.get("WB_PROGRESS_FILE", ROOT / ".workbook-progress.json"))


def quiz_language(choice=None):
    """The quiz's language: CHOICE (en or zh) if given, else the progress file's "lang" (set by
    `workbook lang`), else zh when the locale (LC_ALL, LC_MESSAGES, LANG, the first one set)
    is Chinese, else en."""
    if choice:
        return "zh" if choice.lower().startswith("zh") else "en"
    stored = read_progress(progress_file()).get("lang")
    if isinstance(stored, str) and stored.strip():
        return "zh" if stored.strip().lower().startswith("zh") else "en"
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def cmd_quiz(args):
    language = quiz_language(getattr(args, "lang", None) or ("zh" if args.zh else None))
    guide = guide_of(args.chapter)
    name = guide.parent.name if guide.name == "README.md" else guide.stem
    qs = numeric_questions(guide, chinese=language == "zh")
    if args.only:
        wanted = {str(x).strip().upper() for x in args.only}
        wanted |= {"Q" + x for x in wanted if x.isdigit()}
        qs = [q for q in qs if q["id"] in wanted]
        if not qs:
            raise WorkbookError(say(language, "no such question", only=" ".join(args.only),
                                    folder=name))
    if args.list:
        for q in qs:
            print(question_text(q))
            print(f"  → {precision_of(q['quiz'], language)}\n")
        return 0
    print(say(language, "header", folder=name, n=len(qs)))
    interactive = sys.stdin.isatty()
    right, asked = ask(qs, read=input if interactive else _reader(sys.stdin), language=language)
    print("\n" + say(language, "summary", right=right, n=len(qs))
          + (say(language, "skipped count", skipped=len(qs) - asked) if asked < len(qs) else ""))
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
