// Chapter 5 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in mha.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter5  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 5  /  tools/workbook watch 5
#include "5-mha/mha.hpp"

#include <xtensor/xview.hpp>

#include "1-tensors/tensors.hpp"

namespace wb {
inline namespace WB_IMPL {

MhaParams init_mha(std::size_t D, std::size_t H, bool bias, std::uint32_t seed) {
    // Hint: check D and H first; then four init_linear(D, D, bias, ...) with seeds
    // seed, seed + 1, seed + 2, seed + 3 for w_q, w_k, w_v, w_o.
    (void)D, (void)H, (void)bias, (void)seed;
    WB_STUB();
}

MhaResult multi_head_attention(const Tensor3& x_q, const Tensor3& x_kv, const MhaParams& p,
                               const std::optional<Mask>& mask) {
    // Hint: check the parameters, the inputs and the mask; then
    //   q = linear(x_q, p.w_q), k = linear(x_kv, p.w_k), v = linear(x_kv, p.w_v)   [B, T, D]
    //   split_heads(..., p.H)                                                     [B, H, T, d]
    //   sdpa(qh, kh, vh, mask)                       output [B, H, N, d], weights [B, H, N, M]
    //   merge_heads(output), then linear(..., p.w_o)                              [B, N, D]
    (void)x_q, (void)x_kv, (void)p, (void)mask;
    WB_STUB();
}

MhaResult self_attention(const Tensor3& x, const MhaParams& p, const std::optional<Mask>& mask) {
    // Hint: one line — self attention is multi-head attention of x with itself.
    (void)x, (void)p, (void)mask;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
