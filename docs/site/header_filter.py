#!/usr/bin/env python3
"""Doxygen's input filter for the headers (FILTER_PATTERNS *.hpp): the API as the site shows it.

  - `inline namespace WB_IMPL {` (and its closing brace), which every chapter opens so that a
    student's and the reference's code can be linked side by side, is left out: the site
    names `wb::sdpa`, not `wb::WB_IMPL::sdpa`.
  - a code span with a quote in it (`` `nn.GELU(approximate='tanh')` ``) becomes `<code>`:
    Doxygen reads `` `...' `` as typographic quotes and leaves the backticks in the text.
  - `@throws ShapeError, ValueError as block_forward ...` (two exceptions, one reason) becomes
    one `@throws` for each, with the same text: the API pages list every exception a function
    raises (Breathe keeps only the first of a list). A comma after a single exception's name
    (`@throws ValueError, before ...`) is dropped, so that Doxygen does not read the next word
    as a second exception.

Every line stays on its line, so Doxygen's messages point at the header's own lines.
Usage: `docs/site/header_filter.py FILE` prints what Doxygen reads.
"""

import re
import sys

IMPL_OPEN = re.compile(r"^inline namespace WB_IMPL \{[ \t]*$", re.M)
IMPL_CLOSE = re.compile(r"^\}[ \t]*// namespace WB_IMPL[ \t]*$", re.M)
THROWS = re.compile(r"^([ \t]*///[ \t]*[@\\](?:throws?|exception)[ \t]+)([\w:]+(?:[ \t]*,[ \t]*[\w:]+)+)"
                    r"(.*)$")
EXCEPTION = re.compile(r"[A-Z][\w]*(?:::\w+)*$|std::\w+$")
CONTINUES = re.compile(r"^[ \t]*///(?![ \t]*([@\\]\w|$))")


def split_throws(text):
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = THROWS.match(line)
        if not m:
            continue
        names = [n.strip() for n in m.group(2).split(",")]
        exceptions = []
        while names and EXCEPTION.match(names[0]):
            exceptions.append(names.pop(0))
        if not exceptions:
            continue
        rest = ((" " + ", ".join(names)) if names else "") + m.group(3)
        lines[i] = m.group(1) + exceptions[0] + rest
        end = i
        while end + 1 < len(lines) and CONTINUES.match(lines[end + 1]):
            end += 1
        reason = " ".join([rest.strip()] + [re.sub(r"^[ \t]*///[ \t]*", "", lines[j])
                                            for j in range(i + 1, end + 1)]).strip()
        for name in exceptions[1:]:
            lines[end] += f" @throws {name} {reason}"
    return "\n".join(lines)


COMMENT = re.compile(r"^([ \t]*///<?)(.*)$", re.M)
CODE_SPAN = re.compile(r"`([^`\n]*)`")


def code_tag(m):
    if "'" not in m.group(1):
        return m.group(0)
    text = (m.group(1).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("\\", "\\\\").replace("@", "\\@"))
    return f"<code>{text}</code>"


def quoted_spans(text):
    return COMMENT.sub(lambda m: m.group(1) + CODE_SPAN.sub(code_tag, m.group(2)), text)


def convert_header(text):
    if len(IMPL_OPEN.findall(text)) == len(IMPL_CLOSE.findall(text)):  # the usual pair
        text = IMPL_CLOSE.sub("", IMPL_OPEN.sub("", text))
    return split_throws(quoted_spans(text))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(convert_header(f.read()))
