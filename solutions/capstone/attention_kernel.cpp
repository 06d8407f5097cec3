// Reference for the capstone: causal attention on raw float buffers, forward and backward,
// written the FlashAttention-2 way for a CPU.
//
// Layout (row-major, contiguous): a [B, H, T, d] tensor is B·H independent [T, d] matrices,
// one per (batch, head); row t of head bh starts at (bh·T + t)·d.
//
// How it is fast (chapters/capstone/README.md, section 7, measures each step):
//  - Tiles. The queries of a head are cut into blocks of BR rows and the keys into blocks of
//    BC keys. A forward task owns one query block; it walks the key blocks left to right with
//    the online softmax, so the scores of a block pair (BR × BC floats) live in cache, never
//    T × T. A backward task owns one head and visits each of its block pairs once.
//  - Causal blocks skipped. Key blocks entirely to the right of the diagonal are never read;
//    only the diagonal block is masked element by element.
//  - A register-blocked micro-kernel. Every product (q kᵀ, P v, and the five of the backward)
//    is "C += A·B" on small tiles; gemm_tiles keeps an MR × NW block of C in registers and
//    streams A and B through it, so the multiply-adds run on full SIMD vectors. Rows of the
//    inputs are read where they lie, not copied, whenever they are already tile-shaped.
//  - A vectorisable exp. std::exp is a library call the compiler cannot put in a SIMD loop;
//    wb::fast_exp_nonpositive (workbook/fast_math.hpp) is 14 multiply-adds and integer
//    operations that it can (relative error ~1e-7). Every exp here is of a score minus a max,
//    or minus lse (above every score), so its input is at most 0, all that function takes;
//    a masked -inf score gets weight exactly 0.
//  - No pass the products can do. Off the diagonal, a block's column max is read off the
//    registers of st = k qᵀ as they are stored; o is rescaled only when some max grew.
//  - AVX2 + FMA or AVX-512 when the processor has them. The build uses the compiler's default
//    target (SSE2 on x86-64); the task functions are compiled three times, for that target,
//    with WB_TARGET_AVX2 and with WB_TARGET_AVX512 (workbook/simd.hpp), and wb::simd_level()
//    chooses at run time (WB_SIMD=0|1|2 caps it). No build flag is needed and the binary
//    runs on any x86-64.
//  - Balanced threads. The work of query block qb grows with qb (the causal triangle); forward
//    tasks pair block qb with block nb − 1 − qb so that every task has the same work, and
//    threads take tasks dynamically. Backward tasks are heads, all of the same work.
//
// Determinism: every output element is computed by exactly one task, in a fixed order that
// does not depend on which thread runs the task or how many threads there are. The backward
// has no atomics: one task sums dq, dk and dv of a head, each over the blocks in ascending
// order, and computes the weights P of each block pair once. (Heads are the only parallel
// axis of the backward: B·H below the thread count leaves threads idle.)
#include "capstone/attention_kernel.hpp"
#include "workbook/fast_math.hpp"
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
constexpr std::size_t NR = 16;  // tile widths are multiples of NR (1 AVX-512, 2 AVX, 4 SSE vectors)
// The register block of a product, MR rows × NW columns of C, is a pair of template
// parameters: 8 × 32 for AVX-512 (16 of its 32 registers), 4 × 16 for AVX2 and 2 × 16 for SSE
// (8 of 16). A multiply-add has a latency of 4 cycles and two issue each cycle, so at least 8
// independent accumulators keep both units busy; AVX-512's 16 leave slack for the loads, and
// per k its 16 multiply-adds need 2 loads of B and 8 broadcasts of A.

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Raises a ValueError from `function` if an axis of the shape is 0.
void require_positive(const char* function, const AttentionShape& s) {
    if (s.B == 0 || s.H == 0 || s.T == 0 || s.d == 0) {
        throw ValueError(std::string(function) +
                         ": got shape [B, H, T, d] = " + shape_str(Shape{s.B, s.H, s.T, s.d}) +
                         ", expected every axis to be at least 1");
    }
    // B·H·T·d never wraps around to a small count of tasks (2^32 × 2^32 is 0 in size_t).
    checked_size(function, "[B, H, T, d] = B x H x T x d", {s.B, s.H, s.T, s.d});
}

// The AttentionShape of a [B, H, T, d] cube.
AttentionShape shape_of(const Heads<float>& x) {
    return AttentionShape{x.shape(0), x.shape(1), x.shape(2), x.shape(3)};
}

// What every task needs to know about the problem.
struct Geometry {
    std::size_t T;   // sequence length
    std::size_t d;   // head width
    std::size_t dp;  // d rounded up to NR: the width of every [rows, d] tile
    std::size_t nb;  // number of query blocks (= key blocks) per head
    float scale;     // 1 / sqrt(d)
};

// One MR × W block of C (+)= A·B, held in registers for the whole k loop: per k, one row of
// W floats of B is loaded and used MR times, and each of MR numbers of A is used W times.
// With kColumnMax it also raises colmax[n] to the largest of the block's column n, from the
// registers, before they are stored: the forward's column max needs no pass of its own.
template <std::size_t MR, std::size_t W, bool kAccumulate, bool kColumnMax = false>
WB_ALWAYS_INLINE void gemm_block(std::size_t K, const float* __restrict a, std::size_t ai,
                                 std::size_t ak, const float* __restrict b, std::size_t ldb,
                                 float* __restrict c, std::size_t ldc,
                                 float* __restrict colmax = nullptr) {
    float acc[MR][W];  // the register tile; the n loops below are its SIMD lanes
    for (std::size_t r = 0; r < MR; ++r) {
#pragma omp simd
        for (std::size_t n = 0; n < W; ++n) acc[r][n] = kAccumulate ? c[r * ldc + n] : 0.0f;
    }
    for (std::size_t k = 0; k < K; ++k, a += ak, b += ldb) {
#pragma GCC unroll 16
        for (std::size_t r = 0; r < MR; ++r) {
            const float ar = a[r * ai];
#pragma omp simd
            for (std::size_t n = 0; n < W; ++n) acc[r][n] += ar * b[n];
        }
    }
    if constexpr (kColumnMax) {
        for (std::size_t r = 0; r < MR; ++r) {
#pragma omp simd
            for (std::size_t n = 0; n < W; ++n)
                colmax[n] = acc[r][n] > colmax[n] ? acc[r][n] : colmax[n];
        }
    }
    for (std::size_t r = 0; r < MR; ++r) {
#pragma omp simd
        for (std::size_t n = 0; n < W; ++n) c[r * ldc + n] = acc[r][n];
    }
}

// C (+)= A·B on tiles: C is [M, N] row-major with leading dimension ldc, A(i, k) is
// A[i·ai + k·ak] (so a transposed A is just other strides), B(k, n) is B[k·ldb + n].
// M must be a multiple of MR and N of NR (the callers pad their tiles with zeros): blocks of
// NW columns, then NR-wide ones for the rest. With kColumnMax, colmax [N] is raised to each
// column's max (see gemm_block).
template <std::size_t MR, std::size_t NW, bool kAccumulate, bool kColumnMax = false>
WB_ALWAYS_INLINE void gemm_tiles(std::size_t M, std::size_t N, std::size_t K,
                                 const float* __restrict A, std::size_t ai, std::size_t ak,
                                 const float* __restrict B, std::size_t ldb, float* __restrict C,
                                 std::size_t ldc, float* __restrict colmax = nullptr) {
    auto colmax_at = [colmax](std::size_t n) { return kColumnMax ? colmax + n : nullptr; };
    for (std::size_t i = 0; i < M; i += MR) {
        std::size_t n = 0;
        for (; n + NW <= N; n += NW)
            gemm_block<MR, NW, kAccumulate, kColumnMax>(K, A + i * ai, ai, ak, B + n, ldb,
                                                        C + i * ldc + n, ldc, colmax_at(n));
        for (; n < N; n += NR)
            gemm_block<MR, NR, kAccumulate, kColumnMax>(K, A + i * ai, ai, ak, B + n, ldb,
                                                        C + i * ldc + n, ldc, colmax_at(n));
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

// Rows [r0, r0 + used) of a [T, d] head as a [used, dp] tile: the head itself when its rows
// are already dp wide and all `used` rows exist (no copy: a copy per block pair cost 12 % of
// the forward), else rows r0..T copied into `tile` [rows, dp] with zeros after them.
WB_ALWAYS_INLINE const float* rows_of(const float* head, std::size_t r0, std::size_t used,
                                      std::size_t rows, const Geometry& g, float* tile) {
    if (g.d == g.dp && r0 + used <= g.T) return head + r0 * g.d;
    load_rows(head + r0 * g.d, std::min(rows, g.T - r0), rows, g, tile);
    return tile;
}

// Copies n rows of a [T, d] head into a transposed [d, W] tile (positions along the row),
// columns n..W zero: the position axis becomes the contiguous SIMD axis of a product.
// The tile is written a row at a time, from strided reads (gathers under AVX2 and AVX-512):
// 1.05× faster forward than scalar stores down each column. (16 KiB for W = 64, d = 64.)
WB_ALWAYS_INLINE void load_transposed(const float* __restrict src, std::size_t n, std::size_t W,
                                      const Geometry& g, float* __restrict dst) {
    for (std::size_t c = 0; c < g.d; ++c) {
#pragma omp simd
        for (std::size_t j = 0; j < n; ++j) dst[c * W + j] = src[j * g.d + c];
    }
    for (std::size_t c = 0; c < g.d; ++c) std::fill(dst + c * W + n, dst + (c + 1) * W, 0.0f);
}

// Valid keys of query row i in the key block starting at j0 (causal: j <= i), at most nk.
WB_ALWAYS_INLINE std::size_t visible_keys(std::size_t i, std::size_t j0, std::size_t nk) {
    return i < j0 ? 0 : std::min(nk, i - j0 + 1);
}

// ---- forward ---------------------------------------------------------------------------------

// Consecutive slices of one task's scratch buffer. The function that carves a task's scratch
// also sizes it: on a null buffer it only counts (`floats`), so the size and the carving are
// one list and cannot drift apart.
struct Scratch {
    float* base;
    std::size_t floats = 0;
    float* take(std::size_t n) {
        float* p = base != nullptr ? base + floats : nullptr;
        floats += n;
        return p;
    }
};

// The scratch of one forward task (one query block of one head).
struct ForwardTiles {
    float* o;      // [BR, dp] running (unnormalised) output
    float* qt;     // [d, BR] the query block, transposed
    float* kt;     // [BC, dp] the key block, when it must be copied
    float* vt;     // [BC, dp] the value block, likewise
    float* st;     // [BC, BR] scores, then weights, keys × queries
    float* m;      // [BR] running max of the scaled scores
    float* l;      // [BR] running sum of exp(score - m)
    float* mx;     // [BR] max of this key block
    float* alpha;  // [BR] rescaling of what was summed before this block
};
ForwardTiles forward_tiles(const Geometry& g, Scratch& s) {
    ForwardTiles t{};
    t.o = s.take(BR * g.dp);
    t.qt = s.take(g.d * BR);
    t.kt = s.take(BC * g.dp);
    t.vt = s.take(BC * g.dp);
    t.st = s.take(BC * BR);
    t.m = s.take(BR);
    t.l = s.take(BR);
    t.mx = s.take(BR);
    t.alpha = s.take(BR);
    return t;
}

// Floats of scratch one forward task uses.
std::size_t forward_scratch(const Geometry& g) {
    Scratch count{nullptr};
    forward_tiles(g, count);
    return count.floats;
}

// One query block [i0, i0 + nq) of one head: out and lse of its rows.
//
// The scores of a block pair are computed transposed, keys × queries: st = k qᵀ, [BC, BR].
// The query block is transposed once per task (not the key block once per pair), and the
// softmax statistics m, l of the BR queries are then plain SIMD vectors along each row of st.
// MRs × NWs is the register block of the scores' product, MR × NW that of o += P v. (Under
// AVX-512 the scores take 4 × 64: their A is the key block, whose rows lie dp apart, and 8 row
// offsets were more than g++ kept in registers; 4 rows against all 64 queries need 4 loads of
// B and 4 broadcasts per 16 multiply-adds.)
template <std::size_t MR, std::size_t NW, std::size_t MRs = MR, std::size_t NWs = NW>
WB_ALWAYS_INLINE void forward_block_body(const Geometry& g, const float* qh, const float* kh,
                                         const float* vh, float* oh, float* lh, std::size_t qb,
                                         float* work) {
    const std::size_t dp = g.dp, d = g.d;
    const std::size_t i0 = qb * BR, nq = std::min(BR, g.T - i0);
    const std::size_t Mr = round_up(nq, MR);
    Scratch scratch{work};
    const ForwardTiles tiles = forward_tiles(g, scratch);  // shapes in ForwardTiles
    float *o = tiles.o, *qt = tiles.qt, *kt = tiles.kt, *vt = tiles.vt, *st = tiles.st;
    float *m = tiles.m, *l = tiles.l, *mx = tiles.mx, *alpha = tiles.alpha;

    // The query block transposed and multiplied by the scale, once per task: st = k qᵀ then
    // holds the scaled scores, with no multiply per score.
    load_transposed(qh + i0 * d, nq, BR, g, qt);
#pragma omp simd
    for (std::size_t e = 0; e < d * BR; ++e) qt[e] *= g.scale;
    std::fill(o, o + BR * dp, 0.0f);
    std::fill(m, m + BR, kNegInf);
    std::fill(l, l + BR, 0.0f);

    // Causal: only key blocks with a key j <= i0 + nq - 1, i.e. up to the diagonal block.
    const std::size_t last_key = i0 + nq - 1;
    for (std::size_t j0 = 0; j0 <= last_key; j0 += BC) {
        const std::size_t nk = std::min(BC, g.T - j0);
        const std::size_t kmax = visible_keys(last_key, j0, nk);  // keys any row can see
        const std::size_t Mk = round_up(kmax, MRs);
        const float* kb = rows_of(kh, j0, Mk, BC, g, kt);    // [Mk, dp] keys
        const float* vb = rows_of(vh, j0, kmax, BC, g, vt);  // [kmax, dp] values

        // st = k qᵀ [Mk, BR], and mx the max of each query's column. Only the diagonal block
        // has keys in some query's future; every other block is taken whole, its column max
        // read off the registers of the product (a pass over st less: 1.1× faster forward).
#pragma omp simd
        for (std::size_t i = 0; i < BR; ++i) mx[i] = kNegInf;
        if (j0 + kmax <= i0 + 1 && Mk == kmax) {  // its last key is visible to its first query
            gemm_tiles<MRs, NWs, false, true>(Mk, BR, d, kb, dp, 1, qt, BR, st, BR, mx);
        } else {
            gemm_tiles<MRs, NWs, false>(Mk, BR, d, kb, dp, 1, qt, BR, st, BR);
            // Mask the future (key j0 + j is visible to queries i0 + i >= j0 + j), then max.
            for (std::size_t j = 0; j < kmax; ++j) {
                float* row = st + j * BR;
                const std::size_t first = j0 + j > i0 ? j0 + j - i0 : 0;  // first query seeing j
#pragma omp simd
                for (std::size_t i = 0; i < BR; ++i) {
                    const float x = i >= first ? row[i] : kNegInf;  // a select, not a branch
                    row[i] = x;
                    mx[i] = x > mx[i] ? x : mx[i];
                }
            }
        }
        // Online softmax: when the max grows, everything summed so far was measured against
        // the old max and must shrink by alpha = exp(m - m_new) (0 on the first block).
#pragma omp simd
        for (std::size_t i = 0; i < BR; ++i) {
            const float m_new = m[i] > mx[i] ? m[i] : mx[i];
            alpha[i] = fast_exp_nonpositive(m[i] - m_new);
            m[i] = m_new;
            l[i] = l[i] * alpha[i];
        }
        for (std::size_t j = 0; j < kmax; ++j) {
            float* row = st + j * BR;
#pragma omp simd
            for (std::size_t i = 0; i < BR; ++i) {
                const float p =
                    fast_exp_nonpositive(row[i] - m[i]);  // masked: exp(-inf) = exactly 0
                row[i] = p;
                l[i] += p;
            }
        }
        // Once the maxima settle, most blocks leave every alpha at exactly 1: then o stays as
        // it is (multiplying by 1 changes no bit, so skipping it changes no answer).
        int grew = 0;
#pragma omp simd reduction(| : grew)
        for (std::size_t i = 0; i < BR; ++i) grew |= alpha[i] != 1.0f;
        for (std::size_t i = 0; grew != 0 && i < nq; ++i) {
            for (std::size_t c0 = 0; c0 < dp; c0 += NR) {  // dp is a multiple of NR: no tail
                float* orow = o + i * dp + c0;
#pragma omp simd
                for (std::size_t c = 0; c < NR; ++c) orow[c] *= alpha[i];
            }
        }

        gemm_tiles<MR, NW, true>(Mr, dp, kmax, st, 1, BR, vb, dp, o, dp);  // o += P v   [Mr, dp]
    }

    for (std::size_t i = 0; i < nq; ++i) {
        const float inv_l = 1.0f / l[i];  // l >= 1: the max's own term is exp(0)
        float* dst = oh + (i0 + i) * d;
#pragma omp simd
        for (std::size_t c = 0; c < d; ++c) dst[c] = o[i * dp + c] * inv_l;
        lh[i0 + i] = m[i] + std::log(l[i]);  // log Σ_j exp(s_ij), the softmax's normaliser
    }
}

void forward_block_generic(const Geometry& g, const float* qh, const float* kh, const float* vh,
                           float* oh, float* lh, std::size_t qb, float* work) {
    forward_block_body<2, NR>(g, qh, kh, vh, oh, lh, qb, work);
}

// ---- backward --------------------------------------------------------------------------------

// The scratch of one backward task (one head): the head's dq and row terms grow with T, the
// tiles do not.
struct BackwardTiles {
    float* dqa;    // [nb·BR, dp] dq of the head, summed over the key blocks
    float* D;      // [T] row terms
    float* kt;     // [d, BC] keys, transposed
    float* vt;     // [d, BC] values, transposed
    float* ktile;  // [BC, dp] key rows, when they must be copied
    float* dka;    // [BC, dp] dk of this key block, summed over query blocks
    float* dva;    // [BC, dp] dv likewise
    float* qtile;  // [BR, dp] query rows, when they must be copied
    float* gtile;  // [BR, dp] dout rows, likewise
    float* s;      // [BR, BC] scores, then weights P
    float* ds;     // [BR, BC] dP, then dS · scale
};
BackwardTiles backward_tiles(const Geometry& g, Scratch& s) {
    BackwardTiles t{};
    t.dqa = s.take(g.nb * BR * g.dp);
    t.D = s.take(g.T);
    t.kt = s.take(g.d * BC);
    t.vt = s.take(g.d * BC);
    t.ktile = s.take(BC * g.dp);
    t.dka = s.take(BC * g.dp);
    t.dva = s.take(BC * g.dp);
    t.qtile = s.take(BR * g.dp);
    t.gtile = s.take(BR * g.dp);
    t.s = s.take(BR * BC);
    t.ds = s.take(BR * BC);
    return t;
}

// Floats of scratch one backward task uses.
std::size_t backward_scratch(const Geometry& g) {
    Scratch count{nullptr};
    backward_tiles(g, count);
    return count.floats;
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
            const float e = fast_exp_nonpositive(pr[j] * g.scale - lse_i);
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

// Pointers of one head.
struct HeadPtrs {
    const float *q, *k, *v, *out, *lse, *dout;
    float *dq, *dk, *dv;
};

// dq, dk and dv of one head, every block pair once: the key blocks left to right, and for
// each the query blocks at or below it (causal). A pair gives all three gradients from one
// P and one dS (5 block products), so nothing is recomputed; dk and dv of the key block are
// summed in tiles, dq of every query block in the head's [T, dp] accumulator, each over the
// blocks in ascending order whatever the thread count (one task owns the head).
template <std::size_t MR, std::size_t NW>
WB_ALWAYS_INLINE void backward_head_body(const Geometry& g, const HeadPtrs& h, float* work) {
    const std::size_t dp = g.dp, d = g.d, T = g.T;
    Scratch scratch{work};
    const BackwardTiles tiles = backward_tiles(g, scratch);  // shapes in BackwardTiles
    float *dqa = tiles.dqa, *D = tiles.D, *kt = tiles.kt, *vt = tiles.vt, *ktile = tiles.ktile;
    float *dka = tiles.dka, *dva = tiles.dva, *qtile = tiles.qtile, *gtile = tiles.gtile;
    float *s = tiles.s, *ds = tiles.ds;

    std::fill(dqa, dqa + g.nb * BR * dp, 0.0f);
    for (std::size_t i = 0; i < T; ++i) D[i] = row_term(g, h.dout + i * d, h.out + i * d);

    for (std::size_t j0 = 0; j0 < T; j0 += BC) {
        const std::size_t nk = std::min(BC, T - j0);
        load_transposed(h.k + j0 * d, nk, BC, g, kt);
        load_transposed(h.v + j0 * d, nk, BC, g, vt);
        const float* kb = rows_of(h.k, j0, nk, BC, g, ktile);  // [nk, dp] key rows
        std::fill(dka, dka + BC * dp, 0.0f);
        std::fill(dva, dva + BC * dp, 0.0f);

        // Causal: query blocks before the one holding row j0 see none of these keys.
        for (std::size_t i0 = j0 / BR * BR; i0 < T; i0 += BR) {
            const std::size_t nq = std::min(BR, T - i0);
            const std::size_t Mr = round_up(nq, MR);
            const std::size_t kmax = visible_keys(i0 + nq - 1, j0, nk);
            const std::size_t Ns = round_up(kmax, NR);
            const float* qb = rows_of(h.q, i0, Mr, BR, g, qtile);     // [Mr, dp] query rows
            const float* gb = rows_of(h.dout, i0, Mr, BR, g, gtile);  // [Mr, dp] dout rows

            gemm_tiles<MR, NW, false>(Mr, Ns, d, qb, dp, 1, kt, BC, s, BC);  // s = q kᵀ   [Mr, Ns]
            gemm_tiles<MR, NW, false>(Mr, Ns, d, gb, dp, 1, vt, BC, ds, BC);  // dP = dout vᵀ
            weights_and_dscores(g, i0, nq, Mr, j0, nk, Ns, h.lse + i0, D + i0, s, ds);

            const std::size_t Mj = round_up(kmax, MR);  // keys, rounded: rows of dk and dv
            gemm_tiles<MR, NW, true>(Mj, dp, nq, s, 1, BC, gb, dp, dva, dp);   // dv += Pᵀ dout
            gemm_tiles<MR, NW, true>(Mj, dp, nq, ds, 1, BC, qb, dp, dka, dp);  // dk += dSᵀ q
            float* dqb = dqa + i0 * dp;  // [Mr, dp] dq of this query block
            gemm_tiles<MR, NW, true>(Mr, dp, kmax, ds, BC, 1, kb, dp, dqb, dp);  // dq += dS k
        }

        for (std::size_t j = 0; j < nk; ++j) {
            for (std::size_t c = 0; c < d; ++c) {
                h.dk[(j0 + j) * d + c] = dka[j * dp + c];
                h.dv[(j0 + j) * d + c] = dva[j * dp + c];
            }
        }
    }
    for (std::size_t i = 0; i < T; ++i) {
        for (std::size_t c = 0; c < d; ++c) h.dq[i * d + c] = dqa[i * dp + c];
    }
}

void backward_head_generic(const Geometry& g, const HeadPtrs& h, float* work) {
    backward_head_body<2, NR>(g, h, work);
}

// ---- the same task functions compiled for AVX2 + FMA and AVX-512, chosen at run time -------

#ifdef WB_SIMD_X86
WB_TARGET_AVX2 void forward_block_avx2(const Geometry& g, const float* qh, const float* kh,
                                       const float* vh, float* oh, float* lh, std::size_t qb,
                                       float* work) {
    forward_block_body<4, NR>(g, qh, kh, vh, oh, lh, qb, work);
}
WB_TARGET_AVX2 void backward_head_avx2(const Geometry& g, const HeadPtrs& h, float* work) {
    backward_head_body<4, NR>(g, h, work);
}
WB_TARGET_AVX512 void forward_block_avx512(const Geometry& g, const float* qh, const float* kh,
                                           const float* vh, float* oh, float* lh, std::size_t qb,
                                           float* work) {
    forward_block_body<8, 2 * NR, 4, 4 * NR>(g, qh, kh, vh, oh, lh, qb, work);
}
WB_TARGET_AVX512 void backward_head_avx512(const Geometry& g, const HeadPtrs& h, float* work) {
    backward_head_body<8, 2 * NR>(g, h, work);
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
    const long long heads = static_cast<long long>(s.B * s.H);
    auto body = backward_head_generic;
#ifdef WB_SIMD_X86
    if (simd_level() == kSimdAvx2) body = backward_head_avx2;
    if (simd_level() == kSimdAvx512) body = backward_head_avx512;
#endif

#pragma omp parallel
    {
        // This thread's scratch, kept between calls: a training step calls the kernel 2·L
        // times, and the scratch only grows (every task overwrites what it reads).
        thread_local std::vector<float> work;
        work.resize(std::max(work.size(), backward_scratch(g)));
        // One head per task: every head has the same work, so heads need no pairing, and the
        // head's dq sums stay in one task (splitting a head would need a reduction of dq).
#pragma omp for schedule(dynamic, 1)
        for (long long bh = 0; bh < heads; ++bh) {
            const std::size_t off = static_cast<std::size_t>(bh) * s.T * s.d;
            const HeadPtrs h{q + off,    k + off,  v + off,  out + off, lse + bh * s.T,
                             dout + off, dq + off, dk + off, dv + off};
            body(g, h, work.data());
        }
    }
}

Heads<float> attention_forward(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                               xt::xtensor<float, 3>& lse) {
    const char* fn = "wb::attention_forward";
    require_nonempty(fn, "q", q);
    const Shape qs(q.shape().begin(), q.shape().end());
    require_shape(fn, "k", k, qs);
    require_shape(fn, "v", v, qs);
    const AttentionShape s = shape_of(q);
    Heads<float> out(q.shape());                               // [B, H, T, d]
    lse = xt::xtensor<float, 3>::from_shape({s.B, s.H, s.T});  // [B, H, T]
    attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
    return out;
}

void attention_backward(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                        const Heads<float>& out, const xt::xtensor<float, 3>& lse,
                        const Heads<float>& dout, Heads<float>& dq, Heads<float>& dk,
                        Heads<float>& dv) {
    const char* fn = "wb::attention_backward";
    require_nonempty(fn, "q", q);
    const Shape qs(q.shape().begin(), q.shape().end());
    require_shape(fn, "k", k, qs);
    require_shape(fn, "v", v, qs);
    require_shape(fn, "out", out, qs);
    require_shape(fn, "dout", dout, qs);
    require_shape(fn, "lse", lse, Shape{qs[0], qs[1], qs[2]});
    const AttentionShape s = shape_of(q);
    dq = Heads<float>::from_shape(q.shape());  // [B, H, T, d] each
    dk = Heads<float>::from_shape(q.shape());
    dv = Heads<float>::from_shape(q.shape());
    attention_backward(s, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                       dq.data(), dk.data(), dv.data());
}

}  // namespace WB_IMPL
}  // namespace wb

#undef WB_ALWAYS_INLINE
