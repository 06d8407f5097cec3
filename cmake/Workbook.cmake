# The workbook's build mechanism: one library per chapter, compiled from the student's stub or
# from the reference, and one Catch2 test program per chapter labelled with the chapter.

set(WB_CHAPTERS "" CACHE INTERNAL "labels of the chapters found, in course order")
get_filename_component(WB_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set_property(GLOBAL PROPERTY WB_COURSE_ENTRIES "")

# find_package(NAME [VERSION] ...) that stops, when NAME is missing, with the Debian package to
# install: a learner reads "install libxtensor-dev", not a list of CMake search paths.
#   wb_require(xtensor 0.24 libxtensor-dev)
#   wb_require(OpenMP "" "g++ (libgomp)" COMPONENTS CXX)
macro(wb_require name version package)
  find_package(${name} ${version} QUIET ${ARGN})
  if(NOT ${name}_FOUND)
    if(NOT "${version}" STREQUAL "")
      set(wb_wanted " ${version} or later")
    else()
      set(wb_wanted "")
    endif()
    message(FATAL_ERROR "${name}${wb_wanted} is missing: install the Debian package "
                        "${package} (tools/setup.sh installs every package the workbook needs)")
  endif()
endmacro()

# True when chapter LABEL (e.g. chapter3) is selected to come from solutions/. A chapter is
# named by its label or its number: the label's (chapter3) or, given FOLDER, the folder's
# (10-data-parallel, label dataparallel: 10).
function(wb_uses_reference label out)
  set(selected ${WB_REFERENCE})
  string(TOLOWER "${selected}" selected)
  string(REGEX REPLACE "^chapter" "" number "${label}")
  if(ARGC GREATER 2 AND "${ARGV2}" MATCHES "^([0-9]+)-")
    set(number ${CMAKE_MATCH_1})
  endif()
  if(selected STREQUAL "all")
    set(${out} TRUE PARENT_SCOPE)
  elseif(label IN_LIST selected OR number IN_LIST selected)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# A class handout (tools/workbook handout) has no solutions/: the reference of each chapter is
# prebuilt/<folder>/libwb_<label>.a (namespace wb::impl, what WB_REFERENCE selects) and
# libwb_reference_<label>.a (namespace wb::reference, for the benchmarks), compiled once by the
# instructor. prebuilt/toolchain.cmake says with what; a different toolchain is warned about.
function(wb_prebuilt_check)
  get_property(done GLOBAL PROPERTY WB_PREBUILT_CHECKED)
  if(done)
    return()
  endif()
  set_property(GLOBAL PROPERTY WB_PREBUILT_CHECKED TRUE)
  include(${WB_ROOT}/prebuilt/toolchain.cmake OPTIONAL RESULT_VARIABLE found)
  if(NOT found)
    message(FATAL_ERROR "prebuilt/ has libraries but no toolchain.cmake: write the handout again "
                        "(tools/workbook handout)")
  endif()
  if(NOT CMAKE_SYSTEM_PROCESSOR STREQUAL WB_PREBUILT_PROCESSOR)
    message(FATAL_ERROR "the prebuilt reference libraries are for ${WB_PREBUILT_PROCESSOR}, "
                        "this machine is ${CMAKE_SYSTEM_PROCESSOR}: they cannot be linked here")
  endif()
  string(REGEX MATCH "^[0-9]+" major "${CMAKE_CXX_COMPILER_VERSION}")
  string(REGEX MATCH "^[0-9]+" wanted "${WB_PREBUILT_CXX_COMPILER_VERSION}")
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL WB_PREBUILT_CXX_COMPILER_ID OR NOT major STREQUAL wanted)
    message(WARNING "the prebuilt reference libraries were compiled with "
            "${WB_PREBUILT_CXX_COMPILER_ID} ${WB_PREBUILT_CXX_COMPILER_VERSION}, this build uses "
            "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}: a later g++ or a clang++ on "
            "libstdc++ usually links them, but only the first is tested")
  endif()
  if(DEFINED xtensor_VERSION AND NOT xtensor_VERSION VERSION_EQUAL WB_PREBUILT_XTENSOR_VERSION)
    message(WARNING "the prebuilt reference libraries were compiled against xtensor "
            "${WB_PREBUILT_XTENSOR_VERSION}, this build finds ${xtensor_VERSION}: the tensors "
            "they exchange with your code may not match; ask for a handout built on this release")
  endif()
endfunction()

# ---- build speed (the options are explained in CMakeLists.txt) --------------------------------

# ccache and mold when installed (WB_FAST_TOOLS): ccache as the compiler launcher unless one is
# set already, told to cache compilations that use a precompiled header; mold as the linker.
macro(wb_fast_tools)
  set(wb_tools "")
  if(WB_FAST_TOOLS)
    if(NOT CMAKE_CXX_COMPILER_LAUNCHER)
      find_program(WB_CCACHE ccache)
      mark_as_advanced(WB_CCACHE)
      if(WB_CCACHE)
        set(CMAKE_CXX_COMPILER_LAUNCHER ${WB_CCACHE})
      endif()
    endif()
    list(GET CMAKE_CXX_COMPILER_LAUNCHER 0 wb_launcher)
    get_filename_component(wb_launcher "${wb_launcher}" NAME)
    if(wb_launcher STREQUAL "ccache")
      list(APPEND wb_tools ccache)
      if(WB_PCH)
        # Without these ccache compiles every file that uses a precompiled header itself.
        set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env
            CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
            ${CMAKE_CXX_COMPILER_LAUNCHER})
      endif()
    endif()
    find_program(WB_MOLD mold)
    mark_as_advanced(WB_MOLD)
    if(WB_MOLD)
      include(CheckLinkerFlag)
      check_linker_flag(CXX -fuse-ld=mold WB_LINKER_MOLD)
      if(WB_LINKER_MOLD)
        add_link_options(-fuse-ld=mold)
        list(APPEND wb_tools mold)
      endif()
    endif()
  endif()
  if(WB_PCH)
    list(APPEND wb_tools "precompiled headers")
  endif()
  if(WB_FAST_CHECKS AND CMAKE_BUILD_TYPE STREQUAL "Debug")
    list(APPEND wb_tools "checks -O1")
  endif()
  list(JOIN wb_tools ", " wb_tools)
  message(STATUS "build speed-ups: ${wb_tools}")
endmacro()

# The options of the check programs: -O1 in a Release build, -O1 -g1 in a Debug one.
function(wb_check_options out)
  if(CMAKE_BUILD_TYPE STREQUAL "Release")
    set(${out} -O1 PARENT_SCOPE)
  else()
    wb_optimised_options(options)
    set(${out} ${options} PARENT_SCOPE)
  endif()
endfunction()

# The options that make a Debug check program fast: -O1, line tables only (WB_FAST_CHECKS).
function(wb_optimised_options out)
  if(WB_FAST_CHECKS AND CMAKE_BUILD_TYPE STREQUAL "Debug")
    set(${out} -O1 -g1 PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# A chapter taken from the reference in a Debug build: line tables only (WB_FAST_CHECKS), so
# it compiles in half the time of -g; it stays -O0, which compiles fastest (the checks' own
# code, not the chapters they call, is what runs long unoptimised).
function(wb_reference_options out)
  if(WB_FAST_CHECKS AND CMAKE_BUILD_TYPE STREQUAL "Debug")
    set(${out} -g1 PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# Compiles TARGET with the extra OPTIONS (a list, possibly empty) and, with WB_PCH, with the
# precompiled header of KIND: `chapters` (the standard library, xtensor, xtensor-blas) or
# `checks` (the same and Catch2), compiled once by its own target (wb_pch_<kind>...) and
# reused by every target of that kind.
function(wb_compile_like target kind)
  set(options ${ARGN})
  if(options)
    target_compile_options(${target} PRIVATE ${options})
  endif()
  if(NOT WB_PCH)
    return()
  endif()
  # g++ refuses a precompiled header compiled at another optimisation (-O0 or not), and takes
  # one with other debug information (-g, -g1): one header per kind and optimisation.
  set(optimise "")
  foreach(option IN LISTS options)
    if(option MATCHES "^-O[1-3sg]")
      set(optimise ${option})
    endif()
  endforeach()
  string(MAKE_C_IDENTIFIER "wb_pch_${kind}${optimise}" pch)
  if(NOT TARGET ${pch})
    set(source ${CMAKE_BINARY_DIR}/workbook/pch.cpp)
    file(CONFIGURE OUTPUT ${source} CONTENT "// compiles the precompiled headers\n")
    add_library(${pch} OBJECT EXCLUDE_FROM_ALL ${source})
    target_link_libraries(${pch} PRIVATE wb_core wb_warnings)
    if(optimise)
      target_compile_options(${pch} PRIVATE ${optimise})
    endif()
    set(headers <algorithm> <cmath> <cstddef> <cstdint> <limits> <optional> <random>
                <sstream> <string> <vector> <xtensor/xarray.hpp> <xtensor/xtensor.hpp>
                <xtensor/xview.hpp> <xtensor/xmanipulation.hpp> <xtensor/xmath.hpp>
                <xtensor-blas/xlinalg.hpp>)
    if(kind STREQUAL "checks")
      # wb_test_support's usage requirements (it uses this header itself)
      target_include_directories(${pch} PRIVATE ${WB_ROOT}/tests/support)
      target_compile_definitions(${pch} PRIVATE WB_CATCH2_MAJOR=${catch2_major})
      target_link_libraries(${pch} PRIVATE Catch2::Catch2)
      list(APPEND headers ${WB_ROOT}/tests/support/catch.hpp)
    endif()
    target_precompile_headers(${pch} PRIVATE ${headers})
  endif()
  target_precompile_headers(${target} REUSE_FROM ${pch})
endfunction()

# Adds chapter LABEL from folder FOLDER, linked to the chapters it DEPENDS on and to the given
# LIBRARIES (code of the course that is no exercise, e.g. chapter 2's GPT-2 pre-tokenizer):
#   library  wb_<label>       chapters/<folder>/*.cpp or solutions/<folder>/*.cpp (in a handout:
#                             prebuilt/<folder>/libwb_<label>.a)
#   library  wb_reference_<label>  the reference again in namespace wb::reference, built only
#                             when a target needs it (the benchmarks)
#   tests    test_<label>     tests/<folder>/*.cpp, each TEST_CASE a ctest test labelled <label>
# WB_IMPL_DIR_<label> (a cache path) replaces the source folder: the mutant and grading tools
# use it to compile a modified copy of a chapter. WB_EXTRA_TESTS (a cache path) adds the checks
# in WB_EXTRA_TESTS/<folder>/*.cpp to test_<label>: an instructor's own checks, kept outside.
# TIMEOUT seconds: a CTest time limit for each of its checks (the data-parallel chapter's, which
# start MPI jobs).
function(wb_chapter label folder)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "TIMEOUT" "DEPENDS;LIBRARIES")
  set(stub_dir ${CMAKE_CURRENT_SOURCE_DIR}/chapters/${folder})
  file(GLOB stub_sources CONFIGURE_DEPENDS ${stub_dir}/*.cpp)
  if(NOT stub_sources)
    return()  # the chapter is not written yet
  endif()
  set(ref_dir ${CMAKE_CURRENT_SOURCE_DIR}/solutions/${folder})
  file(GLOB ref_sources CONFIGURE_DEPENDS ${ref_dir}/*.cpp)
  set(prebuilt_dir ${CMAKE_CURRENT_SOURCE_DIR}/prebuilt/${folder})
  set(lib_name ${CMAKE_STATIC_LIBRARY_PREFIX}wb_${label}${CMAKE_STATIC_LIBRARY_SUFFIX})
  set(ref_lib_name ${CMAKE_STATIC_LIBRARY_PREFIX}wb_reference_${label}${CMAKE_STATIC_LIBRARY_SUFFIX})
  set(prebuilt FALSE)
  if(NOT ref_sources AND EXISTS ${prebuilt_dir}/${lib_name})
    set(prebuilt TRUE)
    wb_prebuilt_check()
  endif()
  set(WB_PREBUILT_${label} ${prebuilt} CACHE INTERNAL "")

  wb_uses_reference(${label} use_ref ${folder})
  if(WB_IMPL_DIR_${label})
    set(src_dir ${WB_IMPL_DIR_${label}})
    set(kind "override ${src_dir}")
  elseif(use_ref AND prebuilt)
    set(src_dir ${prebuilt_dir})
    set(kind "reference (prebuilt)")
  elseif(use_ref)
    set(src_dir ${ref_dir})
    set(kind "reference")
  else()
    set(src_dir ${stub_dir})
    set(kind "student")
  endif()
  list(TRANSFORM arg_DEPENDS PREPEND wb_ OUTPUT_VARIABLE dependencies)
  if(kind STREQUAL "reference (prebuilt)")
    message(STATUS "${label} (${folder}): ${kind}")
    wb_course_entry(${label} ${folder} "${kind}" ${src_dir})
    add_library(wb_${label} STATIC IMPORTED GLOBAL)
    set_target_properties(wb_${label} PROPERTIES IMPORTED_LOCATION ${prebuilt_dir}/${lib_name})
    target_link_libraries(wb_${label} INTERFACE wb_core ${dependencies} ${arg_LIBRARIES})
  else()
    file(GLOB sources CONFIGURE_DEPENDS ${src_dir}/*.cpp)
    if(NOT sources)
      message(FATAL_ERROR "${label}: no .cpp files in ${src_dir}")
    endif()
    message(STATUS "${label} (${folder}): ${kind}")
    wb_course_entry(${label} ${folder} "${kind}" ${src_dir})

    add_library(wb_${label} STATIC ${sources})
    if(WB_IMPL_DIR_${label})
      set(warnings wb_warnings_lenient)  # CMakeLists.txt says why
    else()
      set(warnings wb_warnings)
    endif()
    target_link_libraries(wb_${label} PUBLIC wb_core ${dependencies} ${arg_LIBRARIES}
                          PRIVATE ${warnings})
    # An override folder (a mutant of the catalogue, a graded tree) is rebuilt once per mutant
    # or tree and only ever checked on tiny tensors: -O1, like the checks, compiles it a third
    # faster. The capstone keeps the build's optimisation: its checks train a model, its
    # override (the readable kernel) is benchmarked. In a Debug build the learner's own code
    # keeps -O0 -g (the debugger's), and a chapter taken from the reference gets line tables
    # only (wb_reference_options).
    set(options "")
    if(WB_IMPL_DIR_${label} AND NOT label STREQUAL "capstone")
      if(CMAKE_BUILD_TYPE STREQUAL "Release")
        set(options -O1)
      endif()
    elseif(kind MATCHES "^reference")
      wb_reference_options(options)
    endif()
    wb_compile_like(wb_${label} chapters ${options})

  endif()
  set_property(GLOBAL PROPERTY WB_KIND_${label} ${kind})

  # The reference in namespace wb::reference, beside whichever wb_<label> is selected.
  list(TRANSFORM arg_DEPENDS PREPEND wb_reference_ OUTPUT_VARIABLE ref_dependencies)
  if(ref_sources)
    add_library(wb_reference_${label} STATIC EXCLUDE_FROM_ALL ${ref_sources})
    target_compile_definitions(wb_reference_${label} PRIVATE WB_IMPL=reference)
    target_link_libraries(wb_reference_${label} PUBLIC wb_core ${ref_dependencies}
                          ${arg_LIBRARIES} PRIVATE wb_warnings)
    wb_reference_options(options)
    wb_compile_like(wb_reference_${label} chapters ${options})
  elseif(prebuilt AND EXISTS ${prebuilt_dir}/${ref_lib_name})
    add_library(wb_reference_${label} STATIC IMPORTED GLOBAL)
    set_target_properties(wb_reference_${label} PROPERTIES
                          IMPORTED_LOCATION ${prebuilt_dir}/${ref_lib_name})
    target_link_libraries(wb_reference_${label} INTERFACE wb_core ${ref_dependencies}
                          ${arg_LIBRARIES})
  endif()

  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/${folder}/*.cpp)
  if(WB_EXTRA_TESTS)
    file(GLOB extra_tests CONFIGURE_DEPENDS ${WB_EXTRA_TESTS}/${folder}/*.cpp)
    list(APPEND tests ${extra_tests})
  endif()
  if(tests AND TARGET wb_test_support)  # no Catch2: the chapter builds, its checks do not
    add_executable(test_${label} ${tests})
    target_link_libraries(test_${label} PRIVATE wb_${label} wb_test_support
                          Catch2::Catch2WithMain wb_warnings)
    # The checks run on tiny tensors: -O1 compiles them a third faster than -O3, and the
    # code under test keeps the build type's optimisation. In a Debug build they are -O1 -g1
    # too (WB_FAST_CHECKS): unoptimised, chapter 8's gradient checks run for seconds.
    wb_check_options(options)
    wb_compile_like(test_${label} checks ${options})
    # One compact line per failed assertion under ctest (tools/workbook reads the XML reporter).
    set(timeout "")
    if(arg_TIMEOUT)
      set(timeout TIMEOUT ${arg_TIMEOUT})
    endif()
    catch_discover_tests(test_${label} TEST_PREFIX "${label}: " REPORTER compact
                         PROPERTIES LABELS ${label} FIXTURES_REQUIRED wb_build_${label}
                                    ${timeout})
    # `ctest -L <label>` first rebuilds what changed: a build step that every check of the
    # label needs (a CTest fixture), so the checks always test the files as saved. One build
    # at a time (RESOURCE_LOCK): ctest -j must not run two builds in one folder.
    add_test(NAME "${label}: build" COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
                                            --target test_${label})
    set_tests_properties("${label}: build" PROPERTIES LABELS ${label}
                         FIXTURES_SETUP wb_build_${label} RESOURCE_LOCK wb_build)
    # ctest's last step keeps the results where `tools/workbook status` and `next` read them
    # (the progress file beside chapters/), as `check` does: a CTest cleanup step of the same
    # fixture, run once after the label's checks. Every build has it, so a student build and
    # the reference's list the same tests; on a chapter compiled from the reference or an
    # override folder it keeps nothing (the progress is the learner's code's). Like the build
    # step, it is no check: the tools count neither.
    add_test(NAME "${label}: keep progress"
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/workbook record ${label}
                     --build-dir ${CMAKE_BINARY_DIR})
    set_tests_properties("${label}: keep progress" PROPERTIES LABELS ${label}
                         FIXTURES_CLEANUP wb_build_${label} RESOURCE_LOCK wb_build)
    # Before the first build ctest knows no check of the label (they are listed by building
    # the program): one test then runs them all, and later runs list them one by one.
    set(first "${label}: every check (first build)")
    string(CONCAT first_run
           "file(GLOB lists \"${CMAKE_CURRENT_BINARY_DIR}/test_${label}_tests-*.cmake\")\n"
           "if(NOT lists OR NOT EXISTS \"$<TARGET_FILE:test_${label}>\")\n"
           "  add_test(\"${first}\" \"$<TARGET_FILE:test_${label}>\" --reporter compact)\n"
           "  set_tests_properties(\"${first}\" PROPERTIES LABELS ${label}\n"
           "                       FIXTURES_REQUIRED wb_build_${label})\n"
           "endif()\n")
    file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/test_${label}_first_run.cmake
         CONTENT "${first_run}")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
                 ${CMAKE_CURRENT_BINARY_DIR}/test_${label}_first_run.cmake)
  endif()

  set(WB_CHAPTERS ${WB_CHAPTERS} ${label} CACHE INTERNAL "")
  set(WB_FOLDER_${label} ${folder} CACHE INTERNAL "")
endfunction()

# Stubs never drift from solutions: every chapter has the same .cpp files in chapters/ and
# solutions/ (the link of the student and solutions presets then proves each function exists).
function(wb_check_reference_names)
  foreach(label IN LISTS WB_CHAPTERS)
    if(WB_PREBUILT_${label})
      continue()  # a handout: the reference is a library, its names are proven by the link
    endif()
    set(folder ${WB_FOLDER_${label}})
    file(GLOB stub RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}/chapters/${folder}
         ${CMAKE_CURRENT_SOURCE_DIR}/chapters/${folder}/*.cpp)
    file(GLOB ref RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}/solutions/${folder}
         ${CMAKE_CURRENT_SOURCE_DIR}/solutions/${folder}/*.cpp)
    list(SORT stub)
    list(SORT ref)
    if(NOT stub STREQUAL ref)
      message(FATAL_ERROR "${label}: chapters/${folder} has [${stub}] but solutions/${folder} "
                          "has [${ref}]; a stub and its reference must share file names")
    endif()
  endforeach()
endfunction()

# ---- the course as the tools read it ---------------------------------------------------------
# <build>/workbook/course.json lists every chapter in course order: label, folder, title (the
# guide's first heading), kind (stub, reference or override), the folder compiled, the learner's
# files, the checks' files and the guide. tools/workbook reads it and nothing else of CMake, so
# a chapter is known, and WB_REFERENCE understood, in one place: here.

function(wb_json_string text out)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\t" " " text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

function(wb_json_files out)
  set(items "")
  foreach(path IN LISTS ARGN)
    file(RELATIVE_PATH relative ${WB_ROOT} ${path})
    if(relative MATCHES "^\\.\\.")
      set(relative ${path})  # outside the tree (an override folder): kept absolute
    endif()
    wb_json_string("${relative}" quoted)
    list(APPEND items "${quoted}")
  endforeach()
  list(JOIN items ", " joined)
  set(${out} "[${joined}]" PARENT_SCOPE)
endfunction()

# A JSON list of the strings given.
function(wb_json_strings out)
  set(items "")
  foreach(text IN LISTS ARGN)
    wb_json_string("${text}" quoted)
    list(APPEND items "${quoted}")
  endforeach()
  list(JOIN items ", " joined)
  set(${out} "[${joined}]" PARENT_SCOPE)
endfunction()

# Records chapter LABEL for course.json; KIND is the word printed by wb_chapter ("student",
# "reference" or "override DIR"), SRC_DIR the folder compiled.
function(wb_course_entry label folder kind src_dir)
  get_filename_component(src_dir "${src_dir}" ABSOLUTE BASE_DIR "${WB_ROOT}")
  if(kind STREQUAL "student")
    set(kind stub)
  elseif(kind MATCHES "^override")
    set(kind override)
  elseif(kind MATCHES "^reference")
    set(kind reference)  # compiled from solutions/ or prebuilt/
  endif()
  set(guide ${WB_ROOT}/chapters/${folder}/README.md)
  set(title "${label}")
  if(EXISTS ${guide})
    file(STRINGS ${guide} headings REGEX "^# " LIMIT_COUNT 1 ENCODING UTF-8)
    if(headings)
      string(REGEX REPLACE "^# +" "" title "${headings}")
    endif()
  endif()
  file(GLOB compiled ${src_dir}/*.cpp)
  file(GLOB headers ${WB_ROOT}/chapters/${folder}/*.hpp)
  file(GLOB checks ${WB_ROOT}/tests/${folder}/*.cpp)
  list(SORT compiled)
  list(SORT headers)
  list(SORT checks)
  wb_json_string("${label}" j_label)
  wb_json_string("${folder}" j_folder)
  wb_json_string("${title}" j_title)
  wb_json_string("${kind}" j_kind)
  wb_json_files(j_source ${src_dir})
  wb_json_files(j_files ${compiled} ${headers})
  wb_json_files(j_tests ${checks})
  wb_json_files(j_guide ${guide})
  string(REGEX REPLACE "^\\[(.*)\\]$" "\\1" j_source "${j_source}")  # one path, not a list
  string(REGEX REPLACE "^\\[(.*)\\]$" "\\1" j_guide "${j_guide}")
  set(entry "    {\"label\": ${j_label}, \"folder\": ${j_folder}, \"title\": ${j_title},\n"
            "     \"kind\": ${j_kind}, \"source\": ${j_source}, \"files\": ${j_files},\n"
            "     \"tests\": ${j_tests}, \"guide\": ${j_guide}, \"target\": \"test_${label}\"}")
  string(JOIN "" entry ${entry})
  set_property(GLOBAL APPEND PROPERTY WB_COURSE_ENTRIES "${entry}")
endfunction()

# Writes the chapters recorded so far to FILE (atomically: a tool never reads half a file).
function(wb_write_course file)
  get_property(entries GLOBAL PROPERTY WB_COURSE_ENTRIES)
  string(JOIN ",\n" body ${entries})
  wb_json_string("${WB_REFERENCE}" j_reference)
  wb_json_string("${WB_ROOT}" j_root)
  # The toolchain, for a handout's prebuilt libraries (tools/workbook handout states it).
  wb_json_string("${CMAKE_CXX_COMPILER_ID}" j_compiler)
  wb_json_string("${CMAKE_CXX_COMPILER_VERSION}" j_compiler_version)
  wb_json_string("${CMAKE_SYSTEM_PROCESSOR}" j_processor)
  wb_json_string("${xtensor_VERSION}" j_xtensor)
  # Chapters declared but left out of this build (a missing optional package): the tools
  # accept their rows in the READMEs' tables.
  get_property(left_out GLOBAL PROPERTY WB_LEFT_OUT)
  wb_json_strings(j_left_out ${left_out})
  file(WRITE ${file}.tmp "{\n  \"version\": 1,\n  \"root\": ${j_root},\n"
                         "  \"reference\": ${j_reference},\n"
                         "  \"left_out\": ${j_left_out},\n"
                         "  \"toolchain\": {\"compiler\": ${j_compiler}, "
                         "\"compiler_version\": ${j_compiler_version}, "
                         "\"processor\": ${j_processor}, \"xtensor\": ${j_xtensor}},\n"
                         "  \"chapters\": [\n${body}\n  ]\n}\n")
  file(RENAME ${file}.tmp ${file})
endfunction()

if(NOT CMAKE_SCRIPT_MODE_FILE)
  # Once the top-level CMakeLists.txt has declared every chapter.
  cmake_language(DEFER CALL wb_write_course ${CMAKE_BINARY_DIR}/workbook/course.json)
endif()
