#!/bin/sh
# Does bench_workbook report what the library does? Times the capstone kernel (the reference)
# in bench_workbook's row and in a plain program (kernel_alone, buffers cache-line aligned and
# 16 bytes off a line), in alternating rounds, and prints each side's median GFLOP/s and the
# ratio to the plain program. kernel_alone gives both its median call and its mean (all work
# over all time: what Google Benchmark reports, so a call slowed by other load counts in full).
# On a machine shared with other work, run it twice.
#
#   bench/compare_standalone.sh [build dir, default build/bench] [rounds, default 5] [threads, default 1]
#   BACKWARD=1 bench/compare_standalone.sh ...   the backward instead of the forward
set -eu
dir=${1:-build/bench}
rounds=${2:-5}
threads=${3:-1}
kind=forward
flag=
if [ "${BACKWARD:-0}" = 1 ]; then kind=backward; flag=--backward; fi
bench="$dir/bench/bench_workbook"
alone="$dir/bench/kernel_alone"
for exe in "$bench" "$alone"; do
  [ -x "$exe" ] || { echo "compare_standalone: $exe not built (cmake --build $dir --target bench_workbook kernel_alone)" >&2; exit 1; }
done
row="capstone/attention_$kind/reference/B1_H8_T1024_d64/threads:$threads"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
i=1
while [ "$i" -le "$rounds" ]; do
  "$bench" --benchmark_filter="^$row" --benchmark_min_time=0.5 --benchmark_format=json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print("bench_workbook", [b for b in d["benchmarks"]][0]["GFLOPs"])' >> "$out"
  for off in 0 16; do
    "$alone" --threads "$threads" --calls 60 --offset "$off" $flag |
      sed -n "s/.*offset $off: median \([0-9.]*\) GFLOP\/s, mean \([0-9.]*\).*/kernel_alone_offset_$off \1\nkernel_alone_offset_${off}_mean \2/p" >> "$out"
  done
  i=$((i + 1))
done
python3 - "$out" "$row" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, value = line.split()
    rows.setdefault(name, []).append(float(value))
alone = statistics.median(rows.get("kernel_alone_offset_0", [0])) or 1
print(f"{sys.argv[2]}: medians of {max(len(v) for v in rows.values())} alternating rounds, GFLOP/s")
for name, values in rows.items():
    m = statistics.median(values)
    print(f"  {name:<28} {m:8.1f}  ({m / alone:.2f} of kernel_alone, aligned)  range {min(values):.1f}-{max(values):.1f}")
PY
