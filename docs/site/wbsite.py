"""Sphinx extension of the documentation site: what the two editions need beyond the theme.

  - A line break between two Chinese characters is no space: Markdown keeps a paragraph's line
    breaks, a browser shows each as a space, and Chinese has no spaces between words.
  - The language switch: every page links to the same page of the other edition, which the
    other build writes under the same name beside this one (site/en/X.html, site/zh/X.html).
"""

import hashlib
import json
import os
import re
from collections import Counter

from docutils import nodes
from sphinx.search import WordCollector
from sphinx.transforms import SphinxTransform

CJK = ("\u2014\u2026\u201c\u201d\u2018\u2019"  # the dash, ellipsis and quotes Chinese text uses
       "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef")
CJK_BREAK = re.compile(f"(?<=[{CJK}])[ \t]*\n[ \t]*(?=[{CJK}])")
# Where text is code or a formula, its line breaks are its own.
VERBATIM = (nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.raw,
            nodes.comment)


class JoinChineseLines(SphinxTransform):
    """Removes a line break (and the spaces around it) between two Chinese characters, also
    where the break is at the edge of bold or a link (`**粗体**\\n中文`)."""
    default_priority = 700

    def apply(self, **kwargs):
        for paragraph in self.document.findall(nodes.TextElement):
            if isinstance(paragraph, VERBATIM) or not isinstance(
                    paragraph, (nodes.paragraph, nodes.title, nodes.term, nodes.caption,
                                nodes.line, nodes.rubric)):
                continue
            run = []  # consecutive text nodes of the paragraph, not interrupted by code
            for node in self._texts(paragraph):
                if node is None:
                    self._join(run)
                    run = []
                else:
                    run.append(node)
            self._join(run)

    def _texts(self, element):
        for child in element.children:
            if isinstance(child, VERBATIM):
                yield None
            elif isinstance(child, nodes.Text):
                yield child
            elif isinstance(child, nodes.Element):
                yield from self._texts(child)

    @staticmethod
    def _join(run):
        """Removes the breaks between Chinese characters from a run of text nodes, also where
        the break is a node of its own (MyST makes each soft line break a "\\n" node) or at
        the edge of bold."""
        texts = [str(node) for node in run]
        whole = "".join(texts)
        cut = [False] * len(whole)
        for m in CJK_BREAK.finditer(whole):
            for i in range(m.start(), m.end()):
                cut[i] = True
        if not any(cut):
            return
        start = 0
        for node, text in zip(run, texts):
            kept = "".join(c for c, gone in zip(text, cut[start:start + len(text)]) if not gone)
            start += len(text)
            if kept != text:  # by identity: Text nodes are strings, "\n" equals every "\n"
                parent = node.parent
                index = next(i for i, child in enumerate(parent.children) if child is node)
                parent[index] = nodes.Text(kept)


SWITCH = {"en": ("zh", "中文"), "zh": ("en", "English")}


def page_context(app, pagename, templatename, context, doctree):
    """The link to the same page in the other edition, for the templates."""
    lang = app.config.wb_site_lang
    other, label = SWITCH[lang]
    depth = pagename.count("/") + 1  # from site/<lang>/<page> up to site/
    context["wb_lang"] = lang
    context["wb_switch_href"] = "../" * depth + f"{other}/{pagename}.html"
    context["wb_switch_label"] = label
    context["wb_switch_lang"] = "zh-CN" if other == "zh" else "en"


def count_words(app, pagename, templatename, context, doctree):
    """How often the page uses each word, as the search index spells words (stemmed, lower
    case; Chinese cut by jieba): the search page ranks its results with it."""
    indexer = getattr(app.builder, "indexer", None)
    if doctree is None or indexer is None:
        return
    visitor = WordCollector(doctree, indexer.lang)
    doctree.walk(visitor)
    keep = indexer.lang.word_filter
    cache = app.builder.__dict__.setdefault("wb_stems", {})  # the stemmer is slow (Chinese)
    counts = Counter(visitor.found_words + visitor.found_title_words)
    stemmed_counts = Counter()
    for word, n in counts.items():
        if word not in cache:
            stemmed = indexer.lang.stem(word).lower()
            if not keep(stemmed) and keep(word):
                stemmed = word
            cache[word] = stemmed if keep(stemmed) else None
        if cache[word]:
            stemmed_counts[cache[word]] += n
    counts = stemmed_counts
    app.builder.wb_counts = getattr(app.builder, "wb_counts", {})
    app.builder.wb_counts[pagename] = counts


def write_counts(app, exception):
    """_static/wb-search-counts.js: {word: {page: count}}, for the words a page uses twice or
    more (every page is written on each build: build.py runs Sphinx with -a)."""
    if exception or app.builder.format != "html":
        return
    table = {}
    for page, counts in sorted(getattr(app.builder, "wb_counts", {}).items()):
        for word, n in counts.items():
            if n >= 2:
                table.setdefault(word, {})[page] = n
    target = os.path.join(app.outdir, "_static", "wb-search-counts.js")
    with open(target, "w", encoding="utf-8") as f:
        f.write("window.WB_SEARCH_COUNTS = "
                + json.dumps(table, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
                + ";\n")


class TermSet(list):
    """A list that answers `in` from a set: Sphinx 5's Chinese search (Debian 12) keeps every
    Latin word it meets in a list and looks each new word up in it, which takes most of the
    Chinese build's time (Sphinx 7 and later keep a set)."""

    def __init__(self):
        super().__init__()
        self.seen = set()

    def extend(self, words):
        words = list(words)
        super().extend(words)
        self.seen.update(words)

    def __contains__(self, word):
        return word in self.seen


def faster_chinese_search():
    try:
        from sphinx.search import zh
    except ImportError:
        return
    if isinstance(getattr(zh.SearchChinese, "latin_terms", None), list):
        zh.SearchChinese.latin_terms = TermSet()


def setup(app):
    faster_chinese_search()
    app.add_config_value("wb_site_lang", os.environ.get("WB_SITE_LANG", "en"), "html")
    app.add_transform(JoinChineseLines)
    app.connect("html-page-context", page_context)
    app.connect("html-page-context", count_words)
    app.connect("build-finished", write_counts)
    # A change of this file reads every page again (Sphinx keeps the pages it read before).
    with open(__file__, "rb") as f:
        version = int(hashlib.sha1(f.read()).hexdigest()[:8], 16)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": version}
