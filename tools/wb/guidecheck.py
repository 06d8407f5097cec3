"""What `workbook guides` checks beyond the shared structure: the "Before you code" questions
(the same in both editions, each with a folded answer) and the Chinese terms of the glossary.

A question is a paragraph that opens with `**Q<n>` under the chapter's "Before you code"
heading; a numeric one carries a marker on its own line,

    <!-- quiz answer=0.8668 rtol=0.002 -->

(`atol=` for an answer near 0), and its answer follows it folded in
`<details><summary>…</summary> … </details>`. The English guide is where `workbook quiz`
reads the questions; the Chinese edition must have the same numbers and the same markers.
"""

import re

from .common import ROOT

FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[^\n]*$", re.S | re.M)
QUESTION = re.compile(r"^\*\*Q(\d+)\b", re.M)
MARKER = re.compile(r"<!--\s*quiz\s+([^>]*?)\s*-->")
SECTION = re.compile(r"^## (Before you code|动手之前)\b.*?(?=^## |\Z)", re.S | re.M)

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
    """The fields of a quiz marker as floats: answer, and rtol and/or atol."""
    fields = {}
    for part in body.split():
        key, _, value = part.partition("=")
        if key not in ("answer", "rtol", "atol") or not value:
            raise ValueError(f"quiz marker: unknown field {part!r}")
        fields[key] = float(value)
    if "answer" not in fields:
        raise ValueError("quiz marker without answer=")
    return fields


def questions(text):
    """The questions of a guide, in order: dicts with n, text (the paragraph, Markdown),
    marker (the raw marker text or None), quiz (parsed marker or None), answered (a folded
    answer follows before the next question)."""
    section = SECTION.search(text)
    if not section:
        return []
    body = FENCE.sub("", section.group(0))
    starts = list(QUESTION.finditer(body))
    out = []
    for i, m in enumerate(starts):
        chunk = body[m.start():starts[i + 1].start() if i + 1 < len(starts) else len(body)]
        paragraph = re.split(r"\n[ \t]*\n|<!--|<details", chunk, maxsplit=1)[0].strip()
        marker = MARKER.search(chunk)
        out.append({
            "n": int(m.group(1)),
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
    if [q["n"] for q in a] != [q["n"] for q in b]:
        problems.append(f"questions differ: English has {[q['n'] for q in a]}, "
                        f"Chinese {[q['n'] for q in b]}")
    else:
        for qa, qb in zip(a, b):
            if qa["quiz"] != qb["quiz"]:
                problems.append(f"Q{qa['n']}: quiz markers differ ({qa['marker']!r} and "
                                f"{qb['marker']!r})")
    for edition, qs in (("English", a), ("Chinese", b)):
        numbers = [q["n"] for q in qs]
        if numbers != list(range(1, len(qs) + 1)):
            problems.append(f"{edition}: questions are not numbered 1..{len(qs)}: {numbers}")
        for q in qs:
            if not q["answered"]:
                problems.append(f"{edition} Q{q['n']}: no folded answer "
                                "(<details><summary>…</summary> … </details>)")
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
