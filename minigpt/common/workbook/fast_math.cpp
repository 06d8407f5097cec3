#include "workbook/fast_math.hpp"

#include "workbook/simd.hpp"

#ifdef WB_SIMD_X86
#include <immintrin.h>
#endif

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

#ifdef WB_SIMD_X86
// fast_exp_nonpositive, eight lanes at a time: the same steps and constants.
WB_TARGET_AVX2 inline __m256 fast_exp_nonpositive8(__m256 x_in) {
    const __m256 x = _mm256_max_ps(x_in, _mm256_set1_ps(-88.0f));
    const __m256 big =
        _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(12582912.0f));
    const __m256 n = _mm256_sub_ps(big, _mm256_set1_ps(12582912.0f));
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.3836846919730306e-3f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.374815806746483e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.166822507977486e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666419804096222e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.9999991059303284e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i two_n = _mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(big), 23),
                                           _mm256_set1_epi32(127 << 23));
    return _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));
}

// The same GELU, 8 values at a time with AVX2 + FMA. Written with intrinsics because GCC does
// not vectorise the clamps (float comparisons) under the default -ftrapping-math.
WB_TARGET_AVX2 void gelu_row_avx2(float* y, float* grad, const float* b, std::size_t n) {
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 u = _mm256_add_ps(_mm256_loadu_ps(y + j), _mm256_loadu_ps(b + j));
        __m256 x = _mm256_mul_ps(u, _mm256_set1_ps(kInvSqrt2));
        x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-4.0f)), _mm256_set1_ps(4.0f));
        const __m256 x2 = _mm256_mul_ps(x, x);
        __m256 p = _mm256_set1_ps(kErfNum[0]);
        for (int i = 1; i < 7; ++i) p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kErfNum[i]));
        __m256 q = _mm256_set1_ps(kErfDen[0]);
        for (int i = 1; i < 5; ++i) q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(kErfDen[i]));
        const __m256 erf = _mm256_div_ps(_mm256_mul_ps(x, p), q);
        const __m256 cdf = _mm256_mul_ps(half, _mm256_add_ps(one, erf));
        _mm256_storeu_ps(y + j, _mm256_mul_ps(u, cdf));
        if (grad != nullptr) {
            const __m256 z = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), u), u);
            const __m256 pdf = _mm256_mul_ps(fast_exp_nonpositive8(z), _mm256_set1_ps(kInvSqrt2Pi));
            _mm256_storeu_ps(grad + j, _mm256_fmadd_ps(u, pdf, cdf));
        }
    }
    gelu_row_portable(y + j, grad == nullptr ? nullptr : grad + j, b + j, n - j);
}
#endif

}  // namespace

void gelu_bias_row(float* y, float* grad, const float* b, std::size_t n) {
#ifdef WB_SIMD_X86
    static const bool avx2 = simd_level() >= kSimdAvx2;
    if (avx2) {
        gelu_row_avx2(y, grad, b, n);
        return;
    }
#endif
    gelu_row_portable(y, grad, b, n);
}

}  // namespace wb
