#!/usr/bin/env python3
"""Doxygen input filter for the chapter guides: turns Markdown math into Doxygen math.

The guides write formulas as GitHub renders them, `$$ ... $$` for displays and `$...$` inline;
Doxygen 1.9 wants `\\f[ ... \\f]` and `\\f$ ... \\f$`. Fenced code blocks and code spans are left
alone, and the number of lines is kept so that Doxygen's messages point at the right line.
Usage (Doxyfile): FILTER_PATTERNS = *.md=tools/doxygen_md_filter.py
"""

import re
import sys

FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[^\n]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`[^`\n]*`)")
DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
INLINE = re.compile(r"(?<![\\$])\$(?![\s$])((?:[^$\n]|\n(?!\s*\n))+?)(?<![\s\\])\$")


def convert_prose(text):
    parts = CODE_SPAN.split(text)
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        part = DISPLAY.sub(lambda m: "\\f[" + m.group(1) + "\\f]", parts[i])
        parts[i] = INLINE.sub(lambda m: "\\f$" + m.group(1) + "\\f$", part)
    return "".join(parts)


LANGUAGE_SWITCH = re.compile(r"^English \| \[中文\]\(README\.zh\.md\)[ \t]*$", re.M)


def convert(text):
    # The site is the English edition: the link to the Chinese file (not part of the site) goes,
    # its line stays empty so that line numbers do not move.
    text = LANGUAGE_SWITCH.sub("", text)
    out, last = [], 0
    for fence in FENCE.finditer(text):
        out.append(convert_prose(text[last:fence.start()]))
        out.append(fence.group(0))
        last = fence.end()
    out.append(convert_prose(text[last:]))
    return "".join(out)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(convert(f.read()))
