"""Just enough C++ reading for the tools, in one place: comments blanked, macro arguments split,
string literals read, doc comments gathered into blocks with the declaration they document,
the functions a header declares, the function definitions of a source file with their bodies,
and the exercises of a stub (the functions whose body is WB_STUB())."""

import re
from dataclasses import dataclass, field

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def _skip_literal(text, i):
    """The offset just past the string or character literal (raw strings too) at text[i]."""
    raw = re.match(r'(?:u8|[uUL])?R"([^()\\\s]{0,16})\(', text[i:])
    if raw:
        end = text.find(")" + raw.group(1) + '"', i + raw.end())
        return len(text) if end < 0 else end + len(raw.group(1)) + 2
    quote = text[i]
    j = i + 1
    while j < len(text) and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _literal_starts(text, i):
    """True when a string or character literal starts at text[i] (not a digit separator such
    as 1'000, not the R of an identifier)."""
    c = text[i]
    before = text[i - 1] if i else " "
    if c == '"':
        return True
    if c == "'":
        return not (before.isalnum() or before == "_")
    return c in "uULR" and not (before.isalnum() or before == "_") and \
        re.match(r'(?:u8|[uUL])?R"', text[i:i + 4]) is not None


_TOKENS = re.compile(
    r'(?P<raw>(?<![\w])(?:u8|[uUL])?R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)")'
    r'|(?P<string>"(?:[^"\\\n]|\\.)*"?)'
    r"|(?P<char>(?<![\w])'(?:[^'\\\n]|\\.)*'?)"
    r"|(?P<line>//[^\n]*)"
    r"|(?P<block>/\*.*?(?:\*/|\Z))", re.S)


def blank_comments(text, literals=False):
    """TEXT with every comment replaced by spaces (newlines kept, so offsets and line numbers
    stay), string and character literals untouched (or, with LITERALS, their insides blanked
    too: for finding a macro's name only where it is code)."""
    def blank(m):
        token = m.group(0)
        if m.group("line") is not None or m.group("block") is not None:
            return re.sub(r"[^\n]", " ", token)
        if literals and len(token) >= 2:
            return token[0] + re.sub(r"[^\n]", " ", token[1:-1]) + token[-1]
        return token
    return _TOKENS.sub(blank, text)


def split_args(text, start):
    """The arguments of the call whose '(' is just before text[start]: ([(offset, raw)], end)
    where end is the offset of the closing ')'. Commas inside (), [], {} and literals do not
    split; angle brackets are not tracked (a template argument list with a comma in an
    argument splits it)."""
    args, depth, i, begin = [], 0, start, start
    while i < len(text):
        c = text[i]
        if _literal_starts(text, i):
            i = _skip_literal(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append((begin, text[begin:i]))
                if len(args) == 1 and not args[0][1].strip():
                    return [], i
                return [(o, a.strip()) for o, a in args], i
            depth -= 1
        elif c == "," and depth == 0:
            args.append((begin, text[begin:i]))
            begin = i + 1
        i += 1
    return [(o, a.strip()) for o, a in args], len(text)


_LITERAL = re.compile(r'(?:u8|[uUL])?R"([^()\\\s]{0,16})\((.*?)\)\1"'
                      r'|(?:u8|[uUL])?"((?:[^"\\\n]|\\.)*)"', re.S)


def unescape(body):
    return re.sub(r"\\(x[0-9a-fA-F]+|[0-7]{1,3}|.)", lambda m: _ESCAPES.get(
        m.group(1), chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "x" else
        chr(int(m.group(1), 8)) if m.group(1)[0].isdigit() else m.group(1)), body)


def pieces(expr):
    """An expression as [(is_literal, text)]: its string literals read, everything else kept as
    written (`"truncated at byte " + std::to_string(cut)` -> [(True, 'truncated at byte '),
    (False, '+ std::to_string(cut)')])."""
    out, pos = [], 0
    for m in _LITERAL.finditer(expr):
        between = expr[pos:m.start()].strip()
        if between:
            out.append((False, between))
        out.append((True, m.group(2) if m.group(2) is not None else unescape(m.group(3))))
        pos = m.end()
    if expr[pos:].strip():
        out.append((False, expr[pos:].strip()))
    # Adjacent literals ("ab" "cd") are one string; `+` between literals joins them too.
    merged = []
    for is_lit, text in out:
        if not is_lit and text == "+" and merged and merged[-1][0]:
            merged.append((None, ""))
            continue
        if is_lit and merged and (merged[-1][0] or merged[-1][0] is None):
            if merged[-1][0] is None:
                merged.pop()
            if merged and merged[-1][0]:
                merged[-1] = (True, merged[-1][1] + text)
                continue
        merged.append((is_lit, text))
    return [(bool(k), t) for k, t in merged if k is not None]


def literal(expr):
    """The text of an expression made only of string literals, else None."""
    parts = pieces(expr)
    if parts and all(is_lit for is_lit, _ in parts):
        return "".join(t for _, t in parts)
    return None


# ---- doc comments ----------------------------------------------------------------------------

DOC_LINE = re.compile(r"^\s*///(?!/)<?\s?(.*)$")
TRAILING_DOC = re.compile(r"\S.*?///<\s?(.*)$")
CONTROL = {"if", "for", "while", "switch", "return", "sizeof", "decltype", "static_assert",
           "alignof", "noexcept", "operator"}


@dataclass
class DocBlock:
    file: str
    line: int                      # the first /// line
    lines: list                    # [(line number, text after ///)]
    name: str = ""                 # what it documents: a function, a type, a constant
    declaration: str = ""
    decl_line: int = 0
    trailing: bool = False         # a ///< comment after a member

    def paragraphs(self):
        """[(start index into lines, [(line number, text)])]: a paragraph starts at an @tag
        or after a blank line."""
        out, current = [], []
        for k, (number, text) in enumerate(self.lines):
            starts = text.lstrip().startswith(("@", "\\param", "\\throws", "\\return"))
            if not text.strip() or starts:
                if current:
                    out.append(current)
                current = []
                if not text.strip():
                    continue
            current.append((number, text))
        if current:
            out.append(current)
        return out

    def tagged(self, tag):
        """The text of every @TAG paragraph, each joined into one line."""
        return [" ".join(t.strip() for _, t in p) for p in self.paragraphs()
                if p[0][1].lstrip().startswith("@" + tag)]


def _declared_name(decl):
    """The name a declaration introduces: the function before its '(' (operators kept as
    written), or the type or variable it names."""
    decl = re.sub(r"^\s*template\s*<[^;{]*?>\s*", "", decl)
    decl = re.sub(r"\[\[[^\]]*\]\]", " ", decl)
    m = re.match(r"\s*(?:struct|class|enum(?:\s+class)?|union|namespace)\s+(\w+)", decl)
    if m:
        return m.group(1)
    m = re.match(r"\s*using\s+(\w+)\s*=", decl)
    if m:
        return m.group(1)
    for m in re.finditer(r"(~?\w+|operator\s*[^\s(]+)\s*(?:<[^()]*>)?\s*\(", decl):
        name = m.group(1)
        if name not in CONTROL and not name.startswith("WB_"):
            return re.sub(r"\s+", "", name)
    m = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*(?:=|;|\{)", decl)
    return m.group(1) if m else ""


def doc_blocks(path_name, text):
    """Every doc comment of a header, with what it documents."""
    lines = text.splitlines()
    blocks, k = [], 0
    while k < len(lines):
        if DOC_LINE.match(lines[k]):
            start, body = k, []
            while k < len(lines) and DOC_LINE.match(lines[k]):
                body.append((k + 1, DOC_LINE.match(lines[k]).group(1)))
                k += 1
            j, decl = k, []
            while j < len(lines) and not lines[j].strip():
                j += 1
            decl_line = j + 1
            while j < len(lines) and len(decl) < 8 and not DOC_LINE.match(lines[j]):
                code = re.sub(r"//.*", "", lines[j])
                decl.append(code)
                if re.search(r"[;{]", code) or (code.strip().startswith("#")):
                    break
                j += 1
            declaration = " ".join(" ".join(decl).split())
            name = "" if declaration.startswith("#") else _declared_name(declaration)
            blocks.append(DocBlock(path_name, start + 1, body, name, declaration, decl_line))
            continue
        trailing = TRAILING_DOC.search(lines[k])
        if trailing and "///<" in lines[k]:
            code = lines[k][:lines[k].index("///<")]
            blocks.append(DocBlock(path_name, k + 1, [(k + 1, trailing.group(1))],
                                   _declared_name(code), " ".join(code.split()), k + 1, True))
        k += 1
    return blocks


def declared_names(text):
    """Every name a header's code (not its comments) declares or calls with '('."""
    code = blank_comments(text)
    names = set(re.findall(r"(\w+)\s*(?:<[^;(){}]*>)?\s*\(", code))
    names |= set(re.findall(r"\b(?:struct|class|enum(?:\s+class)?|using)\s+(\w+)", code))
    return names


@dataclass
class TestCase:
    name: str
    tags: list
    file: str
    line: int
    start: int = 0                 # offsets into the file's text
    end: int = 0
    clause_tags: list = field(default_factory=list)


def test_cases(path_name, text, code=None):
    """The TEST_CASEs of a test file, with their tags, in order (each up to the next one)."""
    code = blank_comments(text) if code is None else code
    out = []
    for m in re.finditer(r"\bTEST_CASE\s*\(", blank_comments(code, literals=True)):
        args, _ = split_args(code, m.end())
        name = literal(args[0][1]) if args else None
        tags_text = (literal(args[1][1]) if len(args) > 1 else "") or ""
        tags = re.findall(r"\[([^\]]+)\]", tags_text)
        out.append(TestCase(name if name is not None else (args[0][1] if args else ""), tags,
                            path_name, line_of(code, m.start()), m.start(),
                            clause_tags=[t[2:].strip() for t in tags if t.startswith("c:")]))
    for this, after in zip(out, out[1:] + [None]):
        this.end = after.start if after else len(code)
    return out


# ---- functions: declared in a header, defined in a source, left as exercises in a stub -----

HEADER_FUNCTION = r"^[A-Za-z_][\w:<>, ]*?[\s&*]+({name})\s*\("


def declared_functions(text):
    """The functions a header's code declares (a return type, then a name and '(' at the start
    of a line), in order, each once."""
    names = []
    for name in re.findall(HEADER_FUNCTION.format(name=r"\w+"), blank_comments(text), re.M):
        if name not in names and name not in ("if", "for", "while", "return", "operator"):
            names.append(name)
    return names


def declares(text, function):
    """Whether a header's code declares FUNCTION."""
    return re.search(HEADER_FUNCTION.format(name=re.escape(function)), blank_comments(text),
                     re.M) is not None


DEFINITION = re.compile(r"(?:^|[\s*&>:])(~?[A-Za-z_]\w*)\s*\(([^;{}()]|\([^;{}()]*\))*\)"
                        r"[\w\s&:<>,*-]*\{")
NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "defined",
                 "static_assert", "decltype", "alignof", "noexcept"}


def function_definitions(text):
    """[(name, line, body lines)] of the function definitions in C++ TEXT (comments removed):
    a name, its parameters in brackets and an opening brace, up to the matching brace. Lambdas
    and blocks inside a body belong to that body."""
    # Preprocessor lines (continued ones too) are no code of a function: blanked.
    code = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", "", blank_comments(text), flags=re.M)
    found, pos = [], 0
    while True:
        m = DEFINITION.search(code, pos)
        if not m:
            return found
        name = m.group(1)
        start = m.end()  # after the opening brace
        if name in NOT_FUNCTIONS:
            pos = start
            continue
        depth, i = 1, start
        while i < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        body = [l.strip() for l in code[start:i - 1].splitlines()]
        found.append((name, code.count("\n", 0, m.start(1)) + 1, [l for l in body if l]))
        pos = i


def stub_functions(folder):
    """The exercise functions of the stub folder FOLDER (chapters/<folder>): those whose body in
    one of its .cpp files is WB_STUB(), in file and source order, each once."""
    from pathlib import Path
    names = []
    for path in sorted(Path(folder).glob("*.cpp")):
        for name, _, body in function_definitions(path.read_text(encoding="utf-8")):
            if any("WB_STUB()" in line for line in body) and name not in names:
                names.append(name)
    return names
