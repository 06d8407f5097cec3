// The kernels a benchmark can time, as plain function pointers: one table for the selected
// implementation (wb::impl) and one for the reference (wb::reference).
//
// Types that live inside the implementation's namespace (wb::impl::Mask, wb::impl::Linear …)
// differ between the two tables, so those entries are small wrappers in kernels.cpp that take
// and return only the shared types (tensors, GptParams, KvCache, raw float buffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "8-training/model.hpp"
#include "9-kv-cache/kv_cache.hpp"
#include "workbook/core.hpp"

namespace wbbench {

struct Kernels {
    // chapter 1
    wb::Array (*softmax)(const wb::Array&);                         ///< softmax over the last axis
    wb::Tensor4 (*matmul)(const wb::Tensor4&, const wb::Tensor4&);  ///< batched matmul
    wb::Tensor4 (*split_heads)(const wb::Tensor3&, std::size_t);    ///< [B, T, D] → [B, H, T, d]
    // chapter 4: sdpa(q, k, v) without a mask, the output [B, H, N, d_v]
    wb::Tensor4 (*sdpa)(const wb::Tensor4&, const wb::Tensor4&, const wb::Tensor4&);
    // chapter 5: self_attention(x) of [B, T, D] with H heads and the given [D, D] weights
    // w = {W_Q, W_K, W_V, W_O} (no bias), the output [B, T, D]
    wb::Tensor3 (*self_attention)(const wb::Tensor3& x, const std::vector<wb::Tensor2>& w,
                                  std::size_t H);
    // chapter 6: sdpa(q, k, v, causal_mask(T)), chapter 6's mask with chapter 4's attention
    wb::Tensor4 (*causal_sdpa)(const wb::Tensor4&, const wb::Tensor4&, const wb::Tensor4&);
    // capstone: the raw kernels on [B, H, T, d] buffers
    void (*attention_forward)(std::size_t B, std::size_t H, std::size_t T, std::size_t d,
                              const float* q, const float* k, const float* v, float* out,
                              float* lse);
    void (*attention_backward)(std::size_t B, std::size_t H, std::size_t T, std::size_t d,
                               const float* q, const float* k, const float* v, const float* out,
                               const float* lse, const float* dout, float* dq, float* dk,
                               float* dv);
    // chapter 8: a model's parameters, and the logits of every position of `inputs`
    // [B, T] → [B·T, V]
    wb::GptParams<float> (*init_gpt)(const wb::GptConfig&, std::uint64_t seed);
    wb::Mat<float> (*gpt_logits)(const wb::GptParams<float>&, const wb::GptConfig&,
                                 const wb::TokenIds&);
    // chapter 9: the KV cache
    wb::KvCache (*make_kv_cache)(const wb::GptConfig&, std::size_t B);
    wb::Mat<float> (*prefill)(const wb::GptParams<float>&, const wb::GptConfig&,
                              const wb::TokenIds&, wb::KvCache&);
    wb::Mat<float> (*decode_step)(const wb::GptParams<float>&, const wb::GptConfig&,
                                  const std::vector<std::int64_t>&, wb::KvCache&);
    // chapter 2: bpe_train(corpus, vocab_size), the merges flattened to left0, right0, left1, …
    std::vector<std::int64_t> (*bpe_train)(const std::string& corpus, std::size_t vocab_size);
};

const Kernels& kernels_impl();       ///< the selected implementation: yours, or the reference
const Kernels& kernels_reference();  ///< always the reference

}  // namespace wbbench
