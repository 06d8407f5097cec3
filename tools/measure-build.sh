#!/usr/bin/env bash
# Measures the two build times a student feels, in fresh build folders under build/measure-*:
#   1. a clean configure + build + test of the `solutions` preset (the README's test command);
#   2. the edit → check loop: after editing one chapter's source file in a built student tree,
#      the time until `ctest -L chapterN` has answered (rebuild + checks). The edited file is a
#      finished one (a copy of the reference, as heavy as a student's complete answer), put in
#      place of the stub with -DWB_IMPL_DIR_chapterN.
#
#   tools/measure-build.sh [CHAPTER_FOLDER ...]     default: 2-embedding
set -euo pipefail
cd "$(dirname "$0")/.."
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(2-embedding)

seconds() { date +%s%N; }
elapsed() { local ms=$(( ($(date +%s%N) - $1) / 1000000 )); printf '%d.%01d' $((ms / 1000)) $((ms % 1000 / 100)); }

rm -rf build/measure-solutions build/measure-student build/measure-answers
echo "clean build of the solutions preset (configure + build + all checks), $(nproc) cores:"
start=$(seconds)
cmake -S . -B build/measure-solutions -G Ninja -DCMAKE_BUILD_TYPE=Release -DWB_REFERENCE=all >/dev/null
cmake --build build/measure-solutions >/dev/null
ctest --test-dir build/measure-solutions -j "$(nproc)" >/dev/null
echo "  $(elapsed "$start") s"

echo "student tree (Debug, index checks on, the student preset's settings), built once first:"
answers=()
for folder in "${files[@]}"; do
  label=chapter${folder%%-*}
  mkdir -p build/measure-answers
  cp -r "solutions/$folder" build/measure-answers/
  answers+=("-DWB_IMPL_DIR_$label=$PWD/build/measure-answers/$folder")
done
cmake -S . -B build/measure-student -G Ninja -DCMAKE_BUILD_TYPE=Debug -DWB_REFERENCE=none \
      -DWB_BOUNDS_CHECKS=ON "${answers[@]}" >/dev/null
cmake --build build/measure-student >/dev/null
for folder in "${files[@]}"; do
  label=chapter${folder%%-*}
  file=$(ls build/measure-answers/"$folder"/*.cpp | head -1)
  touch "$file"
  start=$(seconds)
  cmake --build build/measure-student >/dev/null
  ctest --test-dir build/measure-student -L "^${label}\$" >/dev/null 2>&1 || true
  echo "  edit $file -> ctest -L $label: $(elapsed "$start") s (whole-tree build)"
  touch "$file"
  start=$(seconds)
  python3 tools/workbook check "$label" --build-dir build/measure-student >/dev/null 2>&1 || true
  echo "  edit $file -> tools/workbook check $label: $(elapsed "$start") s (only that chapter's target)"
done
