// The data-parallel checks that run MPI for real: each starts `mpirun -np W` on the worker
// program (worker/worker.cpp), which calls the chapter's functions on every rank, and compares
// what the ranks wrote with values computed here, in one process, with chapter 8's functions.
//   bit-identical     the fixed tree: the same bits for 1, 2 and 4 ranks, and the same bits as
//                     the tree computed here from one-sequence gradients;
//   close             MPI_Allreduce's mean, and the data-parallel step against chapter 8's
//                     step on the whole batch: within the stated tolerances (float sums in
//                     another order).
#include "10-data-parallel/data_parallel.hpp"
#include "check.hpp"
#include "mpi_run.hpp"
#include "worker/scenario.hpp"

#include <cstddef>
#include <string>
#include <vector>

#include <omp.h>
#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

namespace {

using namespace wbtest;

std::vector<float> flat_of(const wb::GptParams<float>& p) {
    std::vector<float> out;
    for (const auto& t : wb::parameters(p)) out.insert(out.end(), t.data, t.data + t.size);
    return out;
}

// Runs SCENARIO on W ranks; fails the check with mpirun's output when the job fails.
std::vector<std::vector<float>> ranks_of(const std::string& scenario, int W, int seconds = 60) {
    const MpiRun run = run_mpi(scenario, W, seconds);
    if (!run.ok) FAIL(run.report);
    REQUIRE(run.ranks.size() == static_cast<std::size_t>(W));
    return run.ranks;
}

void require_same_bits(const std::vector<float>& actual, const std::vector<float>& expected,
                       const std::string& what) {
    const long at = first_difference(actual, expected);
    INFO(what << ": first difference at element " << at << " of " << expected.size()
              << (at >= 0 && static_cast<std::size_t>(at) < std::min(actual.size(), expected.size())
                      ? ": " + std::to_string(actual[at]) + " vs " + std::to_string(expected[at])
                      : std::string(" (sizes ") + std::to_string(actual.size()) + " and " +
                            std::to_string(expected.size()) + ")"));
    CHECK(at == -1);
}

// require_same_bits for every rank's result, named "rank <r>" followed by `what`.
void require_every_rank(const std::vector<std::vector<float>>& ranks,
                        const std::vector<float>& expected, const std::string& what) {
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        require_same_bits(ranks[r], expected, "rank " + std::to_string(r) + what);
    }
}

// Chapter 8 on the whole batch in one process: the loss and the gradient of the mean over
// every token.
float full_batch_gradient(const wb::GptParams<float>& p, const wb::TokenIds& tokens,
                          wb::GptParams<float>& grads) {
    const wb::NextToken nt = wb::shift_for_next_token(tokens);
    wb::GptCache<float> cache;
    const float loss = wb::gpt_forward(p, dp_config(), nt.inputs, nt.targets, -1, cache);
    grads = wb::zeros_like(p);
    wb::gpt_backward(p, dp_config(), cache, grads);
    return loss;
}

// The header's recipe in one process: one-sequence gradients with the loss appended, added in
// the order of the tree written here (not the chapter's tree_schedule), divided by B.
std::vector<float> tree_gradient(const wb::GptParams<float>& p, const wb::TokenIds& tokens) {
    omp_set_num_threads(1);  // as every rank of the job
    const std::size_t B = tokens.shape(0);
    std::vector<std::vector<float>> parts;
    for (std::size_t b = 0; b < B; ++b) {
        wb::TokenIds row = xt::view(tokens, xt::range(b, b + 1), xt::all());
        wb::GptParams<float> g;
        const float loss = full_batch_gradient(p, row, g);
        parts.push_back(flat_of(g));
        parts.back().push_back(loss);
    }
    for (std::size_t s = 1; s < B; s *= 2) {
        for (std::size_t i = 0; i + s < B; i += 2 * s) {
            for (std::size_t k = 0; k < parts[i].size(); ++k) parts[i][k] += parts[i + s][k];
        }
    }
    for (float& x : parts[0]) x /= static_cast<float>(B);
    return parts[0];
}

// The mean of the 4 ranks' gradients dp_grad_value(i, r), n values: exact in float here.
std::vector<float> mean_of_4_ranks(std::size_t n) {
    std::vector<float> mean(n);
    for (std::size_t i = 0; i < n; ++i) {
        mean[i] = (dp_grad_value(i, 0) + dp_grad_value(i, 1) + dp_grad_value(i, 2) +
                   dp_grad_value(i, 3)) /
                  4.0f;
    }
    return mean;
}

// Runs SCENARIO on 4 ranks and requires every rank's result to be the mean of the 4 ranks'
// gradients, bit for bit.
void require_mean_of_4(const std::string& scenario, const std::string& what) {
    const auto ranks = ranks_of(scenario, 4);
    require_every_rank(ranks, mean_of_4_ranks(ranks[0].size()), what);
}

}  // namespace

TEST_CASE("broadcast_parameters on 4 ranks gives every rank rank 0's model",
          "[c:broadcast_parameters.rank0]") {
    // Rank r starts from init_gpt(seed + r): only the broadcast makes them equal.
    const auto ranks = ranks_of("broadcast", 4);
    const std::vector<float> rank0 = flat_of(wb::init_gpt<float>(dp_config(), kDpSeed));
    require_every_rank(
        ranks, rank0,
        "'s parameters after the broadcast (rank 0 sends every tensor, the others receive)");
}

TEST_CASE("allreduce_mean_per_tensor on 4 ranks leaves the mean, not the sum, on every rank",
          "[c:allreduce_mean_per_tensor.mean]") {
    require_mean_of_4("mean-tensor", ": the sum over 4 ranks divided by 4 (exact in float here)");
}

TEST_CASE("allreduce_mean_flat on 4 ranks leaves the mean, not the sum, on every rank",
          "[c:allreduce_mean_flat.mean]") {
    require_mean_of_4("mean-flat",
                      ": the sum over 4 ranks divided by 4, in the order of parameters()");
}

TEST_CASE(
    "start_allreduce_mean and finish_allreduce_mean on 4 ranks, with a forward between: "
    "the mean on every rank",
    "[c:start_allreduce_mean.nonblocking][c:finish_allreduce_mean.mean]") {
    require_mean_of_4("mean-nonblocking",
                      ": the sums are complete only after the wait, and then divided by 4");
}

TEST_CASE(
    "the three means on communicators of 2 of 4 ranks are the means of those 2 ranks, "
    "not of MPI_COMM_WORLD",
    "[c:allreduce_mean_per_tensor.mean][c:allreduce_mean_flat.mean]"
    "[c:finish_allreduce_mean.mean]") {
    const auto ranks = ranks_of("mean-split", 4);
    const char* which[] = {"allreduce_mean_per_tensor", "allreduce_mean_flat",
                           "start_allreduce_mean then finish_allreduce_mean"};
    for (int r = 0; r < 4; ++r) {
        const int first = 2 * (r / 2);  // ranks 0, 1 and 2, 3 share a communicator
        REQUIRE(ranks[r].size() % 3 == 0);
        const std::size_t n = ranks[r].size() / 3;
        std::vector<float> expected(n);
        for (std::size_t i = 0; i < n; ++i) {
            expected[i] = (dp_grad_value(i, first) + dp_grad_value(i, first + 1)) / 2.0f;
        }
        for (int k = 0; k < 3; ++k) {
            const std::vector<float> got(ranks[r].begin() + k * n, ranks[r].begin() + (k + 1) * n);
            require_same_bits(got, expected,
                              std::string(which[k]) + " on rank " + std::to_string(r) +
                                  ": the mean of ranks " + std::to_string(first) + " and " +
                                  std::to_string(first + 1) +
                                  ", the communicator given (not MPI_COMM_WORLD)");
        }
    }
}

TEST_CASE("start_allreduce_mean starts one reduction per tensor, lm_head first, wte last",
          "[c:start_allreduce_mean.nonblocking]") {
    const auto ranks = ranks_of("start-order", 2);
    const std::size_t count = wb::parameters(wb::init_gpt<float>(dp_config(), kDpSeed)).size();
    std::vector<float> expected;
    for (std::size_t k = count; k > 0; --k) expected.push_back(static_cast<float>(k - 1));
    require_every_rank(ranks, expected,
                       ": the index in parameters() of the tensor each MPI_Iallreduce reduces, in "
                       "the order started (the reverse of parameters())");
}

TEST_CASE(
    "allreduce_mean_flat of 2 and 4 ranks' shard gradients is chapter 8's gradient "
    "within 1e-5",
    "[c:allreduce_mean_flat.mean]") {
    const wb::GptParams<float> p = wb::init_gpt<float>(dp_config(), kDpSeed);
    wb::GptParams<float> g;
    full_batch_gradient(p, dp_batch(kDpEvenBatch, 0), g);
    const std::vector<float> expected = flat_of(g);
    for (int W : {2, 4}) {
        const auto ranks = ranks_of("allreduce-real", W);
        for (int r = 0; r < W; ++r) {
            INFO(W << " ranks, rank " << r
                   << ": MPI adds in its own order, so the mean is "
                      "close to, not equal to, one process's gradient");
            WB_CHECK_CLOSE(xt::adapt(ranks[r]), xt::adapt(expected), 1e-5,
                           "each rank's gradient is the mean of its rows: the mean of the "
                           "ranks' gradients is the whole batch's");
        }
    }
}

TEST_CASE("data_parallel_gradients on 1, 2 and 4 ranks: the same bits, the fixed tree's",
          "[c:tree_sum.order][c:tree_sum.everywhere][c:data_parallel_gradients.mean]"
          "[c:data_parallel_gradients.loss]") {
    const wb::GptParams<float> p = wb::init_gpt<float>(dp_config(), kDpSeed);
    const std::vector<float> expected = tree_gradient(p, dp_batch(kDpBatch, 0));
    for (int W : {1, 2, 4}) {
        const auto ranks = ranks_of("grads", W);
        for (int r = 0; r < W; ++r) {
            require_same_bits(ranks[r], expected,
                              std::to_string(W) + " ranks, rank " + std::to_string(r) +
                                  ": the gradients then the loss, of 6 one-sequence micro-"
                                  "batches added in the tree of tree_schedule(6), divided by 6");
        }
    }
}

TEST_CASE("data_parallel_gradients overwrites grads that already hold values",
          "[c:data_parallel_gradients.mean]") {
    const wb::GptParams<float> p = wb::init_gpt<float>(dp_config(), kDpSeed);
    const std::vector<float> expected = tree_gradient(p, dp_batch(kDpBatch, 0));
    const auto ranks = ranks_of("grads-reused", 2);
    require_every_rank(ranks, expected,
                       ": grads held another model's values, shaped like params; they "
                       "are replaced by the mean gradient, not added to");
}

TEST_CASE("data_parallel_gradients accepts B equal to the number of ranks, one row each",
          "[c:data_parallel_gradients.bad-args][c:data_parallel_gradients.mean]") {
    const wb::GptParams<float> p = wb::init_gpt<float>(dp_config(), kDpSeed);
    const std::vector<float> expected = tree_gradient(p, dp_batch(2, 0));
    const auto ranks = ranks_of("grads-one-each", 2);
    require_every_rank(ranks, expected,
                       " of 2, B = 2: only B < W is refused; each rank takes one row");
}

TEST_CASE(
    "data_parallel_gradients on 4 ranks is chapter 8's whole-batch gradient and loss "
    "within 1e-5",
    "[c:data_parallel_gradients.mean][c:data_parallel_gradients.loss]") {
    const wb::GptParams<float> p = wb::init_gpt<float>(dp_config(), kDpSeed);
    wb::GptParams<float> g;
    std::vector<float> expected;
    const float loss = full_batch_gradient(p, dp_batch(kDpBatch, 0), g);
    expected = flat_of(g);
    expected.push_back(loss);
    const auto ranks = ranks_of("grads", 4);
    WB_CHECK_CLOSE(xt::adapt(ranks[0]), xt::adapt(expected), 1e-5,
                   "the mean of the one-sequence gradients and losses over the global batch "
                   "(divided by B) is the gradient and loss of chapter 8's step");
}

TEST_CASE("data_parallel_step: 5 steps on 1, 2 and 4 ranks end with bit-identical weights",
          "[c:data_parallel_step.same][c:broadcast_parameters.rank0]") {
    const auto one = ranks_of("train", 1);
    for (int W : {2, 4}) {
        const auto ranks = ranks_of("train", W);
        for (int r = 0; r < W; ++r) {
            require_same_bits(ranks[r], one[0],
                              std::to_string(W) + " ranks, rank " + std::to_string(r) +
                                  ": weights then the 5 losses, against 1 rank's");
        }
    }
}

TEST_CASE("data_parallel_step: 5 steps match chapter 8's training on the whole batch",
          "[c:data_parallel_step.same]") {
    wb::GptParams<float> p = wb::init_gpt<float>(dp_config(), kDpSeed);
    wb::AdamWState<float> state;
    std::vector<float> losses;
    for (int step = 0; step < kDpSteps; ++step) {
        wb::GptParams<float> g;
        losses.push_back(full_batch_gradient(p, dp_batch(kDpBatch, step), g));
        wb::adamw_step(p, g, state, dp_adamw());
    }
    std::vector<float> expected = flat_of(p);
    const auto ranks = ranks_of("train", 2);
    const std::vector<float> got(ranks[0].end() - kDpSteps, ranks[0].end());
    WB_CHECK_CLOSE(xt::adapt(got), xt::adapt(losses), 1e-5,
                   "the loss of each step is chapter 8's loss of the whole batch");
    const std::vector<float> weights(ranks[0].begin(), ranks[0].end() - kDpSteps);
    WB_CHECK_CLOSE(xt::adapt(weights), xt::adapt(expected), 1e-4,
                   "the weights after 5 AdamW steps are chapter 8's");
}

TEST_CASE("bad calls on 2 ranks throw on every rank before any message is sent",
          "[c:tree_sum.bad-args][c:tree_sum.sizes][c:data_parallel_gradients.bad-args]"
          "[c:data_parallel_gradients.shapes][c:data_parallel_gradients.bad-id]"
          "[c:data_parallel_step.errors]") {
    // A rank that goes on after another threw waits for it forever: 20 s end the job.
    const auto ranks = ranks_of("errors", 2, 20);
    const char* what[] = {
        "tree_sum with M = 1 for 2 ranks: ValueError naming wb::tree_sum, M and the ranks",
        "tree_sum with no partial sum where 2 are due: ValueError naming both counts",
        "tree_sum with buffers of 3 and 4 elements: ShapeError naming both sizes",
        "data_parallel_gradients with B = 1 for 2 ranks: ValueError naming B and the ranks",
        "data_parallel_gradients with tokens [4, 1]: ShapeError naming the shape",
        "data_parallel_gradients with an id V + 7 in the last row (rank 1's): ValueError naming "
        "the id, on both ranks (hint: check every id of the whole batch before any row, or rank "
        "0 waits in tree_sum for rank 1, which threw)",
        "data_parallel_step with lr = -1: ValueError naming lr",
        "data_parallel_step with lr = -1 leaves the parameters as they were"};
    for (int r = 0; r < 2; ++r) {
        REQUIRE(ranks[r].size() == 8);
        for (int k = 0; k < 8; ++k) {
            INFO("rank " << r << ": " << what[k]);
            CHECK(ranks[r][k] == 1.0f);
        }
    }
}

TEST_CASE(
    "a rank that skips a collective hangs the job, which the time limit stops with a "
    "message",
    "[c:tree_sum.everywhere]") {
    // Rank 0 does not call tree_sum; rank 1 calls it and waits for rank 0's broadcast.
    const MpiRun run = run_mpi("skipped-collective", 2, 4);
    if (!run.ok && run.report.find("ran past") == std::string::npos) FAIL(run.report);
    INFO(run.report);
    CHECK_FALSE(run.ok);
    CHECK(run.report.find("ran past 4 s") != std::string::npos);
}
