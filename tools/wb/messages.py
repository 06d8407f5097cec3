"""`workbook messages`: a check asks of an exception message only the facts its header states.

A check states what a message must name in one of two ways (tests/support/check.hpp):
WB_CHECK_THROWS(type, call, hint, fact...) or Catch's CHECK/REQUIRE_THROWS_WITH(call, matcher)
and CHECK/REQUIRE_THROWS_MATCHES(call, type, matcher). Each requirement is mapped to the
function called (the `wb::f(` of the call; the one a fact names when the call has several) and
each piece of each fact is compared with that function's @throws text:

- a word (two letters or more, a plural "s" aside) must be the function's name or occur in
  the @throws text;
- a bracketed group of numbers ("[2, 3]", "(97, 98)", "[0, 257)") needs a @throws that speaks
  of a shape, a range or a bracketed value, or the same numbers in the call;
- any other number needs a @throws that names some value (a number, a size, a count, an
  index, a `code` example ...), or the same number in the call or in the @throws.

So the function's name and the call's offending values pass, and "w_fc" or "6 bytes" under a
@throws that says only "the message names the function and the offending size" is flagged.
A message read any other way (`.what()`, message_names called directly) is flagged too: the
tool cannot see what it requires. Last, the "likely mistake" banner of `check`: a catalogued
mistake (tools/mutants/signatures.json) whose banner the screen would show for checks that
fail only on a message's wording is flagged.
"""

import functools
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .common import ROOT
from .contract import MARKER, find_chapters, rel, select
from .cppscan import blank_comments, doc_blocks, line_of, pieces, split_args, test_cases
from .screen import WORDING_FAILURE  # the start of a failure on wording alone

WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*(?:::[A-Za-z_][A-Za-z_0-9]*)*")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
GROUP = re.compile(r"[\[(\{]\s*-?\d+(?:\.\d+)?(?:\s*,\s*-?\d+(?:\.\d+)?)*\s*[\])\}]|\[\s*\]")
VALUE_WORDS = re.compile(r"\b(?:values?|sizes?|shapes?|counts?|lengths?|index|indices|"
                         r"positions?|axis|axes|ids?|bytes?|lines?|numbers?|steps?|offsets?|"
                         r"limits?|widths?|dims?|dimensions?|ranks?|capacity|rows?|columns?)\b",
                         re.I)
SHAPE_WORDS = re.compile(r"\b(?:shapes?|ranges?|bounds?)\b|[\[(]\s*-?\w+\s*[,\])]", re.I)
VALUE_NAMES = {"nan", "inf", "infinity", "true", "false"}   # values written as words
CALL = re.compile(r"\bwb::(\w+)\s*(?:<[^<>();]*(?:<[^<>();]*>[^<>();]*)*>)?\s*\(")
MEMBER = re.compile(r"(?:\.|->)\s*(\w+)\s*\(")


@dataclass
class Throws:
    function: str
    file: str
    line: int
    texts: list                      # each @throws paragraph, one line

    @property
    def text(self):
        return " ".join(self.texts)


@dataclass
class Requirement:
    file: str
    line: int
    macro: str
    call: str                        # the expression that must throw, one line
    function: str                    # the function it is mapped to ('' when none)
    facts: list                      # [text]: non-literal parts written as ‹expr›
    check: str = ""                  # the TEST_CASE's name
    unstated: dict = field(default_factory=dict)   # fact -> [piece not stated]
    throws: str = ""                 # the @throws text compared with
    why: str = ""                    # set when the requirement cannot be compared


def throws_index(chapters, root=ROOT):
    """function name -> Throws: every @throws of every chapter header (overloads and members
    of the same name joined)."""
    index = {}
    for chapter in chapters:
        for header in chapter.headers:
            name = rel(header, root)
            for block in doc_blocks(name, Path(header).read_text(encoding="utf-8")):
                if not block.name:
                    continue
                texts = [" ".join(MARKER.sub(" ", t).split()) for t in block.tagged("throws")]
                entry = index.setdefault(block.name, Throws(block.name, name, block.decl_line, []))
                entry.texts += [t for t in texts if t not in entry.texts]
    return index


def _fact(expr):
    """A fact's text, its non-literal parts written ‹like this› (a value of the call)."""
    return "".join(text if is_lit else f"‹{text.strip('+ ')}›" for is_lit, text in pieces(expr))


def _regex_text(pattern):
    """The literal text a regular expression asks for, roughly: escapes read, wildcards gone."""
    text = re.sub(r"\\([^\w\s])", r"\1", pattern)
    text = re.sub(r"\\[dDsSwWbB][*+?]?|\.[*+?]\??|\[[^\]]*\][*+?]?|[\^$|]", " ", text)
    return re.sub(r"[()]", " ", text)


def _matcher_facts(expr):
    """The texts a Catch matcher (or a plain string: the whole message) requires."""
    facts = []
    for m in re.finditer(r"\b(\w+)\s*\(", expr):
        if m.group(1) in ("Contains", "ContainsSubstring", "Equals", "StartsWith", "EndsWith",
                          "Message", "Matches", "MessageMatches"):
            args, _ = split_args(expr, m.end())
            if args:
                text = _fact(args[0][1])
                facts.append(_regex_text(text) if "Matches" in m.group(1) else text)
    if not facts and pieces(expr) and pieces(expr)[0][0]:
        facts.append(_fact(expr))
    return facts


def _function(call, facts, known):
    """The function a requirement is about: the wb:: function called (the one a fact names
    when several are called), else a member function of a known name."""
    called = CALL.findall(call)
    named = [w.split("::")[-1] for f in facts for w in WORD.findall(f)]
    for name in named:
        if name in called:
            return name
    for name in called:
        if name in known:
            return name
    members = [m for m in MEMBER.findall(call) if m in known]
    if members:
        return members[0]
    return called[0] if called else ""


def requirements(path, root=ROOT, known=()):
    """Every requirement on an exception message in one test file."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    code = blank_comments(text)
    name = rel(path, root)
    cases = test_cases(name, text, code)

    def case_at(offset):
        return next((c.name for c in reversed(cases) if c.start <= offset), "")

    bare = blank_comments(code, literals=True)
    out, used = [], []
    for m in re.finditer(r"\b(WB_CHECK_THROWS|(?:CHECK|REQUIRE)_THROWS_(?:WITH|MATCHES))\s*\(",
                         bare):
        if re.match(r"\s*#\s*define", code[code.rfind("\n", 0, m.start()) + 1:m.start()]):
            continue
        args, end = split_args(code, m.end())
        used.append((m.start(), end))
        macro = m.group(1)
        if macro == "WB_CHECK_THROWS":
            call = args[1][1] if len(args) > 1 else ""
            facts = [_fact(a) for _, a in args[3:]]
        elif macro.endswith("WITH"):
            call = args[0][1] if args else ""
            facts = _matcher_facts(args[1][1]) if len(args) > 1 else []
        else:
            call = args[0][1] if args else ""
            facts = _matcher_facts(args[2][1]) if len(args) > 2 else []
        out.append(Requirement(name, line_of(code, m.start()), macro, " ".join(call.split()),
                               _function(call, facts, known), facts, case_at(m.start())))
    for m in re.finditer(r"\.what\s*\(\s*\)|\bmessage_names\s*\(", bare):
        if any(a <= m.start() <= b for a, b in used):
            continue
        if re.match(r"\s*#\s*define", code[code.rfind("\n", 0, m.start()) + 1:m.start()]):
            continue
        out.append(Requirement(name, line_of(code, m.start()), m.group(0).strip("( )."), "", "",
                               [], case_at(m.start()), why="a message read outside "
                               "WB_CHECK_THROWS and *_THROWS_WITH: what it requires cannot be "
                               "compared with a @throws (state the facts in WB_CHECK_THROWS)"))
    return out


NOT_A_VALUE = {"the", "a", "an", "and", "or", "its", "both", "only", "function", "wb", "it",
               "which", "what", "is", "wrong", "says", "that"}


def names_more_than_the_function(throws_text, function):
    """True when a "names ..." of THROWS_TEXT lists something besides the function ("names D
    and H", "names the function and the offending size"), not for "names \"wb::greedy\""."""
    for m in re.finditer(r"\b(?:names?|naming)\b([^();.]*?)(?=\b(?:if|when|for)\b|[();.]|$)",
                         throws_text):
        words = {w.lower() for w in re.findall(r"[A-Za-z_]\w*", m.group(1))}
        if words - NOT_A_VALUE - {function.lower()}:
            return True
    return False


@functools.lru_cache(maxsize=None)
def _words(text):
    words = set()
    for w in WORD.findall(text):
        for part in [w] + w.split("::"):
            part = part.lower()
            words.add(part)
            words.add(re.sub(r"(?:es|s)$", "", part))
    return words


def unstated(fact, function, throws_text, call):
    """The pieces of FACT (a word, a number, a bracketed group) that neither THROWS_TEXT states
    nor the function's name or the CALL's offending values account for."""
    fact = re.sub(r"‹[^›]*›", " ", fact)        # values computed by the check: the call's
    said_words = _words(throws_text)
    said_numbers = {float(n) for n in NUMBER.findall(throws_text)}
    call_numbers = {float(n) for n in NUMBER.findall(re.sub(r"\w*[A-Za-z_]\d\w*", " ", call))}
    call_words = _words(" ".join(t for is_lit, t in pieces(call) if is_lit))
    names_values = bool(VALUE_WORDS.search(throws_text) or "`" in throws_text
                        or names_more_than_the_function(throws_text, function))
    def number_stated(n):          # numbers compare as numbers: 1 is 1.0
        return names_values or float(n) in said_numbers or float(n) in call_numbers

    out = []
    for g in GROUP.finditer(fact):
        numbers = NUMBER.findall(g.group(0))
        if len(numbers) == 1:                  # "[3]", "logits[1]": one number
            if not number_stated(numbers[0]):
                out.append(g.group(0))
            continue
        in_call = all(float(n) in call_numbers for n in numbers)
        if not (SHAPE_WORDS.search(throws_text) or in_call):
            out.append(g.group(0))
    rest = GROUP.sub(" ", fact)
    for w in WORD.findall(rest):
        if len(w) < 2 or w.split("::")[-1] == function or \
                (w.startswith("wb::") and f"wb::{function}".startswith(w)):
            continue
        if w.lower() in VALUE_NAMES:
            if not names_values:
                out.append(w)
            continue
        if w.lower() in call_words:
            continue
        last = w.split("::")[-1].lower()
        if last in said_words or re.sub(r"(?:es|s)$", "", last) in said_words or \
                w.lower() in said_words:
            continue
        out.append(w)
    for n in NUMBER.findall(WORD.sub(" ", rest)):
        if not number_stated(n):
            out.append(n)
    return out


def throws_text(function, index, seen=None):
    """FUNCTION's @throws text and that of every function it refers to ("@throws as
    cross_entropy_forward", "the options sampling_distribution rejects")."""
    seen = set() if seen is None else seen
    seen.add(function)
    entry = index.get(function)
    if entry is None:
        return ""
    text = entry.text
    for name in dict.fromkeys(re.findall(r"\b\w+\b", entry.text)):
        if name in index and name not in seen and index[name].texts:
            text += " " + throws_text(name, index, seen)
    return text


def compare(reqs, index):
    """Fills each requirement's unstated pieces; returns the flagged ones."""
    flagged = []
    for req in reqs:
        if req.why:
            flagged.append(req)
            continue
        throws = index.get(req.function)
        if not req.function:
            req.why = "no wb:: function is called: the requirement cannot be compared"
        elif throws is None or not throws.texts:
            req.why = f"wb::{req.function} has no @throws in the chapters' headers"
        else:
            req.throws = throws_text(req.function, index)
            for fact in req.facts:
                bad = unstated(fact, req.function, req.throws, req.call)
                if bad:
                    req.unstated[fact] = bad
        if req.unstated or (req.why and req.facts):
            flagged.append(req)
    return flagged


# ---- the "likely mistake" banner ------------------------------------------------------------


def wording_banners(signatures_path, labels=None):
    """[(mistake name, label, [check titles])]: catalogued mistakes whose banner the screen
    shows to a learner whose checks fail only on a message's wording. Each is tried on the
    screen's own rule: the learner fails exactly the mistake's checks that failed on wording,
    with a message of other words."""
    from .results import Check, Failure, Outcome
    from .screen import known_mistake
    try:
        signatures = json.loads(Path(signatures_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []

    class Label:
        def __init__(self, label):
            self.label = label

    found = []
    for name, sig in signatures.items():
        label = sig.get("label", "")
        if labels and label not in labels:
            continue
        wording = [t for t, m in sig.get("messages", {}).items() if m.startswith(WORDING_FAILURE)]
        if not wording:
            continue
        checks = [Check(f"{label}: {t}", False, [Failure("", 0, sig["messages"][t].splitlines()[0]
                                                           + "\n  message: (other words)")])
                  for t in wording]
        banner = known_mistake(Label(label), Outcome(checks), signatures_path)
        if banner:
            found.append((name, label, wording, banner))
    return found


def tie_notes(signatures_path, labels=None):
    """Groups of catalogued mistakes of one chapter that fail the same checks: the screen tells
    them apart by comparing the failures' first lines (values and wording alike)."""
    try:
        signatures = json.loads(Path(signatures_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    groups = {}
    for name, sig in signatures.items():
        if labels and sig.get("label") not in labels:
            continue
        key = (sig.get("label"), tuple(sorted(sig.get("failing", []))))
        groups.setdefault(key, []).append(name)
    return [(label, names) for (label, _), names in sorted(groups.items()) if len(names) > 1]


# ---- the verb -------------------------------------------------------------------------------


def read_all(root=ROOT, names=None, extra=None):
    every = find_chapters(root, extra)
    chosen = select(every, names)
    index = throws_index(every, root)
    reqs = []
    for chapter in chosen:
        for path in chapter.tests:
            reqs += requirements(path, root, index)
    return chosen, index, reqs


def cmd_messages(args):
    root = Path(getattr(args, "root", None) or ROOT)
    chosen, index, reqs = read_all(root, args.chapters, args.extra_tests)
    flagged = compare(reqs, index)
    labels = {c.label for c in chosen}
    signatures = root / "tools" / "mutants" / "signatures.json"
    banners = wording_banners(signatures, labels)
    ties = tie_notes(signatures, labels)
    if args.json:
        print(json.dumps({"requirements": [asdict(r) for r in reqs],
                          "flagged": [f"{r.file}:{r.line}" for r in flagged],
                          "wording_banners": [{"mistake": n, "label": l, "checks": c,
                                               "banner": b} for n, l, c, b in banners],
                          "ties": [{"label": l, "mistakes": n} for l, n in ties]},
                         indent=1, ensure_ascii=False))
    else:
        for line in message_lines(reqs, flagged, banners, ties, args.all):
            print(line)
    return 1 if args.check and (flagged or banners) else 0


def message_lines(reqs, flagged, banners, ties, show_all=False):
    out = []
    for req in reqs:
        if req not in flagged and not show_all:
            continue
        mark = "✗" if req in flagged else "✓"
        where = f"{req.file}:{req.line}"
        out.append(f"{mark} {where}  {('wb::' + req.function) if req.function else req.macro}"
                   + (f"  ({req.call[:70]})" if req.call else ""))
        if req.why:
            out.append(f"    {req.why}")
        for fact in req.facts:
            bad = req.unstated.get(fact)
            if bad:
                out.append(f"    requires \"{fact}\": not stated: " + ", ".join(
                    f"\"{b}\"" for b in bad))
            elif show_all:
                out.append(f"    requires \"{fact}\"")
        if req.unstated or show_all and req.throws:
            out.append(f"    @throws: {req.throws}")
    facts = sum(len(r.facts) for r in reqs)
    bad_facts = sum(len(r.unstated) for r in reqs)
    out.append(f"{len(reqs)} requirements on messages ({facts} facts): {len(flagged)} flagged "
               f"({bad_facts} facts the @throws does not state)")
    if banners:
        out.append("")
        out.append("\"likely mistake\" banners that fire on a message's wording alone:")
        for name, label, checks, banner in banners:
            out.append(f"✗ {label} {name}: a learner whose only failures are the wording of "
                       f"{len(checks)} message(s) is told \"{banner}\"")
            for title in checks:
                out.append(f"    {title}")
    if ties:
        out.append("")
        out.append("mistakes that fail the same checks (the banner picks by the failures' first "
                   "lines, or names both):")
        for label, names in ties:
            out.append(f"  {label}: " + ", ".join(names))
    return out
