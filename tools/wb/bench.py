"""The bench verb: Google Benchmark's JSON, the table (median and spread of repetitions) and
the scaling charts."""

import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .common import ROOT, WorkbookError, cache_value, configure
from .course import any_course


@dataclass
class BenchRow:
    chapter: str
    function: str
    impl: str       # student or reference
    shape: str      # e.g. B1_H8_T1024_d64
    extra: str      # the rest of the name, e.g. threads:2
    seconds: float  # real time per iteration: the median of the repetitions
    gflops: float = None
    extra_mib: float = None
    error: str = ""
    samples: list = field(default_factory=list)   # seconds of each repetition

    @property
    def key(self):
        return (self.chapter, self.function, self.shape, self.extra)

    @property
    def spread(self):
        """(max - min) / median of the repetitions, or None with fewer than two."""
        if len(self.samples) < 2 or not self.seconds:
            return None
        return (max(self.samples) - min(self.samples)) / self.seconds

    def dim(self, name):
        """A number from the shape or the rest of the name: dim('T'), dim('threads')."""
        m = re.search(rf"(?:^|[_/]){name}[:=]?(\d+)(?:$|[_/])", f"{self.shape}/{self.extra}")
        return int(m.group(1)) if m else None


UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_bench_json(text):
    """The rows of Google Benchmark's JSON whose names follow
    <chapter>/<function>/<student|reference>/<shape>[/...], one per benchmark: the median of
    its repetitions (or the median/mean aggregate when only aggregates were kept)."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise WorkbookError(f"benchmark output is not JSON: {error}")
    runs, aggregates, skipped, order = {}, {}, 0, []
    for b in data.get("benchmarks", []):
        name = b.get("run_name") or b.get("name", "")
        # Google Benchmark appends its own options to a name (/real_time, /iterations:N …):
        # they are not part of what is measured, so student and reference rows still pair.
        parts = [p for p in name.split("/") if p not in ("real_time", "process_time", "manual_time")
                 and not re.match(r"(iterations|repetitions|min_time):", p)]
        if len(parts) < 4 or parts[2] not in ("student", "reference"):
            skipped += 1
            continue
        key = tuple(parts)
        if key not in order:
            order.append(key)
        if b.get("run_type") == "aggregate":
            aggregates.setdefault(key, {})[b.get("aggregate_name")] = b
        else:
            runs.setdefault(key, []).append(b)
    rows = []
    for parts in order:
        found = runs.get(parts) or []
        if not found:
            agg = aggregates.get(parts, {})
            found = [agg.get("median") or agg.get("mean")] if agg else []
            found = [f for f in found if f]
        if not found:
            continue
        unit = UNITS.get(found[0].get("time_unit", "ns"), 1e-9)
        samples = [float(b.get("real_time", 0.0)) * unit for b in found]
        rates = [b.get("GFLOPs") for b in found if b.get("GFLOPs") is not None]
        error = next((b.get("error_message", "") for b in found if b.get("error_occurred")), "")
        rows.append(BenchRow(parts[0], parts[1], parts[2], parts[3], "/".join(parts[4:]),
                             statistics.median(samples), statistics.median(rates) if rates else None,
                             found[0].get("extra_MiB"), error, samples if len(samples) > 1 else []))
    return rows, skipped


def parse_peaks(text):
    """(instruction set, {threads: GFLOP/s}): this CPU's float32 FMA peak as bench_workbook
    measured it before the benchmarks (the JSON's context: peak_isa, peak_gflops_threads:<n>);
    ("", {}) when the file has none."""
    try:
        context = json.loads(text).get("context", {}) or {}
    except (ValueError, AttributeError):
        return "", {}
    peaks = {}
    for key, value in context.items():
        m = re.fullmatch(r"peak_gflops_threads:(\d+)", str(key))
        if m:
            try:
                peaks[int(m.group(1))] = float(value)
            except (TypeError, ValueError):
                continue
    return str(context.get("peak_isa", "")), dict(sorted(peaks.items()))


def peak_share(r, peaks):
    """R's GFLOP/s as a share of the peak at its thread count (None when either is unknown)."""
    if r is None or r.error or r.gflops is None:
        return None
    peak = peaks.get(r.dim("threads") or 1)
    return r.gflops / peak if peak else None


def peak_line(isa, peaks):
    return ("this CPU's float32 multiply-add peak" + (f" ({isa})" if isa else "") + ", measured "
            "before the benchmarks: " + ", ".join(f"{g:.1f} GFLOP/s on {t} thread"
                                                  f"{'s' * (t > 1)}" for t, g in peaks.items()))


def fmt_time(r):
    if r is None:
        return "-"
    if r.error:
        return "not written" if "not implemented" in r.error else "error"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if r.seconds >= scale or unit == "ns":
            text = f"{r.seconds / scale:.3g} {unit}"
            return text + (f" ±{100 * r.spread / 2:.0f}%" if r.spread is not None else "")


def bench_table(rows, isa="", peaks=None):
    """The table of ROWS, a line per benchmark: your time and the reference's, the ratio, each
    one's GFLOP/s and, when the JSON holds this CPU's peak (PEAKS, {threads: GFLOP/s}), each
    one's share of it."""
    peaks = peaks or {}
    pairs = {}
    for r in rows:
        pairs.setdefault(r.key, {})[r.impl] = r
    width = max([len("/".join(k for k in key if k)) for key in pairs] + [9])
    show_peak = bool(peaks) and any(r.gflops is not None for r in rows)
    lines = [peak_line(isa, peaks)] if show_peak else []
    lines.append(f"{'benchmark':<{width}} {'yours':>14} {'reference':>14} {'ratio':>7}  "
                 f"{'GFLOP/s (yours/ref)':>20}" + (f"  {'of peak (yours/ref)':>19}"
                                                  if show_peak else ""))

    def fmt_rate(r):
        return "-" if r is None or r.gflops is None or r.error else f"{r.gflops:.3g}"

    def fmt_share(r):
        share = peak_share(r, peaks)
        return "-" if share is None else f"{100 * share:.0f}%"

    for key, pair in pairs.items():
        s, ref = pair.get("student"), pair.get("reference")
        name = "/".join(k for k in key if k)
        ratio = (f"{s.seconds / ref.seconds:.2f}x" if s and ref and not s.error and not ref.error
                 and ref.seconds > 0 else "-")
        lines.append(f"{name:<{width}} {fmt_time(s):>14} {fmt_time(ref):>14} {ratio:>7}  "
                     f"{fmt_rate(s) + ' / ' + fmt_rate(ref):>20}"
                     + (f"  {fmt_share(s) + ' / ' + fmt_share(ref):>19}" if show_peak else ""))
    lines.append("times: the median of the repetitions ± half their range; ratio = your time / "
                 "the reference's (below 1: yours is faster)"
                 + ("; of peak = GFLOP/s / the peak at the row's thread count" if show_peak
                    else ""))
    return lines


def student_errors(rows):
    """{message: count} of the learner's benchmarks that stopped with an error (a stub, a
    wrong result)."""
    out = {}
    for r in rows:
        if r.impl == "student" and r.error:
            out[r.error] = out.get(r.error, 0) + 1
    return out


def chart_description(title, x_label, y_label, series, x_ticks=None, note=""):
    """The text that bench/svg_chart reads (its format is at the top of bench/svg_chart.cpp)
    for a line chart of SERIES, [(name, [(x, y), ...])], each line's points in x order. X_TICKS
    (e.g. the measured sizes) replaces the round ticks; NOTE is a line under the title; a series
    whose name contains " reference" is dashed."""
    if not series:
        raise WorkbookError("write_line_chart: got no series, expected at least one")

    def text(value):  # one line: a line break in a name would end the item
        return re.sub(r"[\r\n]+", " ", str(value))

    def number(value, what):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value):
            raise WorkbookError(f"write_line_chart: {what} is {value!r}, expected a finite number")
        return str(value) if isinstance(value, int) else repr(float(value))

    lines = [f"title {text(title)}", f"x_label {text(x_label)}", f"y_label {text(y_label)}"]
    if note:
        lines.append(f"note {text(note)}")
    if x_ticks:
        lines.append("x_ticks " + " ".join(number(t, "an x tick") for t in x_ticks))
    for name, points in series:
        lines.append(f"series {text(name)}")
        if " reference" in name:
            lines.append("dashed")
        for x, y in sorted(points):
            lines.append(f"point {number(x, f'an x of {name}')} {number(y, f'a y of {name}')}")
    return "\n".join(lines) + "\n"


def svg_chart_program(build_dir):
    """BUILD_DIR's bench/svg_chart (the chart writer of workbook/svg.hpp), or a WorkbookError
    that says how to build it."""
    exe = Path(build_dir) / "bench" / "svg_chart"
    if not exe.exists():
        raise WorkbookError(f"{exe} is not built, and --svg draws with it: cmake --build "
                            f"{build_dir} --target svg_chart (in a build configured with "
                            "-DWB_BUILD_BENCH=ON, e.g. cmake --preset bench)")
    return exe


def write_line_chart(path, title, x_label, y_label, series, x_ticks=None, note="", *,
                     build_dir):
    """Writes the SVG line chart to PATH with wb::svg::write_line_chart (workbook/svg.hpp), run
    as BUILD_DIR's bench/svg_chart on chart_description(...)."""
    description = chart_description(title, x_label, y_label, series, x_ticks, note)
    exe = svg_chart_program(build_dir)
    try:
        result = subprocess.run([str(exe.resolve()), str(path)], input=description, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as error:
        raise WorkbookError(f"cannot run {exe}: {error.strerror}")
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        raise WorkbookError(lines[-1] if lines else f"{exe} failed ({result.returncode})")


def scaling_charts(rows):
    """[(family, x label, y label, series, measured xs, note)]: one chart per shape family
    (the settings other than the axis), GFLOP/s (or ms) against T if T varies, else threads;
    the learner's line beside the reference's, and a note when the learner has none."""
    good = [r for r in rows if not r.error]
    axis = next((d for d in ("T", "threads")
                 if len({r.dim(d) for r in good if r.dim(d) is not None}) > 1), None)
    if axis is None:
        raise WorkbookError("the benchmarks vary neither T nor threads: nothing to chart")
    use_rate = all(r.gflops is not None for r in good)

    def family(r):  # the name's settings other than the axis, e.g. 'B1_H8_d64/threads:2'
        rest = re.sub(rf"(?:^|(?<=[_/])){axis}[:=]?\d+(?:[_/]|$)", "", f"{r.shape}/{r.extra}")
        return re.sub(r"[_/]+$", "", re.sub(r"^[_/]+", "", rest))

    families = {}
    for r in rows:
        if r.dim(axis) is not None:
            families.setdefault(family(r), []).append(r)
    charts = []
    for fam, members in families.items():
        groups = {}
        for r in members:
            if r.error:
                continue
            name = f"{r.function} {'yours' if r.impl == 'student' else 'reference'}"
            groups.setdefault(name, []).append((r.dim(axis), r.gflops if use_rate
                                                else r.seconds * 1e3))
        if not groups:
            continue
        broken = sorted({r.function for r in members if r.impl == "student" and r.error})
        mine = any(r.impl == "student" and not r.error for r in members)
        note = ""
        if broken:
            note = ("no line of yours for " + ", ".join(broken) + ": "
                    + next(r.error for r in members if r.impl == "student" and r.error)[:90])
        elif not mine:
            note = "no benchmark of yours in this family: only the reference is drawn"
        xs = sorted({r.dim(axis) for r in members})
        charts.append((fam, "T (tokens)" if axis == "T" else "threads",
                       "GFLOP/s" if use_rate else "ms", sorted(groups.items()), xs, note))
    return charts


def build_with_progress(build_dir, targets):
    """Builds TARGETS, showing Ninja's [n/m] progress (one updating line on a terminal, a line
    every few seconds otherwise); the log of a failed build is shown whole."""
    cmd = ["cmake", "--build", str(build_dir), "-j", "2", "--target", *targets]
    proc = subprocess.Popen(cmd, cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    log, last, tty = [], 0.0, sys.stdout.isatty()
    for line in proc.stdout:
        log.append(line)
        m = re.match(r"^\[(\d+)/(\d+)\] (.*)", line)
        if m and (tty or time.time() - last > 5 or m.group(1) == m.group(2)):
            last = time.time()
            what = m.group(3).split("/")[-1][:60]
            msg = f"building [{m.group(1)}/{m.group(2)}] {what}"
            print(("\r" + msg.ljust(90)) if tty else msg, end="" if tty else "\n", flush=True)
    code = proc.wait()
    if tty:
        print()
    if code != 0:
        sys.stdout.write("".join(log[-200:]))
        raise WorkbookError(f"the benchmarks do not build ({code}): {' '.join(cmd)}")


def cmd_bench(args):
    if args.filter:
        pattern = args.filter
    elif args.target in (None, "all"):
        pattern = "."
    elif args.target == "kernel":
        pattern = "^capstone/"
    else:
        course = any_course(args.build_dir)
        if course is None:
            configure(args.build_dir, WB_BUILD_BENCH="ON", CMAKE_BUILD_TYPE="Release")
            course = any_course(args.build_dir)
        pattern = f"^{course.find(args.target).label}/"
    try:
        re.compile(pattern)
    except re.error as error:
        raise WorkbookError(f"--filter {pattern}: not a regular expression ({error})")
    if args.repetitions < 1:
        raise WorkbookError(f"--repetitions must be 1 or more, got {args.repetitions}")
    if args.from_json:
        try:
            text = Path(args.from_json).read_text()
        except OSError as error:
            raise WorkbookError(f"cannot read {args.from_json}: {error.strerror}")
    else:
        build_dir = Path(args.build_dir)
        if not (build_dir / "CMakeCache.txt").exists():
            configure(build_dir, WB_BUILD_BENCH="ON", CMAKE_BUILD_TYPE="Release")
        elif cache_value(build_dir, "WB_BUILD_BENCH") not in ("ON", "TRUE", "1"):
            configure(build_dir, WB_BUILD_BENCH="ON")
        build_with_progress(build_dir, ["bench_workbook", "train_step"]
                            + (["svg_chart"] if args.svg else []))
        exe = build_dir / "bench" / "bench_workbook"
        if not exe.exists():
            raise WorkbookError(f"{exe} was not built (is Google Benchmark installed?)")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench.json"
            cmd = [str(exe), f"--benchmark_filter={pattern}", f"--benchmark_out={out}",
                   "--benchmark_out_format=json",
                   f"--benchmark_repetitions={args.repetitions}"]
            if args.min_time:
                cmd.append(f"--benchmark_min_time={args.min_time}")
            print(f"running {exe.name} --benchmark_filter={pattern}, {args.repetitions} "
                  "repetitions ...", flush=True)
            result = subprocess.run(cmd, cwd=ROOT, text=True, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT)
            if "Failed to match any benchmarks" in result.stdout:
                raise WorkbookError(f"no benchmark matched {pattern} (list them with "
                                    f"{exe} --benchmark_list_tests)")
            if not out.exists() or not out.read_text().strip():
                sys.stdout.write(result.stdout[-3000:])
                raise WorkbookError(f"bench_workbook failed ({result.returncode})")
            text = out.read_text()
    if args.json:
        tmp = Path(str(args.json) + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, args.json)
        print(f"wrote {args.json}")
    rows, skipped = parse_bench_json(text)
    if args.from_json:  # a saved file may hold more than was asked for
        rows = [r for r in rows if re.search(pattern, f"{r.chapter}/{r.function}/{r.impl}/"
                                             f"{r.shape}" + (f"/{r.extra}" if r.extra else ""))]
    if not rows:
        raise WorkbookError("no benchmark matched: names must look like "
                            "<chapter>/<function>/<student|reference>/<shape>"
                            + (f" ({skipped} other rows ignored)" if skipped else ""))
    errors = student_errors(rows)
    isa, peaks = parse_peaks(text)
    reference = [r for r in rows if r.impl == "reference" and not r.error]
    if errors and all(r.error for r in rows if r.impl == "student") and not reference:
        # A stub (or a wrong kernel) everywhere and no reference row to show: one line per
        # reason, not a table of errors.
        for message, n in errors.items():
            print(f"yours: {message} ({n} benchmark{'s' * (n > 1)})")
    else:
        # The reference's rows (and their share of the peak) even while yours is a stub: what
        # there is to reach.
        for line in bench_table(rows, isa, peaks):
            print(line)
        for message, n in errors.items():
            print(f"yours: {message} ({n} benchmark{'s' * (n > 1)})")
    if args.svg:
        charts = scaling_charts(rows)
        if not charts:
            raise WorkbookError("nothing to draw: every benchmark stopped with an error")
        build_dir = Path(args.build_dir)
        if args.from_json and cache_value(build_dir, "WB_BUILD_BENCH") in ("ON", "TRUE", "1"):
            build_with_progress(build_dir, ["svg_chart"])  # up to date with workbook/svg.hpp
        path = Path(args.svg)
        for fam, x_label, y_label, series, xs, note in charts:
            target = path if len(charts) == 1 else path.with_name(
                f"{path.stem}-{re.sub(r'[^A-Za-z0-9]+', '-', fam).strip('-') or 'all'}{path.suffix}")
            title = f"{y_label} against {x_label.split()[0]}" + (f", {fam}" if fam else "")
            write_line_chart(target, title, x_label, y_label, series, xs, note,
                             build_dir=build_dir)
            print(f"wrote {target}" + (f" ({note})" if note else ""))
    return 1 if errors else 0
