#!/usr/bin/env bash
# Measures the two build times a student feels, in fresh build folders under build/measure-*:
#   1. a clean configure + build + test of the `solutions` preset (the README's test command);
#   2. the edit → check loop: after touching one chapter's source file in a built student tree,
#      the time until `ctest -L chapterN` has answered (rebuild + checks).
#
#   tools/measure-build.sh [CHAPTER_FILE ...]     default: chapters/2-embedding/embedding.cpp
set -euo pipefail
cd "$(dirname "$0")/.."
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(chapters/2-embedding/embedding.cpp)

seconds() { date +%s%N; }
elapsed() { local ms=$(( ($(date +%s%N) - $1) / 1000000 )); printf '%d.%01d' $((ms / 1000)) $((ms % 1000 / 100)); }

rm -rf build/measure-solutions build/measure-student
echo "clean build of the solutions preset (configure + build + all checks), $(nproc) cores:"
start=$(seconds)
cmake -S . -B build/measure-solutions -G Ninja -DCMAKE_BUILD_TYPE=Release -DWB_REFERENCE=all >/dev/null
cmake --build build/measure-solutions >/dev/null
ctest --test-dir build/measure-solutions -j "$(nproc)" >/dev/null
echo "  $(elapsed "$start") s"

echo "student tree (Debug, index checks on), built once first:"
cmake -S . -B build/measure-student -G Ninja -DCMAKE_BUILD_TYPE=Debug -DWB_REFERENCE=none \
      -DWB_BOUNDS_CHECKS=ON >/dev/null
cmake --build build/measure-student >/dev/null
for file in "${files[@]}"; do
  label=chapter$(basename "$(dirname "$file")" | cut -d- -f1)
  touch "$file"
  start=$(seconds)
  cmake --build build/measure-student >/dev/null
  ctest --test-dir build/measure-student -L "^${label}\$" >/dev/null || true  # stubs fail
  echo "  edit $file -> ctest -L $label: $(elapsed "$start") s (whole-tree build)"
  touch "$file"
  start=$(seconds)
  python3 tools/workbook check "$label" --build-dir build/measure-student >/dev/null || true
  echo "  edit $file -> tools/workbook check $label: $(elapsed "$start") s (only that chapter's target)"
done
