// Reference for the capstone: causal attention on raw float buffers, forward and backward,
// written the FlashAttention-2 way for a CPU.
//
// Layout (row-major, contiguous): a [B, H, T, d] tensor is B·H independent [T, d] matrices,
// one per (batch, head); row t of head bh starts at (bh·T + t)·d.
//
// How it is fast (chapters/capstone/README.md, section 7, measures each step):
//  - Tiles. The queries of a head are cut into blocks of BR rows and the keys into blocks of
//    BC keys. One task owns one query block; it walks the key blocks left to right with the
//    online softmax, so the scores of a block pair (BR × BC floats) live in cache, never T × T.
//  - Causal blocks skipped. Key blocks entirely to the right of the diagonal are never read;
//    only the diagonal block is masked element by element.
//  - A register-blocked micro-kernel. Every product (q kᵀ, P v, and the five of the backward)
//    is "C += A·B" on small tiles; gemm_tiles keeps an MR × NR block of C in registers and
//    streams A and B through it, NR floats wide, so the multiply-adds run on full SIMD vectors.
//  - A vectorisable exp. std::exp is a library call the compiler cannot put in a SIMD loop;
//    exp_approx is a few multiply-adds that it can (relative error ~1e-7).
//  - AVX2 + FMA or AVX-512 when the processor has them. The build uses the compiler's default
//    target (SSE2 on x86-64); the task functions are compiled three times, for that target,
//    with WB_TARGET_AVX2 and with WB_TARGET_AVX512 (workbook/simd.hpp), and wb::simd_level()
//    chooses at run time (WB_SIMD=0|1|2 caps it). No build flag is needed and the binary
//    runs on any x86-64.
//  - Balanced threads. The work of query block qb grows with qb (the causal triangle); tasks
//    pair block qb with block nb − 1 − qb so that every task has the same work, and threads
//    take tasks dynamically.
//
// Determinism: every output element is computed by exactly one task, in a fixed order that
// does not depend on which thread runs the task or how many threads there are. The backward
// has no atomics: dk and dv are summed by one task per key block (over the query blocks),
// and dq by one task per query block (over the key blocks), at the price of computing the
// weights P twice.
#include "capstone/attention_kernel.hpp"
#include "workbook/fast_exp.hpp"
#include "workbook/simd.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

// Compile this file's functions with -fno-trapping-math. By default g++ assumes that a float
// comparison may trap, so it will not turn `x < -87 ? -87 : x` or a row max into SIMD
// selects, and the exp and max loops stay scalar. Nothing here reads the floating-point
// exception flags, so the assumption only costs speed. (Set after the #includes: it applies
// to the functions defined below, not to the library headers.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

// Force the small helpers into the task functions, so that they are compiled for the
// instruction set of each task function (see "AVX2 + FMA" above).
#define WB_ALWAYS_INLINE inline __attribute__((always_inline))

namespace wb {
inline namespace WB_IMPL {

namespace {

constexpr std::size_t BR = 64;  // query rows per block
constexpr std::size_t BC = 64;  // keys per block
constexpr std::size_t NR = 16;  // columns of C held in registers (1 AVX-512, 2 AVX, 4 SSE vectors)
// MR, the rows of C held in registers, is a template parameter: 8 for AVX-512 (32 registers),
// 4 for AVX2 and 2 for SSE (16 registers), so that MR × NR / (vector width) = 8 accumulators
// hide the 4-cycle latency of a multiply-add without spilling.

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Raises a ValueError from `function` if an axis of the shape is 0.
void require_positive(const char* function, const AttentionShape& s) {
    if (s.B == 0 || s.H == 0 || s.T == 0 || s.d == 0) {
        throw ValueError(std::string(function) +
                         ": got shape [B, H, T, d] = " + shape_str(Shape{s.B, s.H, s.T, s.d}) +
                         ", expected every axis to be at least 1");
    }
}

// The AttentionShape of a [B, H, T, d] cube.
AttentionShape shape_of(const Cube<float>& x) {
    return AttentionShape{x.shape(0), x.shape(1), x.shape(2), x.shape(3)};
}

std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

// What every task needs to know about the problem.
struct Geometry {
    std::size_t T;   // sequence length
    std::size_t d;   // head width
    std::size_t dp;  // d rounded up to NR: the width of every [rows, d] tile
    std::size_t nb;  // number of query blocks (= key blocks) per head
    float scale;     // 1 / sqrt(d)
};

// exp in plain multiply-adds, so that the softmax loops vectorise: the given wb::fast_exp
// (workbook/fast_exp.hpp; exactly 0 below -87, so a masked -inf score gets weight 0).
WB_ALWAYS_INLINE float exp_approx(float x) { return fast_exp(x); }

// C (+)= A·B on tiles: C is [M, N] row-major with leading dimension ldc, A(i, k) is
// A[i·ai + k·ak] (so a transposed A is just other strides), B(k, n) is B[k·ldb + n].
// M must be a multiple of MR and N of NR (the callers pad their tiles with zeros).
// Each MR × NR block of C stays in registers for the whole k loop: per k, one row of NR
// floats of B is loaded and used MR times, and each of MR numbers of A is used NR times.
template <std::size_t MR, bool kAccumulate>
WB_ALWAYS_INLINE void gemm_tiles(std::size_t M, std::size_t N, std::size_t K,
                                 const float* __restrict A, std::size_t ai, std::size_t ak,
                                 const float* __restrict B, std::size_t ldb, float* __restrict C,
                                 std::size_t ldc) {
    for (std::size_t i = 0; i < M; i += MR) {
        for (std::size_t n0 = 0; n0 < N; n0 += NR) {
            float acc[MR][NR];  // the register tile; the n loops below are its SIMD lanes
            for (std::size_t r = 0; r < MR; ++r) {
#pragma omp simd
                for (std::size_t n = 0; n < NR; ++n)
                    acc[r][n] = kAccumulate ? C[(i + r) * ldc + n0 + n] : 0.0f;
            }
            const float* a = A + i * ai;
            const float* b = B + n0;
            for (std::size_t k = 0; k < K; ++k, a += ak, b += ldb) {
#pragma GCC unroll 16
                for (std::size_t r = 0; r < MR; ++r) {
                    const float ar = a[r * ai];
#pragma omp simd
                    for (std::size_t n = 0; n < NR; ++n) acc[r][n] += ar * b[n];
                }
            }
            for (std::size_t r = 0; r < MR; ++r) {
#pragma omp simd
                for (std::size_t n = 0; n < NR; ++n) C[(i + r) * ldc + n0 + n] = acc[r][n];
            }
        }
    }
}

// Copies n rows of a [T, d] head (from `src`) into a [rows, dp] tile, zero padded.
WB_ALWAYS_INLINE void load_rows(const float* __restrict src, std::size_t n, std::size_t rows,
                                const Geometry& g, float* __restrict dst) {
    for (std::size_t r = 0; r < n; ++r) {
        std::copy(src + r * g.d, src + (r + 1) * g.d, dst + r * g.dp);
        std::fill(dst + r * g.dp + g.d, dst + (r + 1) * g.dp, 0.0f);
    }
    std::fill(dst + n * g.dp, dst + rows * g.dp, 0.0f);
}

// Copies n rows of a [T, d] head into a transposed [d, W] tile (positions along the row),
// columns n..W zero: the position axis becomes the contiguous SIMD axis of a product.
// Rows are read in order and the tile (16 KiB for W = 64, d = 64) stays in L1 cache.
WB_ALWAYS_INLINE void load_transposed(const float* __restrict src, std::size_t n, std::size_t W,
                                      const Geometry& g, float* __restrict dst) {
    for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t c = 0; c < g.d; ++c) dst[c * W + j] = src[j * g.d + c];
    }
    for (std::size_t c = 0; c < g.d; ++c) std::fill(dst + c * W + n, dst + (c + 1) * W, 0.0f);
}

// Valid keys of query row i in the key block starting at j0 (causal: j <= i), at most nk.
WB_ALWAYS_INLINE std::size_t visible_keys(std::size_t i, std::size_t j0, std::size_t nk) {
    return i < j0 ? 0 : std::min(nk, i - j0 + 1);
}

// ---- forward ---------------------------------------------------------------------------------

// Floats of scratch one forward task uses.
std::size_t forward_scratch(const Geometry& g) {
    return BR * g.dp + g.d * BR + 2 * BC * g.dp + BC * BR + 4 * BR;
}

// One query block [i0, i0 + nq) of one head: out and lse of its rows.
//
// The scores of a block pair are computed transposed, keys × queries: st = k qᵀ, [BC, BR].
// The query block is transposed once per task (not the key block once per pair), and the
// softmax statistics m, l of the BR queries are then plain SIMD vectors along each row of st.
template <std::size_t MR>
WB_ALWAYS_INLINE void forward_block_body(const Geometry& g, const float* qh, const float* kh,
                                         const float* vh, float* oh, float* lh, std::size_t qb,
                                         float* work) {
    const std::size_t dp = g.dp, d = g.d;
    const std::size_t i0 = qb * BR, nq = std::min(BR, g.T - i0);
    const std::size_t Mr = round_up(nq, MR);
    float* o = work;           // [BR, dp] running (unnormalised) output
    float* qt = o + BR * dp;   // [d, BR] the query block, transposed
    float* kb = qt + d * BR;   // [BC, dp] the key block
    float* vb = kb + BC * dp;  // [BC, dp] the value block
    float* st = vb + BC * dp;  // [BC, BR] scores, then weights, keys × queries
    float* m = st + BC * BR;   // [BR] running max of the scaled scores
    float* l = m + BR;         // [BR] running sum of exp(score - m)
    float* mx = l + BR;        // [BR] max of this key block
    float* alpha = mx + BR;    // [BR] rescaling of what was summed before this block

    load_transposed(qh + i0 * d, nq, BR, g, qt);
    std::fill(o, o + BR * dp, 0.0f);
    std::fill(m, m + BR, kNegInf);
    std::fill(l, l + BR, 0.0f);

    // Causal: only key blocks with a key j <= i0 + nq - 1, i.e. up to the diagonal block.
    const std::size_t last_key = i0 + nq - 1;
    for (std::size_t j0 = 0; j0 <= last_key; j0 += BC) {
        const std::size_t nk = std::min(BC, g.T - j0);
        const std::size_t kmax = visible_keys(last_key, j0, nk);  // keys any row can see
        const std::size_t Mk = round_up(kmax, MR);
        load_rows(kh + j0 * d, nk, BC, g, kb);
        load_rows(vh + j0 * d, nk, BC, g, vb);

        gemm_tiles<MR, false>(Mk, BR, d, kb, dp, 1, qt, BR, st, BR);  // st = k qᵀ   [Mk, BR]

        // Scale, mask the future (key j0 + j is visible to queries i0 + i >= j0 + j), and take
        // the max of each query's column.
        std::fill(mx, mx + BR, kNegInf);
        for (std::size_t j = 0; j < kmax; ++j) {
            float* row = st + j * BR;
            const std::size_t first = j0 + j > i0 ? j0 + j - i0 : 0;  // first query that sees j
#pragma omp simd
            for (std::size_t i = 0; i < BR; ++i) {
                const float scaled = row[i] * g.scale;          // computed for every i: a select,
                const float x = i >= first ? scaled : kNegInf;  //  not a branch, vectorises
                row[i] = x;
                mx[i] = x > mx[i] ? x : mx[i];
            }
        }
        // Online softmax: when the max grows, everything summed so far was measured against
        // the old max and must shrink by alpha = exp(m - m_new) (0 on the first block).
#pragma omp simd
        for (std::size_t i = 0; i < BR; ++i) {
            const float m_new = m[i] > mx[i] ? m[i] : mx[i];
            alpha[i] = exp_approx(m[i] - m_new);
            m[i] = m_new;
            l[i] = l[i] * alpha[i];
        }
        for (std::size_t j = 0; j < kmax; ++j) {
            float* row = st + j * BR;
#pragma omp simd
            for (std::size_t i = 0; i < BR; ++i) {
                const float p = exp_approx(row[i] - m[i]);  // masked: exp(-inf) = exactly 0
                row[i] = p;
                l[i] += p;
            }
        }
        for (std::size_t i = 0; i < nq; ++i) {
            float* orow = o + i * dp;
#pragma omp simd
            for (std::size_t c = 0; c < dp; ++c) orow[c] *= alpha[i];
        }

        gemm_tiles<MR, true>(Mr, dp, kmax, st, 1, BR, vb, dp, o, dp);  // o += P v   [Mr, dp]
    }

    for (std::size_t i = 0; i < nq; ++i) {
        const float inv_l = 1.0f / l[i];  // l >= 1: the max's own term is exp(0)
        float* dst = oh + (i0 + i) * d;
        for (std::size_t c = 0; c < d; ++c) dst[c] = o[i * dp + c] * inv_l;
        lh[i0 + i] = m[i] + std::log(l[i]);  // log Σ_j exp(s_ij), the softmax's normaliser
    }
}

void forward_block_generic(const Geometry& g, const float* qh, const float* kh, const float* vh,
                           float* oh, float* lh, std::size_t qb, float* work) {
    forward_block_body<2>(g, qh, kh, vh, oh, lh, qb, work);
}

// ---- backward --------------------------------------------------------------------------------

// Floats of scratch one backward task uses.
std::size_t backward_scratch(const Geometry& g) {
    const std::size_t dkdv = 2 * BR * g.dp + BR + 2 * BC * g.dp + 2 * g.d * BC + 2 * BR * BC;
    const std::size_t dq = BR * g.dp + 2 * g.d * BR + 2 * BC * g.dp + 2 * BC * BR + 2 * BR;
    return std::max(dkdv, dq);
}

// The weights and score gradients of one block pair, recomputed from lse (nothing T × T is
// stored): for rows r < nq and keys j < Ns of the pair (query block i0, key block j0),
//   p[r, j]  = P_ij  = exp(s_ij · scale − lse_i), 0 for j > i
//   ds[r, j] = dS_ij · scale = P_ij (dP_ij − D_i) · scale     (the scale of S = q kᵀ · scale)
// where s holds q kᵀ and ds holds dP = dout vᵀ on entry. Rows nq..Mr are zeroed.
WB_ALWAYS_INLINE void weights_and_dscores(const Geometry& g, std::size_t i0, std::size_t nq,
                                          std::size_t Mr, std::size_t j0, std::size_t nk,
                                          std::size_t Ns, const float* lse, const float* D,
                                          float* s, float* ds) {
    for (std::size_t r = 0; r < nq; ++r) {
        const std::size_t limit = visible_keys(i0 + r, j0, nk);
        const float lse_i = lse[r], Di = D[r];
        float* pr = s + r * BC;
        float* dsr = ds + r * BC;
#pragma omp simd
        for (std::size_t j = 0; j < Ns; ++j) {
            const float e = exp_approx(pr[j] * g.scale - lse_i);
            const float p = j < limit ? e : 0.0f;
            pr[j] = p;
            dsr[j] = p * (dsr[j] - Di) * g.scale;  // dS_ij, times the scale of S
        }
    }
    for (std::size_t r = nq; r < Mr; ++r) {
        std::fill(s + r * BC, s + r * BC + Ns, 0.0f);
        std::fill(ds + r * BC, ds + r * BC + Ns, 0.0f);
    }
}

// D_i = Σ_j P_ij dP_ij = dout_i · out_i: the softmax backward's row term, one per row.
WB_ALWAYS_INLINE float row_term(const Geometry& g, const float* dout_i, const float* out_i) {
    float Di = 0.0f;
#pragma omp simd reduction(+ : Di)
    for (std::size_t c = 0; c < g.d; ++c) Di += dout_i[c] * out_i[c];
    return Di;
}

// Pointers of one head, shared by the two backward passes.
struct HeadPtrs {
    const float *q, *k, *v, *out, *lse, *dout;
    float *dq, *dk, *dv;
};

// dk and dv of one key block [j0, j0 + nk): sums over every query block at or after it.
template <std::size_t MR>
WB_ALWAYS_INLINE void backward_dkdv_body(const Geometry& g, const HeadPtrs& h, std::size_t kb,
                                         float* work) {
    const std::size_t dp = g.dp, d = g.d;
    const std::size_t j0 = kb * BC, nk = std::min(BC, g.T - j0);
    float* qt = work;            // [BR, dp] query block
    float* gt = qt + BR * dp;    // [BR, dp] dout block
    float* D = gt + BR * dp;     // [BR]
    float* dka = D + BR;         // [BC, dp] dk of this key block, summed over query blocks
    float* dva = dka + BC * dp;  // [BC, dp] dv likewise
    float* kt = dva + BC * dp;   // [d, BC] keys, transposed
    float* vt = kt + d * BC;     // [d, BC] values, transposed
    float* s = vt + d * BC;      // [BR, BC] scores, then weights P
    float* ds = s + BR * BC;     // [BR, BC] dP, then dS · scale

    load_transposed(h.k + j0 * d, nk, BC, g, kt);
    load_transposed(h.v + j0 * d, nk, BC, g, vt);
    std::fill(dka, dka + BC * dp, 0.0f);
    std::fill(dva, dva + BC * dp, 0.0f);

    // Causal: query blocks before the one holding row j0 see none of these keys.
    for (std::size_t i0 = j0 / BR * BR; i0 < g.T; i0 += BR) {
        const std::size_t nq = std::min(BR, g.T - i0);
        const std::size_t Mr = round_up(nq, MR);
        const std::size_t kmax = visible_keys(i0 + nq - 1, j0, nk);
        const std::size_t Ns = round_up(kmax, NR);
        load_rows(h.q + i0 * d, nq, BR, g, qt);
        load_rows(h.dout + i0 * d, nq, BR, g, gt);
        for (std::size_t i = 0; i < nq; ++i)
            D[i] = row_term(g, h.dout + (i0 + i) * d, h.out + (i0 + i) * d);

        gemm_tiles<MR, false>(Mr, Ns, d, qt, dp, 1, kt, BC, s, BC);   // s  = q kᵀ      [Mr, Ns]
        gemm_tiles<MR, false>(Mr, Ns, d, gt, dp, 1, vt, BC, ds, BC);  // dP = dout vᵀ   [Mr, Ns]
        weights_and_dscores(g, i0, nq, Mr, j0, nk, Ns, h.lse + i0, D, s, ds);

        const std::size_t Mj = round_up(kmax, MR);
        gemm_tiles<MR, true>(Mj, dp, nq, s, 1, BC, gt, dp, dva, dp);   // dv += Pᵀ dout   [Mj, dp]
        gemm_tiles<MR, true>(Mj, dp, nq, ds, 1, BC, qt, dp, dka, dp);  // dk += dSᵀ q     [Mj, dp]
    }

    for (std::size_t j = 0; j < nk; ++j) {
        for (std::size_t c = 0; c < d; ++c) {
            h.dk[(j0 + j) * d + c] = dka[j * dp + c];
            h.dv[(j0 + j) * d + c] = dva[j * dp + c];
        }
    }
}

// dq of one query block [i0, i0 + nq): sums over every key block up to the diagonal.
// Like the forward, it works keys × queries (st = k qᵀ, dpt = v doutᵀ), so that only the
// query block is transposed, once per task.
template <std::size_t MR>
WB_ALWAYS_INLINE void backward_dq_body(const Geometry& g, const HeadPtrs& h, std::size_t qb,
                                       float* work) {
    const std::size_t dp = g.dp, d = g.d;
    const std::size_t i0 = qb * BR, nq = std::min(BR, g.T - i0);
    const std::size_t Mr = round_up(nq, MR);
    float* dqa = work;          // [BR, dp] dq of this query block, summed over key blocks
    float* qt = dqa + BR * dp;  // [d, BR] query block, transposed
    float* gt = qt + d * BR;    // [d, BR] dout block, transposed
    float* kb = gt + d * BR;    // [BC, dp] key block
    float* vb = kb + BC * dp;   // [BC, dp] value block
    float* st = vb + BC * dp;   // [BC, BR] scores, keys × queries
    float* dst = st + BC * BR;  // [BC, BR] dP, then dS · scale, keys × queries
    float* D = dst + BC * BR;   // [BR] row terms
    float* lse = D + BR;        // [BR] log-sum-exp of the block's rows

    load_transposed(h.q + i0 * d, nq, BR, g, qt);
    load_transposed(h.dout + i0 * d, nq, BR, g, gt);
    std::fill(D, D + BR, 0.0f);
    std::fill(lse, lse + BR, 0.0f);
    for (std::size_t i = 0; i < nq; ++i) {
        D[i] = row_term(g, h.dout + (i0 + i) * d, h.out + (i0 + i) * d);
        lse[i] = h.lse[i0 + i];
    }
    std::fill(dqa, dqa + BR * dp, 0.0f);

    const std::size_t last_key = i0 + nq - 1;
    for (std::size_t j0 = 0; j0 <= last_key; j0 += BC) {
        const std::size_t nk = std::min(BC, g.T - j0);
        const std::size_t kmax = visible_keys(last_key, j0, nk);
        const std::size_t Mk = round_up(kmax, MR);
        load_rows(h.k + j0 * d, nk, BC, g, kb);
        load_rows(h.v + j0 * d, nk, BC, g, vb);

        gemm_tiles<MR, false>(Mk, BR, d, kb, dp, 1, qt, BR, st, BR);   // st  = k qᵀ      [Mk, BR]
        gemm_tiles<MR, false>(Mk, BR, d, vb, dp, 1, gt, BR, dst, BR);  // dpt = v doutᵀ   [Mk, BR]
        for (std::size_t j = 0; j < kmax; ++j) {
            const float* srow = st + j * BR;
            float* drow = dst + j * BR;
            const std::size_t first = j0 + j > i0 ? j0 + j - i0 : 0;  // first query that sees j
#pragma omp simd
            for (std::size_t i = 0; i < BR; ++i) {
                const float e = exp_approx(srow[i] * g.scale - lse[i]);
                const float p = i >= first ? e : 0.0f;
                drow[i] = p * (drow[i] - D[i]) * g.scale;
            }
        }
        gemm_tiles<MR, true>(Mr, dp, kmax, dst, 1, BR, kb, dp, dqa, dp);  // dq += dS k   [Mr, dp]
    }

    for (std::size_t i = 0; i < nq; ++i) {
        for (std::size_t c = 0; c < d; ++c) h.dq[(i0 + i) * d + c] = dqa[i * dp + c];
    }
}

void backward_dkdv_generic(const Geometry& g, const HeadPtrs& h, std::size_t kb, float* work) {
    backward_dkdv_body<2>(g, h, kb, work);
}
void backward_dq_generic(const Geometry& g, const HeadPtrs& h, std::size_t qb, float* work) {
    backward_dq_body<2>(g, h, qb, work);
}

// ---- the same task functions compiled for AVX2 + FMA and AVX-512, chosen at run time -------

#ifdef WB_SIMD_X86
WB_TARGET_AVX2 void forward_block_avx2(const Geometry& g, const float* qh, const float* kh,
                                       const float* vh, float* oh, float* lh, std::size_t qb,
                                       float* work) {
    forward_block_body<4>(g, qh, kh, vh, oh, lh, qb, work);
}
WB_TARGET_AVX2 void backward_dkdv_avx2(const Geometry& g, const HeadPtrs& h, std::size_t kb,
                                       float* work) {
    backward_dkdv_body<4>(g, h, kb, work);
}
WB_TARGET_AVX2 void backward_dq_avx2(const Geometry& g, const HeadPtrs& h, std::size_t qb,
                                     float* work) {
    backward_dq_body<4>(g, h, qb, work);
}
WB_TARGET_AVX512 void forward_block_avx512(const Geometry& g, const float* qh, const float* kh,
                                           const float* vh, float* oh, float* lh, std::size_t qb,
                                           float* work) {
    forward_block_body<8>(g, qh, kh, vh, oh, lh, qb, work);
}
WB_TARGET_AVX512 void backward_dkdv_avx512(const Geometry& g, const HeadPtrs& h, std::size_t kb,
                                           float* work) {
    backward_dkdv_body<8>(g, h, kb, work);
}
WB_TARGET_AVX512 void backward_dq_avx512(const Geometry& g, const HeadPtrs& h, std::size_t qb,
                                         float* work) {
    backward_dq_body<8>(g, h, qb, work);
}
#endif

// Task t of a pass with nb blocks per head and `heads` heads: head t / pairs and the blocks
// p and nb − 1 − p (p = t % pairs), whose causal work adds up to the same for every p.
struct Pair {
    std::size_t head, first, second;  // second == first when nb is odd and p is the middle
};
Pair pair_of(std::size_t t, std::size_t nb) {
    const std::size_t pairs = (nb + 1) / 2;
    const std::size_t p = t % pairs;
    return Pair{t / pairs, p, nb - 1 - p};
}

Geometry geometry_of(const AttentionShape& s) {
    return Geometry{s.T, s.d, round_up(s.d, NR), (s.T + BR - 1) / BR,
                    1.0f / std::sqrt(static_cast<float>(s.d))};
}

}  // namespace

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* out, float* lse) {
    require_positive("wb::attention_forward", s);
    const Geometry g = geometry_of(s);
    const long long tasks = static_cast<long long>(s.B * s.H * ((g.nb + 1) / 2));
    auto block = forward_block_generic;
#ifdef WB_SIMD_X86
    if (simd_level() == kSimdAvx2) block = forward_block_avx2;
    if (simd_level() == kSimdAvx512) block = forward_block_avx512;
#endif

#pragma omp parallel
    {
        // This thread's tiles, kept between calls: a training step calls the kernel 2·L
        // times, and the scratch only grows (every task overwrites what it reads).
        thread_local std::vector<float> work;
        work.resize(std::max(work.size(), forward_scratch(g)));
#pragma omp for schedule(dynamic, 1)
        for (long long t = 0; t < tasks; ++t) {
            const Pair p = pair_of(static_cast<std::size_t>(t), g.nb);
            const std::size_t off = p.head * s.T * s.d;  // start of this head's [T, d]
            const float* qh = q + off;
            const float* kh = k + off;
            const float* vh = v + off;
            float* oh = out + off;
            float* lh = lse + p.head * s.T;
            block(g, qh, kh, vh, oh, lh, p.first, work.data());
            if (p.second != p.first) block(g, qh, kh, vh, oh, lh, p.second, work.data());
        }
    }
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* out, const float* lse, const float* dout, float* dq, float* dk,
                        float* dv) {
    require_positive("wb::attention_backward", s);
    const Geometry g = geometry_of(s);
    const long long tasks = static_cast<long long>(s.B * s.H * ((g.nb + 1) / 2));
    auto dkdv = backward_dkdv_generic;
    auto dqf = backward_dq_generic;
#ifdef WB_SIMD_X86
    if (simd_level() == kSimdAvx2) {
        dkdv = backward_dkdv_avx2;
        dqf = backward_dq_avx2;
    }
    if (simd_level() == kSimdAvx512) {
        dkdv = backward_dkdv_avx512;
        dqf = backward_dq_avx512;
    }
#endif

    auto head = [&](std::size_t bh) {
        const std::size_t off = bh * s.T * s.d;
        return HeadPtrs{q + off,    k + off,  v + off,  out + off, lse + bh * s.T,
                        dout + off, dq + off, dk + off, dv + off};
    };

#pragma omp parallel
    {
        // This thread's tiles, kept between calls: a training step calls the kernel 2·L
        // times, and the scratch only grows (every task overwrites what it reads).
        thread_local std::vector<float> work;
        work.resize(std::max(work.size(), backward_scratch(g)));
        // Pass 1: dk, dv, one key block per task (key block kb sees query blocks kb..nb-1).
#pragma omp for schedule(dynamic, 1)
        for (long long t = 0; t < tasks; ++t) {
            const Pair p = pair_of(static_cast<std::size_t>(t), g.nb);
            const HeadPtrs h = head(p.head);
            dkdv(g, h, p.first, work.data());
            if (p.second != p.first) dkdv(g, h, p.second, work.data());
        }
        // Pass 2: dq, one query block per task (query block qb sees key blocks 0..qb).
#pragma omp for schedule(dynamic, 1)
        for (long long t = 0; t < tasks; ++t) {
            const Pair p = pair_of(static_cast<std::size_t>(t), g.nb);
            const HeadPtrs h = head(p.head);
            dqf(g, h, p.first, work.data());
            if (p.second != p.first) dqf(g, h, p.second, work.data());
        }
    }
}

Cube<float> attention_forward(const Cube<float>& q, const Cube<float>& k, const Cube<float>& v,
                              xt::xtensor<float, 3>& lse) {
    const char* fn = "wb::attention_forward";
    require_nonempty(fn, "q", q);
    const Shape qs(q.shape().begin(), q.shape().end());
    require_shape(fn, "k", k, qs);
    require_shape(fn, "v", v, qs);
    const AttentionShape s = shape_of(q);
    Cube<float> out(q.shape());                                // [B, H, T, d]
    lse = xt::xtensor<float, 3>::from_shape({s.B, s.H, s.T});  // [B, H, T]
    attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
    return out;
}

void attention_backward(const Cube<float>& q, const Cube<float>& k, const Cube<float>& v,
                        const Cube<float>& out, const xt::xtensor<float, 3>& lse,
                        const Cube<float>& dout, Cube<float>& dq, Cube<float>& dk,
                        Cube<float>& dv) {
    const char* fn = "wb::attention_backward";
    require_nonempty(fn, "q", q);
    const Shape qs(q.shape().begin(), q.shape().end());
    require_shape(fn, "k", k, qs);
    require_shape(fn, "v", v, qs);
    require_shape(fn, "out", out, qs);
    require_shape(fn, "dout", dout, qs);
    require_shape(fn, "lse", lse, Shape{qs[0], qs[1], qs[2]});
    const AttentionShape s = shape_of(q);
    dq = Cube<float>::from_shape(q.shape());  // [B, H, T, d] each
    dk = Cube<float>::from_shape(q.shape());
    dv = Cube<float>::from_shape(q.shape());
    attention_backward(s, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                       dq.data(), dk.data(), dv.data());
}

}  // namespace WB_IMPL
}  // namespace wb

#undef WB_ALWAYS_INLINE
