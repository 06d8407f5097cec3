#include "3-positions/positions.hpp"
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

// Expected numbers come from Python, never from the code under test:
//   sinusoidal rows:  [ (math.sin if j % 2 == 0 else math.cos)(p / 10000 ** ((j - j % 2) / D))
//                       for j in range(D) ]                                 (Python 3 math)
//   RoPE values:      rope(x, offset, base) in float64 torch 1.13, written independently of this
//                     chapter with complex numbers (LLaMA's form):
//                       theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
//                       ang   = torch.outer(torch.arange(offset, offset + T), theta)
//                       z     = torch.view_as_complex(x.reshape(B, H, T, d // 2, 2))
//                       out   = torch.view_as_real(z * torch.polar(torch.ones_like(ang), ang))
//                     then reshaped to [B, H, T, d] and printed with 7 decimals.

namespace {

using wb::Shape;
using wb::Tensor2;
using wb::Tensor3;
using wb::Tensor4;

// Single-head attention softmax(Q Kᵀ / √d) V written with plain loops, for the permutation
// checks. Q, K, V: [T, d]. Returns [T, d].
Tensor2 naive_attention(const Tensor2& q, const Tensor2& k, const Tensor2& v) {
    const std::size_t T = q.shape(0), d = q.shape(1);
    Tensor2 out = xt::zeros<float>({T, v.shape(1)});
    for (std::size_t i = 0; i < T; ++i) {
        std::vector<double> w(T);
        double top = -1e300;
        for (std::size_t j = 0; j < T; ++j) {
            double s = 0.0;
            for (std::size_t c = 0; c < d; ++c) s += double(q(i, c)) * double(k(j, c));
            w[j] = s / std::sqrt(double(d));
            top = std::max(top, w[j]);
        }
        double total = 0.0;
        for (auto& x : w) total += (x = std::exp(x - top));
        for (std::size_t j = 0; j < T; ++j)
            for (std::size_t c = 0; c < v.shape(1); ++c)
                out(i, c) += static_cast<float>(w[j] / total * v(j, c));
    }
    return out;
}

// Rows of x [T, D] in the order perm: out[i] = x[perm[i]].
Tensor2 permute_rows(const Tensor2& x, const std::vector<std::size_t>& perm) {
    Tensor2 out(x.shape());
    for (std::size_t i = 0; i < perm.size(); ++i)
        xt::view(out, i, xt::all()) = xt::view(x, perm[i], xt::all());
    return out;
}

float max_abs_diff(const Tensor2& a, const Tensor2& b) {
    float worst = 0.0f;
    for (std::size_t k = 0; k < a.size(); ++k)
        worst = std::max(worst, std::fabs(a.data()[k] - b.data()[k]));
    return worst;
}

// ⟨a, b⟩ of two [1, 1, 1, d] tensors, in double.
double dot4(const Tensor4& a, const Tensor4& b) {
    double s = 0.0;
    for (std::size_t k = 0; k < a.size(); ++k) s += double(a.data()[k]) * double(b.data()[k]);
    return s;
}

// A [1, 1, 1, d] tensor holding one vector.
Tensor4 one_vector(std::initializer_list<float> values) {
    Tensor4 x({1, 1, 1, values.size()});
    std::copy(values.begin(), values.end(), x.begin());
    return x;
}

}  // namespace

// ---- sinusoidal_positions --------------------------------------------------------------------

TEST_CASE("sinusoidal_positions has shape [T, D]", "[sinusoidal][c:sinusoidal_positions.values]") {
    WB_CHECK_SHAPE(wb::sinusoidal_positions(7, 4), (Shape{7, 4}),
                   "one row per position (T rows), one column per feature (D columns)");
    WB_CHECK_SHAPE(wb::sinusoidal_positions(1, 10), (Shape{1, 10}),
                   "one row per position (T rows), one column per feature (D columns)");
}

TEST_CASE("sinusoidal position 0 is [0, 1, 0, 1, ...]",
          "[sinusoidal][c:sinusoidal_positions.values]") {
    // sin(0) = 0 in the even columns, cos(0) = 1 in the odd ones.
    Tensor2 expected = {{0.0f, 1.0f, 0.0f, 1.0f, 0.0f, 1.0f, 0.0f, 1.0f}};
    Tensor2 row0 = xt::view(wb::sinusoidal_positions(3, 8), xt::range(0, 1), xt::all());
    WB_CHECK_CLOSE(row0, expected, 1e-6,
                   "even columns are sin, odd columns are cos: did you swap sin and cos?");
}

TEST_CASE("sinusoidal values for D = 4 match Python's math at positions 0 to 5",
          "[sinusoidal][c:sinusoidal_positions.values]") {
    // Python math (see the top of this file); e.g. PE[1, 0] = sin(1), PE[1, 1] = cos(1),
    // PE[1, 2] = sin(1 / 10000^(2/4)) = sin(0.01).
    Tensor2 expected = {{0.0000000f, 1.0000000f, 0.0000000f, 1.0000000f},
                        {0.8414710f, 0.5403023f, 0.0099998f, 0.9999500f},
                        {0.9092974f, -0.4161468f, 0.0199987f, 0.9998000f},
                        {0.1411200f, -0.9899925f, 0.0299955f, 0.9995500f},
                        {-0.7568025f, -0.6536436f, 0.0399893f, 0.9992001f},
                        {-0.9589243f, 0.2836622f, 0.0499792f, 0.9987503f}};
    WB_CHECK_CLOSE(wb::sinusoidal_positions(6, 4), expected, 1e-5,
                   "PE[p, 2i] = sin(p / 10000^(2i/D)), PE[p, 2i+1] = cos(p / 10000^(2i/D)): "
                   "the exponent is 2i/D with i the pair index (columns 2i and 2i+1 share it)");
}

TEST_CASE("sinusoidal values for D = 6 at positions 1 and 5 match Python's math",
          "[sinusoidal][c:sinusoidal_positions.values]") {
    // Python math: PE[1, 2] = sin(1 / 10000^(2/6)) = sin(0.0464159), PE[1, 4] = sin(1 / 10000^(4/6)).
    Tensor2 expected = {{0.8414710f, 0.5403023f, 0.0463992f, 0.9989230f, 0.0021544f, 0.9999977f},
                        {-0.9589243f, 0.2836622f, 0.2300017f, 0.9731902f, 0.0107720f, 0.9999420f}};
    Tensor2 table = wb::sinusoidal_positions(6, 6);
    Tensor2 rows({2, 6});
    xt::view(rows, 0, xt::all()) = xt::view(table, 1, xt::all());
    xt::view(rows, 1, xt::all()) = xt::view(table, 5, xt::all());
    WB_CHECK_CLOSE(rows, expected, 1e-5,
                   "the frequency of pair i is 1 / 10000^(2i/D): did you use i/D, or the column "
                   "index j instead of the pair index i for the cos columns?");
}

TEST_CASE("sinusoidal values stay accurate at position 100000",
          "[sinusoidal][c:sinusoidal_positions.double-angles]") {
    // Python math at p = 100000, D = 6.
    Tensor2 expected = {
        {0.0357488f, -0.9993608f, -0.9934735f, -0.1140633f, 0.9702894f, -0.2419473f}};
    Tensor2 table = wb::sinusoidal_positions(100001, 6);
    WB_CHECK_SHAPE(table, (Shape{100001, 6}), "one row per position");
    Tensor2 last = xt::view(table, xt::range(100000, 100001), xt::all());
    WB_CHECK_CLOSE(last, expected, 1e-5,
                   "compute the angle p / 10000^(2i/D) in double and cast only sin/cos to float: "
                   "in float the angle at p = 100000 is off by up to 4e-3 radian");
}

TEST_CASE("sinusoidal_positions rejects an odd or zero D",
          "[sinusoidal][errors][c:sinusoidal_positions.odd-d]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::sinusoidal_positions(4, 5),
                    "sin and cos fill pairs of columns, so D must be even",
                    "wb::sinusoidal_positions", "D = 5");
    WB_CHECK_THROWS(wb::ShapeError, wb::sinusoidal_positions(4, 0),
                    "a table of width 0 is a mistake upstream; reject it",
                    "wb::sinusoidal_positions", "D = 0");
    // No position (T = 0) does not make a bad width good: check D before returning early.
    WB_CHECK_THROWS(wb::ShapeError, wb::sinusoidal_positions(0, 3),
                    "T = 0 rows, but D = 3 is still odd: check D first", "wb::sinusoidal_positions",
                    "D = 3");
}

// ---- add_positions ---------------------------------------------------------------------------

TEST_CASE("add_positions adds table rows offset .. offset+T-1 to every sequence (learned table)",
          "[add_positions][c:add_positions.rows]") {
    // A learned table [T_max = 5, D = 3] with table[p, j] = 10p + j, so each row says its position.
    Tensor2 table = {{0, 1, 2}, {10, 11, 12}, {20, 21, 22}, {30, 31, 32}, {40, 41, 42}};
    Tensor3 x = {{{1, 1, 1}, {2, 2, 2}},
                 {{-1, 0, 1}, {0.5f, 0.5f, 0.5f}}};  // [B = 2, T = 2, D = 3]
    // By hand: offset 2 adds rows 2 and 3 to both sequences.
    Tensor3 expected = {{{21, 22, 23}, {32, 33, 34}}, {{19, 21, 23}, {30.5f, 31.5f, 32.5f}}};
    Tensor3 out = wb::add_positions(x, table, 2);
    WB_CHECK_SHAPE(out, (Shape{2, 2, 3}), "add_positions keeps the shape [B, T, D] of x");
    WB_CHECK_CLOSE(out, expected, 1e-6,
                   "token t gets row offset + t of the table, and every sequence of the batch gets "
                   "the same rows: did you ignore the offset or add the rows to batch 0 only?");
    // Offset 0: rows 0 and 1.
    Tensor3 expected0 = {{{1, 2, 3}, {12, 13, 14}}, {{-1, 1, 3}, {10.5f, 11.5f, 12.5f}}};
    WB_CHECK_CLOSE(wb::add_positions(x, table), expected0, 1e-6,
                   "with offset 0 token t gets row t of the table");
}

TEST_CASE("add_positions with the sinusoidal table adds the encodings of positions 3 and 4",
          "[add_positions][c:add_positions.rows]") {
    // x = 0 shows the added rows: rows 3 and 4 of the D = 4 table (Python math).
    Tensor3 x = xt::zeros<float>({2, 2, 4});
    Tensor3 expected = {{{0.1411200f, -0.9899925f, 0.0299955f, 0.9995500f},
                         {-0.7568025f, -0.6536436f, 0.0399893f, 0.9992001f}},
                        {{0.1411200f, -0.9899925f, 0.0299955f, 0.9995500f},
                         {-0.7568025f, -0.6536436f, 0.0399893f, 0.9992001f}}};
    WB_CHECK_CLOSE(wb::add_positions(x, wb::sinusoidal_positions(8, 4), 3), expected, 1e-5,
                   "offset 3 means x's tokens sit at positions 3 and 4");
}

TEST_CASE("add_positions at offset t on one token equals token t of the whole sequence",
          "[add_positions][c:add_positions.rows]") {
    auto x = wbtest::randn<Tensor3>({2, 5, 4}, 31);
    auto table = wbtest::randn<Tensor2>({9, 4}, 32);  // a learned table [T_max = 9, D = 4]
    Tensor3 full = wb::add_positions(x, table, 0);
    for (std::size_t t = 0; t < 5; ++t) {
        INFO("token t = " << t << " decoded alone with offset t");
        Tensor3 one = xt::view(x, xt::all(), xt::range(t, t + 1), xt::all());  // [2, 1, 4]
        Tensor3 want = xt::view(full, xt::all(), xt::range(t, t + 1), xt::all());
        WB_CHECK_CLOSE(
            wb::add_positions(one, table, static_cast<std::int64_t>(t)), want, 1e-6,
            "one token decoded after t others sits at position t, so it gets row offset + 0 = t");
    }
}

TEST_CASE("add_positions rejects a D mismatch, a negative offset and positions beyond T_max",
          "[add_positions][errors][c:add_positions.d-mismatch][c:add_positions.negative-offset]"
          "[c:add_positions.past-table]") {
    auto x = wbtest::randn<Tensor3>({2, 4, 4}, 33);
    WB_CHECK_THROWS(wb::ShapeError, wb::add_positions(x, Tensor2(xt::zeros<float>({10, 6}))),
                    "the table's width must equal the embedding width D", "wb::add_positions",
                    "[2, 4, 4]", "[10, 6]");
    // A table of width 1 would broadcast over D without any error: compare the widths with !=.
    WB_CHECK_THROWS(wb::ShapeError, wb::add_positions(x, Tensor2(xt::zeros<float>({10, 1}))),
                    "a narrower table is a mismatch too: [T, 1] broadcasts silently over D",
                    "wb::add_positions", "[2, 4, 4]", "[10, 1]");
    Tensor2 table = xt::zeros<float>({6, 4});
    WB_CHECK_THROWS(wb::ValueError, wb::add_positions(x, table, -1),
                    "positions count from 0; a negative offset is a bug in the caller",
                    "wb::add_positions", "offset = -1");
    WB_CHECK_THROWS(wb::ValueError, wb::add_positions(x, table, 3),
                    "positions 3 .. 6 need 7 rows but the table has 6: check offset + T <= T_max",
                    "wb::add_positions", "offset = 3", "T = 4", "T_max = 6");
    WB_CHECK_THROWS(wb::ValueError, wb::add_positions(x, table, 7),
                    "an offset past the table's end must be rejected, not wrapped around",
                    "wb::add_positions", "offset = 7", "T = 4", "T_max = 6");
    // The last valid offset is T_max - T = 2.
    Tensor3 ok = wb::add_positions(x, table, 2);
    WB_CHECK_SHAPE(ok, (Shape{2, 4, 4}), "offset + T == T_max is allowed (rows 2 .. 5)");
}

// ---- apply_rope ------------------------------------------------------------------------------

TEST_CASE("apply_rope keeps the shape [B, H, T, d]", "[rope][c:apply_rope.rotation]") {
    auto x = wbtest::randn<Tensor4>({2, 3, 5, 8}, 41);
    WB_CHECK_SHAPE(wb::apply_rope(x), (Shape{2, 3, 5, 8}),
                   "RoPE rotates vectors in place: same shape");
    WB_CHECK_SHAPE(wb::apply_rope(x, 4), (Shape{2, 3, 5, 8}),
                   "RoPE rotates vectors in place: same shape");
}

TEST_CASE("apply_rope matches hard-coded values at offset 0", "[rope][c:apply_rope.rotation]") {
    Tensor4 x = {{{{1, 2, 3, 4}, {5, 6, 7, 8}, {-1, 0.5f, 2, -3}}}};  // [1, 1, 3, 4]
    // torch float64 rope(x, 0, 10000) (top of this file). Position 0 is unchanged.
    Tensor4 expected = {{{{1.0000000f, 2.0000000f, 3.0000000f, 4.0000000f},
                          {-2.3473144f, 7.4491688f, 6.9196513f, 8.0695988f},
                          {-0.0385019f, -1.1173708f, 2.0595960f, -2.9594027f}}}};
    WB_CHECK_CLOSE(
        wb::apply_rope(x), expected, 1e-5,
        "pairs are neighbours (x[2i], x[2i+1]) turned counter-clockwise by p·θ_i, "
        "θ_i = base^(-2i/d): out[2i] = x[2i]cos - x[2i+1]sin, out[2i+1] = x[2i]sin + "
        "x[2i+1]cos. Pairing i with i + d/2, a flipped sign or base^(+2i/d) all land here");
}

TEST_CASE("apply_rope matches hard-coded values with an offset and another base",
          "[rope][c:apply_rope.offset][c:apply_rope.base]") {
    Tensor4 x = {{{{1, 2, 3, 4}, {5, 6, 7, 8}, {-1, 0.5f, 2, -3}}}};  // [1, 1, 3, 4]
    // torch float64 rope(x, 5, 10000): the tokens sit at positions 5, 6, 7.
    Tensor4 expected5 = {{{{2.2015107f, -0.3915999f, 2.7963341f, 4.1449385f},
                           {6.4773444f, 4.3639442f, 6.5076917f, 8.4053524f},
                           {-1.0823956f, -0.2800355f, 2.2049305f, -2.8527673f}}}};
    WB_CHECK_CLOSE(wb::apply_rope(x, 5), expected5, 1e-5,
                   "token t sits at position offset + t: did you ignore the offset?");
    Tensor4 x6 = {{{{1, -2, 0.5f, 3, -1, 2}, {0.25f, 1, -3, 2, 1, -0.5f}}}};  // [1, 1, 2, 6]
    // torch float64 rope(x6, 2, 100): positions 2 and 3, θ_i = 100^(-2i/6).
    Tensor4 expected6 = {
        {{{1.4024480f, 1.7415911f, -0.7987327f, 2.9346254f, -1.1810912f, 1.8986899f},
          {-0.3886181f, -0.9547125f, -3.5994197f, -0.2101847f, 1.0597197f, -0.3563622f}}}};
    WB_CHECK_CLOSE(wb::apply_rope(x6, 2, 100.0f), expected6, 1e-5,
                   "θ_i = base^(-2i/d) with the base argument (100 here), not a fixed 10000");
}

TEST_CASE("apply_rope rotates every batch and every head the same way",
          "[rope][c:apply_rope.same-angles]") {
    // x[b, h] = c_bh · v with v the [3, 4] input above; a rotation is linear, so
    // out[b, h] = c_bh · rope(v, 5), hard-coded above.
    const float v[3][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}, {-1, 0.5f, 2, -3}};
    const float r[3][4] = {{2.2015107f, -0.3915999f, 2.7963341f, 4.1449385f},
                           {6.4773444f, 4.3639442f, 6.5076917f, 8.4053524f},
                           {-1.0823956f, -0.2800355f, 2.2049305f, -2.8527673f}};
    Tensor4 x({2, 3, 3, 4}), expected({2, 3, 3, 4});
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 3; ++h) {
            const float c = 1.0f + float(b) - 0.5f * float(h);  // 1, 0.5, 0, 2, 1.5, 1
            for (std::size_t t = 0; t < 3; ++t)
                for (std::size_t j = 0; j < 4; ++j) {
                    x(b, h, t, j) = c * v[t][j];
                    expected(b, h, t, j) = c * r[t][j];
                }
        }
    WB_CHECK_CLOSE(wb::apply_rope(x, 5), expected, 1e-5,
                   "the angle depends on the position and the pair only: every batch b and head h "
                   "uses position offset + t");
}

TEST_CASE("apply_rope stays accurate at position 100000",
          "[rope][c:apply_rope.double-angles][c:apply_rope.offset]") {
    Tensor4 x = one_vector({1, 2, 3, 4, 5, 6});
    // torch float64 rope(x, 100000, 10000).
    Tensor4 expected = {
        {{{-1.0708584f, -1.9629728f, 3.6317041f, -3.4366735f, -7.0314727f, 3.3997635f}}}};
    WB_CHECK_CLOSE(wb::apply_rope(x, 100000), expected, 1e-5,
                   "compute the angle (offset + t)·θ_i in double and cast only cos/sin to float: "
                   "in float it is off by up to 4e-3 radian at position 100000");
}

TEST_CASE("apply_rope keeps the norm of every vector", "[rope][c:apply_rope.rotation]") {
    auto x = wbtest::randn<Tensor4>({2, 3, 5, 8}, 42);
    Tensor4 out = wb::apply_rope(x, 7);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 3; ++h)
            for (std::size_t t = 0; t < 5; ++t) {
                double n_in = 0.0, n_out = 0.0;
                for (std::size_t j = 0; j < 8; ++j) {
                    n_in += double(x(b, h, t, j)) * x(b, h, t, j);
                    n_out += double(out(b, h, t, j)) * out(b, h, t, j);
                }
                INFO("vector ["
                     << b << ", " << h << ", " << t << "]: |x| = " << std::sqrt(n_in)
                     << ", |rope(x)| = " << std::sqrt(n_out)
                     << "\nhint: a rotation keeps lengths; did you overwrite x[2i] before "
                        "using it for x[2i+1], or use a different angle for the two halves "
                        "of a pair?");
                CHECK(std::fabs(std::sqrt(n_out) - std::sqrt(n_in)) <=
                      1e-5 * (1.0 + std::sqrt(n_in)));
            }
}

TEST_CASE("apply_rope scores depend only on the gap m - n", "[rope][c:apply_rope.rotation]") {
    Tensor4 q = one_vector({1, 2, 3, 4});
    Tensor4 k = one_vector({0.5f, -1, 2, 1});
    // torch float64: (rope(q, m) * rope(k, n)).sum() is 8.7036321 for every gap m - n = 2,
    // 11.0482716 for the gap 3, 12.5408085 for the gap -2.
    struct Case {
        std::int64_t m, n;
        double expected;
    };
    for (const Case& c : {Case{3, 1, 8.7036321}, Case{7, 5, 8.7036321}, Case{12, 10, 8.7036321},
                          Case{4, 1, 11.0482716}, Case{1, 3, 12.5408085}}) {
        const double got = dot4(wb::apply_rope(q, c.m), wb::apply_rope(k, c.n));
        INFO("<R(" << c.m << ") q, R(" << c.n << ") k>: expected " << c.expected << ", actual "
                   << got
                   << "\nhint: R(m)ᵀR(n) = R(n - m), so the score depends on the gap only; the "
                      "same gap gives the same score, another gap another. If the gap 2 gives the "
                      "score of the gap -2 (12.5408085), your rotation turns clockwise: flip the "
                      "signs of the sin terms");
        CHECK(std::fabs(got - c.expected) <= 1e-4);
    }
}

TEST_CASE("apply_rope scores within one sequence depend only on i - j",
          "[rope][c:apply_rope.rotation]") {
    // Every token has the same query and the same key, so after RoPE the score S[i][j] can only
    // change through the positions i and j, and RoPE makes it a function of i - j alone.
    const std::size_t T = 6, d = 8;
    auto qv = wbtest::randn<wb::Tensor1>({d}, 43);
    auto kv = wbtest::randn<wb::Tensor1>({d}, 44);
    Tensor4 q({1, 1, T, d}), k({1, 1, T, d});
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t j = 0; j < d; ++j) q(0, 0, t, j) = qv(j), k(0, 0, t, j) = kv(j);
    Tensor4 rq = wb::apply_rope(q, 3), rk = wb::apply_rope(k, 3);
    auto score = [&](std::size_t i, std::size_t j) {
        double s = 0.0;
        for (std::size_t c = 0; c < d; ++c) s += double(rq(0, 0, i, c)) * rk(0, 0, j, c);
        return s;
    };
    for (std::size_t i = 1; i < T; ++i)
        for (std::size_t j = 1; j < T; ++j) {
            INFO("S[" << i << "][" << j << "] = " << score(i, j) << ", S[" << i - 1 << "][" << j - 1
                      << "] = " << score(i - 1, j - 1)
                      << "\nhint: both pairs of positions have the same gap, so RoPE must give the "
                         "same score; rotate q and k with the same angles per position");
            CHECK(std::fabs(score(i, j) - score(i - 1, j - 1)) <= 1e-4);
        }
    // And the scores are not all equal: positions do matter.
    INFO("S[0][0] = "
         << score(0, 0) << ", S[5][0] = " << score(5, 0)
         << "\nhint: different gaps should give different scores; is the rotation applied?");
    CHECK(std::fabs(score(0, 0) - score(5, 0)) > 1e-3);
}

TEST_CASE("apply_rope at offset t on one token equals token t of the whole sequence",
          "[rope][c:apply_rope.offset]") {
    auto x = wbtest::randn<Tensor4>({2, 2, 6, 4}, 45);
    Tensor4 full = wb::apply_rope(x, 0);
    for (std::size_t t = 0; t < 6; ++t) {
        INFO("token t = " << t << " decoded alone with offset t (as with a KV cache)");
        Tensor4 one =
            xt::view(x, xt::all(), xt::all(), xt::range(t, t + 1), xt::all());  // [2, 2, 1, 4]
        Tensor4 want = xt::view(full, xt::all(), xt::all(), xt::range(t, t + 1), xt::all());
        WB_CHECK_CLOSE(wb::apply_rope(one, static_cast<std::int64_t>(t)), want, 1e-5,
                       "a token decoded after t others sits at position t: the angle is "
                       "(offset + t)·θ_i");
    }
    // Offsets add up: a chunk starting at 2, run with offset 2, equals tokens 2..5 of the whole.
    Tensor4 tail = xt::view(x, xt::all(), xt::all(), xt::range(2, 6), xt::all());
    Tensor4 want_tail = xt::view(full, xt::all(), xt::all(), xt::range(2, 6), xt::all());
    WB_CHECK_CLOSE(wb::apply_rope(tail, 2), want_tail, 1e-5,
                   "token t of a chunk at offset 2 sits at position 2 + t");
}

TEST_CASE("apply_rope leaves the token at position 0 unchanged", "[rope][c:apply_rope.rotation]") {
    auto x = wbtest::randn<Tensor4>({2, 3, 4, 6}, 46);
    Tensor4 out = wb::apply_rope(x);
    Tensor4 first = xt::view(out, xt::all(), xt::all(), xt::range(0, 1), xt::all());
    Tensor4 want = xt::view(x, xt::all(), xt::all(), xt::range(0, 1), xt::all());
    WB_CHECK_CLOSE(first, want, 1e-6,
                   "position 0 turns by angle 0: cos = 1, sin = 0. Did you start positions at 1?");
    Tensor4 later = xt::view(out, xt::all(), xt::all(), xt::range(1, 2), xt::all());
    Tensor4 later_in = xt::view(x, xt::all(), xt::all(), xt::range(1, 2), xt::all());
    const bool turned =
        wbtest::compare(wbtest::flatten(later), wbtest::flatten(later_in), 1e-3, 0.0, "")
            .has_value();
    INFO("hint: position 1 must turn (pair 0 by 1 radian), but the output equals the input");
    CHECK(turned);
}

TEST_CASE("apply_rope of an empty batch, no heads, no tokens or d = 0 is an empty result",
          "[rope][errors][c:apply_rope.same-angles][c:apply_rope.odd-d][c:apply_rope.bad-value]") {
    // No token to rotate does not make a bad argument good: the checks come before the loops.
    {
        INFO("hint: check offset and d before the loops, which never run when T = 0");
        WB_CHECK_THROWS(wb::ValueError, wb::apply_rope(Tensor4::from_shape({1, 2, 0, 4}), -1),
                        "no tokens, but offset = -1 is still negative", "wb::apply_rope",
                        "offset = -1");
        WB_CHECK_THROWS(wb::ShapeError, wb::apply_rope(Tensor4::from_shape({1, 2, 0, 5})),
                        "no tokens, but d = 5 is still odd", "wb::apply_rope", "[1, 2, 0, 5]");
    }
    // Only an odd d, a negative offset and a bad base are errors: an empty axis rotates nothing.
    INFO("hint: refuse neither an empty x (require_nonempty) nor d = 0, which is even");
    for (const Shape& shape :
         {Shape{0, 2, 3, 4}, Shape{1, 0, 3, 4}, Shape{1, 2, 0, 4}, Shape{1, 2, 3, 0}}) {
        INFO("x " << wb::shape_str(shape));
        const Tensor4 x = Tensor4::from_shape(shape);
        WB_CHECK_SHAPE(wb::apply_rope(x), shape, "an empty axis gives an empty [B, H, T, d]");
        WB_CHECK_SHAPE(wb::apply_rope(x, 5, 500.0f), shape,
                       "at any offset and base, an empty axis gives an empty [B, H, T, d]");
    }
}

TEST_CASE("apply_rope rejects an odd d, a negative offset and a base <= 1",
          "[rope][errors][c:apply_rope.odd-d][c:apply_rope.bad-value]") {
    auto x = wbtest::randn<Tensor4>({1, 2, 3, 5}, 47);
    WB_CHECK_THROWS(wb::ShapeError, wb::apply_rope(x),
                    "RoPE turns pairs (x[2i], x[2i+1]), so the head width d must be even",
                    "wb::apply_rope", "[1, 2, 3, 5]");
    auto y = wbtest::randn<Tensor4>({1, 2, 3, 4}, 48);
    WB_CHECK_THROWS(wb::ValueError, wb::apply_rope(y, -2),
                    "positions count from 0; a negative offset is a bug in the caller",
                    "wb::apply_rope", "offset = -2");
    WB_CHECK_THROWS(wb::ValueError, wb::apply_rope(y, 0, 1.0f),
                    "with base 1 every θ_i is 1: all pairs turn alike; require base > 1",
                    "wb::apply_rope", "base = 1");
    WB_CHECK_THROWS(wb::ValueError, wb::apply_rope(y, 0, 0.5f),
                    "with base < 1 the frequencies grow with i; require base > 1", "wb::apply_rope",
                    "base = 0.5");
    WB_CHECK_THROWS(wb::ValueError, wb::apply_rope(y, 0, -10000.0f),
                    "a negative base has no real powers; require base > 1", "wb::apply_rope",
                    "base = -10000");
}

TEST_CASE("apply_rope rejects a NaN base, and add_positions an empty position table",
          "[rope][errors][c:apply_rope.bad-value][c:add_positions.past-table]") {
    // base <= 1 is false for NaN, which would then turn every angle into NaN: test !(base > 1).
    auto y = wbtest::randn<Tensor4>({1, 2, 3, 4}, 49);
    WB_CHECK_THROWS(wb::ValueError, wb::apply_rope(y, 0, std::numeric_limits<float>::quiet_NaN()),
                    "a NaN base is not > 1: test !(base > 1), which is true for NaN",
                    "wb::apply_rope", "base = nan");
    auto x = wbtest::randn<Tensor3>({2, 4, 4}, 50);
    WB_CHECK_THROWS(wb::ValueError, wb::add_positions(x, Tensor2::from_shape({0, 4})),
                    "an empty table has no row for position 0: offset + T > T_max = 0",
                    "wb::add_positions", "T = 4", "T_max = 0");
}

// ---- why positions are needed (notes §4) -----------------------------------------------------

TEST_CASE("attention without positions is permutation-equivariant, with sinusoidal ones it is not",
          "[attention][c:sinusoidal_positions.values][c:add_positions.rows]") {
    const std::size_t T = 5, D = 4;
    const std::vector<std::size_t> perm = {2, 0, 4, 1, 3};
    auto x3 = wbtest::randn<Tensor3>({1, T, D}, 51);
    Tensor2 x = xt::view(x3, 0, xt::all(), xt::all());  // [T, D]
    Tensor2 table = wb::sinusoidal_positions(T, D);

    // Without positions: attention(x[perm]) == attention(x)[perm].
    Tensor2 out = naive_attention(x, x, x);
    Tensor2 xp = permute_rows(x, perm);
    WB_CHECK_CLOSE(
        naive_attention(xp, xp, xp), permute_rows(out, perm), 1e-5,
        "(test helper) shuffling tokens only shuffles the outputs when no position is used");

    // With positions added to the embeddings, the shuffled sentence reads differently.
    Tensor3 xp3 = xt::zeros<float>({std::size_t(1), T, D});
    xt::view(xp3, 0, xt::all(), xt::all()) = xp;
    Tensor2 a = xt::view(wb::add_positions(x3, table), 0, xt::all(), xt::all());
    Tensor2 b = xt::view(wb::add_positions(xp3, table), 0, xt::all(), xt::all());
    const float gap =
        max_abs_diff(naive_attention(b, b, b), permute_rows(naive_attention(a, a, a), perm));
    INFO("max |attention(shuffled + PE) - shuffled attention(x + PE)| = "
         << gap
         << "\nhint: adding position rows must make the output depend on word order; "
            "did add_positions add the same row to every token?");
    CHECK(gap > 1e-2f);
}

TEST_CASE("RoPE on Q and K breaks the permutation equivariance of attention",
          "[attention][rope][c:apply_rope.rotation]") {
    const std::size_t T = 5, d = 4;
    const std::vector<std::size_t> perm = {2, 0, 4, 1, 3};
    auto x4 = wbtest::randn<Tensor4>({1, 1, T, d}, 52);
    Tensor2 x = xt::view(x4, 0, 0, xt::all(), xt::all());  // [T, d]
    Tensor2 xp = permute_rows(x, perm);
    Tensor4 xp4({1, 1, T, d});
    xt::view(xp4, 0, 0, xt::all(), xt::all()) = xp;

    // RoPE on Q and K only; V stays as it is (RoPE is not added to X).
    Tensor2 r = xt::view(wb::apply_rope(x4), 0, 0, xt::all(), xt::all());
    Tensor2 rp = xt::view(wb::apply_rope(xp4), 0, 0, xt::all(), xt::all());
    const float gap =
        max_abs_diff(naive_attention(rp, rp, xp), permute_rows(naive_attention(r, r, x), perm));
    INFO("max |attention with RoPE on the shuffled tokens - shuffled attention with RoPE| = "
         << gap
         << "\nhint: RoPE turns each token by its position, so word order must change the scores; "
            "is the angle using the position t?");
    CHECK(gap > 1e-2f);
    // The same tokens in the same order give the same outputs (RoPE is deterministic).
    Tensor2 r_again = xt::view(wb::apply_rope(x4), 0, 0, xt::all(), xt::all());
    WB_CHECK_CLOSE(r_again, r, 0.0, "apply_rope must not depend on anything but its inputs");
}

TEST_CASE("add_positions accepts offset + T == T_max and refuses offsets that would wrap",
          "[add_positions][errors][c:add_positions.rows][c:add_positions.past-table]") {
    auto x = wbtest::randn<Tensor3>({2, 4, 3}, 61);
    auto table = wbtest::randn<Tensor2>({6, 3}, 62);  // T_max = 6
    // Positions 2 .. 5: the last row of the table is used, nothing is refused.
    Tensor3 expected = x;
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t t = 0; t < 4; ++t)
            for (std::size_t c = 0; c < 3; ++c) expected(b, t, c) += table(2 + t, c);
    WB_CHECK_CLOSE(wb::add_positions(x, table, 2), expected, 1e-6,
                   "offset + T == T_max fits exactly: rows 2 .. 5 of a 6-row table");
    // No token at all after the last row: [B, 0, D], nothing to add.
    WB_CHECK_SHAPE(wb::add_positions(Tensor3::from_shape({2, 0, 3}), table, 6), (Shape{2, 0, 3}),
                   "T = 0 tokens at offset T_max use no row: offset + T <= T_max holds");
    // One past it, offset + T = 7 > T_max even without a token: checked before any loop runs.
    WB_CHECK_THROWS(wb::ValueError, wb::add_positions(Tensor3::from_shape({2, 0, 3}), table, 7),
                    "T = 0 at offset T_max + 1: offset + T > T_max; check before the token loop",
                    "wb::add_positions", "offset = 7", "T = 0", "T_max = 6");
    // offset + T overflows int64: a check written as offset + T > T_max sees a negative sum.
    for (const std::int64_t offset :
         {std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max() - 2}) {
        INFO("offset = " << offset);
        WB_CHECK_THROWS(wb::ValueError, wb::add_positions(x, table, offset),
                        "compare offset with T_max - T (or in unsigned 128 bits): offset + T "
                        "wraps around for offsets near 2^63",
                        "wb::add_positions", std::to_string(offset), "4", "6");
    }
}

TEST_CASE("add_positions of an empty batch is an empty result",
          "[add_positions][c:add_positions.rows]") {
    INFO("hint: B = 0 sequences is not an error: return the empty [0, T, D] tensor");
    const auto table = wbtest::randn<Tensor2>({6, 3}, 63);
    WB_CHECK_SHAPE(wb::add_positions(Tensor3::from_shape({0, 4, 3}), table, 2), (Shape{0, 4, 3}),
                   "B = 0 sequences: no row to add to, an empty [0, T, D]");
}

TEST_CASE("sinusoidal_positions of T = 0 is [0, D], and more than 2^48 elements are refused",
          "[sinusoidal][errors][c:sinusoidal_positions.values][c:sinusoidal_positions.too-large]") {
    WB_CHECK_SHAPE(wb::sinusoidal_positions(0, 4), (Shape{0, 4}), "no position: [0, D]");
    // 2^47 x 4 = 2^49 elements fits in size_t: only the 2^48 limit refuses it (an allocation
    // of 2 PiB throws std::bad_alloc, not a ShapeError).
    WB_CHECK_THROWS(wb::ShapeError, wb::sinusoidal_positions(std::size_t(1) << 47, 4),
                    "T x D above 2^48 elements is refused before allocating (wb::checked_size)",
                    "wb::sinusoidal_positions", "140737488355328");
}

TEST_CASE("apply_rope equals the rotation in double on drawn sizes, offsets and bases",
          "[rope][c:apply_rope.rotation][c:apply_rope.offset][c:apply_rope.base]"
          "[c:apply_rope.same-angles]") {
    // {B, H, T, d, offset, base}: d of 2 and 10, T of 1, bases 10000, 500 and 1.5, and an
    // offset of 2^24 + 1, which a float position rounds to 2^24 (one radian off in pair 0).
    struct Case {
        std::size_t B, H, T, d;
        std::int64_t offset;
        float base;
    };
    const Case c = GENERATE(Case{1, 1, 1, 2, 0, 10000.0f}, Case{2, 3, 5, 10, 7, 500.0f},
                            Case{1, 2, 3, 4, 12345, 1.5f}, Case{3, 1, 2, 6, 1, 10000.0f},
                            Case{1, 1, 2, 4, 16777217, 10000.0f});
    const unsigned seed = static_cast<unsigned>(700 + c.B + 10 * c.H + 100 * c.T + 1000 * c.d);
    INFO("B = " << c.B << ", H = " << c.H << ", T = " << c.T << ", d = " << c.d
                << ", offset = " << c.offset << ", base = " << c.base << ", seed " << seed);
    const auto x = wbtest::randn<Tensor4>({c.B, c.H, c.T, c.d}, seed);
    Tensor4 expected = x;
    for (std::size_t b = 0; b < c.B; ++b)
        for (std::size_t h = 0; h < c.H; ++h)
            for (std::size_t t = 0; t < c.T; ++t)
                for (std::size_t i = 0; i < c.d / 2; ++i) {
                    const double theta = std::pow(double(c.base), -2.0 * double(i) / double(c.d));
                    const double angle = double(c.offset + std::int64_t(t)) * theta;
                    const double x0 = x(b, h, t, 2 * i), x1 = x(b, h, t, 2 * i + 1);
                    expected(b, h, t, 2 * i) = float(x0 * std::cos(angle) - x1 * std::sin(angle));
                    expected(b, h, t, 2 * i + 1) =
                        float(x0 * std::sin(angle) + x1 * std::cos(angle));
                }
    WB_CHECK_CLOSE(wb::apply_rope(x, c.offset, c.base), expected, 1e-5,
                   "pair (x[2i], x[2i+1]) of token t turns by (offset + t) * base^(-2i/d), the "
                   "base given, the same for every batch and head");
}
