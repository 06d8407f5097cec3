/// @file data_parallel.hpp
/// @brief Data parallelism — chapter 8's model trained on several processes with MPI:
/// the same parameters everywhere, a share of each batch per process, the gradients summed.
///
/// W processes (MPI ranks 0 … W-1) each hold a full copy of the model. Each takes its share of
/// the global batch of B sequences, computes the gradients of that share, and the ranks add
/// their gradients so that every rank applies the same AdamW step to the same parameters.
///
/// Floating-point addition is not associative: `(a + b) + c` and `a + (b + c)` may differ in
/// the last bit. `MPI_Allreduce` adds the ranks' buffers in an order of its own choosing, which
/// changes with the number of ranks, so its sum is close to, not equal to, one process's sum.
/// tree_sum() fixes the order instead: the batch is cut into B micro-batches of one sequence,
/// and their gradients are added in one binary tree over the micro-batch indices that does not
/// depend on W. With it, 1, 2 or 4 ranks train bit-identical weights.
///
/// Shapes: B sequences in the global batch, each of T + 1 tokens (inputs and shifted targets),
/// W ranks, M micro-batches (here M = B), P the number of parameter elements (the sizes of
/// parameters() added up). The legend of workbook/core.hpp holds for the others.
#pragma once

#include <cstddef>
#include <vector>

#include <mpi.h>

#include "8-training/model.hpp"
#include "8-training/optim.hpp"
#include "workbook/core.hpp"

/// @defgroup dataparallel Chapter 10: data parallelism (label dataparallel)
/// Broadcast, sharding, all-reduce and a reduction order independent of the number of ranks.

namespace wb {

/// @addtogroup dataparallel
/// @{

/// The samples one rank holds: rows `[begin, end)` of the global batch.
struct Shard {
    std::size_t begin;  ///< first row
    std::size_t end;    ///< one past the last row
    /// The number of rows, `end - begin`.
    std::size_t size() const { return end - begin; }
};

/// One addition of the reduction tree: node `dst` becomes `dst + src` (src is then unused).
struct TreeStep {
    std::size_t dst;  ///< the micro-batch whose partial sum receives
    std::size_t src;  ///< the micro-batch whose partial sum is added
};

/// Gradient reductions in flight: what start_allreduce_mean() started and
/// finish_allreduce_mean() completes.
struct PendingMean {
    std::vector<MPI_Request> requests;  ///< one per tensor, in the order they were started
    GptParams<float>* grads = nullptr;  ///< the gradients being reduced (null once finished)
    int world_size = 1;                 ///< W, the divisor of the mean
};

/// @}

inline namespace WB_IMPL {

/// @addtogroup dataparallel
/// @{

/// The rows of a global batch that rank `rank` of `world_size` takes: contiguous, in rank
/// order, every row exactly once, the sizes differing by at most one (the first
/// `global_batch % world_size` ranks take one more). <!-- clause: shard_range.balanced -->
/// ```
///   global_batch = 10, world_size = 4:   [0, 3)  [3, 6)  [6, 8)  [8, 10)
/// ```
/// @param global_batch B, the rows of the global batch
/// @param rank this rank, in `[0, world_size)`
/// @param world_size W, the number of ranks
/// @return the rank's rows
/// @throws ValueError if world_size < 1, rank is outside `[0, world_size)`, or global_batch <
///         world_size (a rank would have nothing to do); the message names
///         wb::shard_range and the values <!-- clause: shard_range.bad-args -->
Shard shard_range(std::size_t global_batch, int rank, int world_size);

/// The fixed order of the sum of M partial sums: a binary tree over the indices 0 … M-1,
/// level by level. At stride s = 1, 2, 4, … (while s < M), for i = 0, 2s, 4s, … with
/// i + s < M, in increasing i: `(dst = i, src = i + s)`. The total ends in node 0.
/// ```
///   M = 5:  (0,1) (2,3) | (0,2) | (0,4)
/// ```
/// <!-- clause: tree_schedule.order -->
/// @param M the number of partial sums
/// @return the M - 1 additions, in order (empty for M = 1)
/// @throws ValueError naming wb::tree_schedule if M is 0 <!-- clause: tree_schedule.zero -->
std::vector<TreeStep> tree_schedule(std::size_t M);

/// Every tensor of `params` in one flat buffer, in the order of parameters() (wte first,
/// lm_head last), each tensor row-major. <!-- clause: flatten_params.order -->
/// @param params a model or its gradients
/// @return `[P]`
Vec<float> flatten_params(const GptParams<float>& params);

/// The inverse of flatten_params: copies `flat` back into the tensors of `out`, in the same
/// order. <!-- clause: unflatten_params.inverse -->
/// @param flat `[P]`
/// @param out the tensors to fill; their shapes say where each element goes
/// @throws ShapeError if flat's size is not P (the message names wb::unflatten_params, the
///         size and P), before anything is written <!-- clause: unflatten_params.size -->
void unflatten_params(const Vec<float>& flat, GptParams<float>& out);

/// Gives every rank rank 0's parameters: one `MPI_Bcast` per tensor, from rank 0, in the order
/// of parameters(). Every rank of `comm` must call it. <!-- clause: broadcast_parameters.rank0 -->
/// @param params rank 0's are sent; the others' are overwritten (same shapes on every rank)
/// @param comm the communicator, e.g. `MPI_COMM_WORLD`
/// @throws ValueError naming wb::broadcast_parameters if comm is MPI_COMM_NULL
///         <!-- clause: broadcast_parameters.null-comm -->
void broadcast_parameters(GptParams<float>& params, MPI_Comm comm);

/// The mean of every rank's gradients, one `MPI_Allreduce` (sum) per tensor, then a division
/// by the number of ranks W: afterwards every rank holds `(g_0 + … + g_{W-1}) / W`, equal on
/// every rank, in MPI's order of addition. <!-- clause: allreduce_mean_per_tensor.mean -->
/// @param grads this rank's gradients, replaced by the mean
/// @param comm the communicator
/// @throws ValueError naming wb::allreduce_mean_per_tensor if comm is MPI_COMM_NULL
///         <!-- clause: allreduce_mean_per_tensor.null-comm -->
void allreduce_mean_per_tensor(GptParams<float>& grads, MPI_Comm comm);

/// The same mean with one `MPI_Allreduce` of one flat buffer (flatten_params, then
/// unflatten_params): one message instead of 2 + 16·L + 3. <!-- clause: allreduce_mean_flat.mean -->
/// @param grads this rank's gradients, replaced by the mean
/// @param comm the communicator
/// @throws ValueError naming wb::allreduce_mean_flat if comm is MPI_COMM_NULL
///         <!-- clause: allreduce_mean_flat.null-comm -->
void allreduce_mean_flat(GptParams<float>& grads, MPI_Comm comm);

/// Starts the mean of every rank's gradients without waiting for it: one non-blocking
/// `MPI_Iallreduce` (sum, in place) per tensor, in the **reverse** order of parameters()
/// (lm_head first: the order in which a backward finishes them), and returns at once, so that
/// the rank can compute while the sums travel. `grads` must not be read or written until
/// finish_allreduce_mean(). <!-- clause: start_allreduce_mean.nonblocking -->
/// @param grads this rank's gradients; they become the mean once finished
/// @param comm the communicator
/// @return the requests, the gradients and W
/// @throws ValueError naming wb::start_allreduce_mean if comm is MPI_COMM_NULL
///         <!-- clause: start_allreduce_mean.null-comm -->
PendingMean start_allreduce_mean(GptParams<float>& grads, MPI_Comm comm);

/// Completes start_allreduce_mean(): waits for every request (`MPI_Waitall`), then divides
/// by W. Afterwards the gradients are the mean, as allreduce_mean_per_tensor() leaves them,
/// and `pending` is emptied (no requests, grads null). <!-- clause: finish_allreduce_mean.mean -->
/// @param pending what start_allreduce_mean() returned
/// @throws ValueError naming wb::finish_allreduce_mean if pending holds no gradients (never
///         started, or already finished) <!-- clause: finish_allreduce_mean.empty -->
void finish_allreduce_mean(PendingMean& pending);

/// The sum of M partial sums spread over the ranks, in the order of tree_schedule(M), whatever
/// the number of ranks. Rank r holds the partial sums of the indices shard_range(M, r, W), in
/// order. For each step of the tree: when one rank holds both nodes it adds them; otherwise the
/// holder of src sends its buffer (`MPI_Send`) to the holder of dst, which receives it
/// (`MPI_Recv`) and adds it. Rank 0 then holds the total, which it broadcasts. Each addition is
/// element by element, `dst[i] += src[i]`, so the result is bit-identical for any W.
/// <!-- clause: tree_sum.order -->
/// @param mine this rank's partial sums, shard_range(M, rank, W).size() of them, each `[n]`
///        with the same n on every rank (used as scratch space)
/// @param M the number of partial sums over all ranks
/// @param comm the communicator
/// @return `[n]`, the total, the same bits on every rank <!-- clause: tree_sum.everywhere -->
/// @throws ValueError naming wb::tree_sum if comm is MPI_COMM_NULL, M is smaller than the
///         number of ranks, or mine does not hold this rank's share (the message names both
///         counts) <!-- clause: tree_sum.bad-args -->
/// @throws ShapeError naming wb::tree_sum if this rank's buffers differ in size
///         <!-- clause: tree_sum.sizes -->
Vec<float> tree_sum(std::vector<Vec<float>> mine, std::size_t M, MPI_Comm comm);

/// The gradients of chapter 8's loss on a global batch, computed by all the ranks together and
/// bit-identical for any number of ranks. The B sequences are B micro-batches; rank r takes
/// rows shard_range(B, r, W). For each of its rows b it runs gpt_forward and gpt_backward on
/// that one sequence (inputs and targets from shift_for_next_token, ignore_index -1), giving a
/// loss ℓ_b and gradients g_b; it flattens g_b and appends ℓ_b. tree_sum() adds the B buffers;
/// divided by B they are the mean gradient and the mean loss, which is chapter 8's loss of the
/// whole batch (every sequence has T targets). <!-- clause: data_parallel_gradients.mean -->
/// @param params the model, the same on every rank
/// @param config its shape
/// @param tokens `[B, T + 1]`, the global batch, the same on every rank
/// @param grads overwritten with the mean gradient (shaped like params)
/// @param comm the communicator
/// @return the mean loss, the same on every rank <!-- clause: data_parallel_gradients.loss -->
/// @throws ValueError naming wb::data_parallel_gradients if B is smaller than the number of
///         ranks, or comm is MPI_COMM_NULL <!-- clause: data_parallel_gradients.bad-args -->
/// @throws ShapeError if tokens has fewer than 2 columns, and whatever gpt_forward throws
///         for the model or the ids <!-- clause: data_parallel_gradients.shapes -->
/// @throws ValueError naming wb::data_parallel_gradients if an id of tokens is outside [0, V)
///         (the message names the id), checked over the whole batch on every rank before any
///         row is computed: a bad id in one rank's rows throws on every rank, so that none
///         waits in tree_sum for a rank that has thrown <!-- clause: data_parallel_gradients.bad-id -->
float data_parallel_gradients(const GptParams<float>& params, const GptConfig& config,
                              const TokenIds& tokens, GptParams<float>& grads, MPI_Comm comm);

/// One data-parallel training step: data_parallel_gradients, then chapter 8's adamw_step on
/// every rank. Every rank ends with the same parameters and state, bit-identical for any number
/// of ranks. <!-- clause: data_parallel_step.same -->
/// @param params updated in place
/// @param config its shape
/// @param state AdamW's state, updated
/// @param adamw the hyper-parameters
/// @param tokens `[B, T + 1]`, the global batch
/// @param comm the communicator
/// @return the mean loss before the step
/// @throws ValueError, ShapeError as data_parallel_gradients and adamw_step, before the
///         parameters change <!-- clause: data_parallel_step.errors -->
float data_parallel_step(GptParams<float>& params, const GptConfig& config,
                         AdamWState<float>& state, const AdamWConfig& adamw, const TokenIds& tokens,
                         MPI_Comm comm);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
