# The data-parallel chapter's checks start MPI jobs: each check of test_dataparallel runs
# `mpirun -np W` on the worker program (tests/10-data-parallel/worker/), which calls the
# chapter's functions on every rank and writes what each rank ends with; the check then
# compares the ranks' files. The worker links the chapter as selected (stub, reference or an
# override folder), so `ctest -L dataparallel`, verify-stubs and the mutants see it.
if(TARGET test_dataparallel)
  file(GLOB worker_sources CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/tests/10-data-parallel/worker/*.cpp)
  add_executable(dataparallel_worker ${worker_sources})
  target_link_libraries(dataparallel_worker PRIVATE wb_dataparallel wb_warnings)
  wb_check_options(options)
  target_compile_options(dataparallel_worker PRIVATE ${options})
  add_dependencies(test_dataparallel dataparallel_worker)
  target_compile_definitions(test_dataparallel PRIVATE
    WB_MPI_WORKER="$<TARGET_FILE:dataparallel_worker>"
    WB_MPIEXEC="${MPIEXEC_EXECUTABLE}")
endif()
