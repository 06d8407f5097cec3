# The workbook's build mechanism: one library per chapter, compiled from the student's stub or
# from the reference, and one Catch2 test program per chapter labelled with the chapter.

set(WB_CHAPTERS "" CACHE INTERNAL "labels of the chapters found, in course order")

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

# True when chapter LABEL (e.g. chapter3) is selected to come from solutions/.
function(wb_uses_reference label out)
  set(selected ${WB_REFERENCE})
  string(TOLOWER "${selected}" selected)
  string(REGEX REPLACE "^chapter" "" number "${label}")
  if(selected STREQUAL "all")
    set(${out} TRUE PARENT_SCOPE)
  elseif(label IN_LIST selected OR number IN_LIST selected)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# Adds chapter LABEL from folder FOLDER, linked to the chapters it DEPENDS on:
#   library  wb_<label>       chapters/<folder>/*.cpp or solutions/<folder>/*.cpp
#   tests    test_<label>     tests/<folder>/*.cpp, each TEST_CASE a ctest test labelled <label>
# WB_IMPL_DIR_<label> (a cache path) replaces the source folder: the mutant and grading tools
# use it to compile a modified copy of a chapter.
function(wb_chapter label folder)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "DEPENDS")
  set(stub_dir ${CMAKE_CURRENT_SOURCE_DIR}/chapters/${folder})
  file(GLOB stub_sources CONFIGURE_DEPENDS ${stub_dir}/*.cpp)
  if(NOT stub_sources)
    return()  # the chapter is not written yet
  endif()
  set(ref_dir ${CMAKE_CURRENT_SOURCE_DIR}/solutions/${folder})

  wb_uses_reference(${label} use_ref)
  if(WB_IMPL_DIR_${label})
    set(src_dir ${WB_IMPL_DIR_${label}})
    set(kind "override ${src_dir}")
  elseif(use_ref)
    set(src_dir ${ref_dir})
    set(kind "reference")
  else()
    set(src_dir ${stub_dir})
    set(kind "student")
  endif()
  file(GLOB sources CONFIGURE_DEPENDS ${src_dir}/*.cpp)
  if(NOT sources)
    message(FATAL_ERROR "${label}: no .cpp files in ${src_dir}")
  endif()
  message(STATUS "${label} (${folder}): ${kind}")

  add_library(wb_${label} STATIC ${sources})
  list(TRANSFORM arg_DEPENDS PREPEND wb_ OUTPUT_VARIABLE dependencies)
  target_link_libraries(wb_${label} PUBLIC wb_core ${dependencies} PRIVATE wb_warnings)
  set_property(GLOBAL PROPERTY WB_KIND_${label} ${kind})

  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/${folder}/*.cpp)
  if(tests AND TARGET wb_test_support)  # no Catch2: the chapter builds, its checks do not
    add_executable(test_${label} ${tests})
    target_link_libraries(test_${label} PRIVATE wb_${label} wb_test_support
                          Catch2::Catch2WithMain wb_warnings)
    # The checks run on tiny tensors: -O1 compiles them a third faster than -O3, and the
    # code under test keeps the build type's optimisation.
    target_compile_options(test_${label} PRIVATE $<$<CONFIG:Release>:-O1>)
    catch_discover_tests(test_${label} TEST_PREFIX "${label}: " PROPERTIES LABELS ${label})
  endif()

  set(WB_CHAPTERS ${WB_CHAPTERS} ${label} CACHE INTERNAL "")
  set(WB_FOLDER_${label} ${folder} CACHE INTERNAL "")
endfunction()

# Stubs never drift from solutions: every chapter has the same .cpp files in chapters/ and
# solutions/ (the link of the student and solutions presets then proves each function exists).
function(wb_check_reference_names)
  foreach(label IN LISTS WB_CHAPTERS)
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
