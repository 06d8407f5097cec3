#!/usr/bin/env python3
"""The site's sources, staged: the guides as Sphinx (MyST) reads them, one tree per language.

The guides stay where a code host shows them (chapters/*/README.md and README.zh.md,
minigpt/README*.md, docs/*.md, the top README*.md). For each language this writes a flat tree of
Markdown pages under the staging folder, the same page names in both languages:

    index        docs/mainpage.md            docs/mainpage.zh.md
    start        README.md                   README.zh.md
    chapter1..9  chapters/N-*/README.md      chapters/N-*/README.zh.md
    capstone     chapters/capstone/README.md chapters/capstone/README.zh.md
    minigpt      minigpt/README.md           minigpt/README.zh.md
    instructors  docs/instructors.md         (no Chinese edition: the English one)
    bad-inputs   docs/bad_inputs.md          (the same)
    site         docs/README.md              (the same)
    api/<group>  one page per Doxygen group of the headers (@defgroup), read through Breathe

and on the way turns what the code host reads but Sphinx would not:

  - links between the guides (`../4-sdpa/README.md#anchor`) into links between the pages, a
    link to a header into its API page, a link to any other file of the repository into its
    text (the site has no page for it);
  - each ```` ```mermaid ```` flowchart into a Graphviz drawing (SVG, drawn by `dot` here), as
    a picture that shrinks to the page's width;
  - a picture of docs/images (Markdown or an <img> tag) into a Sphinx image;
  - the language line at the top of a guide (`English | [中文](README.zh.md)`) into nothing:
    every page of the site has its own switch;
  - Doxygen's heading ids (`# Bad inputs {#bad_inputs}`) into MyST labels.

Standard library only; `dot` (Graphviz) draws the diagrams.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("en", "zh")

# Fenced code (kept as it is) and code spans (no link is rewritten inside one).
FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})([^\n]*)\n(.*?)^[ \t]*\2[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"(!?)\[((?:[^\[\]\n]|\n(?![ \t]*\n)|\[[^\]\n]*\])+)\]\(([^)\s]+)\)")
IMG_TAG = re.compile(r"^[ \t]*<img\s+([^>]*?)/?>[ \t]*$", re.M)
HEADING_ID = re.compile(r"^(#{1,6} .*?)[ \t]*\{#([\w-]+)\}[ \t]*$", re.M)
# The line that links a page to its other edition (`English | [中文](README.zh.md)`,
# `[English](capstone_measurements.md) | 中文`, `[中文版](README.zh.md)`), in its first lines.
SWITCH = re.compile(r"^[ \t]*(?:English \| \[中文\]\([\w./-]+\.zh\.md\)"
                    r"|\[English\]\([\w./-]+\.md\)(?: \| 中文)?"
                    r"|\[中文版?\]\([\w./-]+\.zh\.md\))[ \t]*\n", re.M)


# ---- what the site holds ----

def chapter_guides():
    """[(page name, folder)] of the chapters, in the course's order: 1..9, then the capstone."""
    out = []
    for folder in sorted((ROOT / "chapters").iterdir()):
        m = re.match(r"(\d+)-", folder.name)
        if (folder / "README.md").is_file() and m:
            out.append((int(m.group(1)), "chapter" + m.group(1), folder))
    out.sort()
    pages = [(name, folder) for _, name, folder in out]
    if (ROOT / "chapters" / "capstone" / "README.md").is_file():
        pages.append(("capstone", ROOT / "chapters" / "capstone"))
    return pages


def pages():
    """[(page name, {lang: source file})]: every guide page of the site, in reading order."""
    out = [("index", {"en": ROOT / "docs" / "mainpage.md", "zh": ROOT / "docs" / "mainpage.zh.md"}),
           ("start", {"en": ROOT / "README.md", "zh": ROOT / "README.zh.md"})]
    for name, folder in chapter_guides() + [("minigpt", ROOT / "minigpt")]:
        out.append((name, {"en": folder / "README.md", "zh": folder / "README.zh.md"}))
        if name == "capstone":  # the reference kernel's measurement log, after the capstone
            out.append(("capstone-measurements",
                        {"en": ROOT / "docs" / "capstone_measurements.md",
                         "zh": ROOT / "docs" / "capstone_measurements.zh.md"}))
    out.append(("experiments", {"en": ROOT / "docs" / "experiments.md",
                                "zh": ROOT / "docs" / "experiments.zh.md"}))
    out.append(("scaling", {"en": ROOT / "docs" / "scaling.md",
                            "zh": ROOT / "docs" / "scaling.zh.md"}))
    for name, file in (("instructors", "instructors"), ("bad-inputs", "bad_inputs"),
                       ("site", "README")):
        english = ROOT / "docs" / f"{file}.md"
        chinese = ROOT / "docs" / f"{file}.zh.md"
        out.append((name, {"en": english, "zh": chinese if chinese.is_file() else english}))
    return out


GROUP = re.compile(r"@(?:defgroup|addtogroup)[ \t]+(\w+)(?:[ \t]+([^\n]*))?")


def api_groups():
    """{group: (title, [headers])} from the headers' @defgroup and @addtogroup, in the
    chapters' order."""
    groups = {}
    headers = sorted((ROOT / "chapters").rglob("*.hpp")) + sorted((ROOT / "minigpt").rglob("*.hpp"))
    for header in headers:
        for m in GROUP.finditer(header.read_text(encoding="utf-8")):
            title, files = groups.get(m.group(1), ("", []))
            if m.group(2) and m.group(0).startswith("@defgroup"):
                title = m.group(2).strip()
            if header not in files:
                files.append(header)
            groups[m.group(1)] = (title, files)

    def order(name):  # a chapter whose label is not chapterN (dataparallel) by its title
        m = re.fullmatch(r"chapter(\d+)", name) or re.match(r"Chapter (\d+):", groups[name][0])
        return (0, int(m.group(1))) if m else (1, name != "capstone", name)
    return {name: groups[name] for name in sorted(groups, key=order)}


API_INTRO = {
    "en": ("The header is the exercise's specification: each function's comment gives the "
           "shapes of its arguments and results and the errors it raises."),
    "zh": ("头文件就是练习的规格说明：每个函数的注释写明参数与结果的形状，以及它抛出的错误。"
           "（注释为英文。）"),
}
API_TITLE = {"en": "API: {}", "zh": "接口：{}"}
GIVEN_TITLE_ZH = {"minigpt": "mini-GPT 程序（给定代码）", "capstone": "综合项目：注意力内核"}


def api_page(group, title, headers, lang):
    """An API page: the group's functions and types, read by Breathe from Doxygen's XML."""
    shown = title
    if lang == "zh":
        m = re.match(r"Chapter (\d+): ", title)
        shown = (f"第 {m.group(1)} 章：{title[m.end():]}" if m else GIVEN_TITLE_ZH.get(group, title))
    names = ", ".join(f"`{h.relative_to(ROOT).as_posix()}`" for h in headers)
    headers = f"Headers: {names}." if lang == "en" else f"头文件：{names}。"
    return (f"# {API_TITLE[lang].format(shown)}\n\n{API_INTRO[lang]}"
            f"{' ' if lang == 'en' else ''}{headers}\n\n"
            f"```{{doxygengroup}} {group}\n:project: wb\n:content-only:\n:members:\n```\n")


# ---- links and pictures ----

class Stager:
    def __init__(self, out, lang):
        self.out = Path(out) / lang
        self.lang = lang
        self.page_of = {}  # source file (resolved) -> page name
        self.own = {}  # page name -> this edition's source (resolved)
        for name, sources in pages():
            for file in sources.values():
                self.page_of[file.resolve()] = name
            self.own[name] = sources[lang].resolve()
        self.api_of = {}
        for group, (_, headers) in api_groups().items():
            for header in headers:
                self.api_of.setdefault(header.resolve(), "api/" + group)
        self.diagrams = {}  # page -> diagrams drawn so far
        self.messages = []

    def relative(self, page, target):
        """target (a page name or a staged file) as a link from page."""
        return os.path.relpath(target, os.path.dirname(page) or ".").replace(os.sep, "/")

    def picture(self, page, source, path):
        """A picture of the repository, copied into the staged tree; its link from page."""
        file = (source.parent / path).resolve()
        if not file.is_file():
            self.messages.append(f"{source}: no picture {path}")
            return None
        target = self.out / "images" / file.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target)
        return self.relative(page, "images/" + file.name)

    def link(self, m, page, source):
        bang, text, target = m.group(1), m.group(2), m.group(3)
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            return m.group(0)
        path, _, fragment = target.partition("#")
        if bang:
            new = self.picture(page, source, path)
            return f"![{text}]({new})" if new else text
        file = (source.parent / path).resolve()
        name = self.page_of.get(file)
        if name and file != self.own[name]:  # the other edition: the same page of the other site
            other = "zh" if self.lang == "en" else "en"
            href = "../" * (page.count("/") + 1) + f"{other}/{name}.html"
            return f'<a href="{href}" hreflang="{"zh-CN" if other == "zh" else "en"}">{text}</a>'
        name = name or self.api_of.get(file)
        if name:
            return f"[{text}]({self.relative(page, name + '.md')}{'#' + fragment if fragment else ''})"
        return text  # a source file or folder: the site has no page for it

    def img_tag(self, m, page, source):
        attributes = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        new = self.picture(page, source, attributes.get("src", ""))
        if not new:
            return m.group(0)
        lines = [f"```{{image}} {new}",
                 f":alt: {json.dumps(attributes.get('alt', ''), ensure_ascii=False)}"]
        if "width" in attributes:
            lines.append(f":width: {attributes['width']}px")
        return "\n".join(lines + ["```"])

    def prose(self, text, page, source):
        kept = []

        def keep(m):
            kept.append(m.group(0))
            return f"\x00{len(kept) - 1}\x00"
        text = CODE_SPAN.sub(keep, text)
        text = IMG_TAG.sub(lambda m: self.img_tag(m, page, source), text)
        text = LINK.sub(lambda m: self.link(m, page, source), text)
        text = HEADING_ID.sub(lambda m: f"({m.group(2)})=\n{m.group(1)}", text)
        return re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], text)

    def fence(self, m, page, source):
        if m.group(3).strip() != "mermaid":
            return m.group(0)
        try:
            dot = mermaid_to_dot(m.group(4), self.lang)
        except Unsupported as error:
            self.messages.append(f"{source}: a Mermaid diagram this site cannot draw: {error}")
            return m.group(0)
        self.diagrams[page] = self.diagrams.get(page, 0) + 1
        name = f"{page.replace('/', '-')}-{self.diagrams[page]}.svg"
        target = self.out / "diagrams" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        drawn = subprocess.run(["dot", "-Tsvg", "-o", str(target)], input=dot, text=True,
                               capture_output=True)
        if drawn.returncode != 0:
            self.messages.append(f"{source}: dot failed on a diagram: {drawn.stderr.strip()}")
            return m.group(0)
        alt = json.dumps("; ".join(mermaid_labels(m.group(4))), ensure_ascii=False)
        return (f"{m.group(1)}```{{image}} {self.relative(page, 'diagrams/' + name)}\n"
                f"{m.group(1)}:alt: {alt}\n{m.group(1)}:class: wb-diagram\n{m.group(1)}```")

    def convert(self, text, page, source):
        head = "\n".join(text.split("\n")[:6])
        text = SWITCH.sub("", head, count=1) + text[len(head):]
        out, last = [], 0
        for fence in FENCE.finditer(text):
            out.append(self.prose(text[last:fence.start()], page, source))
            out.append(self.fence(fence, page, source))
            last = fence.end()
        out.append(self.prose(text[last:], page, source))
        return "".join(out)

    def write(self, page, text):
        target = self.out / (page + ".md")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")  # unchanged pages keep their time

    def stage(self):
        for page, sources in pages():
            source = sources[self.lang]
            text = self.convert(source.read_text(encoding="utf-8"), page, source)
            if page == "index":
                text += toctrees(self.lang)
            self.write(page, text)
        for group, (title, headers) in api_groups().items():
            self.write("api/" + group, api_page(group, title, headers, self.lang))
        return self.messages


TOC_CAPTIONS = {"en": ("The course", "API reference", "For instructors"),
                "zh": ("课程", "接口参考", "教师")}
# The README's title is the workbook's: the menu names it for what it is in the course.
MENU_TITLES = {"en": {"start": "Start here: set-up and two commands"},
               "zh": {"start": "从这里开始：准备与两条命令", "instructors": "教师指南（英文）",
                      "bad-inputs": "错误输入（英文）", "site": "文档站点（英文）"}}


def course_pages():
    """The pages of the course, in reading order: the menu's first part."""
    teach = {"index", "instructors", "bad-inputs", "site"}
    return [name for name, _ in pages() if name not in teach]


def toctrees(lang):
    """The site's menu, at the end of the main page (hidden: the page has its own table)."""
    course = course_pages()
    api = ["api/" + group for group in api_groups()]
    teach = ["instructors", "bad-inputs", "site"]
    out = []
    titles = MENU_TITLES[lang]
    for caption, names in zip(TOC_CAPTIONS[lang], (course, api, teach)):
        entries = [f"{titles[n]} <{n}>" if n in titles else n for n in names]
        out.append(f"\n```{{toctree}}\n:hidden:\n:caption: {caption}\n\n" + "\n".join(entries)
                   + "\n```\n")
    return "".join(out)


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
FONT = {"en": "DejaVu Sans", "zh": "WenQuanYi Micro Hei"}


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
    """One Mermaid statement as Graphviz statements."""
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


def mermaid_to_dot(body, lang="en"):
    """A Mermaid flowchart's source as a Graphviz graph; Unsupported if it is not a flowchart
    this reader knows."""
    lines = body.rstrip("\n").split("\n")
    m = re.fullmatch(r"(?:flowchart|graph)\s+(TD|TB|BT|LR|RL)", lines[0].strip() if lines else "")
    if not m:
        raise Unsupported(f"not a flowchart: '{lines[0].strip() if lines else ''}'")
    font = FONT[lang]
    out = [f'digraph {{ graph [rankdir={DIRECTIONS[m.group(1)]}, bgcolor="transparent", '
           f'nodesep=0.3, ranksep=0.35, fontname="{font}", fontsize=11]; '
           'node [shape=box, style="rounded,filled", fillcolor="#eef3fb", color="#4a6fa5", '
           f'fontname="{font}", fontsize=11, margin="0.12,0.06"]; '
           f'edge [color="#4a6fa5", fontname="{font}", fontsize=10];']
    out += [mermaid_line(line) for line in lines[1:]]
    out.append("}")
    return "\n".join(out) + "\n"


def mermaid_labels(body):
    """The nodes' labels of a flowchart, as the picture's text for a reader who cannot see it."""
    labels = [m.group(1) if m.group(1) is not None else m.group(2)
              for m in re.finditer(r'[\[({]+\s*"(.*?)"\s*[\])}]+|\[([^\]"\n]*)\]', body)]
    return [re.sub(r"\s+", " ", re.sub(r"<br\s*/?>", " ", label)).strip() for label in labels]


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the staging folder (one subfolder per language)")
    parser.add_argument("--print-pages", action="store_true",
                        help="print the pages (JSON) and stage nothing")
    args = parser.parse_args(argv)
    if args.print_pages:
        print(json.dumps([(name, {k: str(v) for k, v in s.items()}) for name, s in pages()],
                         ensure_ascii=False, indent=1))
        return 0
    failed = []
    for lang in LANGS:
        failed += Stager(args.out, lang).stage()
    for message in failed:
        print(f"stage: {message}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
