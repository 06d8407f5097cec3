#include "capstone/attention_kernel.hpp"
#include "check.hpp"

#include <cmath>
#include <limits>

// Non-finite and huge scores: the kernel's exp must handle NaN, ±inf and values far outside
// float's range without undefined behaviour (the sanitizer build checks that), and a NaN in a
// query reaches that query's output instead of vanishing.

namespace {

const float kInf = std::numeric_limits<float>::infinity();

wb::Heads<float> attend(const wb::Heads<float>& q, const wb::Heads<float>& k,
                        const wb::Heads<float>& v, xt::xtensor<float, 3>& lse) {
    return wb::attention_forward(q, k, v, lse);
}

bool row_finite(const wb::Heads<float>& x, std::size_t bh, std::size_t i) {
    const std::size_t d = x.shape(3);
    for (std::size_t e = 0; e < d; ++e) {
        if (!std::isfinite(x.data()[(bh * x.shape(2) + i) * d + e])) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("attention_forward on NaN, inf and huge scores: no undefined behaviour, NaN is kept",
          "[attention_forward][attention_kernel][errors][c:attention_forward.non-finite]") {
    const std::size_t B = 1, H = 2, T = 70, d = 8;  // T > 64: more than one key block
    const wb::Heads<float> q = wbtest::randn<wb::Heads<float>>({B, H, T, d}, 11);
    const wb::Heads<float> k = wbtest::randn<wb::Heads<float>>({B, H, T, d}, 12);
    const wb::Heads<float> v = wbtest::randn<wb::Heads<float>>({B, H, T, d}, 13);
    xt::xtensor<float, 3> lse;
    const wb::Heads<float> clean = attend(q, k, v, lse);

    SECTION("a NaN in one query makes that row NaN and leaves the others as they were") {
        wb::Heads<float> qn = q;
        qn(0, 1, 40, 3) = std::nanf("");
        const wb::Heads<float> out = attend(qn, k, v, lse);
        CHECK(std::isnan(out(0, 1, 40, 0)));
        CHECK(std::isnan(lse(0, 1, 40)));
        CHECK(out(0, 1, 39, 0) == clean(0, 1, 39, 0));
        CHECK(out(0, 0, 40, 0) == clean(0, 0, 40, 0));
    }
    SECTION("an infinite key: the rows before it are unchanged, no crash after it") {
        wb::Heads<float> ki = k;
        ki(0, 0, 20, 0) = kInf;
        const wb::Heads<float> out = attend(q, ki, v, lse);
        for (std::size_t i = 0; i < 20; ++i) CHECK(out(0, 0, i, 0) == clean(0, 0, i, 0));
        CHECK(out(0, 1, 50, 0) == clean(0, 1, 50, 0));
    }
    SECTION("huge finite values overflow the scores to ±inf without undefined behaviour") {
        wb::Heads<float> qh = q * 1e30f, kh = k * 1e30f;
        const wb::Heads<float> out = attend(qh, kh, v, lse);
        CHECK(out.shape(2) == T);
        // -inf scores alone (every key hidden by overflow) and +inf give NaN or finite
        // values, never a crash; row 0 reads one key, whose score is +inf or -inf or NaN.
        (void)row_finite(out, 0, 0);
    }
    SECTION("scores of -1e30 are an exp of exactly 0, +1e30 are not read past the maximum") {
        wb::Heads<float> kz = k;
        for (std::size_t e = 0; e < d; ++e) kz(0, 0, 5, e) = -1e30f * q(0, 0, 60, e);
        const wb::Heads<float> out = attend(q, kz, v, lse);
        CHECK(row_finite(out, 0, 60));
    }
}
