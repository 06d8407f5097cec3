/// @file model.hpp
/// @brief Chapter 8 — the GPT assembled from chapters 1–7: parameters, forward with loss,
/// backward (the backwards of layers.hpp), zero_grad.
///
/// The notes' §14 (the last hidden state, after the final normalisation, is projected onto the
/// vocabulary: logits), §15 (training sees the whole true sequence at once; inputs and
/// targets are the same tokens shifted by one, and the causal mask keeps every position from
/// reading its own target) and §21.7 (the loop zero_grad → forward → loss → backward → step;
/// `CrossEntropyLoss` takes raw logits; `[B, T, V]` is flattened to `[B·T, V]`).
///
/// Shapes: B sequences, T tokens each (T <= T_max), D model width, H heads of width
/// d = D / H, L blocks, V vocabulary size, N = B·T rows once batch and time are flattened
/// (row `b·T + t` is token t of sequence b). Weights use PyTorch's `[out, in]` layout.
///
/// The model's forward and backward run in float, like the chapters they are made of. The
/// parameter helpers (init_gpt, zeros_like, parameters, zero_grad) are templates over the
/// scalar type `Real` (`float` to train, `double` for the gradient checks); only those two
/// are instantiated. T stays the sequence length, as in the legend of workbook/core.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "8-training/layers.hpp"
#include "workbook/core.hpp"

namespace wb {

/// @addtogroup chapter8
/// @{

/// How the model knows where a token is (chapter 3).
enum class Positions {
    learned,  ///< GPT-2: a trained table `wpe [T_max, D]` added to the token embeddings
    rope,     ///< RoPE: queries and keys rotated inside every attention layer (no table)
};

/// The name of a position kind, as the program's `--positions` option spells it.
inline const char* positions_name(Positions p) { return p == Positions::rope ? "rope" : "learned"; }

/// Which GELU the FFN of every block applies (chapter 7 wrote both).
enum class Gelu {
    exact,  ///< `nn.GELU()`: chapter 7's gelu, `x Φ(x)`; the course's models train with it
    tanh,   ///< chapter 7's gelu_tanh, the tanh approximation: GPT-2's "gelu_new"
};

/// The name of a GELU kind: "exact" or "tanh".
inline const char* gelu_name(Gelu g) { return g == Gelu::tanh ? "tanh" : "exact"; }

/// The shape of a GPT: what must be saved next to the weights (§21.9), because the weights
/// alone do not say how many heads they are split into.
struct GptConfig {
    std::size_t V;      ///< vocabulary size: token ids are in `[0, V)`
    std::size_t T_max;  ///< longest sequence (with learned positions: the rows of wpe)
    std::size_t D;      ///< model width
    std::size_t H;      ///< heads per attention layer; must divide D
    std::size_t L;      ///< number of blocks
    Positions positions = Positions::learned;  ///< learned table or RoPE
    Gelu gelu = Gelu::exact;  ///< the FFN's activation: exact, or tanh as GPT-2 has it
};

/// The frequency base of the model's RoPE (RoFormer's and LLaMA's 10000).
inline constexpr float kRopeBase = 10000.0f;

/// The parameters of one Pre-LN block, in PyTorch's layout.
template <class Real>
struct GptBlock {
    Vec<Real> ln1_g;   ///< `[D]` LayerNorm before attention: scale (gamma)
    Vec<Real> ln1_b;   ///< `[D]` LayerNorm before attention: shift (beta)
    Mat<Real> w_q;     ///< `[D, D]` query projection, `q = x w_qᵀ + b_q`
    Vec<Real> b_q;     ///< `[D]`
    Mat<Real> w_k;     ///< `[D, D]` key projection
    Vec<Real> b_k;     ///< `[D]`
    Mat<Real> w_v;     ///< `[D, D]` value projection
    Vec<Real> b_v;     ///< `[D]`
    Mat<Real> w_o;     ///< `[D, D]` output projection after the heads are merged
    Vec<Real> b_o;     ///< `[D]`
    Vec<Real> ln2_g;   ///< `[D]` LayerNorm before the FFN: scale
    Vec<Real> ln2_b;   ///< `[D]` LayerNorm before the FFN: shift
    Mat<Real> w_fc;    ///< `[4D, D]` FFN expansion
    Vec<Real> b_fc;    ///< `[4D]`
    Mat<Real> w_proj;  ///< `[D, 4D]` FFN projection back to D
    Vec<Real> b_proj;  ///< `[D]`
};

/// Every trainable tensor of the GPT. The same struct holds the gradients (see zeros_like).
template <class Real>
struct GptParams {
    Mat<Real> wte;  ///< `[V, D]` token embedding table
    Mat<Real> wpe;  ///< `[T_max, D]` learned position table; `[0, D]` with RoPE
    std::vector<GptBlock<Real>> blocks;  ///< L blocks
    Vec<Real> ln_f_g;                    ///< `[D]` final LayerNorm: scale
    Vec<Real> ln_f_b;                    ///< `[D]` final LayerNorm: shift
    Mat<Real> lm_head;  ///< `[V, D]` vocabulary projection, no bias, not tied to wte
};

/// One parameter tensor seen as a flat array: what an optimizer, a checkpoint or zero_grad
/// needs, without knowing the model's structure.
template <class Real>
struct ParamRef {
    std::string name;  ///< e.g. `"wte"`, `"blocks.0.w_q"`, `"lm_head"`
    Real* data;        ///< the first element; the tensor is contiguous, row-major
    std::size_t size;  ///< number of elements
    Shape shape;       ///< PyTorch layout, e.g. `[D, D]`
};

/// What one block's forward keeps for its backward (N = B·T rows).
template <class Real>
struct GptBlockCache {
    Mat<Real> x_in;     ///< `[N, D]` residual stream entering the block
    Mat<Real> ln1;      ///< `[N, D]` LayerNorm 1 output
    Heads<Real> q;      ///< `[B, H, T, d]` queries (rotated, with RoPE)
    Heads<Real> k;      ///< `[B, H, T, d]` keys (rotated, with RoPE)
    Heads<Real> v;      ///< `[B, H, T, d]` values
    Heads<Real> att;    ///< `[B, H, T, T]` causal attention weights
    Mat<Real> att_out;  ///< `[N, D]` attention output with the heads merged (input of w_o)
    Mat<Real> x_mid;    ///< `[N, D]` residual stream after the attention half
    Mat<Real> ln2;      ///< `[N, D]` LayerNorm 2 output
    Mat<Real> fc;       ///< `[N, 4D]` FFN expansion before GELU
    Mat<Real> fc_gelu;  ///< `[N, 4D]` after GELU (input of w_proj)
};

/// The activations of one forward, saved for gpt_backward (like llm.c's activation buffers).
template <class Real>
struct GptCache {
    std::size_t batch = 0;                    ///< B
    std::size_t seq_len = 0;                  ///< T
    TokenIds inputs;                          ///< `[B, T]` the input ids
    xt::xtensor<std::int64_t, 1> targets;     ///< `[N]` flattened targets (empty after gpt_logits)
    std::int64_t ignore_index = -1;           ///< the target value left out of the loss
    std::vector<GptBlockCache<Real>> blocks;  ///< one per block
    Mat<Real> x_final;                        ///< `[N, D]` residual stream after the last block
    Mat<Real> ln_f;         ///< `[N, D]` final LayerNorm output (input of lm_head)
    Mat<Real> logits;       ///< `[N, V]`
    bool has_loss = false;  ///< true once gpt_forward computed a loss (gpt_backward needs it)
};

/// Inputs and targets of next-token prediction (§15).
struct NextToken {
    TokenIds inputs;   ///< `[B, T]` = `tokens[:, :-1]`
    TokenIds targets;  ///< `[B, T]` = `tokens[:, 1:]`: target t is the token after input t
};

/// The epsilon of every LayerNorm in the model (PyTorch's default).
inline constexpr double kGptLayerNormEps = 1e-5;

/// Formats a configuration for error messages:
/// `{V = 11, T_max = 8, D = 12, H = 3, L = 2, positions = learned}`, with `, gelu = tanh`
/// before the brace for GPT-2's GELU.
inline std::string config_str(const GptConfig& c) {
    return "{V = " + std::to_string(c.V) + ", T_max = " + std::to_string(c.T_max) +
           ", D = " + std::to_string(c.D) + ", H = " + std::to_string(c.H) +
           ", L = " + std::to_string(c.L) + ", positions = " + positions_name(c.positions) +
           (c.gelu == Gelu::tanh ? ", gelu = tanh}" : "}");
}

/// Raises a ShapeError from `fn` unless every size of `c` is at least 1, H divides D and,
/// with RoPE, the head width D / H is even.
/// Given code, shared by the model (this chapter) and the KV cache (chapter 9).
inline void require_valid_config(const std::string& fn, const GptConfig& c) {
    if (c.V == 0 || c.T_max == 0 || c.D == 0 || c.H == 0 || c.L == 0) {
        throw ShapeError(fn + ": config " + config_str(c) + ": expected V, T_max, D, H, L >= 1");
    }
    if (c.D % c.H != 0) {
        throw ShapeError(fn + ": config " + config_str(c) + ": H = " + std::to_string(c.H) +
                         " does not divide D = " + std::to_string(c.D) +
                         " (each head has width d = D / H)");
    }
    if (c.positions == Positions::rope && (c.D / c.H) % 2 != 0) {
        throw ShapeError(fn + ": config " + config_str(c) +
                         ": RoPE turns pairs of features, "
                         "so the head width d = D / H = " +
                         std::to_string(c.D / c.H) + " must be even");
    }
    if (c.positions != Positions::learned && c.positions != Positions::rope) {
        throw ShapeError(fn + ": config " + config_str(c) +
                         ": positions is neither learned "
                         "nor rope");
    }
    if (c.gelu != Gelu::exact && c.gelu != Gelu::tanh) {
        throw ShapeError(fn + ": config " + config_str(c) + ": gelu is neither exact nor tanh");
    }
}

/// Raises a ShapeError from `fn` unless every tensor of `p` has the shape the config gives it
/// (the shapes listed in GptBlock and GptParams). Given code, shared by the model (this
/// chapter) and the capstone's trainer; it allocates nothing unless it throws, so a training
/// step can call it every time.
/// @param fn the public function to name in the message, e.g. "wb::gpt_forward"
/// @param which what `p` is to the caller, e.g. "params" or "grads"
/// @param p the tensors to check
/// @param c the configuration they must match
/// @throws ShapeError naming fn, which, the tensor (e.g. `blocks.1.w_fc`), its shape, the
///         expected one and the config (given code: not a promise of an exercise)
template <class Real>
void require_gpt_shapes(const char* fn, const char* which, const GptParams<Real>& p,
                        const GptConfig& c) {
    const std::size_t D = c.D, F = 4 * D;
    const auto need = [&](const char* name, std::size_t l, const auto& t,
                          std::initializer_list<std::size_t> expected) {
        if (t.dimension() == expected.size() &&
            std::equal(expected.begin(), expected.end(), t.shape().begin())) {
            return;
        }
        const std::string full = l == SIZE_MAX ? name : "blocks." + std::to_string(l) + "." + name;
        throw ShapeError(std::string(fn) + ": " + which + " tensor " + full + " has shape " +
                         shape_str(t.shape()) + ", expected " + shape_str(Shape(expected)) +
                         " for config " + config_str(c));
    };
    need("wte", SIZE_MAX, p.wte, {c.V, D});
    need("wpe", SIZE_MAX, p.wpe, {c.positions == Positions::learned ? c.T_max : 0, D});
    if (p.blocks.size() != c.L) {
        throw ShapeError(
            std::string(fn) + ": " + which + " has " + std::to_string(p.blocks.size()) +
            " blocks, expected L = " + std::to_string(c.L) + " for config " + config_str(c));
    }
    for (std::size_t l = 0; l < c.L; ++l) {
        const GptBlock<Real>& b = p.blocks[l];
        need("ln1_g", l, b.ln1_g, {D});
        need("ln1_b", l, b.ln1_b, {D});
        need("w_q", l, b.w_q, {D, D});
        need("b_q", l, b.b_q, {D});
        need("w_k", l, b.w_k, {D, D});
        need("b_k", l, b.b_k, {D});
        need("w_v", l, b.w_v, {D, D});
        need("b_v", l, b.b_v, {D});
        need("w_o", l, b.w_o, {D, D});
        need("b_o", l, b.b_o, {D});
        need("ln2_g", l, b.ln2_g, {D});
        need("ln2_b", l, b.ln2_b, {D});
        need("w_fc", l, b.w_fc, {F, D});
        need("b_fc", l, b.b_fc, {F});
        need("w_proj", l, b.w_proj, {D, F});
        need("b_proj", l, b.b_proj, {D});
    }
    need("ln_f_g", SIZE_MAX, p.ln_f_g, {D});
    need("ln_f_b", SIZE_MAX, p.ln_f_b, {D});
    need("lm_head", SIZE_MAX, p.lm_head, {c.V, D});
}

/// @}

inline namespace WB_IMPL {

/// @addtogroup chapter8
/// @{

/// A freshly initialised GPT, as GPT-2 / nanoGPT do it: every weight matrix (wte, wpe, the
/// projections, the FFN, lm_head) drawn from N(0, 0.02²), every bias 0, every LayerNorm gamma
/// 1 and beta 0. <!-- clause: init_gpt.values --> The draws come from `std::mt19937_64(seed)` in the order of parameters(), so
/// the same seed gives the same model (not the same numbers as PyTorch's generator). <!-- clause: init_gpt.seeded -->
/// @param config V, T_max, D, H, L
/// @param seed the random seed
/// @return parameters with the shapes listed in GptParams (wpe `[0, D]` with RoPE) <!-- clause: init_gpt.shapes -->
/// @throws ShapeError if any of V, T_max, D, H, L is 0 or H does not divide D (the message
///         names the config) <!-- clause: init_gpt.bad-config -->
/// @throws ShapeError if a tensor would hold more than 2^48 elements (V·D, T_max·D,
///         L·4·D·D: wb::checked_size, before anything is allocated; the message names
///         wb::init_gpt and 2^48) <!-- clause: init_gpt.too-large -->
template <class Real>
GptParams<Real> init_gpt(const GptConfig& config, std::uint64_t seed);

/// A GPT-shaped set of zeros: the gradient buffers of `params`.
/// @param params any parameters
/// @return the same shapes, every element 0 <!-- clause: zeros_like.zeros -->
template <class Real>
GptParams<Real> zeros_like(const GptParams<Real>& params);

/// Every tensor of the model, in this fixed order (the order of AdamW's state and of a
/// checkpoint):
/// ```
///   wte, wpe,
///   for l = 0 … L-1:  blocks.l.ln1_g, blocks.l.ln1_b, blocks.l.w_q, blocks.l.b_q,
///                     blocks.l.w_k, blocks.l.b_k, blocks.l.w_v, blocks.l.b_v,
///                     blocks.l.w_o, blocks.l.b_o, blocks.l.ln2_g, blocks.l.ln2_b,
///                     blocks.l.w_fc, blocks.l.b_fc, blocks.l.w_proj, blocks.l.b_proj,
///   ln_f_g, ln_f_b, lm_head
/// ```
/// That is 2 + 16·L + 3 tensors. <!-- clause: parameters.order --> The references point into `params`: they stay valid while
/// `params` lives and its tensors are not resized. <!-- clause: parameters.point-into-model -->
/// @param params the model (or its gradients)
/// @return one ParamRef per tensor, named as above (`"blocks.0.w_q"`), with its size and shape <!-- clause: parameters.names-shapes -->
template <class Real>
std::vector<ParamRef<Real>> parameters(GptParams<Real>& params);

/// Read-only version of parameters(), same order and names. <!-- clause: parameters.const-same -->
/// @param params the model (or its gradients)
/// @return one ParamRef per tensor
template <class Real>
std::vector<ParamRef<const Real>> parameters(const GptParams<Real>& params);

/// Next-token targets (§15): the model reads `tokens[:, :-1]` and must predict
/// `tokens[:, 1:]`. Position t sees tokens 0..t and is scored on token t + 1.
/// ```
///   tokens   x0 x1 x2 x3 x4        [B, T + 1]
///   inputs   x0 x1 x2 x3           [B, T]
///   targets  x1 x2 x3 x4           [B, T]
/// ```
/// @param tokens `[B, T + 1]`
/// @return inputs and targets, both `[B, T]` <!-- clause: shift_for_next_token.shift -->
/// @throws ShapeError if B == 0 or the sequences have fewer than 2 tokens (the message names
///         "wb::shift_for_next_token" and the shape) <!-- clause: shift_for_next_token.bad-shape -->
NextToken shift_for_next_token(const TokenIds& tokens);

/// The GPT forward with its loss, assembled from the functions of chapters 1–7 (no layer is
/// written a second time here: a mistake in an earlier chapter shows up in this model).
/// ```
///   x = embed(wte, inputs)                        chapter 2            [B, T, D]
///   learned positions:  x = add_positions(x, wpe) chapter 3
///   for each block (chapter 7's Pre-LN block, taken apart to keep what the backward needs):
///     h = layer_norm(x, ln1)                      chapter 7
///     q, k, v = split_heads(linear(h, w_q | w_k | w_v), H)  chapters 2, 1  [B, H, T, d]
///     RoPE:  q, k = apply_rope(q), apply_rope(k)  chapter 3
///     heads = sdpa(q, k, v, causal_mask(T))       chapters 4, 6
///     x = x + linear(merge_heads(heads), w_o)     the residual
///     x = x + linear(act(linear(layer_norm(x, ln2), w_fc)), w_proj)
///   logits = lm_head(layer_norm(x, ln_f), lm_head)  chapter 2         [B, T, V] -> [N, V]
///   loss = mean cross entropy of logits against the flattened targets
/// ```
/// <!-- clause: gpt_forward.recipe -->
/// `act` is the GELU that `config.gelu` names: chapter 7's `gelu` for Gelu::exact, its
/// `gelu_tanh` for Gelu::tanh (GPT-2's: `minigpt --load` runs GPT-2's own weights on your chapters). <!-- clause: gpt_forward.gelu-kind -->
/// Targets equal to `ignore_index` (padding) are left out of the mean. <!-- clause: gpt_forward.ignore-index --> Every intermediate
/// the backward needs is stored in `cache` (overwriting what it held), flattened to rows
/// `[N, ·]` where the backward works on rows. <!-- clause: gpt_forward.cache-overwritten --> The model runs in float, like the chapters it
/// is made of; the gradient checks of the layers' backwards run in double on their own.
/// @param params the model; its shapes must match `config`
/// @param config the model's shape
/// @param inputs `[B, T]` token ids in `[0, V)`, T <= T_max
/// @param targets `[B, T]` ids in `[0, V)` or equal to ignore_index
/// @param ignore_index the target value that is not scored (e.g. -1)
/// @param cache filled with the activations
/// @return the mean loss (0 if every target is ignored) <!-- clause: gpt_forward.all-ignored -->
/// @throws ShapeError if the config is invalid, a parameter's shape does not match the config
///         (the message names the tensor, e.g. `wte`, and the shapes), inputs is empty, or targets' shape
///         differs from inputs' (the message names both shapes) <!-- clause: gpt_forward.shape-errors -->
/// @throws ValueError if T > T_max (the message names T and T_max) <!-- clause: gpt_forward.too-long -->
/// @throws ValueError if an input id is outside [0, V), or a target is neither in [0, V) nor
///         ignore_index (the message names the position and the id) <!-- clause: gpt_forward.bad-id -->
float gpt_forward(const GptParams<float>& params, const GptConfig& config, const TokenIds& inputs,
                  const TokenIds& targets, std::int64_t ignore_index, GptCache<float>& cache);

/// The logits alone, for inference: the same computation as gpt_forward without targets.
/// @param params the model
/// @param config the model's shape
/// @param inputs `[B, T]` token ids in `[0, V)`, T <= T_max
/// @return `[B·T, V]` logits; row `b·T + t` scores the token after `inputs[b, t]`, equal to
///         gpt_forward's cache.logits <!-- clause: gpt_logits.logits -->, with either GELU of
///         `config.gelu`: GPT-2's own weights give GPT-2's logits <!-- clause: gpt_logits.gpt2 -->
/// @throws ShapeError as gpt_forward (config, parameter shapes, empty inputs) <!-- clause: gpt_logits.shape-errors -->
/// @throws ValueError if T > T_max or an id is outside [0, V) (the message names T and T_max,
///         or the id) <!-- clause: gpt_logits.value-errors -->
Mat<float> gpt_logits(const GptParams<float>& params, const GptConfig& config,
                      const TokenIds& inputs);

/// The GPT backward: the gradient of the loss of the last gpt_forward with respect to every
/// parameter <!-- clause: gpt_backward.gradients -->, **added** into `grads` (PyTorch's convention: gradients accumulate until
/// zero_grad). <!-- clause: gpt_backward.accumulates --> Walks the forward in reverse: cross entropy → lm_head → final LayerNorm →
/// blocks L-1 … 0 (through both residual branches, RoPE's rotation undone on dq and dk) →
/// position and token embeddings.
/// @param params the model used by the forward
/// @param config its shape
/// @param cache what gpt_forward stored
/// @param grads accumulated; shaped like params (see zeros_like)
/// @throws ShapeError if the config or a shape of params or grads does not match (the message
///         names the tensor, e.g. `lm_head`, and its shape) <!-- clause: gpt_backward.param-shapes -->
/// @throws ShapeError if a tensor of the cache does not have the shape gpt_forward gave it for
///         cache.batch and cache.seq_len (the message names the cache's tensor, e.g. `att`; all
///         checked before anything is read or written) <!-- clause: gpt_backward.cache-shapes -->
/// @throws ValueError if the cache holds no loss (it is empty, or came from gpt_logits) <!-- clause: gpt_backward.no-loss -->
/// @throws ShapeError naming wb::gpt_backward, the number of block caches and L if the cache
///         holds a loss but not one block cache per block (blocks removed or added), before
///         anything is read. <!-- clause: gpt_backward.block-count -->
/// @throws ValueError naming wb::gpt_backward and `gelu = tanh` if `config.gelu` is
///         Gelu::tanh, before anything is written: layers.hpp's gelu_backward is the exact
///         form's, and the course trains only that one (a tanh model, GPT-2's, is loaded to
///         generate). <!-- clause: gpt_backward.exact-gelu-only -->
void gpt_backward(const GptParams<float>& params, const GptConfig& config,
                  const GptCache<float>& cache, GptParams<float>& grads);

/// Sets every gradient to 0: the `optimizer.zero_grad()` that starts each step of §21.7.
/// @param grads every tensor of it is filled with 0 <!-- clause: zero_grad.every-tensor -->
template <class Real>
void zero_grad(GptParams<Real>& grads);

/// @}

}  // namespace WB_IMPL
}  // namespace wb

/// The explicit instantiations of this header's templates for one scalar type, written once
/// for the stub and the reference: each `.cpp` ends with `WB_INSTANTIATE_MODEL(float)` (training)
/// and `WB_INSTANTIATE_MODEL(double)` (the gradient checks), inside the chapter's namespaces.
/// @param Real the scalar type: float or double
#define WB_INSTANTIATE_MODEL(Real)                                                       \
    template GptParams<Real> init_gpt<Real>(const GptConfig&, std::uint64_t);            \
    template GptParams<Real> zeros_like<Real>(const GptParams<Real>&);                   \
    template std::vector<ParamRef<Real>> parameters<Real>(GptParams<Real>&);             \
    template std::vector<ParamRef<const Real>> parameters<Real>(const GptParams<Real>&); \
    template void zero_grad<Real>(GptParams<Real>&);
