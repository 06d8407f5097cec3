// The program on N processes (data_parallel_run.hpp): MPI, and chapter 10's step for train().
#include "minigpt/parallel/data_parallel_run.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include <mpi.h>

#include "10-data-parallel/data_parallel.hpp"

// Under AddressSanitizer (the asan preset) the leak check stays off in the program built with
// MPI: OpenMPI keeps memory it never frees past MPI_Finalize, which the leak check would report
// on every rank and fail the run (chapter 10's worker does the same). Memory errors are still
// caught. Read by the sanitizer's runtime only; an ordinary build never calls it.
// The name is the sanitizer's, reserved on purpose:
// NOLINTNEXTLINE(bugprone-reserved-identifier,readability-identifier-naming)
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }

namespace wb::minigpt::parallel {

bool launched_by_mpirun() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
        if (std::getenv(name) != nullptr) return true;
    }
    return false;
}

World::World(int* argc, char*** argv) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

World::~World() { MPI_Finalize(); }

std::string World::describe() const {
    constexpr int kWidth = 96;
    char mine[kWidth] = {};
    char host[64] = {};
    ::gethostname(host, sizeof host - 1);
    std::snprintf(mine, sizeof mine, "%s pid %ld", host, static_cast<long>(::getpid()));
    std::vector<char> all(rank_ == 0 ? std::size_t(kWidth) * std::size_t(size_) : 0);
    MPI_Gather(mine, kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, 0, MPI_COMM_WORLD);
    std::string out;
    for (int r = 0; rank_ == 0 && r < size_; ++r) {
        out += (r > 0 ? ", " : "") + std::string(all.data() + std::size_t(r) * kWidth);
    }
    return out;
}

void World::abort(int code) const {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] true regardless
}

void broadcast(GptParams<float>& params) { broadcast_parameters(params, MPI_COMM_WORLD); }

namespace {

class MpiStep final : public DataParallel {
  public:
    explicit MpiStep(int rank) : rank_(rank) {}
    float step(GptParams<float>& params, const GptConfig& config, AdamWState<float>& state,
               const AdamWConfig& adamw, const TokenIds& windows, float grad_clip,
               float& grad_norm) override {
        if (!(grad_clip > 0)) {
            grad_norm = 0;
            return data_parallel_step(params, config, state, adamw, windows, MPI_COMM_WORLD);
        }
        // data_parallel_step with the program's clip between the gradients and the update:
        // the gradients are the same bits on every rank, so is their norm.
        if (grads_.blocks.size() != params.blocks.size()) grads_ = zeros_like(params);
        const float loss = data_parallel_gradients(params, config, windows, grads_, MPI_COMM_WORLD);
        grad_norm = clip_grad_norm(grads_, grad_clip);
        adamw_step(params, grads_, state, adamw);
        return loss;
    }
    bool rank0_decides(bool mine) override {
        int flag = mine ? 1 : 0;
        MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD);
        return flag != 0;
    }
    bool leads() const override { return rank_ == 0; }

  private:
    int rank_;
    GptParams<float> grads_;
};

}  // namespace

std::unique_ptr<DataParallel> make_data_parallel(const World& world) {
    return std::make_unique<MpiStep>(world.rank());
}

}  // namespace wb::minigpt::parallel
