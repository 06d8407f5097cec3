"""What `workbook guides` checks beyond the shared structure: the questions (the same in both
editions, each with a folded answer and its precision in words) and the Chinese terms of the
glossary.

A question is a paragraph that opens with `**Q<n>` under the chapter's "Before you code"
heading, or with `**P<n>` in the text: a prediction, asked just before the paragraph that
answers it. Each kind is numbered 1, 2, … in the order of the guide. A numeric one carries a
marker on its own line,

    <!-- quiz answer=0.8668 decimals=2 -->

`decimals=N` (N decimals wanted) or `sig=N` (N significant figures); without either the answer
is an exact number (a count). The question's text says the precision in words ("to 2
decimals", "保留 2 位小数"; "to 3 significant figures", "保留 3 位有效数字"), and its answer
follows it folded in `<details><summary>…</summary> … </details>`. Older markers may give
`rtol=`/`atol=` instead. `workbook quiz` reads the questions of the learner's language; the two
editions must have the same numbers and the same markers.
"""

import re

from .common import ROOT

FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[^\n]*$", re.S | re.M)
QUESTION = re.compile(r"^\*\*([PQ])(\d+)\b", re.M)
HEADING = re.compile(r"^#{1,6} ", re.M)
MARKER = re.compile(r"<!--\s*quiz\s+([^>]*?)\s*-->")

# The Chinese terms of the glossary (chapter 1's Chinese guide), and the variants the Chinese
# guides must not use instead: (pattern, the variant as shown, the glossary's term).
FORBIDDEN = [
    (r"分数", "分数", "得分"),
    (r"(?<!关)键(?!盘)", "键", "Key"),
    (r"查询(?:行|块|头|向量)|个查询|(?<!分组)(?<!多)查询(?=[的和与])", "查询（指 Query）", "Query"),
    (r"掩码", "掩码", "Mask"),
    (r"值向量|Key [和或与]值", "值（指 Value）", "Value"),
    (r"(?<![`/\w])[Gg]olden(?![`/\w])", "golden", "金标准"),
    (r"参考实现|参考解答|标准答案", "参考实现", "参考答案"),
    (r"黄金标准", "黄金标准", "金标准"),
    (r"写字", "写字", "生成文本"),
    (r"存根", "存根", "桩"),
]


def prose(text):
    """The guide without fenced blocks, code spans, formulas, links' targets, comments and the
    glossary (which names the variants it forbids). Every other section counts, "How to check"
    included."""
    text = FENCE.sub("", text)
    text = re.sub(r"^> \*\*术语表\*\*.*?(?=^(?!>))", "", text, flags=re.S | re.M)  # names them
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    text = re.sub(r"\$\$.+?\$\$|\$[^$\n]+\$", "", text, flags=re.S)
    return re.sub(r"\]\([^)]*\)", "]", text)


def forbidden_terms(text):
    """(line number, variant, term) for every forbidden variant in a Chinese guide's prose."""
    found = []
    clean = prose(text)
    for pattern, variant, term in FORBIDDEN:
        for m in re.finditer(pattern, clean):
            line = clean[:m.start()].count("\n")
            snippet = clean.splitlines()[line].strip()
            found.append((snippet[:60], variant, term))
    return found


def parse_marker(body):
    """The fields of a quiz marker: answer, rtol and atol as floats, decimals and sig (the
    precision wanted) as ints."""
    fields = {}
    for part in body.split():
        key, _, value = part.partition("=")
        if key not in ("answer", "rtol", "atol", "decimals", "sig") or not value:
            raise ValueError(f"quiz marker: unknown field {part!r}")
        try:
            fields[key] = int(value) if key in ("decimals", "sig") else float(value)
        except ValueError:
            raise ValueError(f"quiz marker: {part!r} is not a number") from None
    if "answer" not in fields:
        raise ValueError("quiz marker without answer=")
    if "decimals" in fields and "sig" in fields:
        raise ValueError("quiz marker: decimals= and sig= together")
    if fields.get("sig", 1) < 1 or fields.get("decimals", 0) < 0:
        raise ValueError(f"quiz marker: no such precision ({body.strip()!r})")
    return fields


def precision_words(quiz, language="en"):
    """How a question with marker fields QUIZ states its precision ("to 2 decimals", "保留 2
    位小数"), or None when it needs no words (an exact count, or a legacy tolerance)."""
    if "decimals" in quiz:
        n = quiz["decimals"]
        return f"保留 {n} 位小数" if language == "zh" else f"to {n} decimal{'s' * (n != 1)}"
    if "sig" in quiz:
        n = quiz["sig"]
        return (f"保留 {n} 位有效数字" if language == "zh"
                else f"to {n} significant figure{'s' * (n != 1)}")
    return None


def questions(text):
    """The questions of a guide, in order: dicts with id ("P2", "Q3"), kind ("P" for a
    prediction in the text, "Q" for "Before you code"), n, text (the paragraph, Markdown),
    marker (the raw marker text or None), quiz (parsed marker or None), answered (a folded
    answer follows before the next question or heading)."""
    body = FENCE.sub("", text)
    starts = list(QUESTION.finditer(body))
    out = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(body)
        heading = HEADING.search(body, m.end(), end)
        chunk = body[m.start():heading.start() if heading else end]
        paragraph = re.split(r"\n[ \t]*\n|<!--|<details", chunk, maxsplit=1)[0].strip()
        marker = MARKER.search(chunk)
        out.append({
            "id": m.group(1) + m.group(2),
            "kind": m.group(1),
            "n": int(m.group(2)),
            "text": paragraph,
            "marker": marker.group(1).strip() if marker else None,
            "quiz": parse_marker(marker.group(1)) if marker else None,
            "answered": bool(re.search(r"<details>\s*<summary>.*?</summary>.*?</details>",
                                       chunk, re.S)),
        })
    return out


def check_pair(english, chinese, terms=True):
    """Problems between the two editions of a guide (texts), as lines; [] when they agree.
    TERMS: also hold the Chinese edition to the glossary."""
    problems = []
    try:
        a, b = questions(english), questions(chinese)
    except ValueError as error:
        return [str(error)]
    if [q["id"] for q in a] != [q["id"] for q in b]:
        problems.append(f"questions differ: English has {[q['id'] for q in a]}, "
                        f"Chinese {[q['id'] for q in b]}")
    else:
        for qa, qb in zip(a, b):
            if qa["quiz"] != qb["quiz"]:
                problems.append(f"{qa['id']}: quiz markers differ ({qa['marker']!r} and "
                                f"{qb['marker']!r})")
    for edition, language, qs in (("English", "en", a), ("Chinese", "zh", b)):
        for kind in ("P", "Q"):
            numbers = [q["n"] for q in qs if q["kind"] == kind]
            if numbers != list(range(1, len(numbers) + 1)):
                problems.append(f"{edition}: the {kind} questions are not numbered "
                                f"1..{len(numbers)}: {numbers}")
        for q in qs:
            if not q["answered"]:
                problems.append(f"{edition} {q['id']}: no folded answer "
                                "(<details><summary>…</summary> … </details>)")
            words = precision_words(q["quiz"] or {}, language)
            if words and words not in re.sub(r"\s+", " ", q["text"]):
                problems.append(f"{edition} {q['id']}: the question does not say "
                                f"\"{words}\" (its marker's precision)")
    for snippet, variant, term in forbidden_terms(chinese) if terms else []:
        problems.append(f"Chinese uses {variant} (glossary: {term}): {snippet}")
    return problems


def normalise_formula(formula):
    """A display formula as both editions must share it: the words in \\text{…} may be
    translated."""
    return re.sub(r"\\text\{[^{}]*\}", r"\\text{}", formula.strip())


def normalise_fence(lang, body):
    """A fenced block as both editions must share it: a Mermaid chart's labels and a plain
    (language-less) diagram's words may be translated, so those compare by their number of
    lines; code (cpp, sh, …) must be identical."""
    lang = lang.strip()
    if lang == "mermaid":
        return (lang, "")
    if lang == "":
        return (lang, body.count("\n"))
    return (lang, body)


def chapter_guides():
    """The chapter guides that have questions: (folder name, English path)."""
    return [(p.parent.name, p) for p in sorted((ROOT / "chapters").glob("*/README.md"))]
