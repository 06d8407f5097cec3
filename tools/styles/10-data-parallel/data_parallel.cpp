// Style answer for chapter 10 (tools/test-styles): shards found by walking the ranks and adding
// up their sizes; the tree walked level by level with an explicit pair width; every tensor
// copied element by element; the blocking all-reduces with a separate send buffer instead of
// MPI_IN_PLACE; the owner of every tree node tabulated once; each row's inputs and targets
// copied by hand; the argument checks in another valid order than the reference, with messages
// worded differently that still name each fact data_parallel.hpp promises. It exists because
// it is a correct answer: every check of chapter 10 must accept it.
#include "10-data-parallel/data_parallel.hpp"

#include <climits>
#include <string>
#include <utility>

namespace wb {
inline namespace WB_IMPL {
namespace {

using std::to_string;

// The largest count handed to one MPI call (counts are int).
constexpr std::size_t kMaxCount = static_cast<std::size_t>(INT_MAX);

void refuse_null(const std::string& fn, MPI_Comm comm) {
    if (comm == MPI_COMM_NULL) {
        throw ValueError(fn + " needs a communicator of ranks, but it was given MPI_COMM_NULL");
    }
}

std::pair<int, int> rank_and_size(MPI_Comm comm) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    return {rank, size};
}

// Calls f(offset, count) over `total` elements cut into pieces MPI can count.
template <class F>
void in_pieces(std::size_t total, F&& f) {
    std::size_t done = 0;
    while (done < total) {
        const std::size_t left = total - done;
        const std::size_t count = left < kMaxCount ? left : kMaxCount;
        f(done, static_cast<int>(count));
        done += count;
    }
}

void send_from_root(float* data, std::size_t n, MPI_Comm comm) {
    in_pieces(n,
              [&](std::size_t at, int count) { MPI_Bcast(data + at, count, MPI_FLOAT, 0, comm); });
}

// data = the sum of every rank's data, through a copy of it as the send buffer.
void sum_over_ranks(float* data, std::size_t n, MPI_Comm comm) {
    std::vector<float> outgoing(data, data + n);
    in_pieces(n, [&](std::size_t at, int count) {
        MPI_Allreduce(outgoing.data() + at, data + at, count, MPI_FLOAT, MPI_SUM, comm);
    });
}

void divide_all(GptParams<float>& grads, int world_size) {
    const float W = static_cast<float>(world_size);
    for (auto& t : parameters(grads)) {
        for (std::size_t k = 0; k < t.size; ++k) t.data[k] = t.data[k] / W;
    }
}

std::size_t element_count(const std::vector<ParamRef<float>>& refs) {
    std::size_t P = 0;
    for (const auto& t : refs) P += t.size;
    return P;
}

}  // namespace

Shard shard_range(std::size_t global_batch, int rank, int world_size) {
    const std::string args = "wb::shard_range(global_batch = " + num(global_batch) +
                             ", rank = " + to_string(rank) +
                             ", world_size = " + to_string(world_size) + ")";
    if (world_size <= 0) throw ValueError(args + ": there must be at least one rank");
    if (rank < 0 || rank >= world_size) {
        throw ValueError(args + ": the rank must lie in 0 .. world_size - 1");
    }
    if (global_batch < static_cast<std::size_t>(world_size)) {
        throw ValueError(args + ": fewer rows than ranks leaves some rank without a row");
    }
    const std::size_t W = static_cast<std::size_t>(world_size);
    const std::size_t quotient = global_batch / W;
    const std::size_t bigger = global_batch - quotient * W;  // ranks that take quotient + 1
    std::size_t start = 0;
    for (std::size_t r = 0;; ++r) {
        const std::size_t rows = r < bigger ? quotient + 1 : quotient;
        if (r == static_cast<std::size_t>(rank)) return Shard{start, start + rows};
        start += rows;
    }
}

std::vector<TreeStep> tree_schedule(std::size_t M) {
    if (M < 1) throw ValueError("wb::tree_schedule: M = 0 partial sums, there is nothing to add");
    std::vector<TreeStep> steps;
    steps.reserve(M - 1);
    // A pair of width w joins node i (a multiple of w) with node i + w / 2.
    for (std::size_t width = 2; width / 2 < M; width *= 2) {
        const std::size_t half = width / 2;
        for (std::size_t left = 0; left + half < M; left += width) {
            steps.push_back(TreeStep{left, left + half});
        }
    }
    return steps;
}

Vec<float> flatten_params(const GptParams<float>& params) {
    std::size_t P = 0;
    for (const auto& t : parameters(params)) P += t.size;
    Vec<float> flat = Vec<float>::from_shape({P});
    std::size_t k = 0;
    for (const auto& t : parameters(params)) {
        for (std::size_t j = 0; j < t.size; ++j) flat(k++) = t.data[j];
    }
    return flat;
}

void unflatten_params(const Vec<float>& flat, GptParams<float>& out) {
    const auto refs = parameters(out);
    const std::size_t P = element_count(refs);
    if (flat.size() != P) {
        throw ShapeError("wb::unflatten_params: the model has P = " + num(P) +
                         " elements, but the flat buffer holds " + num(flat.size()));
    }
    std::size_t k = 0;
    for (const auto& t : refs) {
        for (std::size_t j = 0; j < t.size; ++j) t.data[j] = flat(k++);
    }
}

void broadcast_parameters(GptParams<float>& params, MPI_Comm comm) {
    refuse_null("wb::broadcast_parameters", comm);
    const auto refs = parameters(params);
    for (std::size_t i = 0; i < refs.size(); ++i) send_from_root(refs[i].data, refs[i].size, comm);
}

void allreduce_mean_per_tensor(GptParams<float>& grads, MPI_Comm comm) {
    refuse_null("wb::allreduce_mean_per_tensor", comm);
    for (auto& t : parameters(grads)) sum_over_ranks(t.data, t.size, comm);
    divide_all(grads, rank_and_size(comm).second);
}

void allreduce_mean_flat(GptParams<float>& grads, MPI_Comm comm) {
    refuse_null("wb::allreduce_mean_flat", comm);
    const Vec<float> mine = flatten_params(grads);
    Vec<float> total = Vec<float>::from_shape({mine.size()});
    in_pieces(mine.size(), [&](std::size_t at, int count) {
        MPI_Allreduce(mine.data() + at, total.data() + at, count, MPI_FLOAT, MPI_SUM, comm);
    });
    const float W = static_cast<float>(rank_and_size(comm).second);
    for (std::size_t k = 0; k < total.size(); ++k) total(k) = total(k) / W;
    unflatten_params(total, grads);
}

PendingMean start_allreduce_mean(GptParams<float>& grads, MPI_Comm comm) {
    refuse_null("wb::start_allreduce_mean", comm);
    PendingMean out;
    out.world_size = rank_and_size(comm).second;
    out.grads = &grads;
    const auto refs = parameters(grads);
    for (std::size_t left = refs.size(); left > 0; --left) {  // lm_head first
        const ParamRef<float>& t = refs[left - 1];
        in_pieces(t.size, [&](std::size_t at, int count) {
            out.requests.emplace_back();
            MPI_Iallreduce(MPI_IN_PLACE, t.data + at, count, MPI_FLOAT, MPI_SUM, comm,
                           &out.requests.back());
        });
    }
    return out;
}

void finish_allreduce_mean(PendingMean& pending) {
    if (!pending.grads) {
        throw ValueError(
            "wb::finish_allreduce_mean: this PendingMean has no gradients to finish; pass "
            "what start_allreduce_mean returned, and finish it only once");
    }
    if (!pending.requests.empty()) {
        MPI_Waitall(static_cast<int>(pending.requests.size()), pending.requests.data(),
                    MPI_STATUSES_IGNORE);
    }
    divide_all(*pending.grads, pending.world_size);
    pending.grads = nullptr;
    pending.requests = std::vector<MPI_Request>();
}

Vec<float> tree_sum(std::vector<Vec<float>> mine, std::size_t M, MPI_Comm comm) {
    refuse_null("wb::tree_sum", comm);
    // The buffers' sizes first: a fact about this call alone, the same on every rank.
    for (std::size_t k = 1; k < mine.size(); ++k) {
        if (mine[k].size() != mine[0].size()) {
            throw ShapeError("wb::tree_sum: every partial sum must have one size, but they hold " +
                             num(mine[0].size()) + " and " + num(mine[k].size()) + " elements");
        }
    }
    const auto [rank, W] = rank_and_size(comm);
    if (M < static_cast<std::size_t>(W)) {
        throw ValueError("wb::tree_sum: " + to_string(W) + " ranks cannot share M = " + num(M) +
                         " partial sums; M must be at least the number of ranks");
    }
    // owner[i]: the rank whose shard of the M nodes holds node i.
    std::vector<int> owner(M);
    for (int r = 0; r < W; ++r) {
        const Shard s = shard_range(M, r, W);
        for (std::size_t i = s.begin; i < s.end; ++i) owner[i] = r;
    }
    const Shard own = shard_range(M, rank, W);
    if (mine.size() != own.size()) {
        throw ValueError("wb::tree_sum: this rank's share is " + num(own.size()) +
                         " partial sums, but mine holds " + num(mine.size()));
    }
    const std::size_t n = mine[0].size();
    std::vector<float> incoming(n);
    const std::vector<TreeStep> steps = tree_schedule(M);
    for (std::size_t k = 0; k < steps.size(); ++k) {
        const std::size_t dst = steps[k].dst, src = steps[k].src;
        const int tag = static_cast<int>(k % 32768);
        if (owner[dst] == rank) {
            const float* add = nullptr;
            if (owner[src] == rank) {
                add = mine[src - own.begin].data();
            } else {
                MPI_Recv(incoming.data(), static_cast<int>(n), MPI_FLOAT, owner[src], tag, comm,
                         MPI_STATUS_IGNORE);
                add = incoming.data();
            }
            float* into = mine[dst - own.begin].data();
            for (std::size_t i = 0; i < n; ++i) into[i] += add[i];
        } else if (owner[src] == rank) {
            MPI_Send(mine[src - own.begin].data(), static_cast<int>(n), MPI_FLOAT, owner[dst], tag,
                     comm);
        }
    }
    Vec<float> total = Vec<float>::from_shape({n});
    if (rank == 0) total = std::move(mine[0]);
    send_from_root(total.data(), n, comm);
    return total;
}

float data_parallel_gradients(const GptParams<float>& params, const GptConfig& config,
                              const TokenIds& tokens, GptParams<float>& grads, MPI_Comm comm) {
    const std::string fn = "wb::data_parallel_gradients";
    refuse_null(fn, comm);
    if (tokens.shape(1) < 2) {
        throw ShapeError(fn + ": tokens of shape " + shape_str(tokens.shape()) +
                         " leave no target; every row needs T + 1 >= 2 tokens");
    }
    const auto [rank, W] = rank_and_size(comm);
    const std::size_t B = tokens.shape(0), T = tokens.shape(1) - 1;
    if (B < static_cast<std::size_t>(W)) {
        throw ValueError(fn + ": a global batch of B = " + num(B) + " rows cannot give each of " +
                         to_string(W) + " ranks a row");
    }
    // The whole batch's ids first, the same test on every rank, so all of them refuse together.
    const auto bad = std::find_if(tokens.begin(), tokens.end(), [&](std::int64_t id) {
        return id < 0 || id >= static_cast<std::int64_t>(config.V);
    });
    if (bad != tokens.end()) {
        throw ValueError(fn + ": the id " + std::to_string(*bad) + " (element " +
                         to_string(static_cast<int>(bad - tokens.begin())) +
                         " of the batch) is not a token of a vocabulary of " + num(config.V));
    }
    const Shard own = shard_range(B, rank, W);
    std::vector<Vec<float>> parts;
    parts.reserve(own.size());
    GptCache<float> cache;
    for (std::size_t b = own.begin; b < own.end; ++b) {
        TokenIds inputs = TokenIds::from_shape({1, T}), targets = TokenIds::from_shape({1, T});
        for (std::size_t t = 0; t < T; ++t) {
            inputs(0, t) = tokens(b, t);
            targets(0, t) = tokens(b, t + 1);
        }
        const float loss = gpt_forward(params, config, inputs, targets, -1, cache);
        GptParams<float> g = zeros_like(params);
        gpt_backward(params, config, cache, g);
        const auto refs = parameters(std::as_const(g));
        std::size_t P = 0;
        for (const auto& t : refs) P += t.size;
        Vec<float> part = Vec<float>::from_shape({P + 1});
        std::size_t k = 0;
        for (const auto& t : refs) {
            for (std::size_t j = 0; j < t.size; ++j) part(k++) = t.data[j];
        }
        part(P) = loss;
        parts.push_back(std::move(part));
    }
    const Vec<float> total = tree_sum(std::move(parts), B, comm);
    const float batch = static_cast<float>(B);
    grads = zeros_like(params);
    std::size_t k = 0;
    for (auto& t : parameters(grads)) {
        for (std::size_t j = 0; j < t.size; ++j) t.data[j] = total(k++) / batch;
    }
    return total(k) / batch;
}

float data_parallel_step(GptParams<float>& params, const GptConfig& config,
                         AdamWState<float>& state, const AdamWConfig& adamw, const TokenIds& tokens,
                         MPI_Comm comm) {
    GptParams<float> mean;
    const float loss = data_parallel_gradients(params, config, tokens, mean, comm);
    adamw_step(params, mean, state, adamw);  // checks everything before it changes anything
    return loss;
}

}  // namespace WB_IMPL
}  // namespace wb
