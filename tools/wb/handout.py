"""The class handout: the repository without solutions/, the reference of every chapter prebuilt.

`workbook handout DIR` writes a tree a class can be given: every tracked file except the
reference sources (solutions/), the style answers (tools/styles/: whole correct chapters), the
mistake catalogue (tools/mutants/*.txt: its find/replace blocks are pieces of the reference) and
the repository's own CI (.ci/), and the hint ladders
(hints/*.json) without their key lines; in their place
prebuilt/<folder>/ holds each chapter's reference as static libraries, found by
cmake/Workbook.cmake (wb_chapter), so WB_REFERENCE, `workbook use N reference`, the benchmarks
and verify-stubs keep working. The chapter list comes from <build>/workbook/course.json.
"""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from .common import ROOT, WorkbookError, cache_value, configure, run
from .course import load_course
from .cppscan import blank_comments, function_definitions

# What a handout leaves out (paths relative to the repository; a folder ends in /).
LEFT_OUT = ["solutions/", "tools/styles/", ".ci/", "tools/mutants/*.txt"]
PREBUILT = "prebuilt"

NOTICE_EN = """\
> **This is a class handout.** It holds no reference solutions: each chapter's reference is a
> compiled library in `prebuilt/` ({toolchain}), so `tools/workbook use N reference`,
> `WB_REFERENCE` and the benchmarks still work, but the answers are not here to read.
> Your work goes in `chapters/`; your instructor grades it with their own copy of the workbook.
> `prebuilt/README.md` says what the libraries are.
"""
NOTICE_ZH = """\
> **这是课堂分发版。** 其中没有参考答案的源代码：每章的参考实现是 `prebuilt/` 中已编译的库
> （{toolchain}），所以 `tools/workbook use N reference`、`WB_REFERENCE` 和基准测试照常可用，
> 但答案无法在这里读到。你的代码写在 `chapters/`；老师用自己的工作手册副本评分。
> `prebuilt/README.md` 说明这些库是什么。
"""


HINTS = "hints/"


def withhold_key_lines(path):
    """A handout's hint ladder file without its key lines (a key line is a line of the
    reference): the ladder ends with the approach, then `use N reference`."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for rungs in data.get("functions", {}).values():
        if isinstance(rungs, dict):
            rungs.pop("key", None)
    data["key lines"] = "left out of this class handout"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def key_line_report(out):
    """[(file, line, key code)]: the ladders' key lines (lines of the reference) that can be read
    in a page of the handout OUT (guides, ladders, notes). Code is not searched: a check or the
    mini-GPT may share a short line with the reference (`layer_norm(x, p.ln1)`), and whole
    reference functions in code are what find_leaks looks for."""
    from .ladders import key_line_leaks, key_lines
    pages = [p for p in Path(out).rglob("*") if p.is_file() and PREBUILT not in p.parts[:1]
             and p.suffix in (".md", ".json", ".txt", ".html", "")]
    return key_line_leaks(pages, key_lines(ROOT), Path(out))


def left_out(path):
    """True when PATH (relative, with /) is not part of a handout."""
    for pattern in LEFT_OUT:
        if pattern.endswith("/"):
            if path.startswith(pattern):
                return True
        elif Path(path).match(pattern):
            return True
    return False


def tracked_files(root):
    """The repository's files as git tracks them (the working tree's content); without git,
    every file outside build/ and .git/."""
    result = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if result.returncode == 0 and result.stdout:
        names = [n for n in result.stdout.decode().split("\0") if n]
    else:
        names = [str(p.relative_to(root)) for p in root.rglob("*")
                 if p.is_file() and p.relative_to(root).parts[0] not in ("build", ".git")]
    return sorted(n for n in names if (root / n).is_file())


def filter_presets(text):
    """CMakePresets.json without the presets that need solutions/ (e.g. a folder of it as an
    override), nor the presets that inherit from or run those."""
    data = json.loads(text)
    dropped = set()
    for preset in data.get("configurePresets", []):
        if "solutions/" in json.dumps(preset):
            dropped.add(preset["name"])
    changed = True
    while changed:  # presets inheriting from a dropped one go too
        changed = False
        for preset in data.get("configurePresets", []):
            inherits = preset.get("inherits", [])
            inherits = [inherits] if isinstance(inherits, str) else inherits
            if preset["name"] not in dropped and dropped & set(inherits):
                dropped.add(preset["name"])
                changed = True
    if not dropped:
        return text, []
    for kind in ("configurePresets", "buildPresets", "testPresets", "packagePresets"):
        if kind in data:
            data[kind] = [p for p in data[kind] if p["name"] not in dropped
                          and p.get("configurePreset") not in dropped]
    kept = {p["name"] for k in ("buildPresets", "testPresets", "packagePresets")
            for p in data.get(k, [])}
    gone = set(dropped)
    if "workflowPresets" in data:
        workflows = []
        for w in data["workflowPresets"]:
            steps = w.get("steps", [])
            if any(s.get("name") in dropped or (s.get("type") != "configure"
                                                 and s.get("name") not in kept) for s in steps):
                gone.add(w["name"])
            else:
                workflows.append(w)
        data["workflowPresets"] = workflows
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n", sorted(gone)


# ---- the leak check -------------------------------------------------------------------------

def distinctive(lines, public, minimum=24):
    """The lines of a body long enough to be told apart and found in no public file."""
    return [l for l in lines if len(l) >= minimum and l not in public]


def text_lines(path):
    """The stripped lines of a text file, or of the printable strings of a binary one."""
    data = path.read_bytes()
    if b"\0" in data[:8192] or path.suffix in (".a", ".o"):
        return {s.decode("ascii").strip()
                for s in re.findall(rb"[\x20-\x7e\t]{16,}", data)}
    return {l.strip() for l in data.decode("utf-8", "replace").splitlines()}


def find_leaks(handout, reference, public_files):
    """What of the reference sources (every .cpp below REFERENCE, a solutions/ folder) can be
    read in HANDOUT: [(file, function, line, leaked line)], and the number of functions
    fingerprinted. A body line counts when it is at least 24 characters long and in none of
    PUBLIC_FILES (the repository's other files: the stubs, headers, checks and guides, where
    shared lines are meant to be)."""
    public = set()
    for path in public_files:
        try:
            public |= {l.strip() for l in blank_comments(path.read_text()).splitlines()}
        except (OSError, UnicodeDecodeError):
            continue
    handout = Path(handout)
    seen = {}  # stripped line: the handout file it was first seen in
    for path in sorted(handout.rglob("*")):
        if path.is_file():
            for line in text_lines(path):
                seen.setdefault(line, str(path.relative_to(handout)))
    leaks, checked = [], 0
    for source in sorted(Path(reference).rglob("*.cpp")):
        for name, line, body in function_definitions(source.read_text()):
            marks = distinctive(body, public)
            if not marks:
                continue
            checked += 1
            hit = next((m for m in marks if m in seen), None)
            if hit is not None:
                leaks.append((str(source.relative_to(reference)), name, line,
                              f"{hit}  (in {seen[hit]})"))
    return leaks, checked


# ---- writing the handout --------------------------------------------------------------------

def archive(build_dir, target):
    """The static library TARGET of BUILD_DIR, or None."""
    name = f"lib{target}.a"
    direct = Path(build_dir) / name
    if direct.exists():
        return direct
    return next(Path(build_dir).rglob(name), None)


def usable(build_dir, toolchain):
    """'' when BUILD_DIR's libraries may go into a handout, else why not."""
    build_dir = Path(build_dir)
    home = cache_value(build_dir, "CMAKE_HOME_DIRECTORY")
    if home is None:
        return "not configured"
    if Path(home).resolve() != ROOT.resolve():
        return f"configured for {home}, not {ROOT}"
    if (cache_value(build_dir, "CMAKE_BUILD_TYPE") or "") != "Release":
        return "not a Release build"
    if (cache_value(build_dir, "CMAKE_CXX_FLAGS") or "").strip():
        return "built with extra flags (CMAKE_CXX_FLAGS)"
    for option in ("WB_NATIVE", "WB_BOUNDS_CHECKS"):
        if (cache_value(build_dir, option) or "OFF").upper() in ("ON", "TRUE", "1", "YES"):
            return f"built with {option}=ON"
    try:
        data = json.loads((build_dir / "workbook" / "course.json").read_text())
    except (OSError, ValueError):
        return "no workbook/course.json"
    if data.get("toolchain") != toolchain:
        return f"another toolchain ({data.get('toolchain')})"
    return ""


def toolchain_words(tc):
    return (f"{tc['compiler']} {tc['compiler_version']} ({tc['processor']}), "
            f"xtensor {tc['xtensor']}")


def write_prebuilt_readme(path, course, tc, sizes):
    rows = "\n".join(f"| {c.label} | `{PREBUILT}/{c.folder}/` | "
                     + ", ".join(f"`{n}` ({s / 1e6:.1f} MB)" for n, s in sizes[c.label]) + " |"
                     for c in course.chapters)
    path.write_text(f"""# The reference, prebuilt

This folder replaces `solutions/` in a class handout (`tools/workbook handout`). Each chapter's
reference implementation is compiled into two static libraries:

- `libwb_<label>.a`: the functions in namespace `wb::impl`, linked when the chapter is taken from
  the reference (`tools/workbook use N reference`, `-DWB_REFERENCE=...`);
- `libwb_reference_<label>.a`: the same in namespace `wb::reference`, which the benchmarks link
  beside your code to time both.

Compiled with **{toolchain_words(tc)}** on Debian, Release, debug information stripped.
`toolchain.cmake` records this; CMake warns when your compiler or xtensor differ (a later g++,
or clang++ on libstdc++, usually links them; another xtensor may not). Not included: the
capstone's readable kernel (`readable` preset) and the mistake catalogue (`workbook mutants`),
which need the reference sources.

| chapter | folder | libraries |
|---|---|---|
{rows}
""")


def write_toolchain(path, tc):
    path.write_text(
        "# The toolchain the prebuilt reference libraries were compiled with (tools/workbook\n"
        "# handout); cmake/Workbook.cmake compares it with the one configuring the build.\n"
        f'set(WB_PREBUILT_CXX_COMPILER_ID "{tc["compiler"]}")\n'
        f'set(WB_PREBUILT_CXX_COMPILER_VERSION "{tc["compiler_version"]}")\n'
        f'set(WB_PREBUILT_PROCESSOR "{tc["processor"]}")\n'
        f'set(WB_PREBUILT_XTENSOR_VERSION "{tc["xtensor"]}")\n')


def add_notice(path, notice):
    """Puts NOTICE (a quoted paragraph) after the first heading of the guide at PATH."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    at = next((i + 1 for i, l in enumerate(lines) if l.startswith("# ")), 0)
    path.write_text("".join(lines[:at]) + "\n" + notice + "".join(lines[at:]))


def cmd_handout(args):
    started = time.time()
    out = Path(args.dir).resolve()
    root = ROOT.resolve()
    if out == root or root.is_relative_to(out) or out.is_relative_to(root / "solutions"):
        raise WorkbookError(f"{out}: choose a folder outside the repository's sources")
    if out.exists() and any(out.iterdir()) and not (out / PREBUILT / "toolchain.cmake").exists():
        raise WorkbookError(f"{out} exists and is not an earlier handout: choose an empty or new "
                            "folder")
    if not any((ROOT / "solutions").glob("*/*.cpp")):
        raise WorkbookError("no solutions/ here: a handout is written from the full repository, "
                            "not from a handout")
    build_dir = Path(args.build_dir)
    print(f"handout: the reference of every chapter ({build_dir}) ...", flush=True)
    configure(build_dir, WB_REFERENCE="all", WB_NATIVE="OFF", WB_BOUNDS_CHECKS="OFF",
              **{"WB_IMPL_DIR_*": None, "WB_EXTRA_TESTS": None})
    course = load_course(build_dir)
    tc = json.loads((build_dir / "workbook" / "course.json").read_text()).get("toolchain")
    if not tc or not tc.get("compiler"):
        raise WorkbookError(f"{build_dir}/workbook/course.json names no toolchain: configure "
                            "again")
    if any(c.kind != "reference" for c in course.chapters):
        raise WorkbookError("every chapter must be compiled from solutions/ for a handout")
    # Each library from a build that already has it (--reuse), else built here.
    wanted = [t for c in course.chapters for t in (f"wb_{c.label}", f"wb_reference_{c.label}")]
    found = {}
    for reuse in args.reuse or []:
        why = usable(reuse, tc)
        if why:
            print(f"  not reusing {reuse}: {why}")
            continue
        kinds = {c.label: c.kind for c in load_course(reuse, refresh=False).chapters}
        ready = [t for t in wanted if t not in found and archive(reuse, t)
                 and (t.startswith("wb_reference_") or kinds.get(t[3:]) == "reference")]
        if ready:
            run(["cmake", "--build", str(reuse), "-j", str(args.jobs), "--target", *ready])
            found.update({t: archive(reuse, t) for t in ready})
            print(f"  {len(ready)} libraries from {reuse}")
    rest = [t for t in wanted if t not in found]
    if rest:
        print(f"  building {len(rest)} libraries in {build_dir} ...", flush=True)
        run(["cmake", "--build", str(build_dir), "-j", str(args.jobs), "--target", *rest])
        found.update({t: archive(build_dir, t) for t in rest})
    missing = [t for t in wanted if not found.get(t)]
    if missing:
        raise WorkbookError(f"no library file for {', '.join(missing)}")

    print(f"  writing {out} ...", flush=True)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    files = [f for f in tracked_files(ROOT) if not left_out(f)]
    for name in files:
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    for ladders in sorted((out / HINTS).glob("*.json")):
        withhold_key_lines(ladders)
    presets = out / "CMakePresets.json"
    gone = []
    if presets.exists():
        text, gone = filter_presets(presets.read_text())
        presets.write_text(text)
    sizes = {}
    for c in course.chapters:
        folder = out / PREBUILT / c.folder
        folder.mkdir(parents=True, exist_ok=True)
        sizes[c.label] = []
        for target in (f"wb_{c.label}", f"wb_reference_{c.label}"):
            lib = folder / f"lib{target}.a"
            shutil.copyfile(found[target], lib)
            # As Debian strips its static libraries: no debug information (no source lines,
            # no local variable names), no compiler notes; deterministic archive headers.
            run(["strip", "--strip-debug", "--remove-section=.comment",
                 "--remove-section=.note", "--enable-deterministic-archives", lib])
            sizes[c.label].append((lib.name, lib.stat().st_size))
    write_toolchain(out / PREBUILT / "toolchain.cmake", tc)
    write_prebuilt_readme(out / PREBUILT / "README.md", course, tc, sizes)
    for guide, notice in (("README.md", NOTICE_EN), ("README.zh.md", NOTICE_ZH)):
        if (out / guide).exists():
            add_notice(out / guide, notice.format(toolchain=toolchain_words(tc)))

    # The ladders' key lines are lines of the reference: not public, so they are fingerprinted.
    public = [ROOT / f for f in files if not f.startswith((PREBUILT + "/", HINTS))]
    leaks, checked = find_leaks(out, ROOT / "solutions", public)
    keys = key_line_report(out)
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    libs = sum(s for v in sizes.values() for _, s in v)
    print(f"handout: {out}: {len(files)} files and {2 * len(course.chapters)} libraries, "
          f"{total / 1e6:.1f} MB ({libs / 1e6:.1f} MB of libraries), compiled with "
          f"{toolchain_words(tc)}; {time.time() - started:.0f} s")
    print(f"  left out: {', '.join(LEFT_OUT)}" + (f"; presets {', '.join(gone)}" if gone else ""))
    for path, line, code in keys[:20]:
        print(f"  LEAK {path}:{line}: a key line of the reference: {code}")
    if leaks:
        for source, name, line, text in leaks[:20]:
            print(f"  LEAK solutions/{source}:{line} {name}: {text}")
        print(f"handout: {len(leaks)} of {checked} reference functions can be read in {out}")
    if leaks or keys:
        return 1
    print(f"  no reference function body in it ({checked} functions fingerprinted), no key "
          "line of the hint ladders")
    print(f"next: cd {out} && cmake --workflow --preset solutions")
    return 0


def cmd_leaks(args):
    """`workbook handout --check DIR`: the leak check alone, on an existing handout."""
    out = Path(args.dir).resolve()
    files = [f for f in tracked_files(ROOT) if not left_out(f) and not f.startswith(HINTS)]
    leaks, checked = find_leaks(out, ROOT / "solutions", [ROOT / f for f in files])
    keys = key_line_report(out)
    stray = [str(p.relative_to(out)) for p in (out / "solutions").rglob("*") if p.is_file()] \
        if (out / "solutions").exists() else []
    for name in stray:
        print(f"  LEAK {name}: a file of solutions/")
    for source, name, line, text in leaks[:20]:
        print(f"  LEAK solutions/{source}:{line} {name}: {text}")
    for path, line, code in keys[:20]:
        print(f"  LEAK {path}:{line}: a key line of the reference: {code}")
    print(f"handout --check: {len(stray)} files of solutions/, {len(leaks)} of {checked} "
          f"reference functions, {len(keys)} key lines readable in {out}")
    return 1 if leaks or stray or keys else 0
