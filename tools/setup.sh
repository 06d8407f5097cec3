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
# Other distributions (not tested here): a C++17 compiler with OpenMP, CMake 3.25 or later,
# Ninja, Python 3, xtensor 0.24+ with xtl and xsimd, xtensor-blas 0.20+, a BLAS (OpenBLAS),
# Catch2 2.13 or 3.x, Google Benchmark 1.7+, CLI11 2.x, an MPI with mpirun (OpenMPI), and for
# the site Doxygen, Graphviz, MathJax 2, Sphinx with MyST, Breathe, furo, sphinx-copybutton and
# jieba.
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
)
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
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ "$check_only" -eq 1 ]; then
  if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all ${#PACKAGES[@]} packages are installed"
    exit 0
  fi
  echo "setup: missing: ${missing[*]}"
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages are already installed"
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root (sudo is not available)" >&2; exit 1; }
  as_root=(sudo)
fi

echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -q
"${as_root[@]}" apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}"
echo "setup: done"
