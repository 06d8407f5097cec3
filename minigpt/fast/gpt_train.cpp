// The mini-GPT's training step, organised for speed like llm.c's train_gpt2.c.
//
// Same model and same numbers as chapter 8's gpt_forward / gpt_backward (pre-LN blocks,
// LayerNorm eps 1e-5, the exact erf form of GELU, learned positions or RoPE, lm_head without
// bias, mean cross entropy over the targets that are not -1), up to float rounding; only the
// organisation differs:
//  - every activation and scratch buffer is allocated once, in the constructor, for [B, T];
//    a step allocates nothing;
//  - every Linear layer is one matrix product on raw row-major buffers (no xtensor
//    temporaries), wb::minigpt::sgemm of gemm.hpp (a packed AVX-512 or AVX2 micro-kernel where
//    the processor has one, OpenBLAS's cblas_sgemm elsewhere), with bias, residual and GELU
//    fused into the loops that touch the data anyway;
//  - the attention is the capstone kernel (wb::attention_forward / attention_backward) on q,
//    k, v written straight into the head layout [B, H, T, d];
//  - with RoPE, q and k are turned as they are written into that layout (chapter 3's
//    apply_rope at offset 0, from cos / sin tables made once per trainer), and dq, dk are
//    turned back (by the opposite angle) as they are merged back into rows;
//  - without positions (Variant::no_positions, a config of RoPE's layout: no wpe), the
//    embedding is wte[id] alone and q, k are not turned: only the causal mask tells tokens apart
//    by where they are;
//  - the ablation switches (variant.hpp): without the 1/√d scale, q is multiplied by √d as it
//    is written into the head layout (the kernel's 1/√d then cancels) and dq by √d as it is
//    merged back; Post-LN blocks normalise the residual sums x + f(x) (LN1 after attention,
//    LN2 after the FFN) and feed the stream itself to each sublayer; without the final
//    LayerNorm the last stream goes straight into lm_head;
//  - the other loops (LayerNorm, GELU, softmax + cross entropy, head split/merge) run over
//    rows with `#pragma omp parallel for`; GELU is wb::gelu_bias_row (workbook/fast_math.hpp, the
//    decoder's GELU too), which saves its derivative for the backward.
//
// Threads: OpenMP does every parallel loop, and the GEMMs are cut into pieces (of rows or of
// columns, see cut_of) that the same OpenMP threads share, each piece one single-threaded
// sgemm; a Linear layer's three backward products share one parallel region. OpenBLAS (the
// pthread build, what sgemm falls back to) is told to use 1 thread while a step runs, so its
// own thread pool and OpenMP's never compete for the cores. No sum's order depends on the
// thread count, so a step gives the same bits for any OMP_NUM_THREADS.
//
// The steps, llm.c style: each step of a layer over rows is one plain function below
// (embedding, LayerNorm, heads split and merged, residual plus bias, GELU, softmax with cross
// entropy, each forward and backward), its buffers' shapes in its comment, so that forward and
// backward read as a list of calls: products (linear, linear_back), the row steps fused into
// them (run on the rows of each piece of a product, in its parallel region), and the capstone's
// attention between.
//
// Dimensions, the letters of every shape below:
//   B  sequences of a batch              T  tokens of a sequence
//   N  = B·T rows, row b·T + t           V  vocabulary
//   D  width of the residual stream      F  = 4D, hidden width of the FFN
//   H  heads                             d  = D / H, width of a head
//   L  blocks
// Weights in PyTorch's [out, in] layout; a head layout [B, H, T, d] holds row b·T + t's
// columns h·d .. h·d + d − 1 at (b, h, t, 0 .. d − 1).
#include "minigpt/fast/gpt_train.hpp"

#include <cblas.h>
#include <omp.h>

#include "workbook/fast_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "capstone/attention_kernel.hpp"
#include "minigpt/fast/gemm.hpp"
#include "minigpt/fast/rope_tables.hpp"
#include "minigpt/serial_blas.hpp"

namespace wb::minigpt {

namespace {

const char* const kName = "wb::minigpt::GptTrainer";

// ---- Matrix products: C [M, Nc] = op(A) op(B) + beta C, cut into pieces for the threads -----

// One call of sgemm, whole or in pieces (its arguments as gemm.hpp's).
struct Product {
    bool trans_a, trans_b;
    std::size_t M, Nc, K;
    const float* A;
    std::size_t lda;
    const float* B;
    std::size_t ldb;
    float beta;
    float* C;
    std::size_t ldc;
};

// How C is cut: `count` pieces of whole rows (by_rows) or whole columns, piece i covering
// [begin(i), begin(i + 1)), each a run of `units` steps of `unit` rows or columns shared out
// as evenly as they go.
struct Cut {
    bool by_rows;
    std::size_t extent, unit, units, count;
    std::size_t begin(std::size_t i) const { return std::min(extent, units * i / count * unit); }
};

// On gemm.cpp's own kernels (sgemm_tile not 0) no cut changes a bit, so C is cut into one
// piece per thread, at multiples of the micro-tile, along the side that costs less: each piece
// packs its own rows of op(A) and columns of op(B) in full, so cutting the rows repacks all of
// op(B) [K, Nc] once per piece, and cutting the columns all of op(A). The cost of a piece is
// counted in micro-tiles (a ragged one costs a whole one) plus the floats it packs, a packed
// float at 1/16 of a tile row's FMAs (packing moves a float in about the time the kernel does
// 16 of its lanes). One thread: one call, op(B) packed once.
//
// On OpenBLAS, whose bits depend on how the rows are cut (measured: cutting a [2048, 128]
// product at row 1024 changes about 1 element in 10 in its last bit), the rows are cut into
// bands of a fixed height, 256 rows (128 or 64 when C has fewer than 1024 or 256 rows, so that
// even a [D, 4D] weight gradient gives two bands): the cut depends on the shapes only, never on
// the thread count, and gives the same bits for 1, 2 or 16 threads.
Cut cut_of(const Product& p, std::size_t threads) {
    const SgemmTile tile = sgemm_tile();
    if (tile.rows == 0) {
        const std::size_t rows = p.M >= 1024 ? 256 : (p.M >= 256 ? 128 : 64);
        const std::size_t bands = (p.M + rows - 1) / rows;
        return {true, p.M, rows, bands, std::max<std::size_t>(bands, 1)};
    }
    const std::size_t mu = (p.M + tile.rows - 1) / tile.rows;   // panels of rows
    const std::size_t nu = (p.Nc + tile.cols - 1) / tile.cols;  // panels of columns
    const std::size_t tm = std::max<std::size_t>(1, std::min(threads, mu));
    const std::size_t tn = std::max<std::size_t>(1, std::min(threads, nu));
    const std::size_t area = tile.rows * tile.cols, pack = 16;
    // Per k, of the largest piece: its tiles' FMA lanes, and the floats it packs.
    const std::size_t rows_cost =
        (mu + tm - 1) / tm * nu * area + pack * ((mu + tm - 1) / tm * tile.rows + nu * tile.cols);
    const std::size_t cols_cost =
        mu * ((nu + tn - 1) / tn) * area + pack * (mu * tile.rows + (nu + tn - 1) / tn * tile.cols);
    if (rows_cost <= cols_cost) return {true, p.M, tile.rows, mu, tm};
    return {false, p.Nc, tile.cols, nu, tn};
}

// Piece i of the product: one single-threaded sgemm on its rows or columns of C.
void run_piece(const Product& p, const Cut& cut, std::size_t i) {
    const std::size_t b0 = cut.begin(i), b1 = cut.begin(i + 1);
    if (b0 == b1) return;
    if (cut.by_rows) {  // row r of op(A) starts at A + r·lda, or at column r when transposed
        const float* a = p.trans_a ? p.A + b0 : p.A + b0 * p.lda;
        sgemm(p.trans_a, p.trans_b, b1 - b0, p.Nc, p.K, a, p.lda, p.B, p.ldb, p.beta,
              p.C + b0 * p.ldc, p.ldc);
    } else {  // column j of op(B) starts at B + j, or at row j when transposed
        const float* b = p.trans_b ? p.B + b0 * p.ldb : p.B + b0;
        sgemm(p.trans_a, p.trans_b, p.M, b1 - b0, p.K, p.A, p.lda, b, p.ldb, p.beta, p.C + b0,
              p.ldc);
    }
}

std::size_t max_threads() { return static_cast<std::size_t>(std::max(1, omp_get_max_threads())); }

// Does nothing to rows [r0, r1): a gemm without work before or after.
struct NoRows {
    void operator()(std::size_t, std::size_t) const {}
};

// The product, with row-by-row work fused around it: before(r0, r1) makes rows [r0, r1) of
// op(A) (and of C, when beta reads it), after(r0, r1) uses rows [r0, r1) of C, neither
// touching other rows. Cut by rows, each piece does its rows' before, product and after in
// turn, with no barrier between them; cut by columns, the rows are shared out for before, then
// after, with a barrier on each side of the product. One parallel region either way.
template <class Before = NoRows, class After = NoRows>
void gemm(const Product& p, Before before = {}, After after = {}) {
    const Cut cut = cut_of(p, max_threads());
    if (cut.by_rows) {
#pragma omp parallel for schedule(static) if (cut.count > 1)
        for (std::size_t i = 0; i < cut.count; ++i) {
            const std::size_t r0 = cut.begin(i), r1 = cut.begin(i + 1);
            before(r0, r1);
            run_piece(p, cut, i);
            after(r0, r1);
        }
        return;
    }
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (std::size_t n = 0; n < p.M; ++n) before(n, n + 1);
#pragma omp for schedule(static)
        for (std::size_t i = 0; i < cut.count; ++i) run_piece(p, cut, i);
#pragma omp for schedule(static)
        for (std::size_t n = 0; n < p.M; ++n) after(n, n + 1);
    }
}

// y [N, out] (+)= x [N, in] · Wᵀ, W [out, in]: the forward of a Linear layer (bias elsewhere),
// with gemm's row work around it.
template <class Before = NoRows, class After = NoRows>
void linear(const float* x, const float* w, float* y, std::size_t N, std::size_t in,
            std::size_t out, float beta, Before before = {}, After after = {}) {
    gemm({false, true, N, out, in, x, in, w, in, beta, y, out}, before, after);
}

// ---- Column sums over rows, the same bits for any thread count ----------------------------

// The rows are cut into bands of kSumRows (a fixed height: the cut depends on N alone); each
// band's partial sums run over its rows in order, and the partials are added band by band in
// order. Both loops are orphaned `omp for`s, run by the threads of the caller's region.
constexpr std::size_t kSumRows = 64;
std::size_t sum_bands(std::size_t N) { return (N + kSumRows - 1) / kSumRows; }

// out[j] += partial[0][j] + partial[1][j] + ... (in band order; row b of partial at
// partial + b·stride), j < width, the columns shared out among the threads. Ends with no
// barrier.
void add_bands(const float* partial, std::size_t stride, std::size_t bands, std::size_t width,
               float* out) {
#pragma omp for schedule(static) nowait
    for (std::size_t j = 0; j < width; ++j) {
        float s = out[j];
        for (std::size_t b = 0; b < bands; ++b) s += partial[b * stride + j];
        out[j] = s;
    }
}

// sum [width] += Σ_rows x [N, width] (row stride ldx), partial [sum_bands(N), width] scratch.
void column_sums(const float* x, std::size_t ldx, std::size_t N, std::size_t width, float* partial,
                 float* sum) {
    const std::size_t bands = sum_bands(N);
#pragma omp for schedule(static)  // ends with a barrier: add_bands reads every band
    for (std::size_t b = 0; b < bands; ++b) {
        float* p = partial + b * width;
        std::fill(p, p + width, 0.0f);
        for (std::size_t n = b * kSumRows; n < std::min(N, (b + 1) * kSumRows); ++n) {
            const float* row = x + n * ldx;
            for (std::size_t j = 0; j < width; ++j) p[j] += row[j];
        }
    }
    add_bands(partial, width, bands, width, sum);
}

// Backward of y = x Wᵀ + b with dy [N, out] (row stride ldy): dx [N, in] = dy W (assigned, or
// added when accumulate), then after(r0, r1) on rows [r0, r1) of dx as gemm's; dW [out, in]
// += dyᵀ x; db [out] += Σ_rows dy (skipped if db is null; partial is its scratch,
// [sum_bands(N), out]). The three read dy and write apart, so they share one parallel region
// without a barrier between them.
template <class After = NoRows>
void linear_back(const float* dy, std::size_t ldy, const float* x, const float* w, float* dx,
                 bool accumulate, float* dw, float* db, float* partial, std::size_t N,
                 std::size_t in, std::size_t out, After after = {}) {
    const Product px{false, false, N, in, out, dy, ldy, w, in, accumulate ? 1.0f : 0.0f, dx, in};
    const Product pw{true, false, out, in, N, dy, ldy, x, in, 1.0f, dw, in};
    const std::size_t threads = max_threads();
    const Cut cx = cut_of(px, threads), cw = cut_of(pw, threads);
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (std::size_t i = 0; i < cx.count; ++i) {
            run_piece(px, cx, i);
            if (cx.by_rows) after(cx.begin(i), cx.begin(i + 1));  // while the rows are in cache
        }
#pragma omp for schedule(static) nowait
        for (std::size_t i = 0; i < cw.count; ++i) run_piece(pw, cw, i);
        if (db) column_sums(dy, ldy, N, out, partial, db);
        if (!cx.by_rows) {  // every piece holds some columns of each row: wait for all of them
#pragma omp barrier
#pragma omp for schedule(static) nowait
            for (std::size_t n = 0; n < N; ++n) after(n, n + 1);
        }
    }
}

// ---- The row steps, forward and backward: one plain function each --------------------------
//
// A step "on rows [r0, r1)" touches those rows only and runs on the calling thread: forward and
// backward call it on the rows of each piece of a product (gemm, linear_back), inside that
// product's parallel region. The other steps run over all N rows in their own parallel region.

// x0 [N, D] = wte [V, D] at row inputs[n] + wpe [T_max, D] at row n % T, for each row n; wpe
// null (RoPE, or no positions): wte's row alone. inputs [N].
void embedding_forward(const float* wte, const float* wpe, const int* inputs, float* x0,
                       std::size_t N, std::size_t T, std::size_t D) {
#pragma omp parallel for schedule(static)
    for (std::size_t n = 0; n < N; ++n) {
        const float* te = wte + static_cast<std::size_t>(inputs[n]) * D;
        if (wpe == nullptr) {
            for (std::size_t i = 0; i < D; ++i) x0[n * D + i] = te[i];
            continue;
        }
        const float* pe = wpe + (n % T) * D;
        for (std::size_t i = 0; i < D; ++i) x0[n * D + i] = te[i] + pe[i];
    }
}

// dwte [V, D] += dx0 [N, D] at row inputs[n], dwpe [T_max, D] += dx0 at row n % T (dwpe null:
// no table). One id can occur in many rows, so the rows are not split: each thread owns a band
// of the D columns and walks every row in order, the order of every sum whatever the thread
// count.
void embedding_backward(const float* dx0, const int* inputs, float* dwte, float* dwpe,
                        std::size_t N, std::size_t T, std::size_t D) {
#pragma omp parallel
    {
        const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
        const std::size_t nt = static_cast<std::size_t>(omp_get_num_threads());
        const std::size_t i0 = D * t / nt, i1 = D * (t + 1) / nt;
        for (std::size_t n = 0; n < N; ++n) {
            float* te = dwte + static_cast<std::size_t>(inputs[n]) * D;
            for (std::size_t i = i0; i < i1; ++i) te[i] += dx0[n * D + i];
            if (dwpe == nullptr) continue;
            float* pe = dwpe + (n % T) * D;
            for (std::size_t i = i0; i < i1; ++i) pe[i] += dx0[n * D + i];
        }
    }
}

// Rows [r0, r1) of x [N, D]: y [N, D] = (x − mean) · rstd ⊙ g + b, g and b [D], keeping mean
// [N] and rstd [N].
void layernorm_rows_forward(const float* x, const float* g, const float* b, float* y, float* mean,
                            float* rstd, std::size_t r0, std::size_t r1, std::size_t D) {
    const float eps = static_cast<float>(kGptLayerNormEps);
    for (std::size_t n = r0; n < r1; ++n) {
        const float* xn = x + n * D;
        float m = 0.0f;
        for (std::size_t i = 0; i < D; ++i) m += xn[i];
        m /= static_cast<float>(D);
        float v = 0.0f;  // biased variance (correction 0), as nn.LayerNorm
        for (std::size_t i = 0; i < D; ++i) v += (xn[i] - m) * (xn[i] - m);
        v /= static_cast<float>(D);
        const float s = 1.0f / std::sqrt(v + eps);
        float* yn = y + n * D;
        for (std::size_t i = 0; i < D; ++i) yn[i] = (xn[i] - m) * s * g[i] + b[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

// One row of layernorm_rows_backward (each [D]): dx += s (dy ⊙ gamma − g_mean − xhat gx_mean),
// pg += dy ⊙ xhat, pb += dy. Its own function so that the pointers can be declared apart
// (__restrict): GCC vectorises the loop only then.
void layernorm_back_row(const float* __restrict dy, const float* __restrict x,
                        const float* __restrict gamma, float m, float s, float g_mean,
                        float gx_mean, float* __restrict dx, float* __restrict pg,
                        float* __restrict pb, std::size_t D) {
    for (std::size_t i = 0; i < D; ++i) {
        const float xhat = (x[i] - m) * s;
        dx[i] += s * (dy[i] * gamma[i] - g_mean - xhat * gx_mean);
        pg[i] += dy[i] * xhat;
        pb[i] += dy[i];
    }
}

// The backward of layernorm_rows_forward on all N rows: dx [N, D] += rstd (g − mean(g) −
// xhat·mean(g xhat)) with g = dy ⊙ gamma (dy [N, D], added to the residual stream's gradient
// already in dx); dgamma [D] += Σ_rows dy ⊙ xhat, dbeta [D] += Σ_rows dy. The parameter
// gradients are summed in the same pass over the rows, by bands of kSumRows (column_sums'
// scheme): partial [sum_bands(N), 2D] holds each band's Σ dy ⊙ xhat | Σ dy.
void layernorm_rows_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                             const float* rstd, float* dx, float* dgamma, float* dbeta,
                             float* partial, std::size_t N, std::size_t D) {
    const std::size_t bands = sum_bands(N);
#pragma omp parallel
    {
#pragma omp for schedule(static)  // ends with a barrier: add_bands reads every band
        for (std::size_t band = 0; band < bands; ++band) {
            float* pg = partial + band * 2 * D;  // Σ dy ⊙ xhat over the band
            float* pb = pg + D;                  // Σ dy
            std::fill(pg, pg + 2 * D, 0.0f);
            for (std::size_t n = band * kSumRows; n < std::min(N, (band + 1) * kSumRows); ++n) {
                const float* dyn = dy + n * D;
                const float* xn = x + n * D;
                const float m = mean[n], s = rstd[n];
                float g_mean = 0.0f, gx_mean = 0.0f;
                for (std::size_t i = 0; i < D; ++i) {
                    const float g = dyn[i] * gamma[i];
                    g_mean += g;
                    gx_mean += g * (xn[i] - m) * s;
                }
                g_mean /= static_cast<float>(D);
                gx_mean /= static_cast<float>(D);
                layernorm_back_row(dyn, xn, gamma, m, s, g_mean, gx_mean, dx + n * D, pg, pb, D);
            }
        }
        add_bands(partial, 2 * D, bands, D, dgamma);
        add_bands(partial + D, 2 * D, bands, D, dbeta);
    }
}

// Post-LN's backward through out = LN(sum) (sum [N, D]), in place: dout [N, D], the gradient
// of out, becomes the gradient of sum, which the residual passes on unchanged to the
// sublayer's input. scratch [N, D]; dgamma, dbeta [D] accumulate.
void post_layernorm_backward(float* dout, const float* sum, const float* gamma, const float* mean,
                             const float* rstd, float* dgamma, float* dbeta, float* scratch,
                             float* partial, std::size_t N, std::size_t D) {
    std::fill(scratch, scratch + N * D, 0.0f);
    layernorm_rows_backward(dout, sum, gamma, mean, rstd, scratch, dgamma, dbeta, partial, N, D);
    std::copy(scratch, scratch + N * D, dout);
}

// Rows [r0, r1): out [N, D] = x [N, D] + b [D], a residual stream started as its input plus
// the bias of the product then added into it.
void residual_bias_rows(const float* x, const float* b, float* out, std::size_t r0, std::size_t r1,
                        std::size_t D) {
    for (std::size_t n = r0; n < r1; ++n) {
        for (std::size_t i = 0; i < D; ++i) out[n * D + i] = x[n * D + i] + b[i];
    }
}

// Where the rows' heads go in a head layout [B, H, T, d], and what happens to q and k there.
struct HeadLayout {
    std::size_t T, H, d;
    const RopeTables* rope;  // q and k turned by t·θ_i (RoPE); null: not turned
    bool scale_q;            // q (and dq) multiplied by q_scale = √d (no 1/√d scale)
    float q_scale;
};

// Rows [r0, r1) of proj [N, 3D] (columns q | k | v), each plus its bias b_q, b_k, b_v [D], into
// q, k, v [B, H, T, d]: column h·d + i of row b·T + t goes to (b, h, t, i). With RoPE q and k
// are turned on the way (v is not): each pair (x[2i], x[2i+1]) by the angle t·θ_i. Without the
// 1/√d scale, q is multiplied by √d, which the kernel's 1/√d cancels.
void qkv_rows_to_heads(const float* proj, const float* const bias[3], float* const qkv[3],
                       const HeadLayout& hl, std::size_t r0, std::size_t r1) {
    const std::size_t T = hl.T, H = hl.H, d = hl.d, D = H * d;
    for (std::size_t n = r0; n < r1; ++n) {
        const std::size_t b = n / T, t = n % T;
        for (std::size_t p = 0; p < 3; ++p) {
            const float* src = proj + n * 3 * D + p * D;
            for (std::size_t h = 0; h < H; ++h) {
                float* out = qkv[p] + ((b * H + h) * T + t) * d;
                const float* in = src + h * d;
                const float* bi = bias[p] + h * d;
                if (hl.rope != nullptr && p < 2) {
                    rope_turn(in, bi, hl.rope->cos_at(t), hl.rope->sin_at(t), d, out);
                } else {
                    for (std::size_t i = 0; i < d; ++i) out[i] = in[i] + bi[i];
                }
                if (p == 0 && hl.scale_q) {
                    for (std::size_t i = 0; i < d; ++i) out[i] *= hl.q_scale;
                }
            }
        }
    }
}

// The backward of qkv_rows_to_heads on all N rows: dq, dk, dv [B, H, T, d] merged back into
// dproj [N, 3D] (columns dq | dk | dv). With RoPE, dq and dk are the gradients of the turned q
// and k: the gradient of the projections is the same pair turned back, by −t·θ_i (a rotation's
// transpose is its inverse; chapter 8's rope_backward). Without the 1/√d scale, dq is
// multiplied by √d, as q was.
void qkv_heads_to_rows(const float* const dqkv[3], float* dproj, const HeadLayout& hl,
                       std::size_t N) {
    const std::size_t T = hl.T, H = hl.H, d = hl.d, D = H * d;
#pragma omp parallel for schedule(static)
    for (std::size_t n = 0; n < N; ++n) {
        const std::size_t b = n / T, t = n % T;
        for (std::size_t p = 0; p < 3; ++p) {
            for (std::size_t h = 0; h < H; ++h) {
                const float* in = dqkv[p] + ((b * H + h) * T + t) * d;
                float* out = dproj + n * 3 * D + p * D + h * d;
                if (hl.rope != nullptr && p < 2) {
                    rope_turn_back(in, hl.rope->cos_at(t), hl.rope->sin_at(t), d, out);
                } else {
                    for (std::size_t i = 0; i < d; ++i) out[i] = in[i];
                }
                if (p == 0 && hl.scale_q) {
                    for (std::size_t i = 0; i < d; ++i) out[i] *= hl.q_scale;
                }
            }
        }
    }
}

// Rows [r0, r1) of a [N, D] buffer and of a head layout [B, H, T, d], copied from one to the
// other: column h·d + i of row b·T + t is (b, h, t, i). to_rows: src is the head layout (the
// attention's output merged for w_o); else src is [N, D] (its gradient split for the kernel).
void copy_rows_heads(const float* src, float* dst, bool to_rows, std::size_t T, std::size_t H,
                     std::size_t d, std::size_t r0, std::size_t r1) {
    const std::size_t D = H * d;
    for (std::size_t n = r0; n < r1; ++n) {
        const std::size_t b = n / T, t = n % T;
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t head = ((b * H + h) * T + t) * d, row = n * D + h * d;
            const float* in = src + (to_rows ? head : row);
            float* out = dst + (to_rows ? row : head);
            for (std::size_t i = 0; i < d; ++i) out[i] = in[i];
        }
    }
}

// Rows [r0, r1) of fc [N, F]: fc = GELU(fc + b_fc), b_fc [F], and grad [N, F] = GELU' at the
// same point, for the backward (wb::gelu_bias_row, the decoder's GELU too).
void gelu_rows_forward(float* fc, float* grad, const float* b_fc, std::size_t r0, std::size_t r1,
                       std::size_t F) {
    for (std::size_t n = r0; n < r1; ++n) wb::gelu_bias_row(fc + n * F, grad + n * F, b_fc, F);
}

// Rows [r0, r1) of dfc [N, F]: dfc ⊙= grad [N, F], the derivative gelu_rows_forward saved.
void gelu_rows_backward(float* dfc, const float* grad, std::size_t r0, std::size_t r1,
                        std::size_t F) {
    for (std::size_t e = r0 * F; e < r1 * F; ++e) dfc[e] *= grad[e];
}

// Rows [r0, r1) of z [N, V], the logits: z = softmax(z) in place, and loss [N] = −log
// softmax(z)[target] (0 where targets [N] holds -1, the ignored target).
void softmax_cross_entropy_rows_forward(float* z, const int* targets, float* loss, std::size_t r0,
                                        std::size_t r1, std::size_t V) {
    for (std::size_t n = r0; n < r1; ++n) {
        float* zn = z + n * V;
        float mx = zn[0];
        for (std::size_t j = 1; j < V; ++j) mx = std::max(mx, zn[j]);
        float sum = 0.0f;
        for (std::size_t j = 0; j < V; ++j) sum += std::exp(zn[j] - mx);
        const float lse = mx + std::log(sum);  // log Σ exp(z), stable
        const int target = targets[n];
        loss[n] = target == -1 ? 0.0f : lse - zn[target];  // −log softmax(z)[target]
        for (std::size_t j = 0; j < V; ++j) zn[j] = std::exp(zn[j] - lse);
    }
}

// The mean of loss [N] over the `valid` rows whose target is not -1 (the others hold 0), summed
// in row order: the same bits for any thread count.
float mean_loss(const float* loss, std::size_t N, std::size_t valid) {
    float total = 0.0f;
    for (std::size_t n = 0; n < N; ++n) total += loss[n];
    return valid == 0 ? 0.0f : total / static_cast<float>(valid);
}

// The backward of the mean cross entropy on all N rows: dlogits [N, V] = (probs [N, V] −
// onehot(target)) · inv_valid, 0 on the rows whose target is -1.
void softmax_cross_entropy_rows_backward(const float* probs, const int* targets, float inv_valid,
                                         float* dlogits, std::size_t N, std::size_t V) {
#pragma omp parallel for schedule(static)
    for (std::size_t n = 0; n < N; ++n) {
        const float* p = probs + n * V;
        float* g = dlogits + n * V;
        const int target = targets[n];
        if (target == -1) {
            for (std::size_t j = 0; j < V; ++j) g[j] = 0.0f;
            continue;
        }
        for (std::size_t j = 0; j < V; ++j) g[j] = p[j];
        g[target] -= 1.0f;
        for (std::size_t j = 0; j < V; ++j) g[j] *= inv_valid;
    }
}

using Floats = std::vector<float>;
Floats zeros(std::size_t n) { return Floats(n, 0.0f); }

}  // namespace

// ---- The trainer's state: every buffer of one [B, T] step ---------------------------------------

struct GptTrainer::Impl {
    // The sizes first: every buffer below is sized from them where it is declared, so each
    // buffer is listed once, with its shape.
    Impl(const GptConfig& config, std::size_t batch, std::size_t seq_len, const Variant& variant)
        : c(config),
          var(variant),
          B(batch),
          T(seq_len),
          N(batch * seq_len),
          d(config.D / config.H),
          D(config.D),
          F(4 * config.D),
          L(config.L),
          V(config.V),
          H(config.H) {}

    GptConfig c;
    Variant var;
    std::size_t B, T, N, d, D, F, L, V, H;
    bool post = var.norm == Norm::post;  // Post-LN: LN(x + f(x)) instead of x + f(LN(x))
    // Without the 1/√d scale: q and dq are multiplied by √d (the kernel divides by it).
    bool unscaled = var.attention_scale == AttentionScale::none;
    float q_scale = std::sqrt(static_cast<float>(d));
    bool has_forward = false;
    std::size_t valid = 0;  // targets that are not -1 in the last forward

    // No table wpe: RoPE, or no positions at all (the config then says rope).
    bool no_table = c.positions == Positions::rope;
    // q and k turned by RoPE: rope positions, unless the variant has none.
    bool turn = no_table && !var.no_positions;
    // RoPE: cos and sin [T, d/2] of the angles of positions 0 .. T-1, made once
    // (rope_tables.hpp). Empty with learned positions or none.
    RopeTables rope = turn ? RopeTables(T, d) : RopeTables();

    std::vector<int> inputs = std::vector<int>(N, 0);    // [N] ids of the last forward
    std::vector<int> targets = std::vector<int>(N, -1);  // [N] targets, -1 = ignored
    // Activations, per block l (index l·N·D etc.), kept for the backward.
    // [L + 1, N, D] stream entering block l; [L] leaves the last
    Floats resid = zeros((L + 1) * N * D);
    Floats x_mid = zeros(L * N * D);            // [L, N, D] stream after the attention half
    Floats ln1 = zeros(post ? 0 : L * N * D);   // [L, N, D] Pre-LN: LN1(x), input of q, k, v
    Floats sum1 = zeros(post ? L * N * D : 0);  // [L, N, D] Post-LN: x + attention(x), LN1's input
    Floats ln1_mean = zeros(L * N);             // [L, N]
    Floats ln1_rstd = zeros(L * N);             // [L, N]
    Floats qkv = zeros(L * 3 * N * D);          // [L, 3, B, H, T, d] q, k, v in head layout
    Floats att = zeros(L * N * D);              // [L, B, H, T, d] attention output in head layout
    Floats lse = zeros(L * N * H);              // [L, B, H, T] log-sum-exp of each attention row
    Floats att_cat = zeros(L * N * D);          // [L, N, D] heads merged (input of w_o)
    Floats ln2 = zeros(post ? 0 : L * N * D);   // [L, N, D] Pre-LN: LN2(x_mid), input of w_fc
    Floats sum2 =
        zeros(post ? L * N * D : 0);      // [L, N, D] Post-LN: x_mid + FFN(x_mid), LN2's input
    Floats ln2_mean = zeros(L * N);       // [L, N]
    Floats ln2_rstd = zeros(L * N);       // [L, N]
    Floats fc_gelu = zeros(L * N * F);    // [L, N, F] GELU(ln2 w_fcᵀ + b_fc) (input of w_proj)
    Floats gelu_grad = zeros(L * N * F);  // [L, N, F] GELU' at the same point, for the backward
    Floats ln_f = zeros(N * D);           // [N, D]
    Floats ln_f_mean = zeros(N);          // [N]
    Floats ln_f_rstd = zeros(N);          // [N]
    Floats probs = zeros(N * V);          // [N, V] softmax of the logits
    Floats row_loss = zeros(N);           // [N] loss of each row (0 where ignored)
    // Scratch of the forward and the backward.
    Floats proj = zeros(N * 3 * D);   // [N, 3D] output of the q|k|v projections, before the split
    Floats dlogits = zeros(N * V);    // [N, V]
    Floats dresid = zeros(N * D);     // [N, D] gradient of the residual stream
    Floats dln = zeros(N * D);        // [N, D] gradient of a LayerNorm output
    Floats datt_cat = zeros(N * D);   // [N, D] gradient of the merged heads
    Floats datt = zeros(N * D);       // [B, H, T, d] the same, in head layout
    Floats dqkv = zeros(3 * N * D);   // [3, B, H, T, d] gradients of q, k, v
    Floats dproj = zeros(N * 3 * D);  // [N, 3D] the same, merged back to rows
    Floats dfc = zeros(N * F);        // [N, F]
    Floats wqkv = zeros(3 * D * D);   // [3D, D] w_q, w_k, w_v stacked: one product instead of three
    Floats dwqkv = zeros(3 * D * D);  // [3D, D] their gradients, stacked
    Floats dbqkv = zeros(3 * D);      // [3D] the biases' gradients, stacked
    // [bands of kSumRows rows, F] partial column sums (F = 4D: the widest, over 3D and 2D)
    Floats band_sums = zeros(sum_bands(N) * F);
};

namespace {

// Stacks w_q, w_k, w_v [D, D] into wqkv [3D, D]: the weight of the three projections as one
// Linear of width 3D (a copy of 3·D² floats, against 6·N·D² flops for the product).
void pack_qkv(const GptBlock<float>& w, float* wqkv, std::size_t D) {
    std::copy(w.w_q.data(), w.w_q.data() + D * D, wqkv);
    std::copy(w.w_k.data(), w.w_k.data() + D * D, wqkv + D * D);
    std::copy(w.w_v.data(), w.w_v.data() + D * D, wqkv + 2 * D * D);
}

// Adds the stacked gradients of the three projections, dwqkv [3D, D] and dbqkv [3D], into
// g's w_q, w_k, w_v [D, D] and b_q, b_k, b_v [D].
void add_qkv_grads(const float* dwqkv, const float* dbqkv, GptBlock<float>& g, std::size_t D) {
    float* gw[3] = {g.w_q.data(), g.w_k.data(), g.w_v.data()};
    float* gb[3] = {g.b_q.data(), g.b_k.data(), g.b_v.data()};
    for (std::size_t p = 0; p < 3; ++p) {
        for (std::size_t e = 0; e < D * D; ++e) gw[p][e] += dwqkv[p * D * D + e];
        for (std::size_t i = 0; i < D; ++i) gb[p][i] += dbqkv[p * D + i];
    }
}

}  // namespace

GptTrainer::GptTrainer(const GptConfig& config, std::size_t batch, std::size_t seq_len,
                       const Variant& variant) {
    require_valid_config(kName, config);
    if (config.gelu != Gelu::exact) {  // the fast engine computes the exact GELU only
        throw ValueError(std::string(kName) + ": config " + config_str(config) +
                         ": the fast engine computes the exact GELU only; expected gelu = exact "
                         "(GPT-2's tanh form runs on the chapters, --engine chapters)");
    }
    if (batch == 0 || seq_len == 0) {
        throw ShapeError(std::string(kName) + ": batch [B, T] = " +
                         shape_str(Shape{batch, seq_len}) + ", expected B >= 1 and T >= 1");
    }
    if (seq_len > config.T_max) {
        throw ValueError(std::string(kName) + ": T = " + num(seq_len) + " exceeds T_max = " +
                         num(config.T_max) + " (the longest sequence of the model)");
    }
    if ((variant.attention_scale != AttentionScale::sqrt &&
         variant.attention_scale != AttentionScale::none) ||
        (variant.norm != Norm::pre && variant.norm != Norm::post)) {
        throw ValueError(std::string(kName) + ": variant (attention_scale " +
                         std::to_string(static_cast<int>(variant.attention_scale)) + ", norm " +
                         std::to_string(static_cast<int>(variant.norm)) +
                         "), expected attention_scale sqrt or none and norm pre or post");
    }
    require_positions_fit(kName, config, variant);
    impl_ = std::make_unique<Impl>(config, batch, seq_len, variant);
}

GptTrainer::~GptTrainer() = default;
GptTrainer::GptTrainer(GptTrainer&&) noexcept = default;
GptTrainer& GptTrainer::operator=(GptTrainer&&) noexcept = default;

const GptConfig& GptTrainer::config() const { return impl_->c; }
const Variant& GptTrainer::variant() const { return impl_->var; }

const float* GptTrainer::probabilities() const {
    if (!impl_->has_forward) {
        throw ValueError(
            "wb::minigpt::GptTrainer::probabilities: no forward ran (or the last one threw), "
            "expected a forward(params, inputs, targets) first");
    }
    return impl_->probs.data();
}

float GptTrainer::forward(const GptParams<float>& params, const TokenIds& inputs,
                          const TokenIds& targets) {
    const char* fn = "wb::minigpt::GptTrainer::forward";
    Impl& m = *impl_;
    const GptConfig& c = m.c;
    const std::size_t B = m.B, T = m.T, N = m.N, D = c.D, F = 4 * D, H = c.H, d = m.d, V = c.V;
    // The buffers are sized for [B, T]; require_shape only runs (and allocates) to throw.
    if (inputs.shape(0) != B || inputs.shape(1) != T) {
        require_shape(fn, "inputs [B, T]", inputs, {B, T});
    }
    if (targets.shape(0) != B || targets.shape(1) != T) {
        require_shape(fn, "targets [B, T]", targets, {B, T});
    }
    require_gpt_shapes(fn, "params", params, c);
    m.has_forward = false;  // the buffers are about to change
    std::size_t valid = 0;
    for (std::size_t n = 0; n < N; ++n) {
        const std::int64_t id = inputs.data()[n], target = targets.data()[n];
        if (id < 0 || static_cast<std::size_t>(id) >= V) {
            throw ValueError(std::string(fn) + ": inputs[" + num(n / T) + ", " + num(n % T) +
                             "] = " + std::to_string(id) + " is outside [0, V) = [0, " + num(V) +
                             ")");
        }
        if (target != -1 && (target < 0 || static_cast<std::size_t>(target) >= V)) {
            throw ValueError(std::string(fn) + ": targets[" + num(n / T) + ", " + num(n % T) +
                             "] = " + std::to_string(target) + " is outside [0, V) = [0, " +
                             num(V) + ") and is not the ignored target -1");
        }
        m.inputs[n] = static_cast<int>(id);
        m.targets[n] = static_cast<int>(target);
        valid += target != -1;
    }
    m.valid = valid;
    const SerialBlas serial;

    // Token embedding plus position embedding: row b·T + t = wte[id] + wpe[t] (learned), or
    // wte[id] alone (RoPE: the positions enter inside attention; none: they do not enter).
    const bool rope = m.no_table;
    embedding_forward(params.wte.data(), rope ? nullptr : params.wpe.data(), m.inputs.data(),
                      m.resid.data(), N, T, D);

    const AttentionShape shape{B, H, T, d};
    const HeadLayout heads{T, H, d, m.turn ? &m.rope : nullptr, m.unscaled, m.q_scale};
    const bool post = m.post;
    float* proj = m.proj.data();  // [N, 3D]: columns q | k | v
    for (std::size_t l = 0; l < c.L; ++l) {
        const GptBlock<float>& w = params.blocks[l];
        const float* x = m.resid.data() + l * N * D;               // [N, D] stream in
        float* ln1 = post ? nullptr : m.ln1.data() + l * N * D;    // [N, D] Pre-LN
        float* sum1 = post ? m.sum1.data() + l * N * D : nullptr;  // [N, D] Post-LN
        float* ln1_mean = m.ln1_mean.data() + l * N;               // [N]
        float* ln1_rstd = m.ln1_rstd.data() + l * N;               // [N]
        float* q = m.qkv.data() + l * 3 * N * D;                   // [B, H, T, d]
        float* k = q + N * D;                                      // [B, H, T, d]
        float* v = k + N * D;                                      // [B, H, T, d]
        float* att = m.att.data() + l * N * D;                     // [B, H, T, d]
        float* lse = m.lse.data() + l * N * H;                     // [B, H, T]
        float* att_cat = m.att_cat.data() + l * N * D;             // [N, D]
        float* x_mid = m.x_mid.data() + l * N * D;                 // [N, D]
        float* ln2 = post ? nullptr : m.ln2.data() + l * N * D;    // [N, D] Pre-LN
        float* sum2 = post ? m.sum2.data() + l * N * D : nullptr;  // [N, D] Post-LN
        float* ln2_mean = m.ln2_mean.data() + l * N;               // [N]
        float* ln2_rstd = m.ln2_rstd.data() + l * N;               // [N]
        float* fc_gelu = m.fc_gelu.data() + l * N * F;             // [N, F]
        float* gelu_grad = m.gelu_grad.data() + l * N * F;         // [N, F]
        float* x_out = m.resid.data() + (l + 1) * N * D;           // [N, D] stream out
        float* attn_sum = post ? sum1 : x_mid;  // [N, D] x + attention: LN1's input in Post-LN
        float* ffn_sum = post ? sum2 : x_out;   // [N, D] x_mid + FFN: LN2's input in Post-LN

        // Attention half: x_mid = x + w_o · attention(LN1(x)) (Post-LN: x_mid = LN1(x + w_o ·
        // attention(x))). The row steps run inside the products' parallel regions, on the rows
        // of each piece (gemm). One product for the three projections, ln1 (Post-LN: x) · [w_q;
        // w_k; w_v]ᵀ, after LN1 of the same rows; then the heads split, with their biases.
        pack_qkv(w, m.wqkv.data(), D);
        const float* const qkv_bias[3] = {w.b_q.data(), w.b_k.data(), w.b_v.data()};
        float* const qkv[3] = {q, k, v};
        linear(
            post ? x : ln1, m.wqkv.data(), proj, N, D, 3 * D, 0.0f,
            [&](std::size_t r0, std::size_t r1) {
                if (!post) {
                    layernorm_rows_forward(x, w.ln1_g.data(), w.ln1_b.data(), ln1, ln1_mean,
                                           ln1_rstd, r0, r1, D);
                }
            },
            [&](std::size_t r0, std::size_t r1) {
                qkv_rows_to_heads(proj, qkv_bias, qkv, heads, r0, r1);
            });
        attention_forward(shape, q, k, v, att, lse);
        // attn_sum = x + b_o + att_cat · w_oᵀ: the heads merged back into rows and the sum
        // started as the residual plus the bias; after the product, LN2 of the same rows
        // (Post-LN: x_mid = LN1(sum1)).
        linear(
            att_cat, w.w_o.data(), attn_sum, N, D, D, 1.0f,
            [&](std::size_t r0, std::size_t r1) {
                copy_rows_heads(att, att_cat, true, T, H, d, r0, r1);
                residual_bias_rows(x, w.b_o.data(), attn_sum, r0, r1, D);
            },
            [&](std::size_t r0, std::size_t r1) {
                if (post) {
                    layernorm_rows_forward(sum1, w.ln1_g.data(), w.ln1_b.data(), x_mid, ln1_mean,
                                           ln1_rstd, r0, r1, D);
                } else {
                    layernorm_rows_forward(x_mid, w.ln2_g.data(), w.ln2_b.data(), ln2, ln2_mean,
                                           ln2_rstd, r0, r1, D);
                }
            });

        // FFN half: x_out = x_mid + w_proj · GELU(w_fc · LN2(x_mid)) (Post-LN: x_out =
        // LN2(x_mid + w_proj · GELU(w_fc · x_mid))). After x w_fcᵀ, the bias and GELU on its
        // rows, and ffn_sum started as x_mid plus the bias b_proj; then ffn_sum += GELU ·
        // w_projᵀ, and (Post-LN) x_out = LN2 of the same rows.
        linear(post ? x_mid : ln2, w.w_fc.data(), fc_gelu, N, D, F, 0.0f, NoRows{},
               [&](std::size_t r0, std::size_t r1) {
                   gelu_rows_forward(fc_gelu, gelu_grad, w.b_fc.data(), r0, r1, F);
                   residual_bias_rows(x_mid, w.b_proj.data(), ffn_sum, r0, r1, D);
               });
        linear(fc_gelu, w.w_proj.data(), ffn_sum, N, F, D, 1.0f, NoRows{},
               [&](std::size_t r0, std::size_t r1) {
                   if (post) {
                       layernorm_rows_forward(sum2, w.ln2_g.data(), w.ln2_b.data(), x_out, ln2_mean,
                                              ln2_rstd, r0, r1, D);
                   }
               });
    }

    // Final LayerNorm (unless --final-norm off: the last stream itself goes into lm_head),
    // logits, then softmax and cross entropy fused, row by row.
    const float* x_last = m.resid.data() + c.L * N * D;  // [N, D]
    float* probs = m.probs.data();                       // [N, V]: the logits, then their softmax
    const auto softmax_rows = [&](std::size_t r0, std::size_t r1) {
        softmax_cross_entropy_rows_forward(probs, m.targets.data(), m.row_loss.data(), r0, r1, V);
    };
    if (m.var.final_norm) {
        linear(
            m.ln_f.data(), params.lm_head.data(), probs, N, D, V, 0.0f,
            [&](std::size_t r0, std::size_t r1) {
                layernorm_rows_forward(x_last, params.ln_f_g.data(), params.ln_f_b.data(),
                                       m.ln_f.data(), m.ln_f_mean.data(), m.ln_f_rstd.data(), r0,
                                       r1, D);
            },
            softmax_rows);
    } else {
        linear(x_last, params.lm_head.data(), probs, N, D, V, 0.0f, NoRows{}, softmax_rows);
    }
    m.has_forward = true;
    return mean_loss(m.row_loss.data(), N, valid);
}

void GptTrainer::backward(const GptParams<float>& params, GptParams<float>& grads) {
    const char* fn = "wb::minigpt::GptTrainer::backward";
    Impl& m = *impl_;
    if (!m.has_forward) {
        throw ValueError(std::string(fn) +
                         ": no forward to differentiate: call forward(params, inputs, "
                         "targets) first (a forward that threw leaves none either)");
    }
    const GptConfig& c = m.c;
    require_gpt_shapes(fn, "params", params, c);
    require_gpt_shapes(fn, "grads", grads, c);
    const std::size_t B = m.B, T = m.T, N = m.N, D = c.D, F = 4 * D, H = c.H, d = m.d, V = c.V;
    const bool rope = m.no_table;  // no wpe: RoPE or no positions
    const SerialBlas serial;

    // Cross entropy, then lm_head and the final LayerNorm (--final-norm off: lm_head read the
    // last stream, and ln_f's gradients stay as they are).
    const float inv_valid = m.valid == 0 ? 0.0f : 1.0f / static_cast<float>(m.valid);
    float* dlogits = m.dlogits.data();  // [N, V]
    softmax_cross_entropy_rows_backward(m.probs.data(), m.targets.data(), inv_valid, dlogits, N, V);
    float* dln = m.dln.data();        // [N, D] scratch: the gradient of a LayerNorm's output
    float* dresid = m.dresid.data();  // [N, D] the gradient of the residual stream
    float* partial = m.band_sums.data();
    const float* x_last = m.resid.data() + c.L * N * D;  // [N, D]
    if (m.var.final_norm) {
        linear_back(dlogits, V, m.ln_f.data(), params.lm_head.data(), dln, false,
                    grads.lm_head.data(), nullptr, partial, N, D, V);
        std::fill(m.dresid.begin(), m.dresid.end(), 0.0f);
        layernorm_rows_backward(dln, x_last, params.ln_f_g.data(), m.ln_f_mean.data(),
                                m.ln_f_rstd.data(), dresid, grads.ln_f_g.data(),
                                grads.ln_f_b.data(), partial, N, D);
    } else {
        linear_back(dlogits, V, x_last, params.lm_head.data(), dresid, false, grads.lm_head.data(),
                    nullptr, partial, N, D, V);
    }

    const AttentionShape shape{B, H, T, d};
    const HeadLayout heads{T, H, d, m.turn ? &m.rope : nullptr, m.unscaled, m.q_scale};
    const bool post = m.post;
    float* dfc = m.dfc.data();            // [N, F]
    float* datt_cat = m.datt_cat.data();  // [N, D]
    float* datt = m.datt.data();          // [B, H, T, d]
    float* dq = m.dqkv.data();            // [B, H, T, d]
    float* dk = dq + N * D;               // [B, H, T, d]
    float* dv = dk + N * D;               // [B, H, T, d]
    float* dproj = m.dproj.data();        // [N, 3D]: columns dq | dk | dv
    for (std::size_t l = c.L; l-- > 0;) {
        const GptBlock<float>& w = params.blocks[l];
        GptBlock<float>& g = grads.blocks[l];
        const float* x = m.resid.data() + l * N * D;                 // [N, D]
        const float* ln1 = post ? x : m.ln1.data() + l * N * D;      // [N, D] input of q, k, v
        const float* ln1_mean = m.ln1_mean.data() + l * N;           // [N]
        const float* ln1_rstd = m.ln1_rstd.data() + l * N;           // [N]
        const float* q = m.qkv.data() + l * 3 * N * D;               // [B, H, T, d]
        const float* k = q + N * D;                                  // [B, H, T, d]
        const float* v = k + N * D;                                  // [B, H, T, d]
        const float* att = m.att.data() + l * N * D;                 // [B, H, T, d]
        const float* lse = m.lse.data() + l * N * H;                 // [B, H, T]
        const float* att_cat = m.att_cat.data() + l * N * D;         // [N, D]
        const float* x_mid = m.x_mid.data() + l * N * D;             // [N, D]
        const float* ln2 = post ? x_mid : m.ln2.data() + l * N * D;  // [N, D] input of w_fc
        const float* ln2_mean = m.ln2_mean.data() + l * N;           // [N]
        const float* ln2_rstd = m.ln2_rstd.data() + l * N;           // [N]
        const float* gelu_grad = m.gelu_grad.data() + l * N * F;     // [N, F]
        const float* fc_gelu = m.fc_gelu.data() + l * N * F;         // [N, F]

        // FFN half. dresid is the gradient of x_out; it reaches x_mid through the residual
        // unchanged, and the LN2 branch's share is added into it below. Post-LN: first through
        // x_out = LN2(sum2), then sum2 = x_mid + FFN(x_mid) the same way, with no LN after.
        if (post) {
            post_layernorm_backward(dresid, m.sum2.data() + l * N * D, w.ln2_g.data(), ln2_mean,
                                    ln2_rstd, g.ln2_g.data(), g.ln2_b.data(), dln, partial, N, D);
        }
        // dfc = (dresid · w_proj) ⊙ GELU'(u), the derivative saved by the forward.
        linear_back(dresid, D, fc_gelu, w.w_proj.data(), dfc, false, g.w_proj.data(),
                    g.b_proj.data(), partial, N, F, D, [&](std::size_t r0, std::size_t r1) {
                        gelu_rows_backward(dfc, gelu_grad, r0, r1, F);
                    });
        if (post) {  // x_mid's gradient: the residual's (in dresid) plus the FFN's
            linear_back(dfc, F, ln2, w.w_fc.data(), dresid, true, g.w_fc.data(), g.b_fc.data(),
                        partial, N, D, F);
        } else {
            linear_back(dfc, F, ln2, w.w_fc.data(), dln, false, g.w_fc.data(), g.b_fc.data(),
                        partial, N, D, F);
            layernorm_rows_backward(dln, x_mid, w.ln2_g.data(), ln2_mean, ln2_rstd, dresid,
                                    g.ln2_g.data(), g.ln2_b.data(), partial, N, D);
        }

        // Attention half: dresid is now the gradient of x_mid (Post-LN: of LN1(sum1), turned
        // into sum1's). datt_cat = dresid · w_o, split into the heads row by row; the kernel's
        // backward; dq, dk, dv merged back into rows.
        if (post) {
            post_layernorm_backward(dresid, m.sum1.data() + l * N * D, w.ln1_g.data(), ln1_mean,
                                    ln1_rstd, g.ln1_g.data(), g.ln1_b.data(), dln, partial, N, D);
        }
        linear_back(dresid, D, att_cat, w.w_o.data(), datt_cat, false, g.w_o.data(), g.b_o.data(),
                    partial, N, D, D, [&](std::size_t r0, std::size_t r1) {
                        copy_rows_heads(datt_cat, datt, false, T, H, d, r0, r1);
                    });
        attention_backward(shape, q, k, v, att, lse, datt, dq, dk, dv);
        const float* const dqkv[3] = {dq, dk, dv};
        qkv_heads_to_rows(dqkv, dproj, heads, N);
        // The three projections as one Linear of width 3D: dln = dproj · [w_q; w_k; w_v]
        // sums ln1's three gradients in one product; the weight and bias gradients come out
        // stacked [3D, D] and [3D], and are added into the three tensors. Post-LN: q, k, v
        // read x itself, whose gradient (the residual's, in dresid) gets theirs added; Pre-LN:
        // they read ln1, whose gradient goes through LN1 below.
        pack_qkv(w, m.wqkv.data(), D);
        std::fill(m.dwqkv.begin(), m.dwqkv.end(), 0.0f);
        std::fill(m.dbqkv.begin(), m.dbqkv.end(), 0.0f);
        linear_back(dproj, 3 * D, ln1, m.wqkv.data(), post ? dresid : dln, post, m.dwqkv.data(),
                    m.dbqkv.data(), partial, N, D, 3 * D);
        add_qkv_grads(m.dwqkv.data(), m.dbqkv.data(), g, D);
        if (!post) {
            layernorm_rows_backward(dln, x, w.ln1_g.data(), ln1_mean, ln1_rstd, dresid,
                                    g.ln1_g.data(), g.ln1_b.data(), partial, N, D);
        }
    }

    // Embeddings: x0[b·T + t] = wte[id] + wpe[t] (no wpe with RoPE or no positions).
    embedding_backward(dresid, m.inputs.data(), grads.wte.data(), rope ? nullptr : grads.wpe.data(),
                       N, T, D);
}

}  // namespace wb::minigpt
