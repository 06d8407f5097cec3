"""Google Benchmark's JSON: repetitions, a stub, and the scaling chart's description (the
drawing itself is bench/svg_chart's, tested by ctest -L bench)."""

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wb.bench import (bench_table, chart_description, parse_bench_json,  # noqa: E402
                      parse_peaks, peak_share, scaling_charts, student_errors,
                      write_line_chart)
from wb.common import WorkbookError  # noqa: E402


def run(name, us, gflops=None, error=""):
    row = {"name": name, "run_name": name, "run_type": "iteration", "real_time": us,
           "time_unit": "us"}
    if gflops is not None:
        row["GFLOPs"] = gflops
    if error:
        row.update(error_occurred=True, error_message=error)
    return row


class Bench(unittest.TestCase):
    def test_repetitions_give_median_and_spread(self):
        name = "capstone/attention_forward/student/B1_H8_T256_d64/threads:2"
        rows, _ = parse_bench_json(json.dumps({"benchmarks": [
            run(name, 309.0, 1.0), run(name, 149.0, 2.0), run(name, 150.0, 2.1),
            {"name": name + "_mean", "run_name": name, "run_type": "aggregate",
             "aggregate_name": "mean", "real_time": 202.0, "time_unit": "us"}]}))
        self.assertEqual(len(rows), 1)
        self.assertAlmostEqual(rows[0].seconds, 150e-6)
        self.assertAlmostEqual(rows[0].spread, (309 - 149) / 150)
        self.assertIn("150 us ±53%", "\n".join(bench_table(rows)))

    def test_a_stub_is_one_reason(self):
        rows, _ = parse_bench_json(json.dumps({"benchmarks": [
            run(f"capstone/attention_forward/student/B1_H8_T{t}_d64", 0, error="wb::attention_"
                "forward is not implemented yet") for t in (64, 128)]}))
        self.assertEqual(student_errors(rows),
                         {"wb::attention_forward is not implemented yet": 2})

    def test_the_peak_and_each_rows_share_of_it_the_reference_while_yours_is_a_stub(self):
        bench = []
        for t in (256, 1024):
            bench.append(run(f"capstone/attention_forward/student/B1_H8_T{t}_d64/threads:2", 0,
                             error="not implemented: wb::attention_forward is not implemented "
                             "yet"))
            bench.append(run(f"capstone/attention_forward/reference/B1_H8_T{t}_d64/threads:2",
                             t, 38.0))
            bench.append(run(f"capstone/attention_forward/reference/B1_H8_T{t}_d64/threads:1",
                             t, 20.0))
        text = json.dumps({"context": {"peak_isa": "avx2", "peak_gflops_threads:1": "50.0",
                                       "peak_gflops_threads:2": "95.0"}, "benchmarks": bench})
        isa, peaks = parse_peaks(text)
        self.assertEqual((isa, peaks), ("avx2", {1: 50.0, 2: 95.0}))
        rows, _ = parse_bench_json(text)
        self.assertAlmostEqual(peak_share(rows[1], peaks), 0.4)   # 38 of 95 on 2 threads
        self.assertAlmostEqual(peak_share(rows[2], peaks), 0.4)   # 20 of 50 on 1 thread
        table = "\n".join(bench_table(rows, isa, peaks))
        self.assertIn("this CPU's float32 multiply-add peak (avx2)", table)
        self.assertIn("50.0 GFLOP/s on 1 thread, 95.0 GFLOP/s on 2 threads", table)
        line = next(l for l in table.splitlines() if l.startswith(
            "capstone/attention_forward/B1_H8_T1024_d64/threads:2"))
        self.assertIn("not written", line)
        self.assertTrue(line.rstrip().endswith("- / 40%"), line)
        self.assertNotIn("of peak", "\n".join(bench_table(rows)))   # no peak in the file
        self.assertEqual(parse_peaks(json.dumps({"benchmarks": []})), ("", {}))

    def test_chart_yours_beside_the_reference_per_family(self):
        bench = []
        for d in (32, 64):
            for t in (256, 512, 1024):
                bench.append(run(f"capstone/attention_forward/reference/B1_H8_T{t}_d{d}", t, 8.0))
                if d == 64:
                    bench.append(run(f"capstone/attention_forward/student/B1_H8_T{t}_d{d}", t, 2.0))
                else:
                    bench.append(run(f"capstone/attention_forward/student/B1_H8_T{t}_d{d}", 0,
                                     error="wb::attention_forward is not implemented yet"))
        rows, _ = parse_bench_json(json.dumps({"benchmarks": bench}))
        charts = {c[0]: c for c in scaling_charts(rows)}
        self.assertEqual(set(charts), {"B1_H8_d32", "B1_H8_d64"})
        names = [n for n, _ in charts["B1_H8_d64"][3]]
        self.assertEqual(names, ["attention_forward reference", "attention_forward yours"])
        self.assertIn("no line of yours for attention_forward", charts["B1_H8_d32"][5])
        self.assertEqual(charts["B1_H8_d64"][4], [256, 512, 1024])
        fam, x_label, y_label, series, xs, note = charts["B1_H8_d64"]
        self.assertEqual(chart_description("GFLOP/s against T, " + fam, x_label, y_label, series,
                                           xs, note).splitlines(), [
            "title GFLOP/s against T, B1_H8_d64", "x_label T (tokens)", "y_label GFLOP/s",
            "x_ticks 256 512 1024",   # ticks at the measured sizes
            "series attention_forward reference", "dashed",
            "point 256 8.0", "point 512 8.0", "point 1024 8.0",
            "series attention_forward yours",
            "point 256 2.0", "point 512 2.0", "point 1024 2.0"])
        text = chart_description("t", "x", "y", charts["B1_H8_d32"][3], [], "a\nnote")
        self.assertIn("note a note", text.splitlines())   # one line, whatever the note holds
        self.assertNotIn("x_ticks", text)

    def test_chart_description_sorts_points_and_refuses_bad_values(self):
        text = chart_description("t", "x", "y", [("f yours", [(3, 0.5), (1, 2.25)])])
        self.assertEqual(text, "title t\nx_label x\ny_label y\nseries f yours\n"
                               "point 1 2.25\npoint 3 0.5\n")
        with self.assertRaisesRegex(WorkbookError, "a y of f yours is nan"):
            chart_description("t", "x", "y", [("f yours", [(1, float("nan"))])])
        with self.assertRaisesRegex(WorkbookError, "got no series"):
            chart_description("t", "x", "y", [])

    def test_a_missing_chart_program_says_how_to_build_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaisesRegex(WorkbookError, "svg_chart is not built.*--target "
                                                       "svg_chart"):
                write_line_chart(Path(tmp) / "c.svg", "t", "x", "y", [("f", [(1, 1.0)])],
                                 build_dir=Path(tmp))
            self.assertFalse((Path(tmp) / "c.svg").exists())

if __name__ == "__main__":
    unittest.main()
