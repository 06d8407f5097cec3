/// @file data_parallel_run.hpp
/// @brief The program on N processes: `mpirun -np N minigpt --engine chapters ...` trains with
/// chapter 10's data_parallel_gradients, the same bits for any N (minigpt/README.md, "On N
/// processes"). Compiled into the `minigpt` command only when the build has MPI
/// (WB_MINIGPT_MPI); the rest of the program never sees an MPI type.
#pragma once

#include <memory>
#include <string>

#include "minigpt/train.hpp"

namespace wb::minigpt::parallel {

/// @addtogroup minigpt
/// @{

/// Whether the process was started by mpirun (OpenMPI's, or another's PMI): the program then
/// initialises MPI even without --data-parallel.
/// @return true under a launcher
bool launched_by_mpirun();

/// MPI for the lifetime of the object: MPI_Init on construction (the process's world),
/// MPI_Finalize on destruction.
class World {
  public:
    /// Calls MPI_Init and reads this process's rank and the job's size.
    /// @param argc main's argument count, as MPI_Init takes it
    /// @param argv main's arguments, as MPI_Init takes them
    World(int* argc, char*** argv);
    /// Calls MPI_Finalize.
    ~World();
    World(const World&) = delete;
    World& operator=(const World&) = delete;
    int rank() const { return rank_; }  ///< this process, in [0, size)
    int size() const { return size_; }  ///< N, the processes of the job
    /// Every rank's host and process id, gathered on rank 0 ("host pid 12, host pid 13");
    /// empty on the other ranks. Every rank must call it.
    std::string describe() const;
    /// Ends every rank of the job (MPI_Abort): an error on one rank must not leave the others
    /// waiting in a collective call forever.
    /// @param code the exit status
    [[noreturn]] void abort(int code) const;

  private:
    int rank_ = 0, size_ = 1;
};

/// Gives every rank rank 0's parameters (chapter 10's broadcast_parameters).
/// @param params rank 0's are sent, the others' replaced
void broadcast(GptParams<float>& params);

/// The step of train()'s data-parallel mode on MPI_COMM_WORLD: chapter 10's
/// data_parallel_step, or, with clipping, data_parallel_gradients, clip_grad_norm and chapter
/// 8's adamw_step (what data_parallel_step does, with the clip in between).
/// @param world the job
/// @return the step, for TrainOptions::data_parallel
std::unique_ptr<DataParallel> make_data_parallel(const World& world);

/// @}

}  // namespace wb::minigpt::parallel
