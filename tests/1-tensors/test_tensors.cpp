// Chapter 1 checks: tensors. Every expected number below is hard-coded and says where it came
// from: by hand, or PyTorch 1.13 (`/usr/bin/python3`, float32). None is computed with the code
// under test.
#include "1-tensors/tensors.hpp"
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

namespace {

// 0, 1, 2, ... laid out row-major in `shape`: every element tells where it came from.
template <class T>
T arange_as(const typename T::shape_type& shape) {
    T t(shape);
    float v = 0.0f;
    for (auto& e : t) e = v++;
    return t;
}

// A tensor of `shape` holding `values` in row-major order (for shapes such as [2, 1], whose
// nested braces {{a}, {b}} are ambiguous for xt::xarray).
wb::Array shaped(const wb::Shape& shape, std::initializer_list<float> values) {
    wb::Array t = wb::Array::from_shape(shape);
    std::copy(values.begin(), values.end(), t.begin());
    return t;
}

// The elements of a small tensor, for messages: "[1, nan]".
std::string values_str(const wb::Array& a) {
    std::ostringstream out;
    out << '[';
    for (std::size_t i = 0; i < a.size(); ++i) out << (i ? ", " : "") << a.data()[i];
    out << ']';
    return out.str();
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

}  // namespace

// ---- indexing (§21.2) ------------------------------------------------------------------------

TEST_CASE("last_token is x[:, -1, :] and drops the T axis, randn(2, 4, 8) -> [B, D]",
          "[indexing][c:last_token.values]") {
    // §21.1–21.2: x = torch.randn(2, 4, 8): 3 axes, 64 numbers, x.size(-1) = 8,
    // x[0] is [4, 8], x[0, 0] is [8] (plain xtensor facts, stated here as the notes state them).
    auto x = wbtest::randn<wb::Tensor3>({2, 4, 8}, 42);
    CHECK(x.dimension() == 3);
    CHECK(x.size() == 64);
    CHECK(x.shape(2) == 8);
    WB_CHECK_SHAPE(xt::view(x, 0), (wb::Shape{4, 8}), "x[0] selects the first sequence");
    WB_CHECK_SHAPE(xt::view(x, 0, 0), (wb::Shape{8}), "x[0, 0] selects its first token");

    const wb::Tensor2 last = wb::last_token(x);
    WB_CHECK_SHAPE(last, (wb::Shape{2, 8}),
                   "x[:, -1, :] has shape [B, D]: an integer index removes the T axis");

    // x = arange(64).reshape(2, 4, 8): token t of sequence b holds b*32 + t*8 + 0..7 (by hand).
    const auto a = arange_as<wb::Tensor3>({2, 4, 8});
    const wb::Tensor2 expected = {{24, 25, 26, 27, 28, 29, 30, 31},
                                  {56, 57, 58, 59, 60, 61, 62, 63}};
    WB_CHECK_CLOSE(wb::last_token(a), expected, 1e-6,
                   "the last token is index T - 1 of axis 1 (not axis 0, not index 0)");
}

TEST_CASE("last_token_keep is x[:, -1:, :] and keeps the T axis, [B, 1, D]",
          "[indexing][c:last_token_keep.values]") {
    auto x = wbtest::randn<wb::Tensor3>({2, 4, 8}, 42);
    WB_CHECK_SHAPE(wb::last_token_keep(x), (wb::Shape{2, 1, 8}),
                   "x[:, -1:, :] has shape [B, 1, D]: a slice keeps the axis, with size 1");

    // arange(64).reshape(2, 4, 8)[:, -1:, :] (by hand: b*32 + 24 + j).
    const auto a = arange_as<wb::Tensor3>({2, 4, 8});
    const wb::Tensor3 expected = {{{24, 25, 26, 27, 28, 29, 30, 31}},
                                  {{56, 57, 58, 59, 60, 61, 62, 63}}};
    WB_CHECK_CLOSE(wb::last_token_keep(a), expected, 1e-6,
                   "the slice is range(T - 1, T) on axis 1");

    // T = 1: the only token is the last one.
    const auto one = arange_as<wb::Tensor3>({2, 1, 3});
    const wb::Tensor3 expected_one = {{{0, 1, 2}}, {{3, 4, 5}}};
    WB_CHECK_CLOSE(wb::last_token_keep(one), expected_one, 1e-6,
                   "with T = 1 the result is x itself");
}

TEST_CASE("drop_last_token is x[:, :-1, :] and drops only the last token, [B, T - 1, D]",
          "[indexing][c:drop_last_token.values]") {
    auto x = wbtest::randn<wb::Tensor3>({2, 4, 8}, 42);
    WB_CHECK_SHAPE(wb::drop_last_token(x), (wb::Shape{2, 3, 8}),
                   "x[:, :-1, :] keeps tokens 0 .. T-2: shape [B, T - 1, D]");

    // arange(12).reshape(2, 3, 2)[:, :-1, :] (by hand).
    const auto a = arange_as<wb::Tensor3>({2, 3, 2});
    const wb::Tensor3 expected = {{{0, 1}, {2, 3}}, {{6, 7}, {8, 9}}};
    WB_CHECK_CLOSE(
        wb::drop_last_token(a), expected, 1e-6,
        "keep the first T - 1 tokens (did you drop the first token instead, x[:, 1:, :]?)");

    // T = 1 leaves no token: [B, 0, D].
    const auto one = arange_as<wb::Tensor3>({2, 1, 3});
    WB_CHECK_SHAPE(wb::drop_last_token(one), (wb::Shape{2, 0, 3}),
                   "with T = 1 nothing is left: shape [B, 0, D]");
}

TEST_CASE("indexing functions reject a sequence with no tokens (T == 0)",
          "[indexing][errors][c:last_token.no-tokens][c:last_token_keep.no-tokens]"
          "[c:drop_last_token.no-tokens]") {
    const wb::Tensor3 empty = wb::Tensor3::from_shape({2, 0, 8});
    WB_CHECK_THROWS(wb::ShapeError, wb::last_token(empty),
                    "x[:, -1, :] needs T >= 1; name the function and the shape received",
                    "wb::last_token", "[2, 0, 8]");
    WB_CHECK_THROWS(wb::ShapeError, wb::last_token_keep(empty),
                    "x[:, -1:, :] needs T >= 1; name the function and the shape received",
                    "wb::last_token_keep", "[2, 0, 8]");
    WB_CHECK_THROWS(wb::ShapeError, wb::drop_last_token(empty),
                    "x[:, :-1, :] needs T >= 1; name the function and the shape received",
                    "wb::drop_last_token", "[2, 0, 8]");
}

// ---- heads (§21.3, §11, §18) -------------------------------------------------------------------

TEST_CASE("split_heads of a small arange input gives hard-coded heads",
          "[heads][c:split_heads.layout]") {
    // torch.arange(24.).reshape(1, 3, 8).reshape(1, 3, 2, 4).transpose(1, 2)
    const auto x = arange_as<wb::Tensor3>({1, 3, 8});
    const wb::Tensor4 expected = {{{{0, 1, 2, 3}, {8, 9, 10, 11}, {16, 17, 18, 19}},
                                   {{4, 5, 6, 7}, {12, 13, 14, 15}, {20, 21, 22, 23}}}};
    const wb::Tensor4 heads = wb::split_heads(x, 2);
    WB_CHECK_SHAPE(heads, (wb::Shape{1, 2, 3, 4}), "split_heads gives [B, H, T, d], d = D / H");
    // A plain reshape(1, 2, 3, 4) gives the same shape but heads {0..11} and {12..23}.
    WB_CHECK_CLOSE(heads, expected, 1e-6,
                   "head h of token t must be features h*d .. (h+1)*d - 1 of token t: did you "
                   "reshape to [B, H, T, d] without the transpose? Reshape to [B, T, H, d] first, "
                   "then swap axes 1 and 2");

    // One head is the identity up to a new axis: [B, T, D] -> [B, 1, T, D].
    const wb::Tensor4 single = wb::split_heads(x, 1);
    const wb::Tensor4 expected_single = {{{{0, 1, 2, 3, 4, 5, 6, 7},
                                           {8, 9, 10, 11, 12, 13, 14, 15},
                                           {16, 17, 18, 19, 20, 21, 22, 23}}}};
    WB_CHECK_CLOSE(single, expected_single, 1e-6, "with H = 1 the only head is all of x");
}

TEST_CASE("split_heads equals per-head slicing of the projections (B=2, T=4, D=8, H=2)",
          "[heads][c:split_heads.layout]") {
    // §21.3: q = nn.Linear(D, D, bias=False)(x); q.reshape(B, T, H, d).transpose(1, 2).
    const std::size_t B = 2, T = 4, D = 8, H = 2, d = D / H;
    const auto x = wbtest::randn<wb::Tensor3>({B, T, D}, 42);
    const auto W = wbtest::randn<wb::Tensor2>({D, D}, 7);  // [out, in], as nn.Linear stores it
    wb::Tensor3 q = wb::Tensor3::from_shape({B, T, D});    // q = x @ W.T, by plain loops
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t o = 0; o < D; ++o) {
                float s = 0.0f;
                for (std::size_t i = 0; i < D; ++i) s += x(b, t, i) * W(o, i);
                q(b, t, o) = s;
            }

    // Head h of token t is the slice q[b, t, h*d:(h+1)*d].
    wb::Tensor4 expected = wb::Tensor4::from_shape({B, H, T, d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t i = 0; i < d; ++i) expected(b, h, t, i) = q(b, t, h * d + i);

    const wb::Tensor4 heads = wb::split_heads(q, H);
    WB_CHECK_SHAPE(heads, (wb::Shape{2, 2, 4, 4}), "§11: [2, 4, 8] with H = 2 gives [2, 2, 4, 4]");
    WB_CHECK_CLOSE(heads, expected, 1e-6,
                   "heads[b, h, t, :] must equal q[b, t, h*d:(h+1)*d]: reshape to [B, T, H, d] "
                   "then transpose(1, 2); a reshape straight to [B, H, T, d] mixes tokens");
}

TEST_CASE("merge_heads inverts split_heads and has hard-coded values",
          "[heads][c:merge_heads.layout]") {
    // torch.tensor([[[[0., 1], [2, 3]], [[4, 5], [6, 7]]]]).transpose(1, 2).reshape(1, 2, 4)
    const auto heads = arange_as<wb::Tensor4>({1, 2, 2, 2});  // [B=1, H=2, T=2, d=2]
    const wb::Tensor3 expected = {{{0, 1, 4, 5}, {2, 3, 6, 7}}};
    const wb::Tensor3 merged = wb::merge_heads(heads);
    WB_CHECK_SHAPE(merged, (wb::Shape{1, 2, 4}), "merge_heads gives [B, T, H*d]");
    WB_CHECK_CLOSE(merged, expected, 1e-6,
                   "token t is head 0's row t followed by head 1's row t: transpose(1, 2) back to "
                   "[B, T, H, d] before the reshape; a plain reshape gives {0, 1, 2, 3}");

    // Round trip on random data, several head counts.
    const auto x = wbtest::randn<wb::Tensor3>({2, 5, 12}, 3);
    for (std::size_t H : {1, 2, 3, 4, 6, 12}) {
        INFO("H = " << H);
        WB_CHECK_CLOSE(wb::merge_heads(wb::split_heads(x, H)), x, 0.0,
                       "merge_heads(split_heads(x, H)) must give x back exactly");
    }
}

TEST_CASE("split_heads rejects H that does not divide D, and H == 0",
          "[heads][errors][c:split_heads.indivisible]") {
    const auto x = wbtest::randn<wb::Tensor3>({2, 4, 8}, 1);
    WB_CHECK_THROWS(wb::ShapeError, wb::split_heads(x, 3),
                    "D % H != 0 must be refused with D and H in the message", "wb::split_heads",
                    "[2, 4, 8]", "H = 3", "D = 8");
    WB_CHECK_THROWS(wb::ShapeError, wb::split_heads(x, 0),
                    "H = 0 must be refused before dividing by it", "wb::split_heads", "[2, 4, 8]",
                    "H = 0");
}

TEST_CASE("transpose_last2 swaps only the last two axes (K.transpose(-2, -1))",
          "[heads][c:transpose_last2.layout]") {
    const auto k = wbtest::randn<wb::Tensor4>({2, 3, 4, 5}, 9);
    WB_CHECK_SHAPE(wb::transpose_last2(k), (wb::Shape{2, 3, 5, 4}),
                   "[B, H, T, d] -> [B, H, d, T]: swap only T and d (xt::transpose without a "
                   "permutation reverses all four axes)");

    // torch.arange(12.).reshape(1, 2, 2, 3).transpose(-2, -1)
    const auto small = arange_as<wb::Tensor4>({1, 2, 2, 3});
    const wb::Tensor4 expected = {{{{0, 3}, {1, 4}, {2, 5}}, {{6, 9}, {7, 10}, {8, 11}}}};
    WB_CHECK_CLOSE(wb::transpose_last2(small), expected, 1e-6,
                   "out[b, h, i, j] = k[b, h, j, i]; batch and head stay where they are");
}

// ---- products (§21.4) ------------------------------------------------------------------------

TEST_CASE("dot is the sum of element-wise products, (q * k).sum()",
          "[products][c:dot.value][c:dot.length-mismatch]") {
    const wb::Tensor1 q = {1, 2, 3};
    const wb::Tensor1 k = {4, 5, 6};
    const float got = wb::dot(q, k);
    INFO("expected 1*4 + 2*5 + 3*6 = 32 (by hand), got "
         << got << "\nhint: multiply element-wise, then sum");
    CHECK(got == Approx(32.0f).epsilon(1e-6));

    const wb::Tensor1 u = {0.5f, -1.0f};
    const wb::Tensor1 v = {2.0f, 0.25f};
    INFO("dot([0.5, -1], [2, 0.25]) = 1 - 0.25 = 0.75 (by hand)");
    CHECK(wb::dot(u, v) == Approx(0.75f).epsilon(1e-6));

    WB_CHECK_THROWS(wb::ShapeError, wb::dot(q, u),
                    "vectors of different lengths have no dot product", "wb::dot", "[3]", "[2]");
}

TEST_CASE("matmul multiplies the last two axes per (batch, head), hand-computed values",
          "[products][c:matmul.product]") {
    // [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]] (by hand).
    const wb::Tensor4 a = {{{{1, 2}, {3, 4}}}};
    const wb::Tensor4 b = {{{{5, 6}, {7, 8}}}};
    const wb::Tensor4 expected = {{{{19, 22}, {43, 50}}}};
    WB_CHECK_CLOSE(wb::matmul(a, b), expected, 1e-5,
                   "out[i, j] = sum_k a[i, k] * b[k, j] (a matrix product, not element-wise *)");

    // a = (arange(24) % 7 - 3).reshape(2, 2, 2, 3), b = (arange(48) % 5 - 2).reshape(2, 2, 3, 4);
    // expected = (a @ b) in torch. Each (batch, head) pair has its own matrices.
    wb::Tensor4 a2 = wb::Tensor4::from_shape({2, 2, 2, 3});
    wb::Tensor4 b2 = wb::Tensor4::from_shape({2, 2, 3, 4});
    for (std::size_t i = 0; i < a2.size(); ++i) a2.data()[i] = float(int(i % 7) - 3);
    for (std::size_t i = 0; i < b2.size(); ++i) b2.data()[i] = float(int(i % 5) - 2);
    const wb::Tensor4 expected2 = {
        {{{1, 5, 4, -2}, {4, 2, -5, -2}}, {{7, 5, 3, -14}, {-2, -2, -2, 3}}},
        {{{7, -1, -14, 3}, {-5, 2, 4, 1}}, {{1, -8, -2, 4}, {5, 4, -2, -8}}}};
    const wb::Tensor4 out = wb::matmul(a2, b2);
    WB_CHECK_SHAPE(out, (wb::Shape{2, 2, 2, 4}), "[B, H, N, K] @ [B, H, K, M] gives [B, H, N, M]");
    WB_CHECK_CLOSE(out, expected2, 1e-5,
                   "B and H are batch axes: out[b, h] = a[b, h] . b[b, h] for every pair (b, h)");
}

TEST_CASE("matmul equals per-element dot products and builds Q K^T scores",
          "[products][c:matmul.product]") {
    // §21.4: scores = q @ k.transpose(-2, -1): scores[b, h, i, j] = q[b, h, i, :] . k[b, h, j, :]
    const std::size_t B = 2, H = 3, T = 4, d = 5;
    const auto q = wbtest::randn<wb::Tensor4>({B, H, T, d}, 11);
    const auto k = wbtest::randn<wb::Tensor4>({B, H, T, d}, 12);
    wb::Tensor4 expected = wb::Tensor4::from_shape({B, H, T, T});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < T; ++i)
                for (std::size_t j = 0; j < T; ++j) {
                    float s = 0.0f;  // (q_i * k_j).sum(), written out
                    for (std::size_t c = 0; c < d; ++c) s += q(b, h, i, c) * k(b, h, j, c);
                    expected(b, h, i, j) = s;
                }
    const wb::Tensor4 scores = wb::matmul(q, wb::transpose_last2(k));
    WB_CHECK_SHAPE(scores, (wb::Shape{2, 3, 4, 4}),
                   "scores of [B, H, T, d] queries are [B, H, T, T]");
    WB_CHECK_CLOSE(scores, expected, 1e-5,
                   "each score is the dot product of one query row and one key row of the same "
                   "(batch, head)");
}

TEST_CASE("matmul rejects mismatched B, H or K", "[products][errors][c:matmul.shape-mismatch]") {
    const auto a = wbtest::randn<wb::Tensor4>({2, 3, 4, 5}, 1);
    const auto bad_k = wbtest::randn<wb::Tensor4>({2, 3, 4, 6}, 2);
    const auto bad_b = wbtest::randn<wb::Tensor4>({1, 3, 5, 6}, 3);
    const auto bad_h = wbtest::randn<wb::Tensor4>({2, 2, 5, 6}, 4);
    WB_CHECK_THROWS(wb::ShapeError, wb::matmul(a, bad_k),
                    "the inner sizes must agree: a's last axis (K) and b's axis 2", "wb::matmul",
                    "[2, 3, 4, 5]", "[2, 3, 4, 6]");
    WB_CHECK_THROWS(wb::ShapeError, wb::matmul(a, bad_b), "the batch axes B must agree",
                    "wb::matmul", "[2, 3, 4, 5]", "[1, 3, 5, 6]");
    WB_CHECK_THROWS(wb::ShapeError, wb::matmul(a, bad_h), "the head axes H must agree",
                    "wb::matmul", "[2, 3, 4, 5]", "[2, 2, 5, 6]");
}

// ---- softmax (§21.4) -------------------------------------------------------------------------

TEST_CASE("softmax of one row matches hand-computed values", "[softmax][c:softmax.last-axis]") {
    // torch.softmax(torch.tensor([[1., 2., 3.]]), -1)
    const wb::Array x = {{1.0f, 2.0f, 3.0f}};
    const wb::Array expected = {{0.0900306f, 0.2447285f, 0.6652410f}};
    WB_CHECK_CLOSE(wb::softmax(x), expected, 1e-6,
                   "softmax(x)_i = exp(x_i - max) / sum_j exp(x_j - max), along the LAST axis");

    // A rank-1 input: torch.softmax(torch.tensor([0.5, -1.5, 2.0, 0.0]), -1)
    const wb::Array v = {0.5f, -1.5f, 2.0f, 0.0f};
    const wb::Array expected_v = {0.1606799f, 0.0217457f, 0.7201172f, 0.0974573f};
    WB_CHECK_CLOSE(wb::softmax(v), expected_v, 1e-6, "a vector is one row");
}

TEST_CASE("softmax of a 3x4 matrix is right in every row, not just summing to 1 (keep_dims trap)",
          "[softmax][c:softmax.last-axis]") {
    // Every row is [a, a+1, a+2, a+3], so every row has the same softmax:
    // torch.softmax(torch.tensor([1., 2., 3., 4.]), -1) = [0.0320586, 0.0871443, 0.2368828, 0.6439143]
    const wb::Array s = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}};
    const wb::Array expected = {{0.0320586f, 0.0871443f, 0.2368828f, 0.6439143f},
                                {0.0320586f, 0.0871443f, 0.2368828f, 0.6439143f},
                                {0.0320586f, 0.0871443f, 0.2368828f, 0.6439143f}};
    const wb::Array p = wb::softmax(s);

    // Property first: every row sums to 1 (this alone would NOT catch the trap).
    for (std::size_t r = 0; r < 3; ++r) {
        float sum = 0.0f;
        for (std::size_t c = 0; c < 4; ++c) sum += p(r, c);
        INFO("row " << r << " sums to " << sum
                    << ", expected 1\nhint: divide by the sum over "
                       "the last axis");
        CHECK(sum == Approx(1.0f).margin(1e-5));
    }
    WB_CHECK_CLOSE(
        p, expected, 1e-6,
        "rows can sum to 1 and still be wrong: `x - xt::amax(x, {1}, xt::keep_dims)` "
        "used lazily gives wrong maxima (row 0 becomes [0.25, 0.25, 0.25, 0.25]); store "
        "the max (and the sum) in an Array before broadcasting (README: the keep_dims trap)");
}

TEST_CASE("softmax survives logits of +-1000 (stable, exact values)",
          "[softmax][c:softmax.stable]") {
    // torch.softmax(torch.tensor([[1000., 0, -1000], [1000, 1000, -1000], [-1000, -999, -1000]]), -1)
    const wb::Array x = {{1000, 0, -1000}, {1000, 1000, -1000}, {-1000, -999, -1000}};
    const wb::Array expected = {{1, 0, 0}, {0.5f, 0.5f, 0}, {0.2119416f, 0.5761169f, 0.2119416f}};
    const wb::Array p = wb::softmax(x);
    for (std::size_t i = 0; i < p.size(); ++i) {
        INFO("element " << i << " is " << p.data()[i]
                        << "\nhint: exp(1000) overflows to inf and inf/inf is NaN; exp(-1000) "
                           "underflows to 0 and 0/0 is NaN: subtract the row maximum first");
        CHECK(std::isfinite(p.data()[i]));
    }
    WB_CHECK_CLOSE(p, expected, 1e-6,
                   "subtract each row's maximum before exp: softmax(x) = softmax(x - max(x))");
}

TEST_CASE("softmax works on rank-4 scores [B, H, T, T] along the last axis",
          "[softmax][c:softmax.last-axis]") {
    // torch.softmax(x, -1) for x of shape [2, 1, 2, 3] (values below).
    const wb::Array x = {{{{0.5f, -1.5f, 2.0f}, {1.0f, 1.0f, 1.0f}}},
                         {{{-3.0f, 0.0f, 3.0f}, {10.0f, -10.0f, 0.0f}}}};
    const wb::Array expected = {
        {{{0.17803021f, 0.024093768f, 0.79787600f}, {0.33333334f, 0.33333334f, 0.33333334f}}},
        {{{0.0023556333f, 0.047314156f, 0.95033026f},
          {0.99995458f, 2.0610600e-09f, 4.5397868e-05f}}}};
    const wb::Array p = wb::softmax(x);
    WB_CHECK_SHAPE(p, (wb::Shape{2, 1, 2, 3}), "softmax keeps the shape");
    WB_CHECK_CLOSE(p, expected, 1e-6,
                   "for [B, H, T, T] scores the last axis is the key position: normalise along "
                   "dim=-1, not along axis 0 or 1");
}

TEST_CASE("softmax rejects a rank-0 input and an empty last axis",
          "[softmax][errors][c:softmax.no-last-axis]") {
    const wb::Array scalar = 3.0f;
    WB_CHECK_THROWS(wb::ShapeError, wb::softmax(scalar), "a scalar has no last axis to normalise",
                    "wb::softmax", "[]");
    const wb::Array empty = wb::Array::from_shape({2, 0});
    WB_CHECK_THROWS(wb::ShapeError, wb::softmax(empty),
                    "an empty row has no probabilities summing to 1", "wb::softmax", "[2, 0]");
}

// ---- reductions (§21.4) ----------------------------------------------------------------------

TEST_CASE("mean with and without keepdims, shapes and values",
          "[reductions][c:mean.values][c:mean.negative-axis]") {
    // m = torch.tensor([[1., 2, 3], [4, 5, 7]])
    const wb::Array m = {{1, 2, 3}, {4, 5, 7}};
    // m.mean(-1) = [2, 5.3333335]; m.mean(-1, keepdim=True) = [[2], [5.3333335]]; m.mean(0) =
    // [2.5, 3.5, 5] (torch)
    const wb::Array row_means = {2.0f, 5.3333335f};
    const wb::Array row_means_kept = shaped({2, 1}, {2.0f, 5.3333335f});
    const wb::Array col_means = {2.5f, 3.5f, 5.0f};
    const wb::Array col_means_kept = {{2.5f, 3.5f, 5.0f}};
    WB_CHECK_CLOSE(wb::mean(m, -1, false), row_means, 1e-5,
                   "mean over the last axis (-1 counts from the end); keepdims=false removes it");
    WB_CHECK_CLOSE(wb::mean(m, 1, true), row_means_kept, 1e-5,
                   "keepdims=true keeps the axis with size 1: [2, 3] -> [2, 1]");
    WB_CHECK_CLOSE(wb::mean(m, -1, true), row_means_kept, 1e-5,
                   "keepdims=true keeps the axis with size 1: [2, 3] -> [2, 1]");
    WB_CHECK_CLOSE(wb::mean(m, 0, false), col_means, 1e-5, "axis 0 averages the rows together");
    WB_CHECK_CLOSE(wb::mean(m, -2, true), col_means_kept, 1e-5,
                   "axis -2 of a matrix is axis 0; keepdims gives [1, 3]");

    // §21.4: scores [B, H, T, T] -> scores.mean(dim=-1, keepdim=True) is [B, H, T, 1].
    const auto scores = wbtest::randn<wb::Array>({2, 2, 4, 4}, 5);
    WB_CHECK_SHAPE(wb::mean(scores, -1, true), (wb::Shape{2, 2, 4, 1}),
                   "keepdim=True turns [B, H, T, T] into [B, H, T, 1], ready to broadcast");
    WB_CHECK_SHAPE(wb::mean(scores, -1, false), (wb::Shape{2, 2, 4}),
                   "without keepdim the reduced axis disappears: [B, H, T]");
}

TEST_CASE("mean rejects an axis out of range and an empty axis",
          "[reductions][errors][c:mean.axis-range][c:mean.empty-axis]") {
    const wb::Array m = {{1, 2, 3}, {4, 5, 6}};
    WB_CHECK_THROWS(wb::ShapeError, wb::mean(m, 2, false),
                    "a [2, 3] tensor has axes 0, 1 (or -2, -1)", "wb::mean", "axis 2", "[2, 3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::mean(m, -3, true),
                    "a [2, 3] tensor has axes 0, 1 (or -2, -1)", "wb::mean", "axis -3", "[2, 3]");
    const wb::Array empty = wb::Array::from_shape({2, 0});
    WB_CHECK_THROWS(wb::ShapeError, wb::mean(empty, 1, false),
                    "the mean of no numbers is undefined", "wb::mean", "[2, 0]");
}

TEST_CASE("var with correction 0 (LayerNorm) and correction 1 (torch.var default)",
          "[reductions][c:var.values][c:var.shape][c:var.negative-axis]") {
    // torch.var(torch.tensor([1., 2, 3, 4]), 0, unbiased=False) = 1.25; unbiased=True = 1.6666666
    const wb::Array v = {1, 2, 3, 4};
    const wb::Array pop = wb::var(v, 0, 0, false);
    const wb::Array sample = wb::var(v, -1, 1, false);
    WB_CHECK_SHAPE(pop, (wb::Shape{}), "reducing the only axis leaves a scalar");
    WB_CHECK_CLOSE(pop, wb::Array(1.25f), 1e-6,
                   "correction 0 divides the squared deviations (5) by n = 4");
    WB_CHECK_CLOSE(sample, wb::Array(1.6666666f), 1e-6,
                   "correction 1 divides the squared deviations (5) by n - 1 = 3: did you ignore "
                   "`correction`?");

    // m = torch.tensor([[1., 2, 3], [4, 5, 7]]):
    // m.var(0, unbiased=False) = [2.25, 2.25, 4]; m.var(0, unbiased=True) = [4.5, 4.5, 8]
    // m.var(1, unbiased=False, keepdim=True) = [[0.6666667], [1.5555556]]
    // m.var(1, unbiased=True) = [1, 2.3333333]
    const wb::Array m = {{1, 2, 3}, {4, 5, 7}};
    const wb::Array v0c0 = {2.25f, 2.25f, 4.0f};
    const wb::Array v0c1 = {4.5f, 4.5f, 8.0f};
    const wb::Array v1c0_kept = shaped({2, 1}, {0.6666667f, 1.5555556f});
    const wb::Array v1c1 = {1.0f, 2.3333333f};
    // With several rows, a lazy `auto mu = xt::mean(x, {axis}, xt::keep_dims)` subtracted from x
    // gives wrong deviations (the keep_dims trap); a single vector does not show it.
    const char* trap =
        " (right for a vector but wrong here? store the keep_dims mean in an Array "
        "before subtracting it: README, the keep_dims trap)";
    WB_CHECK_CLOSE(wb::var(m, 0, 0, false), v0c0, 1e-5,
                   std::string("variance down the columns, divide by n") + trap);
    WB_CHECK_CLOSE(wb::var(m, 0, 1, false), v0c1, 1e-5,
                   std::string("variance down the columns, divide by n - 1") + trap);
    WB_CHECK_CLOSE(wb::var(m, -1, 0, true), v1c0_kept, 1e-5,
                   std::string("per-row variance as LayerNorm needs it: correction 0, keepdims -> "
                               "[2, 1]") +
                       trap);
    WB_CHECK_CLOSE(wb::var(m, 1, 1, false), v1c1, 1e-5,
                   std::string("per-row sample variance, shape [2]") + trap);
}

TEST_CASE("var rejects an axis out of range and n - correction <= 0",
          "[reductions][errors][c:var.axis-range][c:var.too-few-values]") {
    const wb::Array m = {{1, 2, 3}, {4, 5, 6}};
    WB_CHECK_THROWS(wb::ShapeError, wb::var(m, 2, 0, false),
                    "a [2, 3] tensor has axes 0, 1 (or -2, -1)", "wb::var", "axis 2", "[2, 3]");
    const wb::Array column = shaped({3, 1}, {1, 2, 3});
    WB_CHECK_THROWS(wb::ValueError, wb::var(column, 1, 1, false),
                    "one value has no sample variance: n - correction = 0", "wb::var", "[3, 1]",
                    "n = 1", "correction = 1");
    const wb::Array empty = wb::Array::from_shape({2, 0});
    WB_CHECK_THROWS(wb::ValueError, wb::var(empty, -1, 0, false),
                    "zero values have no variance: n - correction = 0", "wb::var", "[2, 0]",
                    "n = 0");
}

// ---- joining (§21.5) -------------------------------------------------------------------------

TEST_CASE("cat joins along an existing axis, stack along a new one",
          "[joining][c:cat.values][c:stack.values]") {
    const wb::Array a = {{1, 2, 3}, {4, 5, 6}};
    const wb::Array b = {{7, 8, 9}, {10, 11, 12}};

    // §21.5: torch.cat([a, b], dim=0) is [4, 3]; torch.stack([a, b], dim=0) is [2, 2, 3].
    const wb::Array cat0 = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}};
    const wb::Array stack0 = {{{1, 2, 3}, {4, 5, 6}}, {{7, 8, 9}, {10, 11, 12}}};
    WB_CHECK_CLOSE(wb::cat({a, b}, 0), cat0, 0.0, "cat along axis 0: [2, 3] + [2, 3] -> [4, 3]");
    WB_CHECK_CLOSE(wb::stack({a, b}, 0), stack0, 0.0,
                   "stack makes a NEW axis: two [2, 3] -> [2, 2, 3] (cat would give [4, 3])");

    // torch.cat([a, b], dim=1) and dim=-1: [[1, 2, 3, 7, 8, 9], [4, 5, 6, 10, 11, 12]]
    const wb::Array cat1 = {{1, 2, 3, 7, 8, 9}, {4, 5, 6, 10, 11, 12}};
    WB_CHECK_CLOSE(wb::cat({a, b}, 1), cat1, 0.0,
                   "cat along axis 1 joins each row of a with the same row of b (appending the "
                   "whole of b after the whole of a is only right for axis 0)");
    WB_CHECK_CLOSE(wb::cat({a, b}, -1), cat1, 0.0, "axis -1 is the last axis");

    // Sizes may differ along the joined axis: [2, 3] + [2, 1] -> [2, 4] (by hand).
    const wb::Array c = shaped({2, 1}, {-1, -2});
    const wb::Array cat_c = {{1, 2, 3, -1}, {4, 5, 6, -2}};
    WB_CHECK_CLOSE(wb::cat({a, c}, 1), cat_c, 0.0, "only the joined axis may differ");
    // Three inputs along axis 0 (by hand).
    const wb::Array cat_abc = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}, {1, 2, 3}, {4, 5, 6}};
    WB_CHECK_CLOSE(wb::cat({a, b, a}, 0), cat_abc, 0.0, "cat takes any number of tensors");

    // torch.stack([a, b], dim=1) = [[[1, 2, 3], [7, 8, 9]], [[4, 5, 6], [10, 11, 12]]]
    const wb::Array stack1 = {{{1, 2, 3}, {7, 8, 9}}, {{4, 5, 6}, {10, 11, 12}}};
    WB_CHECK_CLOSE(wb::stack({a, b}, 1), stack1, 0.0, "the new axis at position 1: [2, 2, 3]");
    // torch.stack([a, b], dim=-1) = [[[1, 7], [2, 8], [3, 9]], [[4, 10], [5, 11], [6, 12]]]
    const wb::Array stack_last = {{{1, 7}, {2, 8}, {3, 9}}, {{4, 10}, {5, 11}, {6, 12}}};
    WB_CHECK_CLOSE(wb::stack({a, b}, -1), stack_last, 0.0,
                   "stack(dim=-1) puts the new axis last: [2, 3, 2]; for stack, -1 means "
                   "position rank, since the result has one more axis");
}

TEST_CASE("cat and stack reject empty lists, mismatched shapes and bad axes",
          "[joining][errors][c:cat.errors][c:stack.errors]") {
    const wb::Array a = {{1, 2, 3}, {4, 5, 6}};
    const wb::Array wide = wb::Array::from_shape({2, 4});
    const wb::Array flat = {1, 2, 3};
    const wb::Array tall = wb::Array::from_shape({3, 2});

    WB_CHECK_THROWS(wb::ShapeError, wb::cat({}, 0), "nothing to join", "wb::cat", "empty");
    WB_CHECK_THROWS(wb::ShapeError, wb::cat({a, wide}, 0),
                    "cat needs every axis but the joined one to match", "wb::cat", "[2, 4]",
                    "[2, 3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::cat({a, flat}, 0), "cat needs tensors of the same rank",
                    "wb::cat", "[3]", "[2, 3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::cat({a, a}, 2), "a [2, 3] tensor has axes 0, 1 (or -2, -1)",
                    "wb::cat", "axis 2", "[2, 3]");

    WB_CHECK_THROWS(wb::ShapeError, wb::stack({}, 0), "nothing to join", "wb::stack", "empty");
    WB_CHECK_THROWS(wb::ShapeError, wb::stack({a, tall}, 0), "stack needs identical shapes",
                    "wb::stack", "[3, 2]", "[2, 3]");
    WB_CHECK_THROWS(
        wb::ShapeError, wb::stack({a, a}, 3),
        "stacking [2, 3] tensors gives rank 3: the new axis goes at 0 .. 2 (or -3 .. -1)",
        "wb::stack", "axis 3", "[2, 3]");
    WB_CHECK_THROWS(
        wb::ShapeError, wb::stack({a, a}, -4),
        "stacking [2, 3] tensors gives rank 3: the new axis goes at 0 .. 2 (or -3 .. -1)",
        "wb::stack", "axis -4", "[2, 3]");
}

// ---- comparing (§21.8) -----------------------------------------------------------------------

TEST_CASE("max_abs_diff reports the largest difference and propagates NaN",
          "[comparing][c:max_abs_diff.value][c:max_abs_diff.nan]") {
    const wb::Array a = {{1.0f, 2.0f}, {3.0f, 4.0f}};
    const wb::Array b = {{1.5f, 2.0f}, {3.0f, 1.0f}};
    const float got = wb::max_abs_diff(a, b);
    INFO("(a - b).abs().max() = max(0.5, 0, 0, 3) = 3 (by hand), got " << got);
    CHECK(got == Approx(3.0f).epsilon(1e-6));
    // Negative differences count by their size (by hand: |-7| = 7).
    const wb::Array c = {{1.0f, 2.0f}, {3.0f, 11.0f}};
    CHECK(wb::max_abs_diff(a, c) == Approx(7.0f).epsilon(1e-6));
    CHECK(wb::max_abs_diff(a, a) == 0.0f);

    // torch: (torch.tensor([1., nan, 3]) - torch.tensor([1., 2, 3])).abs().max() = nan
    const wb::Array with_nan = {1.0f, kNaN, 3.0f};
    const wb::Array ref = {1.0f, 2.0f, 3.0f};
    const float nan_diff = wb::max_abs_diff(with_nan, ref);
    INFO("got " << nan_diff
                << ", expected nan\nhint: a NaN must not hide: std::max(d, NaN) "
                   "keeps d, so test std::isnan");
    CHECK(std::isnan(nan_diff));
}

TEST_CASE("allclose uses atol + rtol*|b| and never calls NaN close",
          "[comparing][c:allclose.rule][c:allclose.nan-inf]") {
    // Each expected answer is torch.allclose on the same float32 tensors.
    struct Case {
        wb::Array a, b;
        float rtol, atol;
        bool expected;
        const char* why;
    };
    const std::vector<Case> cases = {
        {{1.0f}, {1.000001f}, 1e-5f, 1e-8f, true, "1e-6 apart, allowed 1e-5*1 + 1e-8"},
        {{100.0f}, {100.0005f}, 1e-5f, 1e-8f, true, "rtol scales with |b|: allowed ~1e-3"},
        {{1e-9f}, {0.0f}, 1e-5f, 1e-8f, true, "atol covers numbers near 0"},
        {{1e-7f}, {0.0f}, 1e-5f, 1e-8f, false, "1e-7 > atol 1e-8 and rtol*|0| = 0"},
        {{1.0f, 2.0f},
         {1.001f, 2.0f},
         1e-5f,
         1e-8f,
         false,
         "one element 1e-3 apart is enough to fail"},
        {{1.0f, 2.0f}, {1.001f, 2.0f}, 0.0f, 1e-2f, true, "atol 1e-2 allows 1e-3"},
        {{1.0f, 2.0f}, {1.001f, 2.0f}, 1e-2f, 0.0f, true, "rtol 1e-2 * 1.001 allows 1e-3"},
        {{1.0f}, {2.0f}, 0.5f, 0.0f, true, "|1-2| = 1 <= 0.5*|b| = 1: rtol uses |b|"},
        {{2.0f}, {1.0f}, 0.5f, 0.0f, false, "|2-1| = 1 > 0.5*|b| = 0.5: not symmetric"},
        {{kNaN}, {kNaN}, 1e-5f, 1e-8f, false, "NaN is never close, not even to NaN"},
        {{1.0f, kNaN}, {1.0f, 2.0f}, 1e-5f, 1e-8f, false, "one NaN makes the whole answer false"},
        {{kInf},
         {kInf},
         1e-5f,
         1e-8f,
         true,
         "equal infinities are close (inf - inf is NaN, "
         "so compare for equality first)"},
        {{kInf},
         {-kInf},
         1e-5f,
         1e-8f,
         false,
         "opposite infinities are not (|inf - -inf| = inf "
         "<= rtol*inf is true: handle infinities first)"},
        {{1.0f},
         {kInf},
         1e-5f,
         1e-8f,
         false,
         "a finite number is not close to inf, although "
         "|1 - inf| <= rtol*|inf| holds"},
    };
    for (const auto& c : cases) {
        const bool got = wb::allclose(c.a, c.b, c.rtol, c.atol);
        INFO("allclose(a, b, rtol=" << c.rtol << ", atol=" << c.atol
                                    << ") with a = " << values_str(c.a)
                                    << ", b = " << values_str(c.b) << ": expected " << c.expected
                                    << ", got " << got << "\nhint: " << c.why);
        CHECK(got == c.expected);
    }
    // Defaults are torch's: rtol = 1e-5, atol = 1e-8.
    const wb::Array x = {1.0f};
    const wb::Array y = {1.000001f};
    const wb::Array z = {1.001f};
    CHECK(wb::allclose(x, y));
    CHECK_FALSE(wb::allclose(x, z));
}

TEST_CASE("max_abs_diff and allclose reject mismatched shapes",
          "[comparing][errors][c:max_abs_diff.shape-mismatch][c:allclose.shape-mismatch]") {
    const wb::Array a = wb::Array::from_shape({2, 3});
    const wb::Array b = wb::Array::from_shape({3, 2});
    WB_CHECK_THROWS(wb::ShapeError, wb::max_abs_diff(a, b), "compare tensors of the same shape",
                    "wb::max_abs_diff", "[2, 3]", "[3, 2]");
    WB_CHECK_THROWS(wb::ShapeError, wb::allclose(a, b), "compare tensors of the same shape",
                    "wb::allclose", "[2, 3]", "[3, 2]");
}

TEST_CASE("matmul's output does not depend on what its memory held before",
          "[products][c:matmul.product]") {
    // A buffer of the output's size is filled with NaN and freed just before each call: an
    // allocator hands the same memory back, so a result accumulated into a buffer that was
    // never zeroed shows the NaN. K = 0 (an empty sum) must give exact zeros as well.
    for (const std::size_t K : {std::size_t(3), std::size_t(0)}) {
        const auto a = wbtest::randn<wb::Tensor4>({2, 1, 3, K}, 71);
        const auto b = wbtest::randn<wb::Tensor4>({2, 1, K, 4}, 72);
        wb::Tensor4 expected = wb::Tensor4::from_shape({2, 1, 3, 4});
        for (std::size_t x = 0; x < 2; ++x)
            for (std::size_t i = 0; i < 3; ++i)
                for (std::size_t j = 0; j < 4; ++j) {
                    double s = 0.0;
                    for (std::size_t p = 0; p < K; ++p) s += double(a(x, 0, i, p)) * b(x, 0, p, j);
                    expected(x, 0, i, j) = static_cast<float>(s);
                }
        {
            wb::Tensor4 poison = wb::Tensor4::from_shape({2, 1, 3, 4});
            poison.fill(kNaN);
        }
        const wb::Tensor4 got = wb::matmul(a, b);
        INFO("K = " << K);
        WB_CHECK_CLOSE(got, expected, 1e-5,
                       "every output entry is assigned its sum (start from zeros, or assign "
                       "rather than +=): the memory of a fresh tensor may hold anything");
    }
}

TEST_CASE("cat joins three inputs of different sizes along a middle axis, stack along any axis",
          "[joining][c:cat.values][c:stack.values]") {
    // [2, 1, 2] + [2, 3, 2] + [2, 2, 2] along axis 1 (and -2) -> [2, 6, 2]; expected built
    // here index by index: out[o, offset_i + j, k] = xs[i][o, j, k].
    const std::vector<wb::Array> xs = {wbtest::randn<wb::Array>({2, 1, 2}, 81),
                                       wbtest::randn<wb::Array>({2, 3, 2}, 82),
                                       wbtest::randn<wb::Array>({2, 2, 2}, 83)};
    wb::Array expected = wb::Array::from_shape({2, 6, 2});
    std::size_t offset = 0;
    for (const wb::Array& x : xs) {
        for (std::size_t o = 0; o < 2; ++o)
            for (std::size_t j = 0; j < x.shape(1); ++j)
                for (std::size_t k = 0; k < 2; ++k) expected(o, offset + j, k) = x(o, j, k);
        offset += x.shape(1);
    }
    WB_CHECK_CLOSE(wb::cat(xs, 1), expected, 0.0,
                   "each input contributes its own n_i rows per outer index: offsets are the "
                   "sums of the earlier inputs' sizes along the axis, not i * n_0");
    WB_CHECK_CLOSE(wb::cat(xs, -2), expected, 0.0, "axis -2 of a rank-3 tensor is axis 1");
    // stack of three [2, 3] along every position of the new axis, 0 .. 2 and -3 .. -1.
    const std::vector<wb::Array> ys = {wbtest::randn<wb::Array>({2, 3}, 84),
                                       wbtest::randn<wb::Array>({2, 3}, 85),
                                       wbtest::randn<wb::Array>({2, 3}, 86)};
    for (const int axis : {0, 1, 2, -1, -2, -3}) {
        const std::size_t at = static_cast<std::size_t>(axis < 0 ? axis + 3 : axis);
        const wb::Array got = wb::stack(ys, axis);
        INFO("stack of three [2, 3] at axis " << axis);
        wb::Shape want_shape = {2, 3};
        want_shape.insert(want_shape.begin() + static_cast<long>(at), 3);
        WB_CHECK_SHAPE(got, want_shape, "the new axis of size 3 sits at position axis");
        if (wbtest::shape_of(got) != want_shape) continue;
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t r = 0; r < 2; ++r)
                for (std::size_t c = 0; c < 3; ++c) {
                    std::vector<std::size_t> idx = {r, c};
                    idx.insert(idx.begin() + static_cast<long>(at), i);
                    CHECK(got.element(idx.begin(), idx.end()) == ys[i](r, c));
                }
    }
}

TEST_CASE("cat and stack check every input, not only the second",
          "[joining][errors][c:cat.errors][c:stack.errors]") {
    const wb::Array a = {{1, 2, 3}, {4, 5, 6}};
    const wb::Array wide = wb::Array::from_shape({2, 4});
    const wb::Array tall = wb::Array::from_shape({3, 2});
    WB_CHECK_THROWS(wb::ShapeError, wb::cat({a, a, a, wide}, 0),
                    "the last input must fit too: check xs[1] .. xs[n-1]", "wb::cat", "[2, 4]",
                    "[2, 3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::stack({a, a, tall}, 0),
                    "the last input must have xs[0]'s shape too", "wb::stack", "[3, 2]", "[2, 3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::cat({a, a}, -3), "a [2, 3] tensor has axes -2 .. 1",
                    "wb::cat", "axis -3", "[2, 3]");
}

TEST_CASE("var refuses an axis below -rank, and mean and var reduce any axis of rank 3",
          "[reductions][errors][c:var.axis-range][c:var.negative-axis][c:mean.negative-axis]"
          "[c:mean.values][c:var.values][c:var.shape]") {
    const wb::Array m = {{1, 2, 3}, {4, 5, 6}};
    WB_CHECK_THROWS(wb::ShapeError, wb::var(m, -3, 0, false),
                    "a [2, 3] tensor has axes 0, 1 (or -2, -1)", "wb::var", "axis -3", "[2, 3]");
    // x [2, 3, 4]: the mean and the variance along each axis, written out here in double.
    const auto x = wbtest::randn<wb::Array>({2, 3, 4}, 91);
    for (int axis = -3; axis < 3; ++axis) {
        const std::size_t ax = static_cast<std::size_t>(axis < 0 ? axis + 3 : axis);
        for (const int correction : {0, 1}) {
            for (const bool keep : {false, true}) {
                wb::Shape out_shape;
                for (std::size_t i = 0; i < 3; ++i) {
                    if (i != ax)
                        out_shape.push_back(x.shape(i));
                    else if (keep)
                        out_shape.push_back(1);
                }
                wb::Array mu = wb::Array::from_shape(out_shape);
                wb::Array vv = wb::Array::from_shape(out_shape);
                std::size_t k = 0;
                for (std::size_t i0 = 0; i0 < (ax == 0 ? 1 : 2); ++i0)
                    for (std::size_t i1 = 0; i1 < (ax == 1 ? 1 : 3); ++i1)
                        for (std::size_t i2 = 0; i2 < (ax == 2 ? 1 : 4); ++i2, ++k) {
                            const std::size_t n = x.shape(ax);
                            double sum = 0.0, sq = 0.0;
                            for (std::size_t j = 0; j < n; ++j) {
                                std::size_t idx[3] = {i0, i1, i2};
                                idx[ax] = j;
                                sum += x(idx[0], idx[1], idx[2]);
                            }
                            const double mean = sum / double(n);
                            for (std::size_t j = 0; j < n; ++j) {
                                std::size_t idx[3] = {i0, i1, i2};
                                idx[ax] = j;
                                const double d = x(idx[0], idx[1], idx[2]) - mean;
                                sq += d * d;
                            }
                            mu.data()[k] = static_cast<float>(mean);
                            vv.data()[k] = static_cast<float>(sq / double(n - correction));
                        }
                INFO("axis " << axis << ", correction " << correction << ", keepdims " << keep);
                WB_CHECK_CLOSE(wb::mean(x, axis, keep), mu, 1e-5,
                               "the mean along one axis of a [2, 3, 4] tensor");
                WB_CHECK_CLOSE(wb::var(x, axis, correction, keep), vv, 1e-5,
                               "squared deviations from the mean along the axis, divided by "
                               "n - correction");
            }
        }
    }
}

TEST_CASE(
    "max_abs_diff shows a NaN from either side, inf - inf included, and is 0 for empty tensors",
    "[comparing][c:max_abs_diff.nan][c:max_abs_diff.empty][c:max_abs_diff.value]") {
    const wb::Array ref = {1.0f, 2.0f, 3.0f};
    const wb::Array nan_in_b = {1.0f, kNaN, 3.0f};
    const wb::Array nan_first = {kNaN, 2.0f, 30.0f};
    const wb::Array inf = {kInf, 2.0f, 3.0f};
    INFO(
        "hint: the NaN may come from b, sit at the first or the last element, or be the "
        "difference inf - inf: test each difference with std::isnan");
    CHECK(std::isnan(wb::max_abs_diff(ref, nan_in_b)));
    CHECK(std::isnan(wb::max_abs_diff(nan_first, ref)));
    CHECK(std::isnan(wb::max_abs_diff(inf, inf)));
    CHECK(wb::max_abs_diff(wb::Array::from_shape({0, 3}), wb::Array::from_shape({0, 3})) == 0.0f);
}

TEST_CASE("var subtracts the mean first: values shifted by 10000 keep their variance",
          "[reductions][c:var.values]") {
    // [10001, 10002, 10003, 10004] is [1, 2, 3, 4] + 10000: the same deviations from the mean
    // (10002.5, exact in float), so the same variances, 1.25 and 5/3 (by hand, guide §5).
    // In float, E[x^2] - E[x]^2 subtracts two numbers near 1.0e8, where floats are 8 apart.
    INFO(
        "hint: sum the squared deviations (x - mean)^2; the mean of the squares minus the "
        "square of the mean loses every digit in float when the values sit far from 0");
    const wb::Array v = {10001, 10002, 10003, 10004};
    WB_CHECK_CLOSE(wb::var(v, 0, 0, false), wb::Array(1.25f), 1e-5,
                   "correction 0: squared deviations 5, divided by n = 4");
    WB_CHECK_CLOSE(wb::var(v, -1, 1, false), wb::Array(1.6666666f), 1e-5,
                   "correction 1: squared deviations 5, divided by n - 1 = 3");
}

TEST_CASE("max_abs_diff is |a - b| also where a and b have opposite signs",
          "[comparing][c:max_abs_diff.value]") {
    // (torch.tensor([1., -2]) - torch.tensor([-1., 2])).abs().max() = 4 (by hand: |-2 - 2|).
    const wb::Array a = {1.0f, -2.0f};
    const wb::Array b = {-1.0f, 2.0f};
    const float got = wb::max_abs_diff(a, b);
    INFO("expected max(|1 - (-1)|, |-2 - 2|) = 4, got "
         << got
         << "\nhint: take |a - b|, not ||a| - |b||: -2 and 2 have the same size but are 4 "
            "apart");
    CHECK(got == Approx(4.0f).epsilon(1e-6));
}

TEST_CASE("the indexing functions refuse only T == 0: an empty batch or empty tokens are fine",
          "[indexing][c:last_token.values][c:last_token_keep.values][c:drop_last_token.values]") {
    // Only T == 0 leaves no last token (tensors.hpp); B == 0 or D == 0 with T = 3 still has
    // one: the results are empty tensors of the promised shapes (by hand).
    INFO(
        "hint: test T == 0 (x.shape(1)), not x.size() == 0: a [0, 3, 4] or [2, 3, 0] tensor "
        "has tokens");
    for (const wb::Shape& shape : {wb::Shape{0, 3, 4}, wb::Shape{2, 3, 0}}) {
        const wb::Tensor3 x = wb::Tensor3::from_shape({shape[0], shape[1], shape[2]});
        const std::size_t B = shape[0], D = shape[2];
        INFO("x has shape " << wb::shape_str(shape));
        WB_CHECK_SHAPE(wb::last_token(x), (wb::Shape{B, D}), "x[:, -1, :] is [B, D]");
        WB_CHECK_SHAPE(wb::last_token_keep(x), (wb::Shape{B, 1, D}), "x[:, -1:, :] is [B, 1, D]");
        WB_CHECK_SHAPE(wb::drop_last_token(x), (wb::Shape{B, 2, D}),
                       "x[:, :-1, :] is [B, T - 1, D]");
    }
}

TEST_CASE("mean refuses only an empty reduced axis: another empty axis gives an empty result",
          "[reductions][errors][c:mean.empty-axis][c:mean.values]") {
    // x [0, 3]: axis 1 holds 3 values in each of the 0 rows, so its mean is empty, shape [0]
    // (torch.zeros(0, 3).mean(1) has shape [0]); axis 0 holds no values and is refused.
    INFO(
        "hint: refuse when the reduced axis has size 0 (x.shape(axis)), not whenever x has no "
        "elements");
    const wb::Array x = wb::Array::from_shape({0, 3});
    WB_CHECK_SHAPE(wb::mean(x, 1, false), (wb::Shape{0}), "axis 1 of [0, 3] has 3 values");
    WB_CHECK_SHAPE(wb::mean(x, -1, true), (wb::Shape{0, 1}), "keepdims keeps axis 1 with size 1");
    WB_CHECK_THROWS(wb::ShapeError, wb::mean(x, 0, false), "the mean of no numbers is undefined",
                    "wb::mean", "[0, 3]");
}

TEST_CASE("last_token's error names wb::last_token itself, not wb::last_token_keep",
          "[indexing][errors][c:last_token.no-tokens]") {
    // "wb::last_token" is the start of "wb::last_token_keep": a message naming the other
    // function would pass a plain search for the name; WB_CHECK_THROWS asks for the whole name.
    INFO(
        "hint: the message of wb::last_token must name wb::last_token (a copied check that "
        "still says wb::last_token_keep names the wrong function)");
    const wb::Tensor3 empty = wb::Tensor3::from_shape({2, 0, 8});
    // The exception's type first: a stub's NotImplemented, whose message starts with
    // "wb::last_token", stops the check here.
    WB_CHECK_THROWS(wb::ShapeError, wb::last_token(empty),
                    "x[:, -1, :] needs T >= 1; name the function and the shape received",
                    "wb::last_token", "[2, 0, 8]");
}
