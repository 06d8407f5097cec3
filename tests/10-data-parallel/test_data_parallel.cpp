// The data-parallel chapter's functions that need no MPI job: the shards, the tree's order,
// the flat buffer, and the refusal of a null communicator (checked before any MPI call).
#include "10-data-parallel/data_parallel.hpp"
#include "check.hpp"
#include "worker/scenario.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace {

using wbtest::dp_config;
using wbtest::kDpSeed;

std::vector<std::pair<std::size_t, std::size_t>> pairs(const std::vector<wb::TreeStep>& steps) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (const auto& s : steps) out.emplace_back(s.dst, s.src);
    return out;
}

}  // namespace

TEST_CASE("shard_range splits 10 rows over 4 ranks as 3, 3, 2, 2 in rank order",
          "[c:shard_range.balanced]") {
    const std::size_t begin[] = {0, 3, 6, 8}, end[] = {3, 6, 8, 10};
    for (int r = 0; r < 4; ++r) {
        const wb::Shard s = wb::shard_range(10, r, 4);
        INFO("rank " << r << " of 4, global batch 10: the first 10 % 4 = 2 ranks take one more");
        CHECK(s.begin == begin[r]);
        CHECK(s.end == end[r]);
    }
}

TEST_CASE("shard_range gives every row to exactly one rank, in order, sizes within one",
          "[c:shard_range.balanced]") {
    for (std::size_t B = 1; B <= 13; ++B) {
        for (int W = 1; W <= static_cast<int>(B); ++W) {
            std::size_t next = 0, smallest = B, largest = 0;
            for (int r = 0; r < W; ++r) {
                const wb::Shard s = wb::shard_range(B, r, W);
                INFO("B = " << B << ", W = " << W << ", rank " << r << ": [" << s.begin << ", "
                            << s.end << ") — shards must not overlap or skip a row");
                REQUIRE(s.begin == next);
                REQUIRE(s.end >= s.begin);
                next = s.end;
                smallest = std::min(smallest, s.size());
                largest = std::max(largest, s.size());
            }
            INFO("B = " << B << ", W = " << W << ": the last shard must end at B");
            CHECK(next == B);
            CHECK(largest - smallest <= 1);
        }
    }
}

TEST_CASE("shard_range refuses a rank outside the world, no ranks, or fewer rows than ranks",
          "[c:shard_range.bad-args]") {
    WB_CHECK_THROWS(wb::ValueError, wb::shard_range(8, 4, 4), "rank must be below world_size",
                    "wb::shard_range", "rank = 4", "world_size = 4");
    WB_CHECK_THROWS(wb::ValueError, wb::shard_range(8, -1, 4), "a negative rank", "wb::shard_range",
                    "rank = -1");
    WB_CHECK_THROWS(wb::ValueError, wb::shard_range(8, 0, 0), "no ranks at all", "wb::shard_range",
                    "world_size = 0");
    WB_CHECK_THROWS(wb::ValueError, wb::shard_range(3, 0, 4), "a rank would get no row",
                    "wb::shard_range", "global_batch = 3", "world_size = 4");
}

TEST_CASE("tree_schedule adds neighbours, then pairs of pairs: M = 5 and M = 8 by hand",
          "[c:tree_schedule.order]") {
    using P = std::vector<std::pair<std::size_t, std::size_t>>;
    CHECK(pairs(wb::tree_schedule(1)).empty());
    CHECK(pairs(wb::tree_schedule(2)) == P{{0, 1}});
    CHECK(pairs(wb::tree_schedule(5)) == P{{0, 1}, {2, 3}, {0, 2}, {0, 4}});
    CHECK(pairs(wb::tree_schedule(6)) == P{{0, 1}, {2, 3}, {4, 5}, {0, 2}, {0, 4}});
    CHECK(pairs(wb::tree_schedule(8)) == P{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {4, 6}, {0, 4}});
}

TEST_CASE("tree_schedule refuses M = 0", "[c:tree_schedule.zero]") {
    WB_CHECK_THROWS(wb::ValueError, wb::tree_schedule(0), "nothing to add", "wb::tree_schedule",
                    "M = 0");
}

TEST_CASE("flatten_params lays the tensors end to end in the order of parameters()",
          "[c:flatten_params.order]") {
    const wb::GptParams<float> p = wb::init_gpt<float>(dp_config(), kDpSeed);
    std::vector<float> expected;
    for (const auto& t : wb::parameters(p))
        expected.insert(expected.end(), t.data, t.data + t.size);
    const wb::Vec<float> flat = wb::flatten_params(p);
    REQUIRE(flat.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        INFO("element " << i << ": wte first, lm_head last, each tensor row-major");
        REQUIRE(flat(i) == expected[i]);
    }
}

TEST_CASE("unflatten_params puts every element back where flatten_params took it",
          "[c:unflatten_params.inverse]") {
    const wb::GptParams<float> p = wb::init_gpt<float>(dp_config(), kDpSeed);
    std::size_t P = 0;
    for (const auto& t : wb::parameters(p)) P += t.size;
    wb::Vec<float> flat = wb::Vec<float>::from_shape({P});
    for (std::size_t i = 0; i < P; ++i) flat(i) = static_cast<float>(i);
    wb::GptParams<float> out = wb::zeros_like(p);
    wb::unflatten_params(flat, out);
    std::size_t i = 0;
    for (const auto& t : wb::parameters(out)) {
        for (std::size_t j = 0; j < t.size; ++j, ++i) {
            INFO(t.name << "[" << j << "]: the flat buffer is in the order of parameters()");
            REQUIRE(t.data[j] == static_cast<float>(i));
        }
    }
    CHECK(i == P);
}

TEST_CASE("unflatten_params refuses a buffer of the wrong size and writes nothing",
          "[c:unflatten_params.size]") {
    wb::GptParams<float> out = wb::zeros_like(wb::init_gpt<float>(dp_config(), kDpSeed));
    std::size_t P = 0;
    for (const auto& t : wb::parameters(out)) P += t.size;
    wb::Vec<float> flat = wb::Vec<float>::from_shape({P - 1});
    flat.fill(1.0f);
    WB_CHECK_THROWS(wb::ShapeError, wb::unflatten_params(flat, out), "one element short",
                    "wb::unflatten_params", std::to_string(P - 1), std::to_string(P));
    CHECK(out.wte(0, 0) == 0.0f);
    CHECK(out.lm_head(0, 0) == 0.0f);
}

TEST_CASE("unflatten_params refuses a buffer one element too long and writes nothing",
          "[c:unflatten_params.size]") {
    wb::GptParams<float> out = wb::zeros_like(wb::init_gpt<float>(dp_config(), kDpSeed));
    std::size_t P = 0;
    for (const auto& t : wb::parameters(out)) P += t.size;
    wb::Vec<float> flat = wb::Vec<float>::from_shape({P + 1});
    flat.fill(1.0f);
    WB_CHECK_THROWS(wb::ShapeError, wb::unflatten_params(flat, out),
                    "one element too many: the size must be exactly P", "wb::unflatten_params",
                    std::to_string(P + 1), std::to_string(P));
    CHECK(out.wte(0, 0) == 0.0f);
    CHECK(out.lm_head(0, 0) == 0.0f);
}

TEST_CASE("the functions that talk to other ranks refuse MPI_COMM_NULL before any MPI call",
          "[c:broadcast_parameters.null-comm][c:allreduce_mean_per_tensor.null-comm]"
          "[c:allreduce_mean_flat.null-comm][c:tree_sum.bad-args][c:start_allreduce_mean.null-comm]"
          "[c:data_parallel_gradients.bad-args]") {
    const wb::GptConfig c = dp_config();
    wb::GptParams<float> p = wb::init_gpt<float>(c, kDpSeed);
    WB_CHECK_THROWS(wb::ValueError, wb::broadcast_parameters(p, MPI_COMM_NULL), "no communicator",
                    "wb::broadcast_parameters", "MPI_COMM_NULL");
    WB_CHECK_THROWS(wb::ValueError, wb::allreduce_mean_per_tensor(p, MPI_COMM_NULL),
                    "no communicator", "wb::allreduce_mean_per_tensor", "MPI_COMM_NULL");
    WB_CHECK_THROWS(wb::ValueError, wb::allreduce_mean_flat(p, MPI_COMM_NULL), "no communicator",
                    "wb::allreduce_mean_flat", "MPI_COMM_NULL");
    WB_CHECK_THROWS(wb::ValueError, wb::start_allreduce_mean(p, MPI_COMM_NULL), "no communicator",
                    "wb::start_allreduce_mean", "MPI_COMM_NULL");
    WB_CHECK_THROWS(wb::ValueError,
                    wb::tree_sum({wb::Vec<float>::from_shape({2})}, 1, MPI_COMM_NULL),
                    "no communicator", "wb::tree_sum", "MPI_COMM_NULL");
    wb::GptParams<float> g;
    WB_CHECK_THROWS(wb::ValueError,
                    wb::data_parallel_gradients(p, c, wbtest::dp_batch(2, 0), g, MPI_COMM_NULL),
                    "no communicator", "wb::data_parallel_gradients", "MPI_COMM_NULL");
}

TEST_CASE("finish_allreduce_mean refuses a PendingMean that holds no gradients",
          "[c:finish_allreduce_mean.empty]") {
    wb::PendingMean never_started;
    WB_CHECK_THROWS(wb::ValueError, wb::finish_allreduce_mean(never_started),
                    "finish what start_allreduce_mean returned, once", "wb::finish_allreduce_mean");
}
