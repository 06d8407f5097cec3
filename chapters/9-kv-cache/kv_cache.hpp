/// @file kv_cache.hpp
/// @brief Chapter 9 — the KV cache: prefill the prompt once, then decode one token at a time.
///
/// The notes' §15 (generation goes step by step: each new token is the next step's input),
/// §16 (prefill and decode; every layer keeps its own K and V; history positions never change;
/// the cache holds about 2·L·B·T·D elements), §17 (the cache is not free: the new query still
/// reads the whole history) and §18 (a full forward and the step-by-step cache must agree).
///
/// The model is chapter 8's GPT (GptConfig, GptParams, the layers of layers.hpp), in float.
/// Shapes: B sequences, T_max the longest sequence, D model width, H heads of width
/// d = D / H, L blocks, V vocabulary size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "8-training/layers.hpp"
#include "8-training/model.hpp"
#include "workbook/core.hpp"

namespace wb {

/// @defgroup chapter9 Chapter 9: KV cache and sampling
/// @{

/// Per-layer K and V, allocated once for T_max positions (never re-concatenated).
///
/// Position t of sequence b in head h of layer l is `k[l](b, h, t, :)`. Positions
/// `[0, length)` hold the keys and values of the tokens seen so far; positions
/// `[length, T_max)` are still zero. Queries are not cached: only the newest token asks a
/// question, the old queries are never used again (§16).
struct KvCache {
    std::vector<Cube<float>> k;  ///< L entries, each [B, H, T_max, d]
    std::vector<Cube<float>> v;  ///< L entries, each [B, H, T_max, d]
    std::size_t length = 0;      ///< positions filled so far (the next token's position)
};

/// @}

inline namespace WB_IMPL {

/// @addtogroup chapter9
/// @{

/// An empty cache for B sequences: L layers of K and V, each `[B, H, T_max, d]` of zeros,
/// length 0. This is the only allocation of the cache: prefill and decode_step write into it.
/// @param config the model's shape (V, T_max, D, H, L)
/// @param B number of sequences decoded side by side
/// @return the cache, `k.size() == v.size() == L`
/// @throws ShapeError if B == 0 (the message names "wb::make_kv_cache" and B), or the config
///         is invalid: a zero in V, T_max, D, H, L or H not dividing D (the message names it),
///         or the cache would hold more than 2^48 elements (see kv_cache_elements)
KvCache make_kv_cache(const GptConfig& config, std::size_t B);

/// The number of floats in a full cache (§16): K and V, in each of L layers, for B sequences
/// of T_max positions of width D = H·d:
/// ```
///   elements = 2 · L · B · T_max · D
/// ```
/// @param config the model's shape
/// @param B number of sequences
/// @return `2·L·B·T_max·D` (a zero anywhere gives 0)
/// @throws ShapeError if the product is more than 2^48 elements (wb::checked_size: it never
///         wraps around to a small number)
std::size_t kv_cache_elements(const GptConfig& config, std::size_t B);

/// The memory of a full float cache: kv_cache_elements() · sizeof(float) bytes.
/// @param config the model's shape
/// @param B number of sequences
/// @return bytes, `2·L·B·T_max·D·4`
/// @throws ShapeError as kv_cache_elements
std::size_t kv_cache_bytes(const GptConfig& config, std::size_t B);

/// Prefill (§16): runs the whole prompt through the model in one pass, exactly chapter 8's
/// forward (Pre-LN blocks, learned positions `wpe[0..T)`, causal attention scaled by
/// 1/sqrt(d), GELU FFN, final LayerNorm, lm_head), and keeps every layer's K and V.
/// ```
///   prompt [B, T] ──► every layer l:  k, v [B, H, T, d] ──► cache.k[l], cache.v[l] at [0, T)
///                 └─► logits of the last position t = T-1:  [B, V]
/// ```
/// Afterwards `cache.length == T`; positions `[T, T_max)` stay zero.
/// @param params the model (chapter 8's layout)
/// @param config its shape
/// @param prompt `[B, T]` token ids in `[0, V)`, 1 <= T <= T_max
/// @param cache from make_kv_cache(config, B), still empty (length 0)
/// @return `[B, V]` logits of the token after `prompt[b, T-1]`, row b for sequence b
/// @throws ShapeError if the config is invalid, params has not L blocks or a tensor of params
///         (wte, wpe, a block's, lm_head) does not have the config's shape, B == 0 or T == 0,
///         or the cache is not L layers of `[B, H, T_max, d]` (messages name "wb::prefill" and
///         the shapes)
/// @throws ValueError if T > T_max (the message names T and T_max), an id is outside
///         `[0, V)` (names the position and the id), or the cache is not empty (names its length)
Mat<float> prefill(const GptParams<float>& params, const GptConfig& config,
                   const TokenIds& prompt, KvCache& cache);

/// Decode one step (§16): one new token per sequence at position `t = cache.length`.
/// In every layer it computes the new token's q, k, v `[B, H, 1, d]`, writes k and v into
/// **that layer's** cache at position t, and lets the new q attend over positions `[0, t]`
/// (the whole history and itself). The position embedding is `wpe[t]`.
/// ```
///   tokens [B] ──► x [B, D] ──► layer l: q, k, v [B, H, 1, d];  cache.k[l][:, :, t] = k
///                                        att = softmax(q · cache.k[l][:, :, 0..t]ᵀ / sqrt(d))
///                                        out = att · cache.v[l][:, :, 0..t]
///               ──► logits [B, V];  cache.length = t + 1
/// ```
/// The result equals row t of chapter 8's gpt_logits on the whole sequence (§18).
/// @param params the model
/// @param config its shape
/// @param tokens B ids, one per sequence, each in `[0, V)`
/// @param cache the cache of a prefill (or an empty one), `length < T_max`
/// @return `[B, V]` logits of the token after `tokens[b]`
/// @throws ShapeError if the config is invalid, params has not L blocks or a tensor of params
///         does not have the config's shape, the cache is not L
///         layers of `[B, H, T_max, d]`, or tokens.size() != B (the message names
///         "wb::decode_step", the size and B)
/// @throws ValueError if the cache is full, length == T_max (the message names T_max), or an
///         id is outside `[0, V)` (names the id)
Mat<float> decode_step(const GptParams<float>& params, const GptConfig& config,
                       const std::vector<std::int64_t>& tokens, KvCache& cache);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
