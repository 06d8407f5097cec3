#!/usr/bin/env bash
# Measures what a learner waits for, and prints one table. Every figure is a median of wall
# seconds, with the CPU seconds (user + system, all processes) beside it and the load average
# at the start: on a busy machine the wall figures are upper bounds, the CPU ones closer to what
# a quiet machine takes.
#
#   tools/measure-build.sh [--runs N] [--loop "1 2 ... capstone"] [--fresh "8 capstone"]
#                          [--minigpt] [--minutes M]
#
#   --loop    the edit -> screen loop: in a learner's tree (Debug, index checks on, every chapter
#             a finished answer compiled as the learner's own code: a copy of the reference put
#             in place of the stub with WB_IMPL_DIR_<label>), one function of the chapter's
#             largest file is edited, then `tools/workbook check N` runs until its screen is
#             printed. Median of --runs (default 5). Default: every chapter.
#   --fresh   the first `tools/workbook check N` on a fresh clone of HEAD, with an empty ccache
#             (CCACHE_DISABLE): configure the student preset with the chapters before N on
#             the reference, then check N; then `tools/workbook use N reference` and
#             `use N student` in that tree. One run each. Default: none.
#   --minigpt the learner's model at Release speed, in that fresh clone (or a new one) whose
#             build/student has every chapter switched to the reference (the learner's code
#             = the reference): the first `tools/run-minigpt --student` build, then 2 threads:
#             --engine chapters at the default size until its held-out loss is below 2.0 or
#             --minutes (default 10) have passed; --engine fast on the learner's build and on
#             the reference build (tokens/s of training, 200 steps each).
#
# Work folders: build/measure-* (removed first). Nothing outside them changes.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
runs=5
loop="1 2 3 4 5 6 7 8 9 capstone"
fresh=""
minigpt=0
minutes=10
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --loop) loop=$2; shift 2 ;;
    --fresh) fresh=$2; shift 2 ;;
    --minigpt) minigpt=1; shift ;;
    --minutes) minutes=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "measure-build: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

rows=()       # the table: what | wall | cpu | load
runs_rows=()  # the model runs: what | tokens/s | load
load() { cut -d' ' -f1 /proc/loadavg; }
row() { rows+=("$(printf '%-58s %9s %9s %6s' "$1" "$2" "$3" "$4")"); echo "  $1: $2 s wall, $3 s cpu (load $4)"; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }
# timed CMD...: runs CMD, sets $wall and $cpu (seconds, one decimal); CMD's exit code is kept
# in $status and never stops the script (a check that fails is still a screen).
timed() {
  local tfile
  tfile=$(mktemp)
  set +e
  /usr/bin/time -o "$tfile" -f "%e %U %S" "$@" >/dev/null 2>&1
  status=$?
  set -e
  wall=$(tail -1 "$tfile" | awk '{printf "%.1f", $1}')
  cpu=$(tail -1 "$tfile" | awk '{printf "%.1f", $2 + $3}')
  rm -f "$tfile"
}
folder_of() {  # 8 -> 8-training, capstone -> capstone
  local n=$1
  if [ "$n" = capstone ]; then echo capstone; else (cd chapters && ls -d "$n"-*); fi
}
label_of() { if [ "$1" = capstone ]; then echo capstone; else echo "chapter$1"; fi; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

echo "measure-build: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"

# ---- 1. the edit -> screen loop -----------------------------------------------------------
if [ -n "$loop" ]; then
  rm -rf build/measure-loop build/measure-answers
  mkdir -p build/measure-answers
  answers=()
  for n in 1 2 3 4 5 6 7 8 9 capstone; do
    folder=$(folder_of "$n")
    cp -r "solutions/$folder" build/measure-answers/
    answers+=("-DWB_IMPL_DIR_$(label_of "$n")=$root/build/measure-answers/$folder")
  done
  echo "the learner's tree (student preset, every chapter a finished answer), built once first:"
  cmake --preset student -B build/measure-loop "${launcher[@]}" "${answers[@]}" >/dev/null
  for n in $loop; do
    python3 tools/workbook check "$n" --build-dir build/measure-loop >/dev/null 2>&1 || true
  done
  for n in $loop; do
    folder=$(folder_of "$n")
    # the chapter's largest file: the slowest one-function edit
    file=$(wc -l build/measure-answers/"$folder"/*.cpp | grep -v ' total$' | sort -n | tail -1 |
           awk '{print $2}')
    walls=() cpus=() before=$(load)
    for i in $(seq "$runs"); do
      # One function edited: a statement more in its body changes the file's text (no cache
      # can answer) without changing what it computes.
      cp "$file" "$file.orig"
      python3 - "$file" "$i" <<'EOF'
import re, sys
path, i = sys.argv[1], sys.argv[2]
text = open(path).read()
# the first function body at namespace level: "...) {" at the start of a line's end
m = re.search(r"^[A-Za-z].*\)\s*(const\s*)?\{\s*$", text, re.M)
pos = m.end()
text = text[:pos] + f"\n    static_cast<void>({i});  // an edit" + text[pos:]
open(path, "w").write(text)
EOF
      timed python3 tools/workbook check "$n" --build-dir build/measure-loop
      walls+=("$wall") cpus+=("$cpu")
      mv "$file.orig" "$file"
    done
    # back to the answer as it was, so the next chapter starts from a built tree
    python3 tools/workbook check "$n" --build-dir build/measure-loop >/dev/null 2>&1 || true
    row "edit ${file#build/measure-answers/} -> check $n (median of $runs)" \
        "$(printf '%s\n' "${walls[@]}" | median)" "$(printf '%s\n' "${cpus[@]}" | median)" "$before"
  done
fi

# ---- 2. the first check on a fresh clone ------------------------------------------------
clone=build/measure-clone
new_clone() {
  rm -rf "$clone"
  git clone -q "$root" "$clone"
}
if [ -n "$fresh" ]; then
  new_clone
  for n in $fresh; do
    label=$(label_of "$n")
    before_list=""
    for m in 1 2 3 4 5 6 7 8 9 capstone; do
      [ "$m" = "$n" ] && break
      before_list="$before_list${before_list:+;}$m"
    done
    rm -rf "$clone/build/student"
    before=$(load)
    # An empty ccache: what a learner's first build costs.
    export CCACHE_DISABLE=1
    timed bash -c "cd '$clone' && cmake --preset student -DWB_REFERENCE='${before_list:-none}' &&
                   python3 tools/workbook check $n"
    row "fresh clone: configure + first check $n (others on the reference)" "$wall" "$cpu" "$before"
    # Then flip the chapter to the reference and back, as an instructor or a stuck learner does:
    # each rebuilds the chapter's library and every program built before that links it.
    for kind in reference student; do
      before=$(load)
      timed bash -c "cd '$clone' && python3 tools/workbook use $n $kind"
      row "  then tools/workbook use $n $kind" "$wall" "$cpu" "$before"
    done
    unset CCACHE_DISABLE
  done
fi

# ---- 3. the learner's model at Release speed ----------------------------------------------
# csv_field FILE: the last tokens/s of training in a minigpt loss log
last_speed() { tail -n 1 "$1" | awk -F, '{printf "%.0f", $5}'; }
if [ "$minigpt" = 1 ]; then
  [ -d "$clone/.git" ] || new_clone
  (cd "$clone" && cmake --preset student -DWB_REFERENCE=all >/dev/null)
  out=$root/build/measure-minigpt
  rm -rf "$out"
  mkdir -p "$out"
  before=$(load)
  export CCACHE_DISABLE=1
  timed bash -c "cd '$clone' && tools/run-minigpt --student --steps 1 --eval-batches 1 \
                 --max-new-tokens 1 --out '$out/build.ckpt'"
  unset CCACHE_DISABLE
  row "first tools/run-minigpt --student (its optimised build)" "$wall" "$cpu" "$before"

  # --engine chapters at the default size, until held-out < 2.0 or the minutes are over
  before=$(load)
  set +e
  (cd "$clone" && tools/run-minigpt --student --engine chapters --threads 2 \
     --time-limit $((minutes * 60)) --eval-interval 50 --max-new-tokens 1 \
     --out "$out/chapters.ckpt" >"$out/chapters.log" 2>&1)
  set -e
  reached=$(awk -F, 'NR > 1 && $3 != "" && $3 < 2.0 {print $1; exit}' "$out/chapters.loss.csv")
  speed=$(last_speed "$out/chapters.loss.csv")
  steps=$(tail -n 1 "$out/chapters.loss.csv" | cut -d, -f1)
  final=$(awk -F, 'NR > 1 && $3 != "" {v = $3} END {print v}' "$out/chapters.loss.csv")
  if [ -n "$reached" ]; then
    # training seconds to that step, from the tokens/s of the log
    secs=$(awk -F, -v s="$reached" 'NR > 1 && $1 == s {printf "%.0f", $1 * 16 * 128 / $5}' \
           "$out/chapters.loss.csv")
    note="held-out < 2.0 at step $reached, ${secs} s of training"
  else
    note="held-out $final after $steps steps ($minutes min): not below 2.0"
  fi
  runs_rows+=("$(printf '%-58s %9s %6s' "--student --engine chapters (default size)" "$speed" "$before")")
  runs_rows+=("  $note")

  before=$(load)
  (cd "$clone" && tools/run-minigpt --student --engine fast --threads 2 --steps 200 \
     --eval-interval 0 --max-new-tokens 1 --out "$out/fast-student.ckpt" >/dev/null 2>&1)
  runs_rows+=("$(printf '%-58s %9s %6s' "--student --engine fast (learner's kernel = reference)" \
                "$(last_speed "$out/fast-student.loss.csv")" "$before")")
  before=$(load)
  (cd "$clone" && tools/run-minigpt --engine fast --threads 2 --steps 200 \
     --eval-interval 0 --max-new-tokens 1 --out "$out/fast-reference.ckpt" >/dev/null 2>&1)
  runs_rows+=("$(printf '%-58s %9s %6s' "reference build (build/solutions) --engine fast" \
                "$(last_speed "$out/fast-reference.loss.csv")" "$before")")
fi

echo
echo "$(nproc) cores; load average = 1-minute load when the row started (2 = both cores busy)."
echo "On a loaded machine every wall figure is an upper bound."
printf '%-58s %9s %9s %6s\n' "what" "wall s" "cpu s" "load"
printf '%s\n' "${rows[@]}"
if [ ${#runs_rows[@]} -gt 0 ]; then
  echo
  echo "the learner's model, 2 threads (--threads 2), tokens/s of training:"
  printf '%-58s %9s %6s\n' "run" "tokens/s" "load"
  printf '%s\n' "${runs_rows[@]}"
fi
