#!/usr/bin/env python3
"""Doxygen input filter: the chapter guides as a code host renders them, the headers without
their implementation namespace.

The guides are written for a code host (GitHub's Markdown), and the same files are pages of the
Doxygen site. Doxygen 1.9 reads some of that Markdown differently, so this filter turns:

  - `$$ ... $$` and `$...$` into Doxygen math, `\\f[ ... \\f]` and `\\f$ ... \\f$`;
  - `**bold**` and `*italics*` into `<b>bold</b>` and `<em>italics</em>` (Doxygen 1.9 does not
    open them next to `(`, `` ` ``, `$` or a Chinese character);
  - each ```` ```mermaid ```` flowchart into a Graphviz drawing (`\\dot ... \\enddot`), so that
    the site shows a picture, offline, while the code host draws the same source with Mermaid;
  - links between the guides (`README.md`, `../4-sdpa/README.zh.md`) into links to their pages,
    and links to files that are not pages into plain text (or a header's page);
  - the first heading of a guide into its page title, with a name after the chapter:
    `chapter4_guide` and `chapter4_guide_zh` (see page_label), whatever the build path, and
    the language switch above it into the page's first line;
  - a folded answer (`<details><summary>…</summary>`, one paragraph, `</details>`) into one
    paragraph, which Doxygen 1.9 keeps inside the fold;
  - in the Chinese guides, a line break between two Chinese characters into nothing (a browser
    would show a space in the middle of the sentence), and a code span or bold right after a
    Chinese character gets an invisible `&zwnj;` before it (Doxygen 1.9 reads it as part of
    the word otherwise).

In a header (`*.hpp`) it removes the `inline namespace WB_IMPL {` that every chapter opens
(and its closing brace), so that the site names `wb::sdpa`, not `wb::WB_IMPL::sdpa`.

Fenced code blocks and code spans are left alone, and the number of lines is kept so that
Doxygen's messages point at the right line (within a Chinese paragraph, at its paragraph).
Usage: docs/CMakeLists.txt sets Doxygen's FILTER_PATTERNS for *.md and *.hpp to this script;
`tools/doxygen_md_filter.py FILE` prints what Doxygen reads.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[^\n]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`[^`\n]*`)")
PERCENT_BEFORE_WIDE = re.compile(r"%(?=[^\x00-\x7f])")
DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
INLINE = re.compile(r"(?<![\\$])\$(?![\s$])((?:[^$\n]|\n(?!\s*\n))+?)(?<![\s\\])\$")
DOXYGEN_MATH = re.compile(r"\\f\[.*?\\f\]|\\f\$.*?\\f\$", re.S)
BOLD = re.compile(r"\*\*(?=\S)((?:(?!\*\*)[^\n]|\n(?![ \t]*\n))+?)(?<=\S)\*\*")
ITALIC = re.compile(r"(?<![*\\])\*(?=[^\s*])((?:[^*\n]|\n(?![ \t]*\n))+?)(?<=[^\s*\\])\*(?!\*)")
LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)")
PLACEHOLDER = re.compile("\x00(\\d+)\x00")


def course_path(relative):
    """A guide's path as the course reads it: the mini-GPT program (minigpt/, beside the
    chapters) is the capstone's program, so minigpt/README.md reads as chapters/capstone/minigpt/."""
    return "chapters/capstone/" + relative if relative.startswith("minigpt/") else relative


def page_label(relative):
    """The page name of a guide, from its path in the source tree: chapter4_guide(_zh),
    capstone_minigpt_guide for the mini-GPT program's."""
    parts = course_path(relative).split("/")
    m = re.match(r"(\d+)-", parts[1]) if len(parts) > 2 else None
    name = "chapter" + m.group(1) if m else "_".join(re.sub(r"\W", "_", p) for p in parts[1:-1])
    return name + "_guide" + ("_zh" if parts[-1].endswith(".zh.md") else "")


def is_guide(relative):
    relative = course_path(relative)
    return (relative.startswith("chapters/") and relative.count("/") >= 2
            and os.path.basename(relative) in ("README.md", "README.zh.md"))


# ---- prose: links, math, bold, Chinese lines ----

def rewrite_link(match, relative):
    text, target = match.group(1), match.group(2)
    if "://" in target or target.startswith(("#", "@", "mailto:")):
        return match.group(0)
    path = target.partition("#")[0]
    resolved = os.path.normpath(os.path.join(os.path.dirname(relative), path)).replace("\\", "/")
    if is_guide(resolved) and os.path.isfile(os.path.join(ROOT, resolved)):
        return f"[{text}](@ref {page_label(resolved)})"
    if resolved.startswith("docs/") and resolved.endswith((".md", ".svg", ".png")):
        return match.group(0)  # a page or a picture of the site; Doxygen resolves it
    if resolved.endswith(".hpp") and os.path.isfile(os.path.join(ROOT, resolved)):
        return f"[{text}](@ref {os.path.basename(resolved)})"
    return text  # a source file or folder: not a page of the site


CJK = ("\u2014\u2026\u201c\u201d"  # the dash, ellipsis and quotes Chinese text uses
       "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef")
CJK_CHAR = re.compile(f"[{CJK}]")
BLOCK_START = re.compile(r"[ \t]*(#|[-*+>|] |\d+[.)] )")


def join_cjk_lines(text):
    """Joins the lines of a Chinese paragraph where both sides of the break are Chinese: a
    browser shows such a break as a space in the middle of a sentence. The paragraph's lines
    go to its end, as empty lines, so that the lines after it do not move."""
    blocks = re.split(r"(\n[ \t]*\n)", text)
    for i in range(0, len(blocks), 2):
        lines = blocks[i].split("\n")
        out, moved = [lines[0]], 0
        for line in lines[1:]:
            if (not CJK_CHAR.match(line.lstrip(" \t")) or not CJK_CHAR.match(out[-1][-1:])
                    or out[-1].lstrip().startswith("#") or BLOCK_START.match(line)):
                out.append(line)
            else:
                out[-1] += line.lstrip(" \t")
                moved += 1
        blocks[i] = "\n".join(out) + "\n" * moved
    return "".join(blocks)


DETAILS = re.compile(r"<details>\s*<summary>(.*?)</summary>[ \t]*\n[ \t]*\n(.*?)\n[ \t]*\n"
                     r"[ \t]*</details>", re.S)


def fold_details(text):
    """A folded answer, `<details><summary>…</summary>`, a paragraph and `</details>`, as one
    paragraph: Doxygen 1.9 would otherwise close the fold at the first empty line. The lines
    taken out go after it, as empty lines."""
    def one(m):
        body = re.sub(r"[ \t]*\n[ \t]*", " ", m.group(2).strip())
        return (f"<details><summary>{m.group(1)}</summary> {body} </details>"
                + "\n" * m.group(0).count("\n"))
    return DETAILS.sub(one, text)


def convert_prose(text, relative):
    text = fold_details(join_cjk_lines(text))
    kept = []

    def keep(m):
        kept.append(m.group(0))
        return f"\x00{len(kept) - 1}\x00"

    def after_word(m):
        # Doxygen 1.9 reads a code span or a tag that follows a Chinese character or full-width
        # punctuation, as in `（`.view`` or `、**`x`**`, as part of a word; an invisible &zwnj;
        # separates them.
        before = m.string[m.start() - 1] if m.start() else " "
        return "&zwnj;" if ord(before) > 0x7F and not before.isspace() else ""

    text = CODE_SPAN.sub(lambda m: after_word(m) + keep(m), text)
    text = DISPLAY.sub(lambda m: "\\f[" + m.group(1) + "\\f]", text)
    text = INLINE.sub(lambda m: "\\f$" + m.group(1) + "\\f$", text)
    text = DOXYGEN_MATH.sub(keep, text)
    # Doxygen drops a % that comes right before a word character (its "do not link" mark), and
    # it counts a Chinese character or full-width punctuation as one: `55 %）` would lose its %.
    text = PERCENT_BEFORE_WIDE.sub(r"\\%", text)
    text = BOLD.sub(lambda m: after_word(m) + "<b>" + m.group(1) + "</b>", text)
    text = ITALIC.sub(lambda m: after_word(m) + "<em>" + m.group(1) + "</em>", text)
    text = LINK.sub(lambda m: rewrite_link(m, relative), text)
    while PLACEHOLDER.search(text):  # math may hold a code span's placeholder
        text = PLACEHOLDER.sub(lambda m: kept[int(m.group(1))], text)
    return text


# ---- Mermaid flowcharts as Graphviz drawings ----

class Unsupported(ValueError):
    pass


SHAPES = [  # Mermaid's opening bracket, its closing one, and the Graphviz attributes
    ("((", "))", 'shape=circle, margin=0.02'),
    ("([", "])", 'shape=box, style="rounded,filled"'),
    ("[[", "]]", 'shape=box, peripheries=2'),
    ("{{", "}}", 'shape=hexagon'),
    ("[", "]", ''),
    ("(", ")", ''),
    ("{", "}", 'shape=diamond'),
]
EDGE = re.compile(r'\s*(-->|---|-\.->|==>|-\.-)\s*(?:\|\s*("?)(.*?)\2\s*\|)?\s*')
NODE_ID = re.compile(r"\s*([A-Za-z_][\w]*)")
DIRECTIONS = {"TD": "TB", "TB": "TB", "BT": "BT", "LR": "LR", "RL": "RL"}


def dot_string(label):
    label = re.sub(r"<br\s*/?>", "\n", label).replace("#quot;", '"')
    return '"' + label.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def parse_node(line, pos):
    m = NODE_ID.match(line, pos)
    if not m:
        raise Unsupported(f"expected a node at '{line[pos:].strip()}'")
    name, pos = m.group(1), m.end()
    for opening, closing, attributes in SHAPES:
        if line.startswith(opening, pos):
            start = pos + len(opening)
            if line.startswith('"', start):
                end = line.find('"' + closing, start + 1)
                label = line[start + 1:end]
                after = end + 1 + len(closing)
            else:
                end = line.find(closing, start)
                label = line[start:end]
                after = end + len(closing)
            if end < 0:
                raise Unsupported(f"no '{closing}' after node {name}")
            attrs = f"label={dot_string(label)}" + (", " + attributes if attributes else "")
            return name, f'"{name}" [{attrs}];', after
    return name, "", pos


def mermaid_line(line):
    """One Mermaid statement as Graphviz statements, on one line."""
    stripped = line.strip()
    if not stripped or stripped.startswith("%%"):
        return ""
    m = re.fullmatch(r"subgraph\s+(\w+)\s*(?:\[\s*\"?(.*?)\"?\s*\])?", stripped)
    if m:
        label = m.group(2) if m.group(2) is not None else m.group(1)
        return (f'subgraph "cluster_{m.group(1)}" {{ label={dot_string(label)}; '
                'style="rounded,dashed"; color="#7f8fa6"; fontcolor="#34495e";')
    if stripped == "end":
        return "}"
    if re.fullmatch(r"direction\s+\w+", stripped):
        return ""
    out, pos = [], 0
    name, declaration, pos = parse_node(line, pos)
    out.append(declaration or f'"{name}";')
    while pos < len(line.rstrip()):
        e = EDGE.match(line, pos)
        if not e:
            raise Unsupported(f"cannot read '{line[pos:].strip()}'")
        arrow, label = e.group(1), e.group(3)
        pos = e.end()
        target, declaration, pos = parse_node(line, pos)
        if declaration:
            out.append(declaration)
        attrs = []
        if label:
            attrs.append(f"label={dot_string(' ' + label + ' ')}")
        if arrow in ("---", "-.-"):
            attrs.append("arrowhead=none")
        if arrow.startswith("-."):
            attrs.append("style=dashed")
        if arrow == "==>":
            attrs.append("penwidth=2")
        out.append(f'"{name}" -> "{target}"' + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
        name = target
    return " ".join(out)


def mermaid_to_dot(fence):
    """A ```mermaid fence as a \\dot block of as many lines; Unsupported if it is not a
    flowchart this filter can read."""
    lines = fence.split("\n")
    header = lines[1].strip() if len(lines) > 2 else ""
    m = re.fullmatch(r"(?:flowchart|graph)\s+(TD|TB|BT|LR|RL)", header)
    if not m:
        raise Unsupported(f"not a flowchart: '{header}'")
    out = ["\\dot",
           f'digraph {{ graph [rankdir={DIRECTIONS[m.group(1)]}, bgcolor="transparent", '
           'nodesep=0.3, ranksep=0.35, fontname="Helvetica,Arial,sans-serif", fontsize=11]; '
           'node [shape=box, style="rounded,filled", fillcolor="#eef3fb", color="#4a6fa5", '
           'fontname="Helvetica,Arial,sans-serif", fontsize=11, margin="0.12,0.06"]; '
           'edge [color="#4a6fa5", fontname="Helvetica,Arial,sans-serif", fontsize=10];']
    out += [mermaid_line(line) for line in lines[2:-1]]
    out.append("}")
    out.append("\\enddot")
    # Same number of lines as the fence: the closing brace shares the last line.
    return "\n".join(out[:-2] + [out[-2] + " " + out[-1]])


def convert_fence(fence, relative, line):
    if not re.match(r"[ \t]*```mermaid\b", fence):
        return fence
    try:
        return mermaid_to_dot(fence)
    except Unsupported as error:
        print(f"{relative}:{line}: warning: Mermaid diagram left as code: {error}",
              file=sys.stderr)
        return fence


# ---- a guide's title, name and language switch ----

SWITCH = re.compile(r"^(English \| \[中文\]\(README\.zh\.md\)"
                    r"|\[English\]\(README\.md\) \| 中文)[ \t]*$")


def title_and_switch(text, relative):
    """Names the guide's page after its chapter, and puts the language switch (the first line
    of a guide) under the title, where Doxygen shows it as the page's first line."""
    lines = text.split("\n")
    head = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    if head is None or any(line.startswith("```") for line in lines[:head]):
        return text
    lines[head] = lines[head].rstrip() + " {#" + page_label(relative) + "}"
    switch = next((i for i in range(head) if SWITCH.match(lines[i])), None)
    if switch is not None:
        # The title goes up to the switch's line and the switch down to the title's: the other
        # lines do not move.
        lines[switch], lines[head] = lines[head], lines[switch]
    return "\n".join(lines)


def convert(text, relative="docs/page.md"):
    if is_guide(relative):
        text = title_and_switch(text, relative)
    out, last = [], 0
    for fence in FENCE.finditer(text):
        out.append(convert_prose(text[last:fence.start()], relative))
        out.append(convert_fence(fence.group(0), relative, text.count("\n", 0, fence.start()) + 1))
        last = fence.end()
    out.append(convert_prose(text[last:], relative))
    return "".join(out)


# ---- headers ----

IMPL_OPEN = re.compile(r"^inline namespace WB_IMPL \{[ \t]*$", re.M)
IMPL_CLOSE = re.compile(r"^\}[ \t]*// namespace WB_IMPL[ \t]*$", re.M)


def convert_header(text):
    opened, closed = len(IMPL_OPEN.findall(text)), len(IMPL_CLOSE.findall(text))
    if opened != closed:  # not the usual pair: leave the header as it is
        return text
    return IMPL_CLOSE.sub("", IMPL_OPEN.sub("", text))


def relative_to_root(path):
    full = os.path.abspath(path)
    if full.startswith(ROOT + os.sep):
        return os.path.relpath(full, ROOT).replace(os.sep, "/")
    return os.path.basename(full)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        source = f.read()
    if sys.argv[1].endswith((".hpp", ".h")):
        sys.stdout.write(convert_header(source))
    else:
        sys.stdout.write(convert(source, relative_to_root(sys.argv[1])))
