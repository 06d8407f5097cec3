#!/bin/sh
# The command-line checks of the minigpt program: each case runs the program (and what it needs
# around it) in the current folder, and passes when the output, with "rc=<exit code>" appended,
# matches its pattern (an extended regular expression over the whole output, newlines included).
#
#   cli_checks.sh MINIGPT NAME    run one case; prints the output, then PASS or what was expected
#   cli_checks.sh --list          the cases' names, one per line (CMake adds one ctest each)
#
# Bad input gives one line naming the option or the file, before any training, and the right exit
# code: 2 for options, 1 for files and runs that fail.
set -u
tiny="--steps 5 --d-model 16 --heads 2 --layers 1 --context 8 --batch 2 --eval-interval 0 --eval-batches 1 --max-new-tokens 4"

# case NAME PATTERN SCRIPT: one check (SCRIPT runs in sh, with $m the program and $tiny a tiny run)
cases=""
case_() {
  cases="$cases$1
"
  if [ "$1" = "$want" ]; then pattern=$2; script=$3; fi
}

want=${2:-}
pattern="" script=""
case_ 'rejects a missing corpus' \
  'minigpt: error: .*cannot open /nonexistent/corpus.txt.*rc=1' \
  '"$m" --corpus /nonexistent/corpus.txt'
case_ 'rejects a bad option' \
  'minigpt: error: .*--steps.*rc=2' \
  '"$m" --steps abc'
case_ 'rejects heads that do not divide the width' \
  '--heads 4 does not divide.*rc=2' \
  '"$m" --d-model 30 --heads 4'
case_ 'rejects an empty corpus' \
  'minigpt: error: .*/dev/null is a character device.*rc=1' \
  '"$m" --corpus /dev/null'
case_ 'refuses a temperature that is 0 as a float' \
  '--temperature.*1e-50.*rc=2' \
  '"$m" --temperature 1e-50'
case_ 'refuses a temperature that is infinite as a float' \
  '--temperature.*1e39.*rc=2' \
  '"$m" --temperature 1e39'
case_ 'refuses a top-p that is 0 as a float' \
  '--top-p.*1e-50.*rc=2' \
  '"$m" --top-p 1e-50'
case_ 'refuses a learning rate that is infinite as a float' \
  '--lr.*1e39.*rc=2' \
  '"$m" --lr 1e39'
case_ 'refuses a seed of 2^64 instead of clamping it' \
  '--seed.*18446744073709551616.*rc=2' \
  '"$m" --seed 18446744073709551616'
case_ 'refuses 2^64 steps' \
  '--steps.*18446744073709551616.*rc=2' \
  '"$m" --steps 18446744073709551616'
case_ 'refuses a fractional integer' \
  '--batch.*2.5.*rc=2' \
  '"$m" --batch 2.5'
case_ 'refuses a context of 1, a model that could never generate' \
  '--context.*expected an integer in \[2,.*rc=2' \
  '"$m" --context 1'
case_ 'refuses more threads than the machine has' \
  '--threads.*100000.*rc=2' \
  '"$m" --threads 100000'
case_ 'refuses model options with --load' \
  '--d-model has no effect with --load.*rc=2' \
  '"$m" --load m.ckpt --d-model 64'
case_ 'refuses --out on a device' \
  '--out.*/dev/null is a character device.*rc=2' \
  '"$m" --out /dev/null'
case_ 'refuses --out equal to the corpus and leaves it' \
  '--out corpus.txt is the corpus itself.*rc=2.*same' \
  'printf '\''to be or not to be'\'' > corpus.txt; "$m" --corpus corpus.txt --out corpus.txt; echo rc=$?; grep -q '\''to be or not to be'\'' corpus.txt && echo same'
case_ 'refuses --load of a device before reading it' \
  'load_model: /dev/zero is a character device.*rc=1' \
  '"$m" --load /dev/zero'
case_ 'refuses --load of a FIFO instead of waiting on it' \
  'load_model: fifo.ckpt is a FIFO.*rc=1' \
  'rm -f fifo.ckpt; mkfifo fifo.ckpt; "$m" --load fifo.ckpt'
case_ 'refuses a corpus that is a FIFO' \
  'load_corpus: fifo.txt is a FIFO.*rc=1' \
  'rm -f fifo.txt; mkfifo fifo.txt; "$m" --corpus fifo.txt'
case_ 'refuses --vocab-size without --tokenizer bpe' \
  '--vocab-size has no effect with --tokenizer char.*rc=2' \
  '"$m" --vocab-size 300'
case_ 'refuses a BPE vocabulary below the 256 bytes' \
  '--vocab-size.*expected an integer in \[256,.*rc=2' \
  '"$m" --tokenizer bpe --vocab-size 100'
case_ 'trains a BPE model and generates from its one file' \
  'BPE tokens \(V = 300.*per character.*loaded bpe.ckpt: V=300.*rc=0' \
  '"$m" $tiny --tokenizer bpe --vocab-size 300 --out bpe.ckpt && "$m" --load bpe.ckpt --max-new-tokens 4'
case_ 'says the loss diverged, also under the sanitizers' \
  'the loss is (nan|inf|-nan).*rc=1' \
  '"$m" $tiny --lr 1e9 --grad-clip 0 --out diverged.ckpt'
case_ 'trains with --engine chapters and --positions rope, then loads the model' \
  'engine chapters.*positions rope.*loaded rope.ckpt.*positions rope.*rc=0' \
  '"$m" $tiny --engine chapters --positions rope --out rope.ckpt && "$m" --load rope.ckpt --max-new-tokens 4'
case_ 'trains with --positions none on the fast engine, then loads the model' \
  'positions none: .*loaded none.ckpt.*positions none,.*rc=0' \
  '"$m" $tiny --positions none --out none.ckpt && "$m" --load none.ckpt --max-new-tokens 4'
case_ 'refuses --positions none with --engine chapters' \
  '--positions none runs on --engine fast.*rc=2' \
  '"$m" --positions none --engine chapters'
case_ 'refuses --positions rope with an odd head width' \
  '--positions rope needs an even head width.*rc=2' \
  '"$m" --positions rope --d-model 12 --heads 4'
case_ 'refuses an --out whose loss log is the corpus, and leaves the corpus' \
  'the loss log of --out data.model \(data.loss.csv\) is the corpus.*rc=2.*same' \
  'printf '\''some text'\'' > data.loss.csv; "$m" --corpus data.loss.csv --out data.model; echo rc=$?; grep -q '\''some text'\'' data.loss.csv && echo same'
case_ 'refuses an empty --out before training' \
  '--out '\'''\'' names no file.*rc=2' \
  '"$m" --out '\'''\'''
case_ 'refuses an --out that ends in / before training' \
  '--out '\''outdir/'\'' names no file.*rc=2' \
  '"$m" --out outdir/'
case_ 'refuses an --out inside a file before training' \
  '--out afile/m.ckpt: afile is not a folder.*rc=2' \
  'touch afile; "$m" --out afile/m.ckpt'
case_ 'refuses training options given before explain' \
  '--steps has no effect with explain.*rc=2' \
  '"$m" --steps 5 explain --load m.ckpt --prompt a'
case_ 'refuses an explain page that would overwrite its model' \
  '--html m.ckpt is the model.*rc=2' \
  '"$m" explain --load m.ckpt --prompt a --html m.ckpt'
case_ 'refuses a convert that would overwrite its checkpoint' \
  '--out old.ckpt is the checkpoint.*rc=2' \
  '"$m" convert --checkpoint old.ckpt --vocab old.ckpt.vocab --out old.ckpt'
case_ 'saves of 10 runs at once to one --out all succeed and leave no temporary file' \
  'failed=0 left=0.*loaded par.ckpt.*rc=0' \
  'rm -f par.*; pids='\'''\''; for i in 1 2 3 4 5 6 7 8 9 10; do "$m" $tiny --threads 1 --seed $i --out par.ckpt > par$i.log 2>&1 & pids="$pids $!"; done; failed=0; for p in $pids; do wait $p || failed=$((failed + 1)); done; echo failed=$failed left=$(ls | grep -c '\''par[.].*tmp'\''); "$m" --load par.ckpt --max-new-tokens 1'
case_ 'refuses a model too large for the memory before allocating it' \
  'D=65536 L=1024 has [0-9]+ parameters; training it needs at least.*more than.*rc=1' \
  '"$m" --d-model 65536 --layers 1024 --steps 1'
case_ 'runs a converted GPT-2 on the chapters: the greedy text of the PyTorch forward of GPT-2' \
  'GELU tanh, gpt2 vocabulary.*greedy.*Hello worldr Her He.*rc=0' \
  'python3 "$root/tests/minigpt/tiny_gpt2.py" g1.model && "$m" --load g1.model --tokenizer gpt2 --prompt "Hello world" --greedy --max-new-tokens 6'
case_ 'refuses --engine fast for the tanh GELU of GPT-2' \
  'GptDecoder: config .*gelu = tanh.*: the fast engine computes the exact GELU only.*--engine chapters.*rc=1' \
  'python3 "$root/tests/minigpt/tiny_gpt2.py" g2.model && "$m" --load g2.model --engine fast --prompt "Hello"'
case_ 'refuses --tokenizer char for a GPT-2 model' \
  '--tokenizer char: g3.model holds a gpt2 vocabulary; expected --tokenizer gpt2.*rc=1' \
  'python3 "$root/tests/minigpt/tiny_gpt2.py" g3.model && "$m" --load g3.model --tokenizer char'
case_ 'convert-gpt2 refuses a vocabulary that does not belong to the weights' \
  'encoder.json has 50257 tokens, the weights.*V = 13.*rc=1.*no model' \
  'python3 "$root/tests/minigpt/tiny_gpt2.py" g4.model >/dev/null; python3 "$root/tools/convert-gpt2" --safetensors g4.model.safetensors --heads 2 --out g5.model; echo rc=$?; test -e g5.model || echo no model'
case_ 'refuses --tokenizer gpt2 without --load' \
  '--tokenizer gpt2 runs a GPT-2 converted by tools/convert-gpt2: add --load.*rc=2' \
  '"$m" --tokenizer gpt2'
case_ 'says in --help that the model is one file' \
  '--out.*one file, the weights and the vocabulary.*rc=0' \
  '"$m" --help'

if [ "${1:-}" = "--list" ]; then
  printf "%s" "$cases"
  exit 0
fi
if [ $# -ne 2 ] || [ -z "$script" ]; then
  echo "cli_checks.sh: usage: cli_checks.sh MINIGPT NAME | --list (NAME one of --list's)" >&2
  exit 2
fi
m=$1
root=$(cd "$(dirname "$0")/../.." && pwd)  # the source tree: the goldens and tools/convert-gpt2
export m tiny root
output=$(sh -c "$script 2>&1; echo rc=\$?" 2>&1)
printf "%s\n" "$output"
if printf "%s\n" "$output" | grep -qzE -e "$pattern"; then
  echo "PASS"
  exit 0
fi
echo "FAIL: expected the output to match: $pattern"
exit 1
