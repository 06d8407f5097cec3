#!/usr/bin/env python3
"""Builds the documentation site: both editions, from the guides and Doxygen's XML.

    docs/site/build.py --xml DOXYGEN_XML --work DIR --out SITE [--mathjax DIR] [--jobs N]

stages the guides (docs/site/stage.py) under DIR/src, runs Sphinx on each language with its
warnings as errors, and writes SITE/en/, SITE/zh/ and SITE/index.html (which opens the English
edition and links the Chinese one). The two builds run side by side. Sphinx keeps its state in
DIR/doctrees, so a second build reads only the pages that changed; it writes every page (-a),
so that the search's word counts (docs/site/wbsite.py) cover every page.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import stage  # noqa: E402

# The parts of MathJax 2 that the pages load: the loader, its extensions, the TeX input, the
# HTML-CSS output with the TeX fonts, and the English messages. About 4 MB of the package's 50.
MATHJAX_PARTS = ["MathJax.js", "extensions", "jax/input/TeX", "jax/element",
                 "jax/output/HTML-CSS/config.js", "jax/output/HTML-CSS/jax.js",
                 "jax/output/HTML-CSS/imageFonts.js", "jax/output/HTML-CSS/autoload",
                 "jax/output/HTML-CSS/fonts/TeX", "fonts/HTML-CSS/TeX/woff",
                 "fonts/HTML-CSS/TeX/otf", "localization/en", "localization/zh-hans"]

INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="0; url=en/index.html">
<title>Attention Workbook</title></head>
<body><p><a href="en/index.html">Attention Workbook (English)</a> ·
<a href="zh/index.html" lang="zh-CN">注意力练习册（中文）</a></p></body></html>
"""


def copy_mathjax(source, target):
    """The parts of MathJax the site loads, as files (the package links some of them)."""
    for part in MATHJAX_PARTS:
        path = source / part
        if not path.exists():
            if part.startswith("localization/"):
                continue
            raise SystemExit(f"build: MathJax in {source} has no {part}")
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        for file in files:
            out = target / file.relative_to(source)
            if not out.is_file() or out.stat().st_size != file.stat().st_size:
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(file, out)


def inline_debian_imports(static):
    """Debian's theme imports its normalize.css from the web server's /javascript/ folder
    (libjs-normalize.css): the site takes the file in, so that it reads the same offline."""
    for css in static.rglob("*.css"):
        text = css.read_text(encoding="utf-8")
        new = re.sub(r"@import url\(/javascript/([^)]+)\);?",
                     lambda m: (Path("/usr/share/javascript") / m.group(1)).read_text(
                         encoding="utf-8"), text)
        if new != text:
            css.write_text(new, encoding="utf-8")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--xml", required=True, help="Doxygen's XML of the headers")
    parser.add_argument("--work", required=True, help="a folder for the staged sources")
    parser.add_argument("--out", required=True, help="the site's folder")
    parser.add_argument("--mathjax", default="/usr/share/javascript/mathjax",
                        help="MathJax 2 (Debian: libjs-mathjax)")
    parser.add_argument("--sphinx-build", default=shutil.which("sphinx-build") or "sphinx-build",
                        help="Sphinx (Debian: python3-sphinx)")
    parser.add_argument("--langs", nargs="+", default=list(stage.LANGS))
    parser.add_argument("--serial", action="store_true", help="one language after the other")
    args = parser.parse_args()
    work, out = Path(args.work).resolve(), Path(args.out).resolve()
    start = time.monotonic()

    messages = []
    for lang in args.langs:
        messages += stage.Stager(work / "src", lang).stage()
    if messages:
        print("\n".join("build: " + m for m in messages), file=sys.stderr)
        return 1
    for lang in args.langs:
        shutil.copytree(HERE / "locale", work / "src" / lang / "_locale", dirs_exist_ok=True)
    mathjax = work / "mathjax-static"
    copy_mathjax(Path(args.mathjax), mathjax / "mathjax")

    def sphinx(lang):
        # A new folder each time, so that no page of an older build stays behind; Sphinx reads
        # only the pages that changed (its doctrees are kept) and writes every page (-a).
        shutil.rmtree(out / lang, ignore_errors=True)
        env = dict(os.environ, WB_SITE_LANG=lang, WB_DOXYGEN_XML=str(Path(args.xml).resolve()),
                   WB_MATHJAX_COPY=str(mathjax), PYTHONDONTWRITEBYTECODE="1",
                   # Breathe's use of older Sphinx calls (Debian 13): not the site's warnings
                   PYTHONWARNINGS="ignore::DeprecationWarning,ignore::PendingDeprecationWarning")
        command = [args.sphinx_build, "-b", "html", "-a", "-W", "--keep-going", "-q",
                   "-c", str(HERE), "-d", str(work / "doctrees" / lang),
                   str(work / "src" / lang), str(out / lang)]
        return subprocess.Popen(command, env=env)

    def run(langs):
        runs = []
        for lang in langs:
            runs.append((lang, sphinx(lang)))
            if args.serial:
                runs[-1][1].wait()
        failed = [lang for lang, process in runs if process.wait() != 0]
        for lang in failed:  # every page is read again next time, and shows its warnings again
            shutil.rmtree(work / "doctrees" / lang, ignore_errors=True)
        return failed

    kept = [lang for lang in args.langs if (work / "doctrees" / lang).is_dir()]
    failed = run(args.langs)
    again = [lang for lang in failed if lang in kept]
    if again:  # what an older build left (Breathe's notes on the XML) may be what failed
        print(f"build: Sphinx failed for {', '.join(again)} on an older build's state; "
              "once more from the start", file=sys.stderr)
        failed = [lang for lang in failed if lang not in again] + run(again)
    if failed:
        print(f"build: Sphinx failed for {', '.join(failed)} (its warnings are errors)",
              file=sys.stderr)
        return 1
    for lang in args.langs:
        inline_debian_imports(out / lang / "_static")
    (out / "index.html").write_text(INDEX, encoding="utf-8")
    print(f"build: the site is in {out} (open {out / 'index.html'}), "
          f"{time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
