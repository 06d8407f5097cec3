#!/usr/bin/env bash
# Saves under attack, for the minigpt program: temporary files left by saves that are killed,
# and runs that save into one folder at the same time.
#
#   tests/minigpt/stress_saves.sh MINIGPT [KILLS] [RUNS] [ROUNDS]
#
#   MINIGPT  the program (e.g. build/solutions/minigpt/minigpt)
#   KILLS    runs killed during their save, half with kill -9, half with SIGTERM (default 20)
#   RUNS     runs started at once, all saving to one --out (default 20), ROUNDS times (default 3)
#
# Part 1 trains a 42 MB model for one step, waits for the line that ends the training (the save
# starts right after it), lets the save run for a random part of its measured length, then
# kills it. After each kill it counts the temporary files beside the model. A last save then
# shows whether the files of the killed saves go away.
# Part 2 starts RUNS small trainings at once, every one with the same --out, and counts the
# runs that fail and the temporary files left.
# Prints the figures; exit status 0 when no SIGTERM left a file, nothing was left after the
# last save, and no concurrent run failed.
set -u
m=${1:?usage: stress_saves.sh MINIGPT [KILLS] [RUNS] [ROUNDS]}
kills=${2:-20}
runs=${3:-20}
rounds=${4:-3}
m=$(cd "$(dirname "$m")" && pwd)/$(basename "$m")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2

big="--d-model 384 --heads 6 --layers 6 --context 16 --batch 1 --steps 1 --eval-interval 0
     --eval-batches 1 --max-new-tokens 1 --time-limit 0 --threads 1"
temporaries() { find . -maxdepth 1 -name "$1.tmp*" | wc -l; }
temp_bytes() { find . -maxdepth 1 -name "$1.tmp*" -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
now_ms() { date +%s%3N; }

# The length of a save: from the end of training to the line that names the saved model.
stdbuf -oL "$m" $big --out probe.ckpt > probe.log 2>&1 &
pid=$!
until grep -q "^minigpt: held-out loss" probe.log 2>/dev/null; do sleep 0.005; done
t0=$(now_ms)
peak=0  # the most bytes the save's files took at once (allocated blocks, not apparent sizes)
until grep -q "^minigpt: model .*weights and vocabulary" probe.log 2>/dev/null || ! kill -0 $pid 2>/dev/null; do
  used=$(find . -maxdepth 1 -name 'probe.ckpt*' ! -name '*.loss.*' -printf '%b\n' 2>/dev/null |
         awk '{s += $1 * 512} END {print s + 0}')
  [ "$used" -gt "$peak" ] && peak=$used
  sleep 0.002
done
save_ms=$(($(now_ms) - t0))
wait $pid
size=$(stat -c %s probe.ckpt 2>/dev/null || echo 0)
echo "== part 1: $kills saves of a $size-byte model killed (a save takes about $save_ms ms)"
echo "   disk a save took at its peak, sampled: $peak bytes," \
     "$(awk -v p="$peak" -v s="$size" 'BEGIN { printf "%.2f", s ? p / s : 0 }') x the model"
rm -f probe.*

left_term=0 left_kill=0 killed_mid=0 max_left=0 max_bytes=0
for i in $(seq 1 "$kills"); do
  signal=KILL
  [ $((i % 2)) -eq 0 ] && signal=TERM
  stdbuf -oL "$m" $big --out m.ckpt > run.log 2>&1 &
  pid=$!
  until grep -q "^minigpt: held-out loss" run.log 2>/dev/null || ! kill -0 $pid 2>/dev/null; do
    sleep 0.005
  done
  sleep "$(awk -v r=$RANDOM -v ms="$save_ms" 'BEGIN { printf "%.3f", r / 32768 * ms / 1000 }')"
  if ! grep -q "^minigpt: model .*weights and vocabulary" run.log; then killed_mid=$((killed_mid + 1)); fi
  kill -s $signal $pid 2>/dev/null
  wait $pid 2>/dev/null
  n=$(temporaries m.ckpt)
  b=$(temp_bytes m.ckpt)
  [ "$n" -gt "$max_left" ] && max_left=$n
  [ "$b" -gt "$max_bytes" ] && max_bytes=$b
  if [ "$signal" = TERM ]; then
    left_term=$((left_term + n))
    rm -f m.ckpt.tmp*  # count each SIGTERM's own files only
  else
    left_kill=$n  # kill -9 files pile up until a save removes them
  fi
done
echo "   $killed_mid of $kills kills came before the save had finished"
echo "   SIGTERM: $left_term temporary files left by $((kills / 2)) kills"
echo "   kill -9: $left_kill temporary files piled up after $(((kills + 1) / 2)) kills" \
     "(the most at once: $max_left files, $max_bytes bytes)"
"$m" $big --out m.ckpt > last.log 2>&1
after=$(temporaries m.ckpt)
echo "   after one more complete save: $after temporary files left"
rm -f m.ckpt*

echo "== part 2: $rounds rounds of $runs runs saving to one --out at once"
small="--steps 3 --d-model 16 --heads 2 --layers 1 --context 8 --batch 2 --eval-interval 0
       --eval-batches 1 --max-new-tokens 4 --time-limit 0 --threads 1"
failed=0 total=0
for r in $(seq 1 "$rounds"); do
  pids=()
  for j in $(seq 1 "$runs"); do
    "$m" $small --seed "$j" --out c.ckpt > "c$j.log" 2>&1 &
    pids+=($!)
  done
  for j in $(seq 1 "$runs"); do
    total=$((total + 1))
    if ! wait "${pids[$((j - 1))]}"; then
      failed=$((failed + 1))
      [ "$failed" -le 3 ] && grep "error" "c$j.log" | head -n 1 | sed 's/^/   /'
    fi
  done
done
left_c=$(find . -maxdepth 1 -name "c.*tmp*" | wc -l)
echo "   $failed of $total runs failed; $left_c temporary files left"
echo "   the model loads: $("$m" --load c.ckpt --max-new-tokens 1 > load.log 2>&1 && echo yes || echo no)"

[ "$left_term" -eq 0 ] && [ "$after" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$left_c" -eq 0 ]
