// Data parallelism — your implementation. Replace each WB_STUB() with the body; the spec of
// every function is its comment in data_parallel.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L dataparallel  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 10  /  tools/workbook watch 10
#include "10-data-parallel/data_parallel.hpp"

namespace wb {
inline namespace WB_IMPL {

Shard shard_range(std::size_t global_batch, int rank, int world_size) {
    // Spec: data_parallel.hpp, @throws first. Guide: sharding the batch.
    (void)global_batch, (void)rank, (void)world_size;
    WB_STUB();
}

std::vector<TreeStep> tree_schedule(std::size_t M) {
    // Spec: data_parallel.hpp. Guide: a sum whose order does not depend on the ranks.
    (void)M;
    WB_STUB();
}

Vec<float> flatten_params(const GptParams<float>& params) {
    // Spec: data_parallel.hpp. Guide: one buffer instead of one message per tensor.
    (void)params;
    WB_STUB();
}

void unflatten_params(const Vec<float>& flat, GptParams<float>& out) {
    // Spec: data_parallel.hpp, @throws first. Guide: one buffer instead of one message per tensor.
    (void)flat, (void)out;
    WB_STUB();
}

void broadcast_parameters(GptParams<float>& params, MPI_Comm comm) {
    // Spec: data_parallel.hpp. Guide: the same model everywhere.
    (void)params, (void)comm;
    WB_STUB();
}

void allreduce_mean_per_tensor(GptParams<float>& grads, MPI_Comm comm) {
    // Spec: data_parallel.hpp. Guide: adding the gradients.
    (void)grads, (void)comm;
    WB_STUB();
}

void allreduce_mean_flat(GptParams<float>& grads, MPI_Comm comm) {
    // Spec: data_parallel.hpp. Guide: one buffer instead of one message per tensor.
    (void)grads, (void)comm;
    WB_STUB();
}

PendingMean start_allreduce_mean(GptParams<float>& grads, MPI_Comm comm) {
    // Spec: data_parallel.hpp. Guide: communication overlapped with computation.
    (void)grads, (void)comm;
    WB_STUB();
}

void finish_allreduce_mean(PendingMean& pending) {
    // Spec: data_parallel.hpp, @throws first. Guide: communication overlapped with computation.
    (void)pending;
    WB_STUB();
}

Vec<float> tree_sum(std::vector<Vec<float>> mine, std::size_t M, MPI_Comm comm) {
    // Spec: data_parallel.hpp, @throws first. Guide: a sum whose order does not depend on the
    // ranks.
    (void)mine, (void)M, (void)comm;
    WB_STUB();
}

float data_parallel_gradients(const GptParams<float>& params, const GptConfig& config,
                              const TokenIds& tokens, GptParams<float>& grads, MPI_Comm comm) {
    // Spec: data_parallel.hpp, @throws first. Guide: the step, bit for bit.
    (void)params, (void)config, (void)tokens, (void)grads, (void)comm;
    WB_STUB();
}

float data_parallel_step(GptParams<float>& params, const GptConfig& config,
                         AdamWState<float>& state, const AdamWConfig& adamw, const TokenIds& tokens,
                         MPI_Comm comm) {
    // Spec: data_parallel.hpp. Guide: the step, bit for bit.
    (void)params, (void)config, (void)state, (void)adamw, (void)tokens, (void)comm;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
