// The fast trainer's matrix product (gemm.hpp): BLIS's loop nest around a register-blocked
// micro-kernel, in the layout of a row-major C.
//
//   for jc (columns of C, NC at a time)
//     for pc (K, KC at a time):     pack op(B) [kc, nc] into panels of NR columns
//       for ic (rows of C, MC at a time):   pack op(A) [mc, kc] into panels of MR rows
//         for jr (panels of B), for ir (panels of A): the micro-kernel, one MR × NR tile of C
//
// The micro-kernel holds its tile of C in registers (AVX-512: 14 rows × 32 columns, two zmm
// a row, 28 accumulators; AVX2: 6 × 16, two ymm a row, 12) and, for each k of the block,
// loads one row of the B panel (NR floats), broadcasts each of the MR values of the A panel
// and does MR · NR / lanes FMAs. Packed, a panel of B is kc rows of NR contiguous floats and
// a panel of A kc columns of MR contiguous floats, both zero-padded at the edges, so the
// kernel reads both in order and a transpose costs only in the packing. KC = 256 keeps a B
// panel (32 KiB with AVX-512) in L1 while the kernel walks the A panels, which stay in L2
// with the rest of the packed B (MC × KC + NC × KC floats, under 1 MiB).
//
// The order of every sum is fixed by the shapes: element (i, j) is Σ_k over each K block in
// order (one FMA chain from 0), and the blocks are added to C in order (the first one also
// takes beta · C, or replaces C when beta is 0). Nothing depends on the thread count, the
// data or the alignment of the buffers.
#include "minigpt/fast/gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include "workbook/core.hpp"
#include "workbook/simd.hpp"
#ifdef WB_SIMD_X86
#include <immintrin.h>  // the AVX-512 packing's masked loads and stores, alone (see there)
#endif

namespace wb::minigpt {

namespace {

// How a micro-kernel writes its tile: C = acc (first K block, beta 0: C is not read), C += acc
// (later blocks, or beta 1), C = beta · C + acc (first block, any other beta).
enum Store : int { kAssign = 0, kAdd = 1, kScale = 2 };

// ---- Scratch: the packed panels, one pair of buffers per thread, kept between calls --------

struct Scratch {
    float* a = nullptr;
    std::size_t a_size = 0;
    float* b = nullptr;
    std::size_t b_size = 0;
    Scratch() = default;
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    ~Scratch() {
        std::free(a);
        std::free(b);
    }
};

// At least `need` floats at a 64-byte boundary (a cache line, a zmm).
float* grow(float*& p, std::size_t& size, std::size_t need) {
    if (need > size) {
        std::free(p);
        p = nullptr;
        size = 0;
        const std::size_t bytes = (need * sizeof(float) + 63) / 64 * 64;
        p = static_cast<float*>(std::aligned_alloc(64, bytes));
        if (p == nullptr) throw std::bad_alloc();
        size = need;
    }
    return p;
}

thread_local Scratch scratch;

// ---- Packing, portable (any MR, NR) ---------------------------------------------------------

// op(A) rows [i0, i0 + mc), columns [p0, p0 + kc) into panels of MR rows: panel p holds, for
// each k, the MR values op(A)[i0 + p·MR + r, p0 + k] (0 past row mc).
template <std::size_t MR>
void pack_a_portable(bool trans, const float* A, std::size_t lda, std::size_t i0, std::size_t mc,
                     std::size_t p0, std::size_t kc, float* dst) {
    for (std::size_t ip = 0; ip < mc; ip += MR, dst += MR * kc) {
        const std::size_t rows = std::min(MR, mc - ip);
        if (trans) {  // op(A)[i, k] = A[k, i]: each k is a contiguous run of rows
            for (std::size_t k = 0; k < kc; ++k) {
                const float* src = A + (p0 + k) * lda + i0 + ip;
                for (std::size_t r = 0; r < rows; ++r) dst[k * MR + r] = src[r];
                for (std::size_t r = rows; r < MR; ++r) dst[k * MR + r] = 0.0f;
            }
        } else {  // op(A)[i, k] = A[i, k]: each row is a contiguous run of k
            for (std::size_t r = 0; r < rows; ++r) {
                const float* src = A + (i0 + ip + r) * lda + p0;
                for (std::size_t k = 0; k < kc; ++k) dst[k * MR + r] = src[k];
            }
            for (std::size_t r = rows; r < MR; ++r)
                for (std::size_t k = 0; k < kc; ++k) dst[k * MR + r] = 0.0f;
        }
    }
}

// op(B) rows [p0, p0 + kc), columns [j0, j0 + nc) into panels of NR columns: panel p holds,
// for each k, the NR values op(B)[p0 + k, j0 + p·NR + c] (0 past column nc).
template <std::size_t NR>
void pack_b_portable(bool trans, const float* B, std::size_t ldb, std::size_t j0, std::size_t nc,
                     std::size_t p0, std::size_t kc, float* dst) {
    for (std::size_t jp = 0; jp < nc; jp += NR, dst += NR * kc) {
        const std::size_t cols = std::min(NR, nc - jp);
        if (trans) {  // op(B)[k, j] = B[j, k]: each column is a contiguous run of k
            for (std::size_t c = 0; c < cols; ++c) {
                const float* src = B + (j0 + jp + c) * ldb + p0;
                for (std::size_t k = 0; k < kc; ++k) dst[k * NR + c] = src[k];
            }
            for (std::size_t c = cols; c < NR; ++c)
                for (std::size_t k = 0; k < kc; ++k) dst[k * NR + c] = 0.0f;
        } else {  // op(B)[k, j] = B[k, j]: each k is a contiguous run of columns
            for (std::size_t k = 0; k < kc; ++k) {
                const float* src = B + (p0 + k) * ldb + j0 + jp;
                for (std::size_t c = 0; c < cols; ++c) dst[k * NR + c] = src[c];
                for (std::size_t c = cols; c < NR; ++c) dst[k * NR + c] = 0.0f;
            }
        }
    }
}

// ---- The loop nest, for one instruction set -------------------------------------------------

// A micro-kernel: the tile C [rows, cols] (rows <= MR, fixed by which kernel it is; cols <=
// NR) from kc steps of a packed A panel and a packed B panel, written as `store` says.
using Kernel = void (*)(std::size_t kc, const float* a, const float* b, float* c, std::size_t ldc,
                        std::size_t cols, int store, float beta);
using PackA = void (*)(bool trans, const float* A, std::size_t lda, std::size_t i0, std::size_t mc,
                       std::size_t p0, std::size_t kc, float* dst);
using PackB = void (*)(bool trans, const float* B, std::size_t ldb, std::size_t j0, std::size_t nc,
                       std::size_t p0, std::size_t kc, float* dst);

struct Arch {
    std::size_t mr, nr, kc, mc, nc;
    const Kernel* kernels;  // [mr + 1]: kernels[r] computes r rows
    PackA pack_a;
    PackB pack_b;
};

void blocked(const Arch& arch, bool trans_a, bool trans_b, std::size_t M, std::size_t N,
             std::size_t K, const float* A, std::size_t lda, const float* B, std::size_t ldb,
             float beta, float* C, std::size_t ldc) {
    const std::size_t MR = arch.mr, NR = arch.nr;
    Scratch& s = scratch;
    float* bp = grow(s.b, s.b_size, round_up(std::min(N, arch.nc), NR) * std::min(K, arch.kc));
    float* ap = grow(s.a, s.a_size, round_up(std::min(M, arch.mc), MR) * std::min(K, arch.kc));
    for (std::size_t jc = 0; jc < N; jc += arch.nc) {
        const std::size_t nc = std::min(arch.nc, N - jc);
        for (std::size_t pc = 0; pc < K; pc += arch.kc) {
            const std::size_t kc = std::min(arch.kc, K - pc);
            arch.pack_b(trans_b, B, ldb, jc, nc, pc, kc, bp);
            const int store =
                pc > 0 ? kAdd : (beta == 0.0f ? kAssign : (beta == 1.0f ? kAdd : kScale));
            for (std::size_t ic = 0; ic < M; ic += arch.mc) {
                const std::size_t mc = std::min(arch.mc, M - ic);
                arch.pack_a(trans_a, A, lda, ic, mc, pc, kc, ap);
                for (std::size_t jr = 0; jr < nc; jr += NR) {
                    const std::size_t cols = std::min(NR, nc - jr);
                    const float* b = bp + jr * kc;  // panel jr / NR, NR · kc floats each
                    for (std::size_t ir = 0; ir < mc; ir += MR) {
                        const std::size_t rows = std::min(MR, mc - ir);
                        arch.kernels[rows](kc, ap + ir * kc, b, C + (ic + ir) * ldc + jc + jr, ldc,
                                           cols, store, beta);
                    }
                }
            }
        }
    }
}

#ifdef WB_SIMD_X86

// ---- The micro-kernel of both levels ----------------------------------------------------------
//
// V is the level's vector of floats (workbook/simd.hpp: F32x16 with AVX-512, F32x8 with AVX2),
// the tile R rows (R <= MR) by NR = 2 vectors of columns: 2R accumulators, 2 vectors for the
// row of B, the broadcasts of A straight from memory into the multiply-adds. Per k: 2 loads
// of B and R broadcasts for 2R fused multiply-adds (acc += a · b, one rounding). A tile
// narrower than NR (the last columns of C) is written through a buffer, its valid columns
// only.
template <class V, std::size_t MR, int R>
WB_SIMD_BODY void kernel_body(std::size_t kc, const float* a, const float* b, float* c,
                              std::size_t ldc, std::size_t cols, int store, float beta) {
    constexpr std::size_t W = kLanesOf<V>, NR = 2 * W;
    V c0[R], c1[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        c0[r] = V{};
        c1[r] = V{};
    }
    for (std::size_t k = 0; k < kc; ++k) {
        V b0, b1;
        load_lanes(b0, b);
        load_lanes(b1, b + W);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            c0[r] += a[r] * b0;
            c1[r] += a[r] * b1;
        }
        a += MR;
        b += NR;
    }
    if (cols == NR) {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            float* cr = c + static_cast<std::size_t>(r) * ldc;
            V v0 = c0[r], v1 = c1[r];
            if (store != kAssign) {
                V old0, old1;
                load_lanes(old0, cr);
                load_lanes(old1, cr + W);
                if (store == kAdd) {
                    v0 = old0 + v0;
                    v1 = old1 + v1;
                } else {
                    v0 = beta * old0 + v0;
                    v1 = beta * old1 + v1;
                }
            }
            store_lanes(cr, v0);
            store_lanes(cr + W, v1);
        }
        return;
    }
    alignas(64) float tile[R * NR];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        store_lanes(tile + r * NR, c0[r]);
        store_lanes(tile + r * NR + W, c1[r]);
    }
    for (int r = 0; r < R; ++r) {
        float* cr = c + static_cast<std::size_t>(r) * ldc;
        const float* t = tile + r * NR;
        for (std::size_t j = 0; j < cols; ++j) {
            if (store == kAssign) cr[j] = t[j];
            if (store == kAdd) cr[j] = cr[j] + t[j];
            if (store == kScale) cr[j] = beta * cr[j] + t[j];
        }
    }
}

// ---- AVX-512: 14 × 32 --------------------------------------------------------------------------
//
// 14 rows × 2 zmm = 28 accumulators, 2 for the row of B: 30 of the 32 zmm. Per k: 2 loads of
// B and 14 broadcasts for 28 FMAs, within the two load ports while the two FMA ports stay
// busy.

constexpr std::size_t kMr512 = 14, kNr512 = 32;

template <int R>
WB_TARGET_AVX512 void kernel_avx512(std::size_t kc, const float* a, const float* b, float* c,
                                    std::size_t ldc, std::size_t cols, int store, float beta) {
    kernel_body<F32x16, kMr512, R>(kc, a, b, c, ldc, cols, store, beta);
}

// The AVX-512 packing is the one place of the program written with intrinsics, not with
// workbook/simd.hpp's vector types: its masked loads and stores read a row's valid floats and
// write a panel's, never past either, in one instruction each. Written with vector types
// (whole loads where they stay inside the matrix, partial ones through a buffer) it did the
// same work 3 to 4% slower on the weight gradients' products (bench/gemm_speed, dW rows).
WB_TARGET_AVX512 __mmask16 low_lanes(std::size_t n) {
    return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u);
}

// Transposes the 16 × 16 block held in r[0..15] (row i in r[i]) in place: r[j] becomes
// column j. Three rounds of shuffles: pairs of floats, pairs of pairs, then 128-bit lanes.
// The zero-masked forms with every lane kept are the plain instructions; GCC 12 warns of an
// uninitialised value in the unmasked intrinsics (their _mm512_undefined_ps, GCC bug 105593).
constexpr __mmask16 kAll = 0xFFFF;
constexpr __mmask8 kAll8 = 0xFF;
WB_TARGET_AVX512 inline void transpose16(__m512 (&r)[16]) {
    __m512 t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {  // t[2i] lane L: r2i[4L], r2i+1[4L], r2i[4L+1], r2i+1[4L+1]
        t[2 * i] = _mm512_maskz_unpacklo_ps(kAll, r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {  // r[4i + j] lane L: rows 4i .. 4i+3 of column 4L + j
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, b, d));
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {  // column 4L + j: lane L of r[j], r[4 + j], r[8 + j], r[12 + j]
        const __m512 u0 = _mm512_maskz_shuffle_f32x4(kAll, r[j], r[4 + j], 0x88);
        const __m512 u1 = _mm512_maskz_shuffle_f32x4(kAll, r[j], r[4 + j], 0xDD);
        const __m512 u2 = _mm512_maskz_shuffle_f32x4(kAll, r[8 + j], r[12 + j], 0x88);
        const __m512 u3 = _mm512_maskz_shuffle_f32x4(kAll, r[8 + j], r[12 + j], 0xDD);
        t[j] = _mm512_maskz_shuffle_f32x4(kAll, u0, u2, 0x88);
        t[4 + j] = _mm512_maskz_shuffle_f32x4(kAll, u1, u3, 0x88);
        t[8 + j] = _mm512_maskz_shuffle_f32x4(kAll, u0, u2, 0xDD);
        t[12 + j] = _mm512_maskz_shuffle_f32x4(kAll, u1, u3, 0xDD);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// Transposes `rows` <= 16 rows of `len` <= 16 floats (row i at src + i·ld; 0 past them) and
// writes its first `len` columns, each under mask `out` at dst + k·step.
WB_TARGET_AVX512 inline void transpose_block(const float* src, std::size_t ld, std::size_t rows,
                                             std::size_t len, float* dst, std::size_t step,
                                             __mmask16 out) {
    __m512 r[16];
    const __mmask16 in = low_lanes(len);
#pragma GCC unroll 16
    for (std::size_t i = 0; i < 16; ++i)
        r[i] = i < rows ? _mm512_maskz_loadu_ps(in, src + i * ld) : _mm512_setzero_ps();
    transpose16(r);
#pragma GCC unroll 16
    for (std::size_t k = 0; k < 16; ++k)
        if (k < len) _mm512_mask_storeu_ps(dst + k * step, out, r[k]);
}

// Packing with AVX-512: the contiguous runs by masked loads and stores, the strided ones (the
// rows of A without transpose, the columns of B with it) by 16 × 16 transposes in registers.
WB_TARGET_AVX512 void pack_a_avx512(bool trans, const float* A, std::size_t lda, std::size_t i0,
                                    std::size_t mc, std::size_t p0, std::size_t kc, float* dst) {
    constexpr std::size_t MR = kMr512;
    const __mmask16 panel = low_lanes(MR);
    for (std::size_t ip = 0; ip < mc; ip += MR, dst += MR * kc) {
        const std::size_t rows = std::min(MR, mc - ip);
        if (trans) {  // op(A)[i, k] = A[k, i]: row k of A holds the panel's values for k
            const __mmask16 valid = low_lanes(rows);
            const float* src = A + p0 * lda + i0 + ip;
            for (std::size_t k = 0; k < kc; ++k, src += lda)
                _mm512_mask_storeu_ps(dst + k * MR, panel, _mm512_maskz_loadu_ps(valid, src));
        } else {  // 14 rows of 16 k at a time, turned into 16 k of 14 rows (2 rows of zeros)
            const float* src = A + (i0 + ip) * lda + p0;
            for (std::size_t k = 0; k < kc; k += 16)
                transpose_block(src + k, lda, rows, std::min<std::size_t>(16, kc - k), dst + k * MR,
                                MR, panel);
        }
    }
}

WB_TARGET_AVX512 void pack_b_avx512(bool trans, const float* B, std::size_t ldb, std::size_t j0,
                                    std::size_t nc, std::size_t p0, std::size_t kc, float* dst) {
    constexpr std::size_t NR = kNr512;
    for (std::size_t jp = 0; jp < nc; jp += NR, dst += NR * kc) {
        const std::size_t cols = std::min(NR, nc - jp);
        if (trans) {  // op(B)[k, j] = B[j, k]: 16 columns of 16 k at a time, turned
            const float* src = B + (j0 + jp) * ldb + p0;
            for (std::size_t k = 0; k < kc; k += 16) {
                const std::size_t len = std::min<std::size_t>(16, kc - k);
                transpose_block(src + k, ldb, std::min<std::size_t>(16, cols), len, dst + k * NR,
                                NR, 0xFFFF);
                if (cols > 16) {
                    transpose_block(src + 16 * ldb + k, ldb, cols - 16, len, dst + k * NR + 16, NR,
                                    0xFFFF);
                } else {
                    for (std::size_t i = 0; i < len; ++i)
                        _mm512_store_ps(dst + (k + i) * NR + 16, _mm512_setzero_ps());
                }
            }
        } else {
            const __mmask16 lo = low_lanes(cols), hi = low_lanes(cols > 16 ? cols - 16 : 0);
            const float* src = B + p0 * ldb + j0 + jp;
            for (std::size_t k = 0; k < kc; ++k, src += ldb) {
                _mm512_store_ps(dst + k * NR, _mm512_maskz_loadu_ps(lo, src));
                _mm512_store_ps(dst + k * NR + 16, _mm512_maskz_loadu_ps(hi, src + 16));
            }
        }
    }
}

constexpr Kernel kKernelsAvx512[kMr512 + 1] = {
    nullptr,           kernel_avx512<1>,  kernel_avx512<2>,  kernel_avx512<3>,  kernel_avx512<4>,
    kernel_avx512<5>,  kernel_avx512<6>,  kernel_avx512<7>,  kernel_avx512<8>,  kernel_avx512<9>,
    kernel_avx512<10>, kernel_avx512<11>, kernel_avx512<12>, kernel_avx512<13>, kernel_avx512<14>};

// MC = 24 panels (336 rows): a trainer band of 256 rows is one block.
constexpr Arch kAvx512{kMr512, kNr512,         256,           24 * kMr512,
                       512,    kKernelsAvx512, pack_a_avx512, pack_b_avx512};

// ---- AVX2 + FMA: 6 × 16 ------------------------------------------------------------------------
//
// 6 rows × 2 ymm = 12 accumulators, 2 for the row of B, 1 for the broadcast: 15 of the 16
// ymm. The packing is the portable one.

constexpr std::size_t kMr256 = 6, kNr256 = 16;

template <int R>
WB_TARGET_AVX2 void kernel_avx2(std::size_t kc, const float* a, const float* b, float* c,
                                std::size_t ldc, std::size_t cols, int store, float beta) {
    kernel_body<F32x8, kMr256, R>(kc, a, b, c, ldc, cols, store, beta);
}

constexpr Kernel kKernelsAvx2[kMr256 + 1] = {nullptr,        kernel_avx2<1>, kernel_avx2<2>,
                                             kernel_avx2<3>, kernel_avx2<4>, kernel_avx2<5>,
                                             kernel_avx2<6>};

constexpr Arch kAvx2{kMr256,
                     kNr256,
                     256,
                     40 * kMr256,
                     512,
                     kKernelsAvx2,
                     pack_a_portable<kMr256>,
                     pack_b_portable<kNr256>};

#endif  // WB_SIMD_X86

}  // namespace

void sgemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, const float* A,
           std::size_t lda, const float* B, std::size_t ldb, float beta, float* C,
           std::size_t ldc) {
    sgemm_at(simd_level(), trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

void sgemm_at(SimdLevel level, bool trans_a, bool trans_b, std::size_t M, std::size_t N,
              std::size_t K, const float* A, std::size_t lda, const float* B, std::size_t ldb,
              float beta, float* C, std::size_t ldc) {
    level = std::min(level, simd_level());
    if (M == 0 || N == 0) return;
    if (K == 0) {  // C = beta · C (beta 0: zeros, C not read)
        for (std::size_t i = 0; i < M; ++i)
            for (std::size_t j = 0; j < N; ++j)
                C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
        return;
    }
#ifdef WB_SIMD_X86
    if (level == kSimdAvx512) {
        blocked(kAvx512, trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (level == kSimdAvx2) {
        blocked(kAvx2, trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#endif
    static_cast<void>(level);  // without the x86 paths, every level is this one
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), 1.0f, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta,
                C, static_cast<int>(ldc));
}

SgemmTile sgemm_tile() {
#ifdef WB_SIMD_X86
    if (simd_level() == kSimdAvx512) return {kMr512, kNr512};
    if (simd_level() == kSimdAvx2) return {kMr256, kNr256};
#endif
    return {0, 0};
}

const char* sgemm_path() {
#ifdef WB_SIMD_X86
    if (simd_level() == kSimdAvx512) return "avx512";
    if (simd_level() == kSimdAvx2) return "avx2";
#endif
    return "cblas";
}

}  // namespace wb::minigpt
