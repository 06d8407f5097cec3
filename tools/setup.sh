#!/usr/bin/env bash
# Installs everything the workbook needs on Debian 12 (bookworm), from Debian's packages.
# Idempotent: packages already installed are left alone. Run as root, or with sudo.
#
#   tools/setup.sh                 install what is missing and say what (sudo if not root)
#   tools/setup.sh --check         only list what is missing (exit 1 if anything is)
set -euo pipefail

# package                  what it is for
PACKAGES=(
  g++                      # the C++17 compiler (g++ 12)
  cmake                    # the build (3.25: presets with workflows)
  ninja-build              # the generator the presets use
  python3                  # tools/workbook (standard library only)
  libxtensor-dev           # tensors (0.24)
  xtl-dev                  # xtensor's support library
  libxsimd-dev             # xtensor's SIMD layer (only a Recommends of libxtensor-dev)
  libxtensor-blas-dev      # xt::linalg::dot (0.20)
  libopenblas-dev          # the BLAS behind it
  catch2                   # the checks (2.13, with a prebuilt main)
  libbenchmark-dev         # student-vs-reference benchmarks (1.7)
  libcli11-dev             # the minigpt command's options (CLI11 2.1)
  doxygen                  # the documentation site
  graphviz                 # diagrams in the documentation site
  libjs-mathjax            # formulas in the documentation site, offline
)

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ "${1:-}" = "--check" ]; then
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
