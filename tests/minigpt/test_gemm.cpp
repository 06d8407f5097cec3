#include "check.hpp"
#include "minigpt/fast/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cblas.h>

// The trainer's matrix product (gemm.hpp) on every path this processor runs (AVX-512, AVX2,
// cblas), against a product in double by loops (small shapes) or against cblas_sgemm (the
// trainer's shapes), for the four transpose combinations. Every element must agree within
//     |got − expected| <= 1e-5 · (Σ_k |a_ik| |b_kj| + |beta| |c_ij|) + 1e-30
// (a float sum of K products in any order is within K · 6e-8 of that sum in the worst case,
// and within a few 6e-8 for these random data). Row strides larger than the widths; beta 0
// on a C full of NaN (it must not be read), beta 1 and 0.5; the padding past each row of C
// must be left as it was.

namespace {

using wb::minigpt::sgemm_at;

struct Case {
    bool ta, tb;
    std::size_t M, N, K;
    std::size_t pad;  // added to each row stride
    float beta;
};

// The paths this processor runs, widest first.
std::vector<wb::SimdLevel> paths() {
    std::vector<wb::SimdLevel> out;
    for (int l = wb::simd_level(); l >= wb::kSimdPortable; --l)
        out.push_back(static_cast<wb::SimdLevel>(l));
    return out;
}

const char* path_name(wb::SimdLevel l) {
    return l == wb::kSimdAvx512 ? "avx512" : (l == wb::kSimdAvx2 ? "avx2" : "cblas");
}

std::string describe(const Case& c, wb::SimdLevel l) {
    return std::string(path_name(l)) + (c.ta ? " A^T" : " A") + (c.tb ? " B^T" : " B") +
           " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
           " pad=" + std::to_string(c.pad) + " beta=" + std::to_string(c.beta);
}

// The operands of one case, in the layout the flags say, with the strides padded.
struct Operands {
    std::size_t lda, ldb, ldc;
    std::vector<float> A, B, C0;  // C0: C before the call (NaN where beta is 0)
};

constexpr float kPadValue = 12345.0f;  // the padding of C, which sgemm must leave alone

Operands make(const Case& c, std::mt19937& gen) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    Operands o;
    o.lda = (c.ta ? c.M : c.K) + c.pad;
    o.ldb = (c.tb ? c.K : c.N) + c.pad;
    o.ldc = c.N + c.pad;
    o.A.resize((c.ta ? c.K : c.M) * o.lda);
    o.B.resize((c.tb ? c.N : c.K) * o.ldb);
    o.C0.assign(c.M * o.ldc, kPadValue);
    for (float& x : o.A) x = dist(gen);
    for (float& x : o.B) x = dist(gen);
    for (std::size_t i = 0; i < c.M; ++i)
        for (std::size_t j = 0; j < c.N; ++j)
            o.C0[i * o.ldc + j] =
                c.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : dist(gen);
    return o;
}

float a_at(const Case& c, const Operands& o, std::size_t i, std::size_t k) {
    return c.ta ? o.A[k * o.lda + i] : o.A[i * o.lda + k];
}
float b_at(const Case& c, const Operands& o, std::size_t k, std::size_t j) {
    return c.tb ? o.B[j * o.ldb + k] : o.B[k * o.ldb + j];
}

// Empty if `got` agrees with `expected` within the bound (bound [M, N]: Σ|a||b|), otherwise
// the worst element.
std::string check(const Case& c, const Operands& o, const std::vector<float>& got,
                  const std::vector<double>& expected, const std::vector<double>& bound) {
    double worst = 0.0;
    std::string report;
    for (std::size_t i = 0; i < c.M; ++i) {
        for (std::size_t j = 0; j < c.N; ++j) {
            const std::size_t e = i * o.ldc + j;
            const double old = c.beta == 0.0f ? 0.0 : static_cast<double>(o.C0[e]);
            const double tol =
                1e-5 * (bound[i * c.N + j] + std::fabs(static_cast<double>(c.beta) * old)) + 1e-30;
            const double err = std::fabs(static_cast<double>(got[e]) - expected[i * c.N + j]);
            if (!(err <= tol) && (report.empty() || err / tol > worst)) {  // NaN fails too
                worst = err / tol;
                report = "C[" + std::to_string(i) + ", " + std::to_string(j) +
                         "] = " + std::to_string(got[e]) + ", expected " +
                         std::to_string(expected[i * c.N + j]) + " (tolerance " +
                         std::to_string(tol) + ")";
            }
        }
        for (std::size_t j = c.N; j < o.ldc; ++j) {
            if (got[i * o.ldc + j] != kPadValue) {
                return "the padding C[" + std::to_string(i) + ", " + std::to_string(j) +
                       "] past the row was overwritten";
            }
        }
    }
    return report;
}

// The expected product in double, and the bound Σ|a||b|, by loops.
void expected_by_loops(const Case& c, const Operands& o, std::vector<double>& expected,
                       std::vector<double>& bound) {
    expected.assign(c.M * c.N, 0.0);
    bound.assign(c.M * c.N, 0.0);
    for (std::size_t i = 0; i < c.M; ++i) {
        for (std::size_t j = 0; j < c.N; ++j) {
            double s = 0.0, m = 0.0;
            for (std::size_t k = 0; k < c.K; ++k) {
                const double p =
                    static_cast<double>(a_at(c, o, i, k)) * static_cast<double>(b_at(c, o, k, j));
                s += p;
                m += std::fabs(p);
            }
            const double old = c.beta == 0.0f ? 0.0 : static_cast<double>(o.C0[i * o.ldc + j]);
            expected[i * c.N + j] = s + static_cast<double>(c.beta) * old;
            bound[i * c.N + j] = m;
        }
    }
}

void blas(const Case& c, std::size_t lda, std::size_t ldb, const float* A, const float* B,
          float beta, float* C, std::size_t ldc) {
    cblas_sgemm(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans,
                static_cast<int>(c.M), static_cast<int>(c.N), static_cast<int>(c.K), 1.0f, A,
                static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

// The expected product by cblas_sgemm (beta · C included), and the bound Σ|a||b| as the
// cblas product of |A| and |B|.
void expected_by_blas(const Case& c, const Operands& o, std::vector<double>& expected,
                      std::vector<double>& bound) {
    std::vector<float> C = o.C0, absA = o.A, absB = o.B, absC(c.M * c.N);
    blas(c, o.lda, o.ldb, o.A.data(), o.B.data(), c.beta, C.data(), o.ldc);
    for (float& x : absA) x = std::fabs(x);
    for (float& x : absB) x = std::fabs(x);
    blas(c, o.lda, o.ldb, absA.data(), absB.data(), 0.0f, absC.data(), c.N);
    expected.resize(c.M * c.N);
    bound.resize(c.M * c.N);
    for (std::size_t i = 0; i < c.M; ++i) {
        for (std::size_t j = 0; j < c.N; ++j) {
            expected[i * c.N + j] = static_cast<double>(C[i * o.ldc + j]);
            bound[i * c.N + j] = 2.0 * static_cast<double>(absC[i * c.N + j]);  // both sides err
        }
    }
}

// Runs one case on every path; `by_loops` picks the reference.
void run_case(const Case& c, bool by_loops, std::mt19937& gen) {
    const Operands o = make(c, gen);
    std::vector<double> expected, bound;
    if (by_loops) {
        expected_by_loops(c, o, expected, bound);
    } else {
        expected_by_blas(c, o, expected, bound);
    }
    for (const wb::SimdLevel level : paths()) {
        std::vector<float> got = o.C0;
        sgemm_at(level, c.ta, c.tb, c.M, c.N, c.K, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta,
                 got.data(), o.ldc);
        const std::string report = check(c, o, got, expected, bound);
        INFO(describe(c, level) << ": " << report);
        CHECK(report.empty());
        // The same call again gives the same bits (nothing left over from the first one).
        std::vector<float> again = o.C0;
        sgemm_at(level, c.ta, c.tb, c.M, c.N, c.K, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta,
                 again.data(), o.ldc);
        CHECK(std::memcmp(got.data(), again.data(), got.size() * sizeof(float)) == 0);
    }
}

}  // namespace

TEST_CASE("sgemm equals a product in double on awkward shapes, every path and transpose",
          "[gemm]") {
    INFO("paths: " << path_name(wb::simd_level()) << " and narrower");
    std::mt19937 gen(11);
    // Edges of the micro-tiles (14 × 32, 6 × 16) and of the blocks (KC 256, MC 336 / 240,
    // NC 512), one row or column, widths below one vector.
    const std::size_t shapes[][3] = {{1, 1, 1},     {17, 33, 5},  {300, 97, 129}, {14, 32, 256},
                                     {15, 33, 257}, {6, 16, 1},   {29, 65, 513},  {3, 1100, 7},
                                     {700, 5, 3},   {2, 17, 300}, {1, 47, 64},    {47, 1, 64}};
    for (const auto& s : shapes) {
        for (int t = 0; t < 4; ++t) {
            const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
            for (const float beta : {0.0f, 1.0f, 0.5f}) {
                for (const std::size_t pad : {std::size_t{0}, std::size_t{3}}) {
                    run_case({ta, tb, s[0], s[1], s[2], pad, beta}, true, gen);
                }
            }
        }
    }
}

TEST_CASE("sgemm equals cblas_sgemm on the shapes of the trainer's benchmark step", "[gemm]") {
    std::mt19937 gen(12);
    // N = B·T = 2048 rows, D = 128, F = 4D = 512, V = 96: the forward x·Wᵀ, the backward dy·W
    // and dyᵀ·x of each Linear, whole and as one band of the trainer's gemm (256 or 64 rows).
    const std::size_t N = 2048, D = 128, F = 512, V = 96;
    const std::size_t io[][2] = {{D, 3 * D}, {D, D}, {D, F}, {F, D}, {D, V}};  // in, out
    for (const auto& l : io) {
        const std::size_t in = l[0], out = l[1];
        for (int t = 0; t < 4; ++t) {
            const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
            run_case({ta, tb, N, out, in, 0, 0.0f}, false, gen);    // forward
            run_case({ta, tb, 256, in, out, 0, 1.0f}, false, gen);  // dx, one band
            run_case({ta, tb, out, in, N, 0, 1.0f}, false, gen);    // dW, accumulated
        }
        run_case({false, false, N, in, out, 0, 0.0f}, false, gen);
        run_case({true, false, 64, in, N, 0, 1.0f}, false, gen);  // dW, one band of 64 rows
    }
}

TEST_CASE("sgemm with K = 0 scales C by beta, and beta 0 gives zeros without reading C", "[gemm]") {
    for (const wb::SimdLevel level : paths()) {
        std::vector<float> C = {std::numeric_limits<float>::quiet_NaN(), 2.0f, 3.0f, 4.0f};
        const float dummy = 0.0f;
        sgemm_at(level, false, false, 2, 2, 0, &dummy, 1, &dummy, 2, 0.0f, C.data(), 2);
        INFO(path_name(level));
        CHECK(C == std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f});
        C = {1.0f, 2.0f, 3.0f, 4.0f};
        sgemm_at(level, true, true, 2, 2, 0, &dummy, 2, &dummy, 1, 0.5f, C.data(), 2);
        CHECK(C == std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f});
    }
}

TEST_CASE("sgemm's own kernels give the same bits however C is cut into rows or columns",
          "[gemm]") {
    // The trainer cuts each product into one piece per thread (gpt_train.cpp's cut_of): its
    // bits for 1, 2 or 3 threads are equal only if no cut changes a bit. cblas_sgemm is not
    // held to this (the trainer cuts its products at fixed heights).
    std::mt19937 gen(13);
    const Case cases[] = {{false, true, 300, 97, 129, 0, 0.0f},
                          {false, false, 150, 70, 600, 3, 1.0f},
                          {true, false, 45, 130, 2048, 0, 0.5f},
                          {true, true, 29, 65, 513, 3, 1.0f}};
    for (const Case& c : cases) {
        const Operands o = make(c, gen);
        for (const wb::SimdLevel level : paths()) {
            if (level == wb::kSimdPortable) continue;
            std::vector<float> whole = o.C0;
            sgemm_at(level, c.ta, c.tb, c.M, c.N, c.K, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta,
                     whole.data(), o.ldc);
            for (const std::size_t at : {std::size_t{1}, std::size_t{14}, std::size_t{17}}) {
                // Rows [0, at) and [at, M), then columns [0, at) and [at, N).
                std::vector<float> rows = o.C0, cols = o.C0;
                for (const std::size_t r0 : {std::size_t{0}, at}) {
                    const std::size_t r1 = r0 == 0 ? at : c.M;
                    const float* a = c.ta ? o.A.data() + r0 : o.A.data() + r0 * o.lda;
                    sgemm_at(level, c.ta, c.tb, r1 - r0, c.N, c.K, a, o.lda, o.B.data(), o.ldb,
                             c.beta, rows.data() + r0 * o.ldc, o.ldc);
                }
                for (const std::size_t c0 : {std::size_t{0}, at}) {
                    const std::size_t c1 = c0 == 0 ? at : c.N;
                    const float* b = c.tb ? o.B.data() + c0 * o.ldb : o.B.data() + c0;
                    sgemm_at(level, c.ta, c.tb, c.M, c1 - c0, c.K, o.A.data(), o.lda, b, o.ldb,
                             c.beta, cols.data() + c0, o.ldc);
                }
                INFO(describe(c, level) << ", cut at " << at);
                CHECK(std::memcmp(rows.data(), whole.data(), whole.size() * sizeof(float)) == 0);
                CHECK(std::memcmp(cols.data(), whole.data(), whole.size() * sizeof(float)) == 0);
            }
        }
    }
}
