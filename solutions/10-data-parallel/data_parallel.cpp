// Data parallelism — the reference.
#include "10-data-parallel/data_parallel.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {
namespace {

void require_comm(const char* fn, MPI_Comm comm) {
    if (comm == MPI_COMM_NULL) {
        throw ValueError(std::string(fn) + ": comm is MPI_COMM_NULL, expected a communicator");
    }
}

int comm_rank(MPI_Comm comm) {
    int r = 0;
    MPI_Comm_rank(comm, &r);
    return r;
}

int comm_size(MPI_Comm comm) {
    int w = 0;
    MPI_Comm_size(comm, &w);
    return w;
}

// MPI counts are int: a larger buffer goes in pieces.
constexpr std::size_t kChunk = INT_MAX / 2;

void allreduce_sum(float* data, std::size_t n, MPI_Comm comm) {
    for (std::size_t at = 0; at < n; at += kChunk) {
        const int count = static_cast<int>(std::min(kChunk, n - at));
        MPI_Allreduce(MPI_IN_PLACE, data + at, count, MPI_FLOAT, MPI_SUM, comm);
    }
}

void bcast(float* data, std::size_t n, MPI_Comm comm) {
    for (std::size_t at = 0; at < n; at += kChunk) {
        MPI_Bcast(data + at, static_cast<int>(std::min(kChunk, n - at)), MPI_FLOAT, 0, comm);
    }
}

// The rank whose shard holds micro-batch i.
int owner(std::size_t i, std::size_t M, int W) {
    for (int r = 0; r < W; ++r) {
        if (i < shard_range(M, r, W).end) return r;
    }
    return W - 1;
}

}  // namespace

Shard shard_range(std::size_t global_batch, int rank, int world_size) {
    if (world_size < 1 || rank < 0 || rank >= world_size ||
        global_batch < static_cast<std::size_t>(world_size)) {
        throw ValueError("wb::shard_range: global_batch = " + num(global_batch) + ", rank = " +
                         std::to_string(rank) + ", world_size = " + std::to_string(world_size) +
                         ": expected world_size >= 1, 0 <= rank < world_size and "
                         "global_batch >= world_size");
    }
    const std::size_t W = static_cast<std::size_t>(world_size);
    const std::size_t r = static_cast<std::size_t>(rank);
    const std::size_t base = global_batch / W, extra = global_batch % W;
    const std::size_t begin = r * base + std::min(r, extra);
    const std::size_t count = base + (r < extra ? 1 : 0);
    return Shard{begin, begin + count};
}

std::vector<TreeStep> tree_schedule(std::size_t M) {
    if (M == 0) throw ValueError("wb::tree_schedule: M = 0, expected at least 1 partial sum");
    std::vector<TreeStep> steps;
    for (std::size_t s = 1; s < M; s *= 2) {
        for (std::size_t i = 0; i + s < M; i += 2 * s) steps.push_back(TreeStep{i, i + s});
    }
    return steps;
}

Vec<float> flatten_params(const GptParams<float>& params) {
    const auto refs = parameters(params);
    std::size_t P = 0;
    for (const auto& p : refs) P += p.size;
    checked_size("wb::flatten_params", "P", {P});
    Vec<float> flat = Vec<float>::from_shape({P});
    std::size_t at = 0;
    for (const auto& p : refs) {
        std::copy(p.data, p.data + p.size, flat.data() + at);
        at += p.size;
    }
    return flat;
}

void unflatten_params(const Vec<float>& flat, GptParams<float>& out) {
    const auto refs = parameters(out);
    std::size_t P = 0;
    for (const auto& p : refs) P += p.size;
    if (flat.size() != P) {
        throw ShapeError("wb::unflatten_params: flat has " + num(flat.size()) +
                         " elements, expected P = " + num(P));
    }
    std::size_t at = 0;
    for (const auto& p : refs) {
        std::copy(flat.data() + at, flat.data() + at + p.size, p.data);
        at += p.size;
    }
}

void broadcast_parameters(GptParams<float>& params, MPI_Comm comm) {
    require_comm("wb::broadcast_parameters", comm);
    for (auto& p : parameters(params)) bcast(p.data, p.size, comm);
}

void allreduce_mean_per_tensor(GptParams<float>& grads, MPI_Comm comm) {
    require_comm("wb::allreduce_mean_per_tensor", comm);
    const float W = static_cast<float>(comm_size(comm));
    for (auto& p : parameters(grads)) {
        allreduce_sum(p.data, p.size, comm);
        for (std::size_t i = 0; i < p.size; ++i) p.data[i] /= W;  // the mean, not the sum
    }
}

void allreduce_mean_flat(GptParams<float>& grads, MPI_Comm comm) {
    require_comm("wb::allreduce_mean_flat", comm);
    Vec<float> flat = flatten_params(grads);
    allreduce_sum(flat.data(), flat.size(), comm);
    flat /= static_cast<float>(comm_size(comm));  // the mean, not the sum
    unflatten_params(flat, grads);
}

PendingMean start_allreduce_mean(GptParams<float>& grads, MPI_Comm comm) {
    require_comm("wb::start_allreduce_mean", comm);
    PendingMean pending;
    pending.grads = &grads;
    pending.world_size = comm_size(comm);
    auto refs = parameters(grads);
    for (auto p = refs.rbegin(); p != refs.rend(); ++p) {  // lm_head first, as a backward ends
        for (std::size_t at = 0; at < p->size; at += kChunk) {
            MPI_Request request;
            MPI_Iallreduce(MPI_IN_PLACE, p->data + at,
                           static_cast<int>(std::min(kChunk, p->size - at)), MPI_FLOAT, MPI_SUM,
                           comm, &request);
            pending.requests.push_back(request);
        }
    }
    return pending;
}

void finish_allreduce_mean(PendingMean& pending) {
    if (pending.grads == nullptr) {
        throw ValueError(
            "wb::finish_allreduce_mean: pending holds no gradients (never started, "
            "or already finished), expected what start_allreduce_mean returned");
    }
    MPI_Waitall(static_cast<int>(pending.requests.size()), pending.requests.data(),
                MPI_STATUSES_IGNORE);  // the sums are complete only now
    const float W = static_cast<float>(pending.world_size);
    for (auto& p : parameters(*pending.grads)) {
        for (std::size_t i = 0; i < p.size; ++i) p.data[i] /= W;  // after the wait: the mean
    }
    pending.requests.clear();
    pending.grads = nullptr;
}

Vec<float> tree_sum(std::vector<Vec<float>> mine, std::size_t M, MPI_Comm comm) {
    require_comm("wb::tree_sum", comm);
    const int rank = comm_rank(comm), W = comm_size(comm);
    if (M < static_cast<std::size_t>(W)) {
        throw ValueError("wb::tree_sum: M = " + num(M) + " partial sums for " + std::to_string(W) +
                         " ranks, expected M >= the number of ranks");
    }
    const Shard shard = shard_range(M, rank, W);
    if (mine.size() != shard.size()) {
        throw ValueError("wb::tree_sum: rank " + std::to_string(rank) + " holds " +
                         num(mine.size()) + " partial sums, expected " + num(shard.size()));
    }
    const std::size_t n = mine[0].size();
    for (const auto& m : mine) {
        if (m.size() != n) {
            throw ShapeError("wb::tree_sum: partial sums of sizes " + num(n) + " and " +
                             num(m.size()) + ", expected one size");
        }
    }
    Vec<float> received = Vec<float>::from_shape({n});
    for (const TreeStep& s : tree_schedule(M)) {
        const int to = owner(s.dst, M, W), from = owner(s.src, M, W);
        if (to == rank && from == rank) {
            mine[s.dst - shard.begin] += mine[s.src - shard.begin];
        } else if (from == rank) {
            MPI_Send(mine[s.src - shard.begin].data(), static_cast<int>(n), MPI_FLOAT, to,
                     static_cast<int>(s.src % 32768), comm);
        } else if (to == rank) {
            MPI_Recv(received.data(), static_cast<int>(n), MPI_FLOAT, from,
                     static_cast<int>(s.src % 32768), comm, MPI_STATUS_IGNORE);
            mine[s.dst - shard.begin] += received;
        }
    }
    Vec<float> total = rank == 0 ? std::move(mine[0]) : Vec<float>::from_shape({n});
    bcast(total.data(), n, comm);
    return total;
}

float data_parallel_gradients(const GptParams<float>& params, const GptConfig& config,
                              const TokenIds& tokens, GptParams<float>& grads, MPI_Comm comm) {
    require_comm("wb::data_parallel_gradients", comm);
    const std::size_t B = tokens.shape(0);
    const int rank = comm_rank(comm), W = comm_size(comm);
    if (B < static_cast<std::size_t>(W)) {
        throw ValueError("wb::data_parallel_gradients: B = " + num(B) + " sequences for " +
                         std::to_string(W) + " ranks, expected B >= the number of ranks");
    }
    if (tokens.shape(1) < 2) {
        throw ShapeError("wb::data_parallel_gradients: tokens has shape " +
                         shape_str(tokens.shape()) + ", expected [B, T + 1] with T >= 1");
    }
    // Every id of the whole batch, on every rank, before any row: an id seen only in one rank's
    // rows would make that rank throw while the others wait for it in tree_sum.
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < tokens.shape(1); ++t) {
            const std::int64_t id = tokens(b, t);
            if (id < 0 || static_cast<std::size_t>(id) >= config.V) {
                throw ValueError("wb::data_parallel_gradients: tokens[" + num(b) + ", " + num(t) +
                                 "] = " + std::to_string(id) + ", expected an id in [0, " +
                                 num(config.V) + ")");
            }
        }
    }
    const Shard shard = shard_range(B, rank, W);
    std::vector<Vec<float>> mine;
    GptParams<float> g = zeros_like(params);
    GptCache<float> cache;
    for (std::size_t b = shard.begin; b < shard.end; ++b) {
        TokenIds row = xt::view(tokens, xt::range(b, b + 1), xt::all());
        const NextToken nt = shift_for_next_token(row);
        const float loss = gpt_forward(params, config, nt.inputs, nt.targets, -1, cache);
        zero_grad(g);
        gpt_backward(params, config, cache, g);
        Vec<float> flat = flatten_params(g);
        Vec<float> with_loss = Vec<float>::from_shape({flat.size() + 1});
        std::copy(flat.begin(), flat.end(), with_loss.begin());
        with_loss(flat.size()) = loss;
        mine.push_back(std::move(with_loss));
    }
    Vec<float> total = tree_sum(std::move(mine), B, comm);
    total /= static_cast<float>(B);  // the mean over the global batch
    const float loss = total(total.size() - 1);
    grads = zeros_like(params);
    Vec<float> flat = xt::view(total, xt::range(0, total.size() - 1));
    unflatten_params(flat, grads);
    return loss;
}

float data_parallel_step(GptParams<float>& params, const GptConfig& config,
                         AdamWState<float>& state, const AdamWConfig& adamw, const TokenIds& tokens,
                         MPI_Comm comm) {
    GptParams<float> grads;
    const float loss = data_parallel_gradients(params, config, tokens, grads, comm);
    adamw_step(params, grads, state, adamw);
    return loss;
}

}  // namespace WB_IMPL
}  // namespace wb
