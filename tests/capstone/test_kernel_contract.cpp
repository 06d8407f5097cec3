#include "capstone/attention_kernel.hpp"
#include "check.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

// Clauses of attention_kernel.hpp that the comparisons cannot fail on: outputs assigned over
// whatever the buffers held (the forward's too), the wrappers' outputs resized from any shape,
// and causality when the future holds scores that overflow.

namespace {

using Cf = wb::Heads<float>;
using Lse = xt::xtensor<float, 3>;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t n = 0; n < a.size(); ++n) {
        const bool both_nan = std::isnan(a[n]) && std::isnan(b[n]);
        if (!both_nan && a[n] != b[n]) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("attention_forward assigns out and lse whatever the raw buffers held",
          "[attention_forward][forward][c:attention_forward.out-assigned]"
          "[c:attention_forward.lse-assigned]") {
    // T = 70: more than one 64-key block, the last one partial; d = 5 is no SIMD width.
    const wb::AttentionShape s{2, 1, 70, 5};
    const std::size_t n = 2 * 1 * 70 * 5, rows = 2 * 1 * 70;
    const Cf q = wbtest::randn<Cf>({2, 1, 70, 5}, 201), k = wbtest::randn<Cf>({2, 1, 70, 5}, 202);
    const Cf v = wbtest::randn<Cf>({2, 1, 70, 5}, 203);
    std::vector<float> out0(n, 0.0f), lse0(rows, 0.0f);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> out_nan(n, nan), lse_nan(rows, nan);
    std::vector<float> out7(n, 7.0f), lse7(rows, -7.0f);
    wb::attention_forward(s, q.data(), k.data(), v.data(), out0.data(), lse0.data());
    wb::attention_forward(s, q.data(), k.data(), v.data(), out_nan.data(), lse_nan.data());
    wb::attention_forward(s, q.data(), k.data(), v.data(), out7.data(), lse7.data());
    INFO(
        "out and lse are ASSIGNED: start each row's running output from 0 (and m from -inf, "
        "l from 0), never from what the buffer held: NaNs or 7s from a previous call");
    CHECK(same_bits(out_nan, out0));
    CHECK(same_bits(out7, out0));
    CHECK(same_bits(lse_nan, lse0));
    CHECK(same_bits(lse7, lse0));
    bool finite = true;
    for (float x : out0) finite = finite && std::isfinite(x);
    CHECK(finite);
}

TEST_CASE("attention_forward: keys and values after row i never change it, however large",
          "[attention_forward][forward][c:attention_forward.causal]") {
    // The future at positions >= J is made huge (k ±1e30, so its scores overflow to ±inf; v
    // ±3e38, the largest floats). Rows i < J read keys j <= i < J only, so they keep every bit;
    // a mask applied after the exp (weight exp(s − m) with s = +inf) or a sum over every key
    // lets the future in.
    const std::size_t B = 1, H = 2, T = 70, d = 6;
    const Cf q = wbtest::randn<Cf>({B, H, T, d}, 211), k = wbtest::randn<Cf>({B, H, T, d}, 212);
    const Cf v = wbtest::randn<Cf>({B, H, T, d}, 213);
    Lse lse_clean, lse;
    const Cf clean = wb::attention_forward(q, k, v, lse_clean);
    for (const std::size_t J : {std::size_t{1}, std::size_t{30}, std::size_t{65}}) {
        Cf kn = k, vn = v;
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t j = J; j < T; ++j)
                for (std::size_t c = 0; c < d; ++c) {
                    kn(0, h, j, c) = q(0, h, j, c) >= 0 ? 1e30f : -1e30f;
                    vn(0, h, j, c) = (j + c) % 2 == 0 ? 3e38f : -3e38f;
                }
        const Cf out = wb::attention_forward(q, kn, vn, lse);
        bool same = true;
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < J; ++i) {
                same = same && lse(0, h, i) == lse_clean(0, h, i);
                for (std::size_t c = 0; c < d; ++c)
                    same = same && out(0, h, i, c) == clean(0, h, i, c);
            }
        INFO("k and v are huge from position J = "
             << J
             << " on; rows i < J must keep every bit of out and lse.\nhint: stop the key loop "
                "at j = i, or give the masked scores -inf BEFORE the max and the exp");
        CHECK(same);
    }
}

TEST_CASE("the wrappers resize their outputs from any shape and give the raw kernels' values",
          "[attention_forward][attention_backward][c:attention_forward.wrapper-lse-resized]"
          "[c:attention_forward.wrapper-output][c:attention_backward.wrapper-outputs-resized]") {
    const wb::AttentionShape s{1, 3, 9, 4};
    const Cf q = wbtest::randn<Cf>({1, 3, 9, 4}, 221), k = wbtest::randn<Cf>({1, 3, 9, 4}, 222);
    const Cf v = wbtest::randn<Cf>({1, 3, 9, 4}, 223), dout = wbtest::randn<Cf>({1, 3, 9, 4}, 224);
    const std::size_t n = q.size(), rows = 27;
    std::vector<float> out(n), lse(rows), dq(n), dk(n), dv(n);
    wb::attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
    wb::attention_backward(s, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                           dq.data(), dk.data(), dv.data());

    Lse lse_w = xt::ones<float>({2, 2, 2}) * 7.0f;  // another shape, another size
    const Cf out_w = wb::attention_forward(q, k, v, lse_w);
    INFO("lse is resized to [B, H, T] = [1, 3, 9], whatever it was, and out is [B, H, T, d]");
    REQUIRE(wbtest::shape_of(lse_w) == wb::Shape({1, 3, 9}));
    REQUIRE(wbtest::shape_of(out_w) == wb::Shape({1, 3, 9, 4}));
    CHECK(same_bits(std::vector<float>(out_w.begin(), out_w.end()), out));
    CHECK(same_bits(std::vector<float>(lse_w.begin(), lse_w.end()), lse));

    Lse lse_27 = xt::ones<float>({3, 9, 1}) * 7.0f;  // the right size, 27, in another shape
    (void)wb::attention_forward(q, k, v, lse_27);
    INFO(
        "an lse of the right size but another shape is reshaped too: resize it whatever it "
        "was, not only when its element count differs");
    REQUIRE(wbtest::shape_of(lse_27) == wb::Shape({1, 3, 9}));
    CHECK(same_bits(std::vector<float>(lse_27.begin(), lse_27.end()), lse));

    // dq of another size, dk of the right size but another shape, dv of the right shape.
    Cf dq_w = xt::ones<float>({2, 1, 1, 3}), dk_w = xt::ones<float>({3, 1, 9, 4});
    Cf dv_w = xt::ones<float>({1, 3, 9, 4});
    dq_w *= 7.0f;
    dk_w *= 7.0f;
    dv_w *= 7.0f;
    wb::attention_backward(q, k, v, out_w, lse_w, dout, dq_w, dk_w, dv_w);
    INFO("dq, dk, dv are resized to [B, H, T, d] and assigned, whatever they held");
    REQUIRE(wbtest::shape_of(dq_w) == wb::Shape({1, 3, 9, 4}));
    REQUIRE(wbtest::shape_of(dk_w) == wb::Shape({1, 3, 9, 4}));
    REQUIRE(wbtest::shape_of(dv_w) == wb::Shape({1, 3, 9, 4}));
    CHECK(same_bits(std::vector<float>(dq_w.begin(), dq_w.end()), dq));
    CHECK(same_bits(std::vector<float>(dk_w.begin(), dk_w.end()), dk));
    CHECK(same_bits(std::vector<float>(dv_w.begin(), dv_w.end()), dv));
}
