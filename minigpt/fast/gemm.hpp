/// @file gemm.hpp
/// @brief Given code: the matrix product of the fast trainer (gpt_train.cpp), a packed,
/// register-blocked single-threaded sgemm.
///
/// C [M, N] = op(A) · op(B) + beta · C on row-major float buffers, op(X) = X or Xᵀ. On a
/// processor with AVX-512 (or AVX2 + FMA) it runs this file's own kernel: panels of op(A) and
/// op(B) are copied ("packed") into aligned scratch, so that both transposes cost only in the
/// copy, and a micro-kernel keeps a tile of C in vector registers while it walks a block of
/// K. Elsewhere, or with `WB_SIMD=0` in the environment (workbook/simd.hpp), it is OpenBLAS's
/// cblas_sgemm.
///
/// On this file's own kernels each element of C is summed in an order fixed by K alone (never
/// by M, N, the thread count or the data): a caller may cut C into pieces of rows or columns
/// anywhere and gets the same bits (sgemm_tile says where to cut so that no micro-tile is
/// wasted). OpenBLAS's bits may depend on M and N: there the cut must depend on the shapes only.
#pragma once

#include <cstddef>

#include "workbook/simd.hpp"

namespace wb::minigpt {

/// C [M, N] = op(A) [M, K] · op(B) [K, N] + beta · C, single-threaded. A holds op(A) as [M, K]
/// with row stride lda (trans_a false) or its transpose [K, M] (trans_a true); B likewise
/// [K, N] or [N, K] with row stride ldb; C has row stride ldc. beta 0 does not read C (it may
/// hold NaN). Any M, N, K >= 0 (K = 0 gives C = beta · C). Each thread has its own scratch,
/// kept between calls (it only grows), so concurrent calls on different threads are safe.
void sgemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, const float* A,
           std::size_t lda, const float* B, std::size_t ldb, float beta, float* C, std::size_t ldc);

/// sgemm on the path of one instruction set (capped at simd_level()): kSimdAvx512 and
/// kSimdAvx2 run this file's kernels, kSimdPortable cblas_sgemm. sgemm is
/// sgemm_at(simd_level(), ...); the checks compare every path the processor runs.
void sgemm_at(SimdLevel level, bool trans_a, bool trans_b, std::size_t M, std::size_t N,
              std::size_t K, const float* A, std::size_t lda, const float* B, std::size_t ldb,
              float beta, float* C, std::size_t ldc);

/// The micro-tile of the path sgemm takes: rows × columns of C per micro-kernel call (14 × 32
/// with AVX-512, 6 × 16 with AVX2), {0, 0} for cblas_sgemm. Not 0: every cut of C gives the
/// same bits, and cuts at multiples of the tile leave no partial tile inside a piece.
struct SgemmTile {
    std::size_t rows;  ///< rows of C per micro-kernel call (0 on the cblas path)
    std::size_t cols;  ///< columns of C per micro-kernel call (0 on the cblas path)
};

/// The micro-tile of the path sgemm takes on this processor (see SgemmTile).
SgemmTile sgemm_tile();

/// The path sgemm takes on this processor: "avx512" (14 × 32 micro-kernel), "avx2" (6 × 16)
/// or "cblas" (OpenBLAS).
const char* sgemm_path();

}  // namespace wb::minigpt
