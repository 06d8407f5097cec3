// Test-side helper of the data-parallel checks: runs the worker program on W ranks with
// mpirun and reads back what each rank wrote. A job that fails or runs past its time limit
// fails the check with mpirun's output.
#pragma once

#include <string>
#include <vector>

namespace wbtest {

struct MpiRun {
    bool ok = false;                        // every rank finished and wrote its file
    std::string report;                     // the command and its output, when not ok
    std::vector<std::vector<float>> ranks;  // what rank r wrote, as float32
};

// `mpirun -np W --oversubscribe dataparallel_worker SCENARIO OUT` with OMP_NUM_THREADS=1 on
// every rank (--allow-run-as-root when run as root), stopped after `seconds`.
MpiRun run_mpi(const std::string& scenario, int W, int seconds = 60);

// What a run of the minigpt program on W ranks ended with (run_mpi_program).
struct MpiProgram {
    bool ok = false;     // mpirun exited with status 0
    std::string report;  // the command, why it failed, and the ranks' output
};

// `mpirun -np W --oversubscribe PROGRAM ARGS` launched as run_mpi launches the worker
// (OMP_NUM_THREADS=1 on every rank, --allow-run-as-root when root, stopped after `seconds`);
// ARGS is passed to the shell as written.
MpiProgram run_mpi_program(const std::string& program, const std::string& args, int W,
                           int seconds = 120);

// The bytes of the file at `path` (empty when it cannot be read).
std::string read_all(const std::string& path);

// The index of the first element where a and b differ in their bits (or in size), -1 if none.
long first_difference(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace wbtest
