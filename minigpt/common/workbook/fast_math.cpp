#include "workbook/fast_math.hpp"

#include "workbook/simd.hpp"

namespace wb {

namespace {

// erf(x) = x p(x²) / q(x²) on [-4, 4]: the odd-over-even rational approximation of XLA and Eigen.
constexpr float kErfNum[7] = {
    -2.72614225801306e-10f, 2.77068142495902e-08f,  -2.10102402082508e-06f, -5.69250639462346e-05f,
    -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f};
constexpr float kErfDen[5] = {-1.45660718464996e-05f, -2.13374055278905e-04f,
                              -1.68282697438203e-03f, -7.37332916720468e-03f,
                              -1.42647390514189e-02f};
constexpr float kInvSqrt2 = 0.70710678118654752f, kInvSqrt2Pi = 0.39894228040143268f;

// One value: y = u Φ(u) and, when wanted, grad = Φ(u) + u φ(u) (the product rule).
inline void gelu_one(float u, float& y, float* grad) {
    float x = u * kInvSqrt2;
    x = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
    const float x2 = x * x;
    float p = kErfNum[0];
    for (int i = 1; i < 7; ++i) p = p * x2 + kErfNum[i];
    float q = kErfDen[0];
    for (int i = 1; i < 5; ++i) q = q * x2 + kErfDen[i];
    const float cdf = 0.5f * (1.0f + x * p / q);  // Φ(u)
    y = u * cdf;
    if (grad != nullptr) *grad = cdf + u * (fast_exp_nonpositive(-0.5f * u * u) * kInvSqrt2Pi);
}

void gelu_row_portable(float* y, float* grad, const float* b, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j)
        gelu_one(y[j] + b[j], y[j], grad == nullptr ? nullptr : grad + j);
}

// The same GELU, 8 values at a time, on the values [0, n − n mod 8): the steps of gelu_one in
// the same order, so each value gets gelu_one's bits at the same level (the multiply-adds fuse
// where the level has FMA). Explicit lanes because GCC does not vectorise the clamps (float
// comparisons) of a plain loop under the default -ftrapping-math.
WB_SIMD_BODY void gelu_lanes_body(float* y, float* grad, const float* b, std::size_t n) {
    for (std::size_t j = 0; j + 8 <= n; j += 8) {
        F32x8 u, bj;
        load_lanes(u, y + j);
        load_lanes(bj, b + j);
        u += bj;
        F32x8 x = u * kInvSqrt2;
        x = x < -4.0f ? F32x8{} - 4.0f : x;
        x = x > 4.0f ? F32x8{} + 4.0f : x;
        const F32x8 x2 = x * x;
        F32x8 p, q;
        splat(p, kErfNum[0]);
        for (int i = 1; i < 7; ++i) p = p * x2 + kErfNum[i];
        splat(q, kErfDen[0]);
        for (int i = 1; i < 5; ++i) q = q * x2 + kErfDen[i];
        const F32x8 cdf = 0.5f * (1.0f + x * p / q);  // Φ(u)
        store_lanes(y + j, u * cdf);
        if (grad != nullptr) {
            F32x8 e = -0.5f * u * u;
            fast_exp_nonpositive_lanes<F32x8, U32x8>(e);
            store_lanes(grad + j, cdf + u * (e * kInvSqrt2Pi));
        }
    }
}
WB_SIMD_DISPATCH(void, gelu_lanes, (float* y, float* grad, const float* b, std::size_t n),
                 (y, grad, b, n))

}  // namespace

void gelu_bias_row(float* y, float* grad, const float* b, std::size_t n) {
    const std::size_t whole = n - n % 8;
    gelu_lanes(y, grad, b, whole);
    gelu_row_portable(y + whole, grad == nullptr ? nullptr : grad + whole, b + whole, n - whole);
}

}  // namespace wb
