# Sphinx configuration of the documentation site, one build per language: docs/site/build.py
# runs `sphinx-build -c docs/site` on each staged tree with WB_SITE_LANG=en or zh and
# WB_DOXYGEN_XML naming Doxygen's XML of the headers (the API pages, through Breathe).
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

LANG = os.environ.get("WB_SITE_LANG", "en")

project = "Attention Workbook"
author = "Attention Workbook"
copyright = "Attention Workbook"
language = "zh_CN" if LANG == "zh" else "en"
html_title = "Attention Workbook" if LANG == "en" else "Attention Workbook（注意力练习册）"
html_short_title = "Attention Workbook"

extensions = ["myst_parser", "breathe", "sphinx.ext.mathjax", "sphinx_copybutton", "wbsite"]
source_suffix = {".md": "markdown"}
root_doc = master_doc = "index"
exclude_patterns = ["_locale"]
locale_dirs = ["_locale"]  # the theme's words in Chinese (locale/, staged by build.py)
templates_path = [os.path.join(HERE, "templates")]

# Code is shown exactly as written: no curly quotes, no en dashes for "--".
smartquotes = False
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 4
myst_dmath_double_inline = True
highlight_language = "none"
pygments_style = "tango"

# The API pages: Doxygen's XML of the headers.
breathe_projects = {"wb": os.environ.get("WB_DOXYGEN_XML", "")}
breathe_default_project = "wb"
breathe_domain_by_extension = {"hpp": "cpp"}
breathe_show_include = False
cpp_index_common_prefix = ["wb::"]

# Formulas: Debian's MathJax 2 (libjs-mathjax), a copy of the parts the site uses in _static.
mathjax_path = "mathjax/MathJax.js"
mathjax2_config = {
    "jax": ["input/TeX", "output/HTML-CSS"],
    "extensions": ["tex2jax.js"],
    "TeX": {"extensions": ["AMSmath.js", "AMSsymbols.js"]},
    "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                "processEscapes": False, "processClass": "math", "ignoreClass": "tex2jax_ignore"},
    "HTML-CSS": {"availableFonts": ["TeX"], "imageFont": None, "linebreaks": {"automatic": True}},
    "messageStyle": "none",
}

html_theme = "furo"
html_static_path = [os.path.join(HERE, "static")]
if os.environ.get("WB_MATHJAX_COPY"):
    html_static_path.append(os.environ["WB_MATHJAX_COPY"])
html_css_files = ["wb.css"]
html_copy_source = False
html_show_copyright = False
html_use_index = False  # the API pages list every function; the search finds them
html_domain_indices = False
html_show_sourcelink = False
html_last_updated_fmt = None

# Copy buttons copy the command, not the prompt or the output shown after "#".
copybutton_prompt_text = r"\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = False

# Search: jieba cuts Chinese into words (python3-jieba); English words are stemmed.
html_search_language = "zh" if LANG == "zh" else "en"

# A code block that Pygments cannot colour (a shell line with a lone quote) is shown plain.
suppress_warnings = ["misc.highlighting_failure"]

# The menu: the site's name, the language switch, search, then the course.
html_sidebars = {"**": ["sidebar/brand.html", "sidebar/wb-switch.html", "sidebar/search.html",
                        "sidebar/scroll-start.html", "sidebar/navigation.html",
                        "sidebar/scroll-end.html"]}
