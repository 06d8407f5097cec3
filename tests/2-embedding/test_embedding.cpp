#include "2-embedding/embedding.hpp"
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

namespace {

// A small embedding table with V = 5 rows and D = 3 columns. Every entry is different, so a
// wrong row or a column read shows up as a wrong number.
wb::Tensor2 small_table() {
    return {{0.1f, 0.2f, 0.3f},
            {1.0f, 1.1f, 1.2f},
            {2.0f, -2.1f, 2.2f},
            {3.0f, 3.1f, -3.2f},
            {-4.0f, 4.1f, 4.2f}};
}

// Mean and (population) standard deviation of all entries, computed here in double precision.
template <class E>
void mean_std(const E& e, double& mean, double& sd) {
    double sum = 0.0, sq = 0.0;
    for (auto v : e) sum += static_cast<double>(v);
    mean = sum / static_cast<double>(e.size());
    for (auto v : e) sq += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
    sd = std::sqrt(sq / static_cast<double>(e.size()));
}

template <class E>
double max_abs(const E& e) {
    double m = 0.0;
    for (auto v : e) m = std::max(m, std::fabs(static_cast<double>(v)));
    return m;
}

template <class A, class B>
bool identical(const A& a, const B& b) {
    if (a.size() != b.size()) return false;
    return std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

// ---- embed ---------------------------------------------------------------------------------

TEST_CASE("embed gives the same row for the same id, and that row is the table's row",
          "[embed][c:embed.lookup]") {
    const wb::Tensor2 table = small_table();
    const wb::TokenIds ids = {{2, 0, 2}, {3, 2, 1}};  // id 2 at [0, 0], [0, 2] and [1, 1]
    const wb::Tensor3 x = wb::embed(table, ids);
    WB_CHECK_SHAPE(x, (wb::Shape{2, 3, 3}), "embed(table [V, D], ids [B, T]) must give [B, T, D]");
    // Row 2 of the table, copied from small_table() above.
    const wb::Tensor1 row2 = {2.0f, -2.1f, 2.2f};
    for (auto [b, t] : {std::pair{0, 0}, std::pair{0, 2}, std::pair{1, 1}}) {
        INFO("position [" << b << ", " << t << "] holds id 2");
        WB_CHECK_CLOSE(wb::Tensor1(xt::view(x, b, t, xt::all())), row2, 1e-6,
                       "id 2 must give row 2 of the table (table[2, :]) wherever it appears; "
                       "did you read a column (table[:, id]) instead of a row?");
    }
}

TEST_CASE("embed picks the right row for every id", "[embed][c:embed.lookup]") {
    const wb::Tensor2 table = small_table();
    const wb::TokenIds ids = {{4, 0, 2}, {1, 1, 3}};
    // out[b, t, :] = table[ids[b, t], :], written out by hand from small_table().
    const wb::Tensor3 expected = {{{-4.0f, 4.1f, 4.2f}, {0.1f, 0.2f, 0.3f}, {2.0f, -2.1f, 2.2f}},
                                  {{1.0f, 1.1f, 1.2f}, {1.0f, 1.1f, 1.2f}, {3.0f, 3.1f, -3.2f}}};
    WB_CHECK_CLOSE(wb::embed(table, ids), expected, 1e-6,
                   "out[b, t, :] must be row ids[b, t] of the table; check the row index and "
                   "that b and t are not swapped");
}

TEST_CASE("embed of a square table still reads rows, not columns", "[embed][c:embed.lookup]") {
    // With V == D a column read has the right shape and the wrong numbers.
    const wb::Tensor2 table = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}, {7.0f, 8.0f, 9.0f}};
    const wb::TokenIds ids = {{1, 2}};
    const wb::Tensor3 expected = {{{4.0f, 5.0f, 6.0f}, {7.0f, 8.0f, 9.0f}}};  // rows 1 and 2
    WB_CHECK_CLOSE(wb::embed(table, ids), expected, 1e-6,
                   "row id of the table is table[id, :]; table[:, id] is a column");
}

TEST_CASE("embed maps ids [B, T] to [B, T, D] like nn.Embedding(6, 8)", "[embed][c:embed.lookup]") {
    // §21.6: nn.Embedding(6, 8) turns [B, T] token ids into [B, T, 8].
    const auto table = wbtest::randn<wb::Tensor2>({6, 8}, 7);
    const wb::TokenIds ids = {{0, 1, 2, 3}, {5, 4, 3, 2}};
    const wb::Tensor3 x = wb::embed(table, ids);
    WB_CHECK_SHAPE(x, (wb::Shape{2, 4, 8}), "embed must give [B, T, D] = [2, 4, 8]");
    WB_CHECK_CLOSE(wb::Tensor1(xt::view(x, 1, 0, xt::all())),
                   wb::Tensor1(xt::view(table, 5, xt::all())), 0.0,
                   "x[1, 0, :] must be an exact copy of table[5, :] (a lookup does no arithmetic)");
}

TEST_CASE("embed of empty ids gives an empty [B, T, D]", "[embed][errors][c:embed.empty-ids]") {
    const wb::Tensor2 table = small_table();
    const wb::TokenIds no_sequences = wb::TokenIds::from_shape({0, 3});
    const wb::TokenIds no_tokens = wb::TokenIds::from_shape({2, 0});
    WB_CHECK_SHAPE(wb::embed(table, no_sequences), (wb::Shape{0, 3, 3}),
                   "B = 0 sequences: return an empty [0, T, D], do not throw");
    WB_CHECK_SHAPE(wb::embed(table, no_tokens), (wb::Shape{2, 0, 3}),
                   "T = 0 tokens: return an empty [B, 0, D], do not throw");
}

TEST_CASE("embed rejects an id equal to V with a clear message",
          "[embed][errors][c:embed.id-out-of-range]") {
    const wb::Tensor2 table = small_table();  // V = 5: valid ids are 0..4
    const wb::TokenIds ids = {{0, 1, 2}, {5, 4, 1}};
    WB_CHECK_THROWS(wb::ValueError, wb::embed(table, ids),
                    "ids must satisfy 0 <= id < V: id == V is one past the last row "
                    "(did you write id > V instead of id >= V?)",
                    "wb::embed", "5", "[1, 0]", "V = 5");
}

TEST_CASE("embed rejects an id beyond V and a negative id, naming the position",
          "[embed][errors][c:embed.id-out-of-range]") {
    const wb::Tensor2 table = small_table();
    const wb::TokenIds too_big = {{0, 1, 2}, {3, 4, 7}};
    WB_CHECK_THROWS(wb::ValueError, wb::embed(table, too_big),
                    "check every id before reading the table with it; name the id, [b, t] and V",
                    "wb::embed", "7", "[1, 2]", "V = 5");
    const wb::TokenIds negative = {{0, -1, 2}, {3, 4, 1}};
    WB_CHECK_THROWS(wb::ValueError, wb::embed(table, negative),
                    "a negative id is out of range too (ids are signed std::int64_t)", "wb::embed",
                    "-1", "[0, 1]", "V = 5");
}

TEST_CASE("embed rejects an empty table", "[embed][errors][c:embed.empty-table]") {
    const wb::Tensor2 no_rows = wb::Tensor2::from_shape({0, 3});
    const wb::TokenIds ids = {{0}};
    WB_CHECK_THROWS(wb::ShapeError, wb::embed(no_rows, ids),
                    "a table with V == 0 or D == 0 is a ShapeError (use require_nonempty)",
                    "wb::embed", "[0, 3]");
}

TEST_CASE("embed rejects a table with D == 0, not only V == 0",
          "[embed][errors][c:embed.empty-table]") {
    INFO(
        "hint: the table is empty when V == 0 OR D == 0: test table.size() (require_nonempty), "
        "not only its number of rows");
    const wb::Tensor2 no_columns = wb::Tensor2::from_shape({5, 0});
    const wb::TokenIds ids = {{1, 2}};
    WB_CHECK_THROWS(wb::ShapeError, wb::embed(no_columns, ids),
                    "a table [5, 0] has rows but no vector in them", "wb::embed", "[5, 0]");
}

// ---- linear --------------------------------------------------------------------------------

TEST_CASE("linear equals the hand-written dot products x_n . W_o", "[linear][c:linear.rows]") {
    // A square, non-symmetric weight: x·W compiles too, but gives other numbers than x·Wᵀ.
    wb::Linear layer;
    layer.weight = {{1.0f, 2.0f, 0.0f}, {0.0f, 1.0f, -1.0f}, {3.0f, 0.0f, 1.0f}};  // [out, in]
    const wb::Tensor2 x = {{1.0f, 2.0f, 3.0f}, {-1.0f, 0.0f, 2.0f}};               // [N, in]
    // y[n, o] = sum_i x[n, i] * W[o, i], by hand:
    //   row 0: [1+4+0, 0+2-3, 3+0+3] = [5, -1, 6];  row 1: [-1+0+0, 0+0-2, -3+0+2] = [-1, -2, -1]
    const wb::Tensor2 expected = {{5.0f, -1.0f, 6.0f}, {-1.0f, -2.0f, -1.0f}};
    WB_CHECK_CLOSE(wb::linear(x, layer), expected, 1e-5,
                   "y = x Wᵀ: output o is the dot product of x with ROW o of the weight "
                   "(did you compute x·W without the transpose?)");
}

TEST_CASE("linear pins the weight layout [out, in]", "[linear][c:linear.rows]") {
    // nn.Linear(3, 2).weight has shape [out = 2, in = 3]. The unit input e_i picks column i.
    wb::Linear layer;
    layer.weight = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};  // W00 = 1, W10 = 4, ...
    const wb::Tensor2 x = {{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 1.0f}};
    const wb::Tensor2 y = wb::linear(x, layer);
    WB_CHECK_SHAPE(y, (wb::Shape{3, 2}),
                   "x [N = 3, in = 3] through a weight [out = 2, in = 3] "
                   "gives [N, out] = [3, 2]");
    // x = e_0 gives column 0 of W, [W00, W10] = [1, 4]; e_1 gives [2, 5]; e_2 gives [3, 6].
    const wb::Tensor2 expected = {{1.0f, 4.0f}, {2.0f, 5.0f}, {3.0f, 6.0f}};
    WB_CHECK_CLOSE(y, expected, 1e-6,
                   "the weight is stored [out, in] (PyTorch's layout): x = [1, 0, 0] must give "
                   "[W00, W10], column 0 of W. Multiply by Wᵀ, not by W");
}

TEST_CASE("linear matches torch nn.Linear(3, 2) on fixed weights", "[linear][c:linear.rows]") {
    wb::Linear layer;
    layer.weight = {{0.5f, -1.0f, 2.0f}, {1.5f, 0.25f, -0.75f}};  // [2, 3]
    layer.bias = {0.1f, -0.2f};
    const wb::Tensor2 x = {
        {1.0f, 2.0f, 3.0f}, {-1.0f, 0.5f, 4.0f}, {0.3f, -0.7f, 1.1f}, {2.0f, 2.0f, -2.0f}};
    // lin = torch.nn.Linear(3, 2); lin.weight/bias set to the values above (torch 1.13);
    // lin(torch.tensor(x)) printed with precision 8.
    const wb::Tensor2 expected = {{4.59999990f, -0.44999999f},
                                  {7.09999990f, -4.57499981f},
                                  {3.15000010f, -0.74999994f},
                                  {-4.90000010f, 4.80000019f}};
    WB_CHECK_CLOSE(wb::linear(x, layer), expected, 1e-5,
                   "nn.Linear computes x @ weight.T + bias with weight [out, in]");
}

TEST_CASE("linear adds the bias once, to every row", "[linear][c:linear.rows]") {
    wb::Linear layer;
    layer.weight = {{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}};         // [out = 3, in = 2]
    layer.bias = {10.0f, 20.0f, 30.0f};                                // [out]
    const wb::Tensor2 x = {{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}};  // N = out = 3
    // x Wᵀ = [x0, x1, x0 + x1] per row, then + [10, 20, 30]:
    const wb::Tensor2 expected = {
        {11.0f, 22.0f, 33.0f}, {13.0f, 24.0f, 37.0f}, {15.0f, 26.0f, 41.0f}};
    WB_CHECK_CLOSE(wb::linear(x, layer), expected, 1e-5,
                   "bias[o] is added once to output feature o of every row; did you forget it, "
                   "add it twice, or add bias[n] to row n (the wrong axis)?");
}

TEST_CASE("linear without bias computes x W^T only", "[linear][c:linear.rows][c:linear.no-rows]") {
    wb::Linear layer;
    layer.weight = {{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}};  // [3, 2]
    // layer.bias stays empty (size 0): nn.Linear(2, 3, bias=False)
    const wb::Tensor2 x = {{1.0f, 2.0f}, {3.0f, 4.0f}};
    const wb::Tensor2 expected = {{1.0f, 2.0f, 3.0f}, {3.0f, 4.0f, 7.0f}};  // by hand
    WB_CHECK_CLOSE(wb::linear(x, layer), expected, 1e-5, "an empty bias means no bias: y = x Wᵀ");
    const wb::Tensor2 none = wb::Tensor2::from_shape({0, 2});  // N = 0 rows
    WB_CHECK_SHAPE(wb::linear(none, layer), (wb::Shape{0, 3}), "N = 0 rows give an empty [0, out]");
}

TEST_CASE("linear on [B, T, in] transforms only the last axis", "[linear][c:linear.per-token]") {
    wb::Linear layer;
    layer.weight = {{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}};  // [out = 3, in = 2]
    layer.bias = {10.0f, 20.0f, 30.0f};
    const wb::Tensor3 x = {{{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}},      // sequence 0
                           {{-1.0f, 0.0f}, {0.0f, -1.0f}, {2.0f, -2.0f}}};  // sequence 1
    // Each token alone: [x0 + 10, x1 + 20, x0 + x1 + 30], by hand.
    const wb::Tensor3 expected = {
        {{11.0f, 22.0f, 33.0f}, {13.0f, 24.0f, 37.0f}, {15.0f, 26.0f, 41.0f}},
        {{9.0f, 20.0f, 29.0f}, {10.0f, 19.0f, 29.0f}, {12.0f, 18.0f, 30.0f}}};
    WB_CHECK_CLOSE(wb::linear(x, layer), expected, 1e-5,
                   "y[b, t, :] depends only on x[b, t, :]: flatten to [B*T, in] keeping each "
                   "token's features together (no transpose of B and T), and reshape back");
}

TEST_CASE("linear(8, 32) maps [B, T, 8] to [B, T, 32], token by token",
          "[linear][c:linear.per-token]") {
    // §21.6: nn.Linear(8, 32) turns [B, T, 8] into [B, T, 32]. B = 2 != T = 3.
    wb::Linear layer;
    layer.weight = wbtest::randn<wb::Tensor2>({32, 8}, 11);  // [out, in]
    layer.bias = wbtest::randn<wb::Tensor1>({32}, 12);
    const auto x = wbtest::randn<wb::Tensor3>({2, 3, 8}, 13);
    const wb::Tensor3 y = wb::linear(x, layer);
    WB_CHECK_SHAPE(y, (wb::Shape{2, 3, 32}),
                   "only the last axis changes: [B, T, in] -> [B, T, out]");
    // Every token by hand: y[b, t, o] = sum_i x[b, t, i] * W[o, i] + b[o] in double precision.
    wb::Tensor3 expected = wb::Tensor3::from_shape({2, 3, 32});
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t t = 0; t < 3; ++t)
            for (std::size_t o = 0; o < 32; ++o) {
                double s = layer.bias(o);
                for (std::size_t i = 0; i < 8; ++i) s += double(x(b, t, i)) * layer.weight(o, i);
                expected(b, t, o) = static_cast<float>(s);
            }
    WB_CHECK_CLOSE(y, expected, 1e-5,
                   "each token [b, t] goes through the same layer on its own; check the "
                   "flattening to [B*T, in] and the transpose of the weight");
    // Property: the 3-D form equals the 2-D form applied to each sequence.
    for (std::size_t b = 0; b < 2; ++b) {
        const wb::Tensor2 xb = xt::view(x, b, xt::all(), xt::all());  // [T, in]
        INFO("sequence b = " << b);
        WB_CHECK_CLOSE(wb::Tensor2(xt::view(y, b, xt::all(), xt::all())), wb::linear(xb, layer),
                       1e-5, "linear([B, T, in])[b] must equal linear(x[b]) on the [T, in] rows");
    }
}

TEST_CASE("linear rejects a last axis that is not in, naming both shapes",
          "[linear][errors][c:linear.in-mismatch][c:linear.per-token-errors]") {
    wb::Linear layer;
    layer.weight = wb::Tensor2::from_shape({2, 5});  // [out = 2, in = 5]
    layer.weight.fill(1.0f);
    const wb::Tensor2 x2 = wb::Tensor2::from_shape({4, 3});
    WB_CHECK_THROWS(wb::ShapeError, wb::linear(x2, layer),
                    "x's last axis must be in = weight.shape(1); name x's shape and the weight's",
                    "wb::linear", "[4, 3]", "[2, 5]");
    const wb::Tensor3 x3 = wb::Tensor3::from_shape({2, 4, 3});
    WB_CHECK_THROWS(wb::ShapeError, wb::linear(x3, layer),
                    "name the [B, T, in] shape the caller passed, not an internal reshape",
                    "wb::linear", "[2, 4, 3]", "[2, 5]");
    // A weight stored [in, out] by mistake: x [4, 5] against weight [5, 2] is rejected too.
    wb::Linear transposed;
    transposed.weight = wb::Tensor2::from_shape({5, 2});
    transposed.weight.fill(1.0f);
    const wb::Tensor2 x5 = wb::Tensor2::from_shape({4, 5});
    WB_CHECK_THROWS(wb::ShapeError, wb::linear(x5, transposed),
                    "the weight is [out, in]: its axis 1 must match x's last axis", "wb::linear",
                    "[4, 5]", "[5, 2]");
}

TEST_CASE(
    "linear rejects a bias of the wrong size and an empty weight",
    "[linear][errors][c:linear.bias-size][c:linear.empty-weight][c:linear.per-token-errors]") {
    wb::Linear layer;
    layer.weight = wb::Tensor2::from_shape({2, 3});  // [out = 2, in = 3]
    layer.weight.fill(1.0f);
    layer.bias = {1.0f, 2.0f, 3.0f};  // [3]: size in, not out
    const wb::Tensor2 x = wb::Tensor2::from_shape({4, 3});
    WB_CHECK_THROWS(wb::ShapeError, wb::linear(x, layer),
                    "the bias has one entry per OUTPUT feature: size out (or 0 for no bias)",
                    "wb::linear", "3", "2");
    const wb::Tensor3 x3 = wb::Tensor3::from_shape({1, 4, 3});
    WB_CHECK_THROWS(wb::ShapeError, wb::linear(x3, layer), "the 3-D form checks the bias too",
                    "wb::linear", "3", "2");
    wb::Linear empty;  // weight [0, 0]
    WB_CHECK_THROWS(wb::ShapeError, wb::linear(wb::Tensor2::from_shape({4, 0}), empty),
                    "a layer needs in >= 1 and out >= 1", "wb::linear", "[0, 0]");
}

TEST_CASE("linear refuses a bias of size 1 and a weight with in == 0, which broadcasting hides",
          "[linear][lm_head][errors][c:linear.bias-size][c:linear.empty-weight]"
          "[c:lm_head.empty-weight]") {
    INFO(
        "hint: a bias [1] broadcasts over [N, out] without an error, and a weight [out, 0] "
        "multiplies an x [N, 0]: compare the bias's size with out, and test weight.size() == 0, "
        "not only out == 0");
    wb::Linear layer;
    layer.weight = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};  // [out = 2, in = 3]
    layer.bias = {10.0f};                                     // [1]: neither [2] nor empty
    WB_CHECK_THROWS(wb::ShapeError, wb::linear(wb::Tensor2{{1.0f, 0.0f, 0.0f}}, layer),
                    "a bias [1] is not [out]: it would add 10 to both outputs", "wb::linear", "1",
                    "2");
    WB_CHECK_THROWS(wb::ShapeError, wb::linear(wb::Tensor3::from_shape({1, 2, 3}), layer),
                    "the 3-D form refuses the bias [1] too", "wb::linear", "1", "2");
    wb::Linear no_inputs;  // weight [out = 2, in = 0]: empty although out is 2
    no_inputs.weight = wb::Tensor2::from_shape({2, 0});
    WB_CHECK_THROWS(wb::ShapeError, wb::linear(wb::Tensor2::from_shape({3, 0}), no_inputs),
                    "in == 0 is an empty weight: nn.Linear(0, 2) has nothing to multiply",
                    "wb::linear", "[2, 0]");
    wb::Linear head;  // [V = 4, D = 0]
    head.weight = wb::Tensor2::from_shape({4, 0});
    WB_CHECK_THROWS(wb::ShapeError, wb::lm_head(wb::Tensor3::from_shape({1, 2, 0}), head),
                    "a head [V, 0] is empty too", "wb::lm_head", "[4, 0]");
}

// ---- LM head -------------------------------------------------------------------------------

namespace {

// A tied head: its weight [V = 4, D = 2] is an embedding table (GPT-2 ties them).
wb::Linear tied_head() {
    wb::Linear head;
    head.weight = {{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}, {-1.0f, 2.0f}};
    return head;
}

// Hidden states h [B = 2, T = 3, D = 2].
wb::Tensor3 hidden() {
    return {{{1.0f, 2.0f}, {3.0f, -1.0f}, {0.5f, 0.5f}},
            {{0.0f, 1.0f}, {2.0f, 2.0f}, {-1.0f, -1.0f}}};
}

}  // namespace

TEST_CASE("lm_head gives logits [B, T, V] equal to h . E_v for every token",
          "[lm_head][c:lm_head.logits]") {
    const wb::Tensor3 logits = wb::lm_head(hidden(), tied_head());
    WB_CHECK_SHAPE(logits, (wb::Shape{2, 3, 4}),
                   "logits are [B, T, V]: one score per vocabulary "
                   "entry at every position");
    // logits[b, t, v] = h[b, t, :] . W[v, :], by hand.
    const wb::Tensor3 expected = {
        {{1.0f, 2.0f, 3.0f, 3.0f}, {3.0f, -1.0f, 2.0f, -5.0f}, {0.5f, 0.5f, 1.0f, 0.5f}},
        {{0.0f, 1.0f, 1.0f, 2.0f}, {2.0f, 2.0f, 4.0f, 2.0f}, {-1.0f, -1.0f, -2.0f, -1.0f}}};
    WB_CHECK_CLOSE(logits, expected, 1e-5,
                   "the head's weight is [V, D]: logit v is the dot product of h with row v");
}

TEST_CASE("lm_head adds the head's bias per vocabulary entry", "[lm_head][c:lm_head.logits]") {
    wb::Linear head = tied_head();
    head.bias = {0.5f, -0.5f, 0.0f, 1.0f};   // [V]
    const wb::Tensor3 h = {{{1.0f, 2.0f}}};  // [1, 1, 2]
    // [1, 2, 3, 3] (see above) + bias:
    const wb::Tensor3 expected = {{{1.5f, 1.5f, 3.0f, 4.0f}}};
    WB_CHECK_CLOSE(wb::lm_head(h, head), expected, 1e-5, "logits = h Wᵀ + b with b [V]");
}

TEST_CASE("next_token_logits reads the last position only",
          "[lm_head][c:next_token_logits.last-position]") {
    const wb::Tensor3 h = hidden();
    const wb::Tensor2 z = wb::next_token_logits(h, tied_head());
    WB_CHECK_SHAPE(z, (wb::Shape{2, 4}), "h[:, -1, :] drops the T axis: logits [B, V]");
    // Rows [b = 0, t = 2] and [b = 1, t = 2] of the lm_head example above.
    const wb::Tensor2 expected = {{0.5f, 0.5f, 1.0f, 0.5f}, {-1.0f, -1.0f, -2.0f, -1.0f}};
    WB_CHECK_CLOSE(z, expected, 1e-5,
                   "generation reads the LAST position T - 1 (x[:, -1, :]), not position 0");
    // Property: equal to lm_head(h)[:, -1, :].
    const wb::Tensor3 all = wb::lm_head(h, tied_head());
    WB_CHECK_CLOSE(z, wb::Tensor2(xt::view(all, xt::all(), 2, xt::all())), 1e-5,
                   "next_token_logits must equal lm_head(h, head)[:, -1, :]");
    const wb::Tensor2 first = xt::view(all, xt::all(), 0, xt::all());
    const double diff = max_abs(z - first);
    INFO("max |next_token_logits - lm_head[:, 0, :]| = " << diff << " (expected > 0.5)");
    INFO("hint: did you read position 0 instead of T - 1?");
    CHECK(diff > 0.5);
}

TEST_CASE("lm_head and next_token_logits reject a D that does not match the head",
          "[lm_head][errors][c:lm_head.d-mismatch][c:lm_head.bias-size]"
          "[c:next_token_logits.layer-errors]") {
    wb::Linear head;
    head.weight = wb::Tensor2::from_shape({4, 3});  // [V = 4, D = 3]
    head.weight.fill(1.0f);
    const wb::Tensor3 h = wb::Tensor3::from_shape({1, 3, 2});  // D = 2
    WB_CHECK_THROWS(wb::ShapeError, wb::lm_head(h, head),
                    "h's last axis D must equal the head's weight.shape(1)", "wb::lm_head",
                    "[1, 3, 2]", "[4, 3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::next_token_logits(h, head),
                    "next_token_logits checks D too, with its own name in the message",
                    "wb::next_token_logits", "[1, 3, 2]", "[4, 3]");
    wb::Linear bad_bias = tied_head();
    bad_bias.bias = {1.0f, 2.0f};  // [2]: D, not V
    WB_CHECK_THROWS(wb::ShapeError, wb::lm_head(hidden(), bad_bias),
                    "the head's bias has V entries", "wb::lm_head", "2", "4");
    WB_CHECK_THROWS(wb::ShapeError, wb::next_token_logits(hidden(), bad_bias),
                    "the head's bias has V entries", "wb::next_token_logits", "2", "4");
}

TEST_CASE("next_token_logits rejects T == 0: there is no last position",
          "[lm_head][errors][c:next_token_logits.no-position]") {
    const wb::Tensor3 h = wb::Tensor3::from_shape({2, 0, 2});
    WB_CHECK_THROWS(wb::ShapeError, wb::next_token_logits(h, tied_head()),
                    "with T == 0 there is no position T - 1 to read (and T - 1 wraps around as "
                    "an unsigned number)",
                    "wb::next_token_logits", "[2, 0, 2]");
}

TEST_CASE("lm_head and next_token_logits reject an empty head (V == 0)",
          "[lm_head][errors][c:lm_head.empty-weight][c:next_token_logits.layer-errors]") {
    wb::Linear no_vocabulary;
    no_vocabulary.weight = wb::Tensor2::from_shape({0, 2});  // [V = 0, D = 2]
    WB_CHECK_THROWS(wb::ShapeError, wb::lm_head(hidden(), no_vocabulary),
                    "a head with V == 0 scores nothing: check the weight is not empty",
                    "wb::lm_head", "[0, 2]");
    WB_CHECK_THROWS(wb::ShapeError, wb::next_token_logits(hidden(), no_vocabulary),
                    "a head with V == 0 has no next token to score", "wb::next_token_logits",
                    "[0, 2]");
}

// ---- initialisation ------------------------------------------------------------------------

TEST_CASE("init_embedding is deterministic per seed and draws from N(0, 1)",
          "[init][c:init_embedding.seeded]") {
    const wb::Tensor2 a = wb::init_embedding(64, 32, 1234);
    WB_CHECK_SHAPE(a, (wb::Shape{64, 32}), "the table is [V, D]");
    const wb::Tensor2 again = wb::init_embedding(64, 32, 1234);
    const wb::Tensor2 other = wb::init_embedding(64, 32, 99);
    {
        INFO(
            "hint: seed one std::mt19937 with `seed` inside the function (no random_device, "
            "no global engine)");
        CHECK(identical(a, again));
    }
    {
        INFO("hint: a different seed must give a different table");
        CHECK_FALSE(identical(a, other));
    }
    double mean = 0.0, sd = 0.0;
    mean_std(a, mean, sd);
    // N(0, 1) over 2048 entries: the mean has standard error 1/sqrt(2048) = 0.022 and the std
    // about 0.016; torch.nn.Embedding(64, 32) with seed 0 gives mean -0.023, std 0.990.
    INFO("mean = " << mean << " (expected |mean| < 0.1), std = " << sd
                   << " (expected 0.9 .. 1.1); hint: nn.Embedding draws N(0, 1), not U(0, 1)");
    CHECK(std::fabs(mean) < 0.1);
    CHECK(sd > 0.9);
    CHECK(sd < 1.1);
}

TEST_CASE("init_linear is deterministic and bounded by 1/sqrt(in)",
          "[init][c:init_linear.seeded][c:init_linear.fan-in-bound]") {
    // in = 64, out = 16: the bound is 1/sqrt(64) = 0.125 (1/sqrt(out) would be 0.25).
    const wb::Linear a = wb::init_linear(64, 16, true, 7);
    WB_CHECK_SHAPE(a.weight, (wb::Shape{16, 64}), "the weight is [out, in], like nn.Linear");
    WB_CHECK_SHAPE(a.bias, (wb::Shape{16}), "the bias is [out]");
    const wb::Linear again = wb::init_linear(64, 16, true, 7);
    const wb::Linear other = wb::init_linear(64, 16, true, 8);
    {
        INFO("hint: the same seed must give the same weights and bias");
        CHECK(identical(a.weight, again.weight));
        CHECK(identical(a.bias, again.bias));
    }
    {
        INFO("hint: a different seed must give different weights");
        CHECK_FALSE(identical(a.weight, other.weight));
    }
    const double bound = 0.125;
    const double w_max = max_abs(a.weight), b_max = max_abs(a.bias);
    double mean = 0.0, sd = 0.0;
    mean_std(a.weight, mean, sd);
    // U(-k, k) has std k/sqrt(3) = 0.0722 for k = 0.125; torch.nn.Linear(64, 16) with seed 0
    // gives max|w| = 0.12498, std 0.0730, max|b| = 0.118.
    INFO("max|w| = " << w_max << ", max|b| = " << b_max << ", mean = " << mean << ", std = " << sd
                     << "; expected max <= 0.125 (1/sqrt(in), in = 64), "
                     << "max|w| > 0.11, std near 0.0722");
    INFO("hint: the bound is 1/sqrt(in) — the fan-in — for the weight AND the bias");
    CHECK(w_max <= bound);
    CHECK(w_max > 0.11);
    CHECK(b_max <= bound);
    CHECK(b_max > 0.04);  // a zero bias is not nn.Linear's: it is U(-k, k) too
    CHECK(std::fabs(mean) < 0.02);
    CHECK(sd > 0.065);
    CHECK(sd < 0.080);
}

TEST_CASE("init_linear without bias gives an empty bias",
          "[init][c:init_linear.no-bias][c:init_linear.fan-in-bound]") {
    const wb::Linear a = wb::init_linear(4, 3, false, 1);
    WB_CHECK_SHAPE(a.weight, (wb::Shape{3, 4}), "the weight is [out, in]");
    WB_CHECK_SHAPE(a.bias, (wb::Shape{0}), "bias = false gives an empty bias [0]");
    const double w_max = max_abs(a.weight);
    INFO("max|w| = " << w_max
                     << ", expected <= 0.5 = 1/sqrt(in) for in = 4; hint: use in, not out");
    CHECK(w_max <= 0.5);
    CHECK(w_max > 0.0);
}

TEST_CASE("init functions reject zero sizes",
          "[init][errors][c:init_embedding.zero-size][c:init_linear.zero-size]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::init_embedding(0, 8, 1),
                    "an embedding table needs V >= 1 and D >= 1", "wb::init_embedding", "V = 0",
                    "D = 8");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_embedding(6, 0, 1),
                    "an embedding table needs V >= 1 and D >= 1", "wb::init_embedding", "V = 6",
                    "D = 0");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_linear(0, 4, true, 1),
                    "a layer needs in >= 1 (and 1/sqrt(0) is infinite)", "wb::init_linear",
                    "in = 0", "out = 4");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_linear(3, 0, false, 1), "a layer needs out >= 1",
                    "wb::init_linear", "in = 3", "out = 0");
}

TEST_CASE("init_embedding draws N(0, 1) from mt19937(seed) in row-major order",
          "[init][c:init_embedding.draw-order][c:init_embedding.seeded]") {
    // The draws written out here from the rules of embedding.hpp, for V != D and for two seeds
    // (one at the top of the uint32 range), compared exactly: a column-major fill, a double
    // distribution or a generator seeded otherwise gives the same statistics but other numbers.
    for (const std::uint32_t seed : {11u, 4000000000u}) {
        std::mt19937 gen(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        wb::Tensor2 expected = wb::Tensor2::from_shape({3, 5});
        for (std::size_t v = 0; v < 3; ++v)
            for (std::size_t d = 0; d < 5; ++d) expected(v, d) = normal(gen);
        INFO("seed " << seed);
        WB_CHECK_CLOSE(wb::init_embedding(3, 5, seed), expected, 0.0,
                       "one std::mt19937(seed), one std::normal_distribution<float>(0, 1), "
                       "entries drawn row by row (row 0 first, D draws per row)");
    }
}

TEST_CASE("init_linear draws the weight row by row, then the bias, from one mt19937(seed)",
          "[init][c:init_linear.draw-order][c:init_linear.fan-in-bound][c:init_linear.no-bias]"
          "[c:init_linear.seeded]") {
    // in = 5 != out = 3: k = 1/sqrt(5). The same generator gives the 15 weights (row o: its 5
    // inputs), then the 3 biases; without a bias the weight is the same.
    for (const std::uint32_t seed : {7u, 4000000000u}) {
        const float k = 1.0f / std::sqrt(5.0f);
        std::mt19937 gen(seed);
        std::uniform_real_distribution<float> uniform(-k, k);
        wb::Tensor2 weight = wb::Tensor2::from_shape({3, 5});
        for (std::size_t o = 0; o < 3; ++o)
            for (std::size_t i = 0; i < 5; ++i) weight(o, i) = uniform(gen);
        wb::Tensor1 bias = wb::Tensor1::from_shape({3});
        for (std::size_t o = 0; o < 3; ++o) bias(o) = uniform(gen);
        INFO("seed " << seed);
        const wb::Linear with = wb::init_linear(5, 3, true, seed);
        WB_CHECK_CLOSE(with.weight, weight, 1e-6,
                       "one std::mt19937(seed) and one uniform_real_distribution<float>(-k, k), "
                       "k = 1/sqrt(in): the weight [out, in] first, row by row");
        WB_CHECK_CLOSE(with.bias, bias, 1e-6,
                       "the bias comes from the same generator, after the whole weight");
        WB_CHECK_CLOSE(wb::init_linear(5, 3, false, seed).weight, weight, 1e-6,
                       "without a bias the weight's draws are the same");
    }
}

TEST_CASE("next_token_logits adds the head's bias, as lm_head(h)[:, -1, :] does",
          "[lm_head][c:next_token_logits.last-position][c:lm_head.logits]") {
    // B = 3, T = 4, D = 5, V = 7: every size different, a bias on the head.
    wb::Linear head;
    head.weight = wbtest::randn<wb::Tensor2>({7, 5}, 21);
    head.bias = wbtest::randn<wb::Tensor1>({7}, 22);
    const auto h = wbtest::randn<wb::Tensor3>({3, 4, 5}, 23);
    wb::Tensor2 expected = wb::Tensor2::from_shape({3, 7});
    for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t v = 0; v < 7; ++v) {
            double s = head.bias(v);
            for (std::size_t d = 0; d < 5; ++d) s += double(h(b, 3, d)) * head.weight(v, d);
            expected(b, v) = static_cast<float>(s);
        }
    WB_CHECK_CLOSE(wb::next_token_logits(h, head), expected, 1e-5,
                   "logits[b, v] = h[b, T - 1, :] . W[v, :] + bias[v]: the bias too");
    WB_CHECK_CLOSE(wb::Tensor2(xt::view(wb::lm_head(h, head), xt::all(), 3, xt::all())), expected,
                   1e-5, "lm_head(h)[:, T - 1, :] is the same logits");
}

TEST_CASE("linear and lm_head equal a double-precision sum on drawn sizes",
          "[linear][lm_head][c:linear.rows][c:linear.per-token][c:lm_head.logits]") {
    // Sizes include 1 and odd sizes; each case draws its numbers from a seed shown on failure.
    const auto [B, T, in, out] =
        GENERATE(std::tuple<std::size_t, std::size_t, std::size_t, std::size_t>{1, 1, 1, 1},
                 std::tuple<std::size_t, std::size_t, std::size_t, std::size_t>{2, 3, 5, 7},
                 std::tuple<std::size_t, std::size_t, std::size_t, std::size_t>{3, 1, 17, 2});
    const unsigned seed = static_cast<unsigned>(100 + B * 1000 + T * 100 + in * 10 + out);
    INFO("B = " << B << ", T = " << T << ", in = " << in << ", out = " << out << ", seed " << seed);
    wb::Linear layer;
    layer.weight = wbtest::randn<wb::Tensor2>({out, in}, seed);
    layer.bias = wbtest::randn<wb::Tensor1>({out}, seed + 1);
    const auto x = wbtest::randn<wb::Tensor3>({B, T, in}, seed + 2);
    wb::Tensor3 expected = wb::Tensor3::from_shape({B, T, out});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t o = 0; o < out; ++o) {
                double s = layer.bias(o);
                for (std::size_t i = 0; i < in; ++i) s += double(x(b, t, i)) * layer.weight(o, i);
                expected(b, t, o) = static_cast<float>(s);
            }
    WB_CHECK_CLOSE(wb::linear(x, layer), expected, 1e-5,
                   "y[b, t, o] = sum_i x[b, t, i] W[o, i] + b[o], each token on its own");
    WB_CHECK_CLOSE(wb::lm_head(x, layer), expected, 1e-5, "lm_head is the same Linear layer");
    const wb::Tensor2 rows = xt::reshape_view(x, {B * T, in});
    const wb::Tensor2 y2 = wb::linear(rows, layer);
    WB_CHECK_CLOSE(y2, wb::Tensor2(xt::reshape_view(expected, {B * T, out})), 1e-5,
                   "linear on [N, in] rows: y[n, o] = sum_i x[n, i] W[o, i] + b[o]");
}
