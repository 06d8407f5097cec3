/// @file kv_cache.hpp
/// @brief Chapter 9 — the KV cache: prefill the prompt once, then decode one token at a time.
///
/// The notes' §15 (generation goes step by step: each new token is the next step's input),
/// §16 (prefill and decode; every layer keeps its own K and V; history positions never change;
/// the cache holds about 2·L·B·T·D elements), §17 (the cache is not free: the new query still
/// reads the whole history) and §18 (a full forward and the step-by-step cache must agree).
///
/// The model is chapter 8's GPT (GptConfig, GptParams), in float, and prefill and decode_step
/// run it with the same functions chapter 8's forward is made of: `embed` and `linear`,
/// `lm_head` / `next_token_logits` (chapter 2), `add_positions` or `apply_rope` (chapter 3),
/// `sdpa` (chapter 4), `causal_mask` (chapter 6), `layer_norm`, `gelu` and `gelu_tanh` (chapter 7),
/// `split_heads`, `merge_heads` and `last_token_keep` (chapter 1). What this chapter adds is
/// the cache around them: where each new token sits (its position offset) and where its keys
/// and values go. A mistake in an earlier chapter therefore shows up here too, and the checks
/// compare with chapter 8's `gpt_logits` on the same chapters.
///
/// Both position kinds of GptConfig::positions are supported:
/// - learned (GPT-2): the new tokens get the rows `wpe[t]` of their absolute positions,
///   `add_positions(x, wpe, offset = t)`;
/// - RoPE: nothing is added to the embeddings (wpe is `[0, D]`); in every layer the new q and
///   k are turned by `apply_rope(·, offset = t, kRopeBase)`. The cache stores K **after** the
///   rotation: a key is rotated once, at its own position, when it is written, and read as it
///   is by every later query (rotations are relative: the score of q at m and k at n depends
///   on m − n only, so an old key never needs turning again).
///
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
/// Position t of sequence b in head h of layer l is `k[l](b, h, t, :)` (with RoPE: the key
/// already rotated by position t). Positions
/// `[0, length)` hold the keys and values of the tokens seen so far; positions
/// `[length, T_max)` are still zero. Queries are not cached: only the newest token asks a
/// question, the old queries are never used again (§16).
struct KvCache {
    std::vector<Heads<float>> k;  ///< L entries, each [B, H, T_max, d]
    std::vector<Heads<float>> v;  ///< L entries, each [B, H, T_max, d]
    std::size_t length = 0;       ///< positions filled so far (the next token's position)
};

/// @}

inline namespace WB_IMPL {

/// @addtogroup chapter9
/// @{

/// An empty cache for B sequences: L layers of K and V, each `[B, H, T_max, d]` of zeros,
/// length 0. <!-- clause: make_kv_cache.zeroed -->
/// This is the only allocation of the cache: prefill and decode_step write into it.
/// @param config the model's shape (V, T_max, D, H, L)
/// @param B number of sequences decoded side by side
/// @return the cache, `k.size() == v.size() == L`, each tensor `[B, H, T_max, D / H]`
///         <!-- clause: make_kv_cache.layout -->
/// @throws ShapeError if B == 0 (the message names "wb::make_kv_cache" and B)
///         <!-- clause: make_kv_cache.zero-batch -->
/// @throws ShapeError if the config is invalid: a zero in V, T_max, D, H, L or H not dividing
///         D (the message names it) <!-- clause: make_kv_cache.invalid-config -->
/// @throws ShapeError with RoPE if the head width d is odd (the message says it must be
///         even) <!-- clause: make_kv_cache.rope-odd-width -->
/// @throws ShapeError if the cache would hold more than 2^48 elements (see
///         kv_cache_elements), before anything is allocated
///         <!-- clause: make_kv_cache.too-large -->
KvCache make_kv_cache(const GptConfig& config, std::size_t B);

/// The number of floats in a full cache (§16): K and V, in each of L layers, for B sequences
/// of T_max positions of width D = H·d:
/// ```
///   elements = 2 · L · B · T_max · D
/// ```
/// @param config the model's shape
/// @param B number of sequences
/// @return `2·L·B·T_max·D` (a zero anywhere gives 0) <!-- clause: kv_cache_elements.formula -->
/// @throws ShapeError if the product is more than 2^48 elements (wb::checked_size: it never
///         wraps around to a small number; the message names "wb::kv_cache_elements")
///         <!-- clause: kv_cache_elements.too-large -->
std::size_t kv_cache_elements(const GptConfig& config, std::size_t B);

/// The memory of a full float cache: kv_cache_elements() · sizeof(float) bytes.
/// @param config the model's shape
/// @param B number of sequences
/// @return bytes, `2·L·B·T_max·D·4` <!-- clause: kv_cache_bytes.formula -->
/// @throws ShapeError as kv_cache_elements, and also when the byte count itself is more than
///         2^48 (wb::checked_size of elements × 4; the message names "wb::kv_cache_elements" or
///         "wb::kv_cache_bytes") <!-- clause: kv_cache_bytes.too-large -->
std::size_t kv_cache_bytes(const GptConfig& config, std::size_t B);

/// Prefill (§16): runs the whole prompt through the model in one pass, exactly chapter 8's
/// forward, and keeps every layer's K and V. Positions `[0, T)`, offset 0:
/// ```
///   x = embed(wte, prompt)                                  [B, T, D]      chapter 2
///   learned:  x = add_positions(x, wpe, 0)                  rows wpe[0..T) chapter 3
///   every layer l:
///     h = layer_norm(x, {ln1_g, ln1_b, kGptLayerNormEps})                  chapter 7
///     q, k, v = split_heads(linear(h, {w_q, b_q}), H), …    [B, H, T, d]   chapters 2, 1
///     RoPE:  q, k = apply_rope(q, 0, kRopeBase), apply_rope(k, 0, kRopeBase)  chapter 3
///     cache.k[l][:, :, 0..T) = k;  cache.v[l][:, :, 0..T) = v      (K after the rotation)
///     x += linear(merge_heads(sdpa(q, k, v, causal_mask(T)).output), {w_o, b_o})  ch. 4, 6
///     x += linear(act(linear(layer_norm(x, ln2), {w_fc, b_fc})), {w_proj, b_proj})
///          act: gelu, or gelu_tanh when config.gelu is Gelu::tanh (chapter 8's choice)
///   logits = next_token_logits(layer_norm(last_token_keep(x), ln_f), {lm_head, no bias})
/// ```
/// Only the last position of each sequence predicts the next token, so only it goes through
/// the final LayerNorm and lm_head (`[B, 1, D]` → `[B, V]`).
/// Every layer l keeps its own keys and values: `cache.k[l](b, h, t, :)` is layer l's key of
/// prompt token t (rotated at position t with RoPE), `cache.v[l]` its value, never
/// rotated. <!-- clause: prefill.fills-cache -->
/// Afterwards `cache.length == T`. <!-- clause: prefill.sets-length -->
/// Positions `[T, T_max)` stay zero. <!-- clause: prefill.rest-untouched -->
/// Every check comes before anything is written: a call that throws leaves the cache as it
/// was, its length and every K and V. <!-- clause: prefill.unchanged-on-error -->
/// @param params the model (chapter 8's layout; wpe `[T_max, D]`, or `[0, D]` with RoPE)
/// @param config its shape and position kind
/// @param prompt `[B, T]` token ids in `[0, V)`, 1 <= T <= T_max (T = T_max is
///        allowed) <!-- clause: prefill.prompt-length -->
/// @param cache from make_kv_cache(config, B), still empty (length 0)
/// @return `[B, V]` logits of the token after `prompt[b, T-1]`, row b for sequence b: row
///         `b·T + T-1` of chapter 8's gpt_logits on the prompt
///         <!-- clause: prefill.matches-full-forward -->, with either GELU of config.gelu
///         (GPT-2's tanh form included) <!-- clause: prefill.gelu-kind -->
/// @throws ShapeError if the config is invalid (the message names "wb::prefill" and the
///         config's wrong value) <!-- clause: prefill.invalid-config -->
/// @throws ShapeError if params has not L blocks or a tensor of params (wte, wpe, a block's,
///         lm_head) does not have the config's shape (wpe: `[T_max, D]` with learned positions,
///         `[0, D]` with RoPE) (the message names "wb::prefill", the shape and the expected
///         one, or the number of blocks and L) <!-- clause: prefill.param-shapes -->
/// @throws ShapeError if B == 0 or T == 0 (the message names "wb::prefill" and the prompt's
///         shape) <!-- clause: prefill.empty-prompt -->
/// @throws ShapeError if the cache is not L layers of `[B, H, T_max, d]` (the message names
///         "wb::prefill" and the shapes, or the number of layers and L)
///         <!-- clause: prefill.cache-shape -->
/// @throws ValueError if T > T_max (the message names T and T_max)
///         <!-- clause: prefill.too-long -->
/// @throws ValueError if an id is outside `[0, V)` (the message names the position and the
///         id) <!-- clause: prefill.bad-id -->
/// @throws ValueError if the cache is not empty (the message names its length)
///         <!-- clause: prefill.used-cache -->
///
/// Not a promise: which of several errors is reported first.
Mat<float> prefill(const GptParams<float>& params, const GptConfig& config, const TokenIds& prompt,
                   KvCache& cache);

/// Decode one step (§16): one new token per sequence at position `t = cache.length`, the
/// offset of every position-aware call. In every layer it computes the new token's q, k, v
/// `[B, H, 1, d]` with the same functions as prefill, writes k (rotated, with RoPE) and v into
/// **that layer's** cache at slot t, and lets the new q attend over slots `[0, t]` (the whole
/// history and itself) with chapter 4's `sdpa` and **no mask**: the newest position may read
/// every key the cache holds, and the cache holds no future.
/// ```
///   tokens [B] ──► x = embed(wte, tokens)                     [B, 1, D]
///                  learned: x = add_positions(x, wpe, t)      (the row wpe[t], not wpe[0])
///   layer l:  q, k, v [B, H, 1, d];  RoPE: q, k = apply_rope(q, t), apply_rope(k, t)
///             cache.k[l][:, :, t] = k;  cache.v[l][:, :, t] = v
///             att = sdpa(q, cache.k[l][:, :, 0..t], cache.v[l][:, :, 0..t])   [B, H, 1, d]
///   ──► logits [B, V];  cache.length = t + 1
/// ```
/// The result equals row t of chapter 8's gpt_logits on the whole sequence (§18), for both
/// position kinds <!-- clause: decode_step.matches-full-forward --> and both GELU kinds of
/// config.gelu. <!-- clause: decode_step.gelu-kind -->
/// In every layer it writes slot t (K rotated at position t with RoPE, V as it is) and leaves
/// the history, slots `[0, t)`, exactly as it was. <!-- clause: decode_step.writes-slot-t -->
/// Afterwards `cache.length == t + 1`. <!-- clause: decode_step.advances-length -->
/// The cache's tensors are never reallocated: their buffers stay where make_kv_cache put
/// them. <!-- clause: decode_step.no-reallocation --> Not a promise: the slices `[0, t]`
/// handed to sdpa may be copies for its `Tensor4` arguments (the same number of floats the
/// attention reads anyway).
/// Every check comes before anything is written: a call that throws leaves the cache as it
/// was, its length and every K and V. <!-- clause: decode_step.unchanged-on-error -->
/// @param params the model
/// @param config its shape and position kind
/// @param tokens B ids, one per sequence, each in `[0, V)`
/// @param cache the cache of a prefill, or an empty one (length 0: the token is then position
///        0), `length < T_max` <!-- clause: decode_step.empty-cache -->
/// @return `[B, V]` logits of the token after `tokens[b]`
/// @throws ShapeError if the config is invalid (the message names "wb::decode_step" and the
///         config's wrong value) <!-- clause: decode_step.invalid-config -->
/// @throws ShapeError if params has not L blocks or a tensor of params does not have the
///         config's shape (the message names "wb::decode_step", the shape and the expected
///         one, or the number of blocks and L) <!-- clause: decode_step.param-shapes -->
/// @throws ShapeError if the cache is not L layers of `[B, H, T_max, d]` (the message names
///         "wb::decode_step" and the wrong shape, or the number of layers and L)
///         <!-- clause: decode_step.cache-shape -->
/// @throws ShapeError if tokens.size() != B (the message names "wb::decode_step", the size
///         and B) <!-- clause: decode_step.token-count -->
/// @throws ValueError if the cache is full, length == T_max (the message names T_max), with
///         either position kind <!-- clause: decode_step.full-cache -->
/// @throws ValueError if an id is outside `[0, V)` (the message names the id)
///         <!-- clause: decode_step.bad-id -->
///
/// Not a promise: which of several errors is reported first.
Mat<float> decode_step(const GptParams<float>& params, const GptConfig& config,
                       const std::vector<std::int64_t>& tokens, KvCache& cache);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
