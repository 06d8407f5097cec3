/// @file blocks.hpp
/// @brief Chapter 7 — the Transformer block: LayerNorm, GELU, the FFN, residuals, a stack of L.
///
/// Notes §5 (the block: causal multi-head self attention and a position-wise feed-forward
/// network, each wrapped in a residual connection with a LayerNorm in front — the Pre-LN form;
/// Post-LN, RMSNorm and gated FFNs as variants), §2 (L blocks, then a final normalisation),
/// §21.4 (LayerNorm's variance uses correction 0) and §21.6 (`nn.LayerNorm(D)`, the FFN
/// `nn.Sequential(nn.Linear(D, 4D), nn.GELU(), nn.Linear(4D, D))`, a `ModuleList` of blocks
/// that each return `(output, weights)`).
/// Axes: B batch, T tokens, D model width, H heads, L blocks (layers); the FFN's hidden width
/// is usually 4D.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "2-embedding/embedding.hpp"
#include "4-sdpa/sdpa.hpp"
#include "5-mha/mha.hpp"
#include "workbook/core.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @defgroup chapter7 Chapter 7: the Transformer block
/// @{

// ---- normalisation (§5, §21.4, §21.6) -------------------------------------------------------

/// The parameters of a LayerNorm over D features, like `nn.LayerNorm(D)`.
struct LayerNormParams {
    Tensor1 gamma;      ///< `[D]`: the trainable scale (torch's `weight`), one per feature
    Tensor1 beta;       ///< `[D]`: the trainable shift (torch's `bias`), one per feature
    float eps = 1e-5f;  ///< added to the variance inside the square root; > 0 and finite
};

/// Fresh LayerNorm parameters, like `nn.LayerNorm(D)`: gamma = 1, beta = 0, eps = 1e-5.
///
/// With these values the LayerNorm only normalises; training then learns the scale and shift.
/// @param D model width (the number of features normalised together)
/// @return gamma `[D]` of ones, beta `[D]` of zeros, eps = 1e-5
///         <!-- clause: init_layer_norm.defaults -->
/// @throws ShapeError if D == 0 (the message names wb::init_layer_norm and D)
///         <!-- clause: init_layer_norm.zero-width -->
LayerNormParams init_layer_norm(std::size_t D);

/// LayerNorm of every token on its own, over its D features (§5, §21.6):
/// \f[
///   \mu = \frac{1}{D}\sum_{i=1}^{D} x_i,\qquad
///   \sigma^2 = \frac{1}{D}\sum_{i=1}^{D} (x_i - \mu)^2,\qquad
///   \mathrm{LN}(x)_i = \gamma_i\,\frac{x_i - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta_i
/// \f]
/// Every feature i is scaled by its own gamma_i, then shifted by its own beta_i.
/// <!-- clause: layer_norm.affine -->
///
/// - The mean and the variance are taken over the **last axis** (the features of one token),
///   never over the tokens T or the batch B: LayerNorm does not mix tokens, unlike a batch norm.
///   <!-- clause: layer_norm.per-token -->
/// - The variance divides by D (correction 0, "biased"), as `nn.LayerNorm` does — not by
///   D - 1, the default of `torch.var` (§21.4). <!-- clause: layer_norm.biased-variance -->
/// - eps goes **inside** the square root, with the variance; not onto the standard deviation.
///   <!-- clause: layer_norm.eps-inside -->
/// @param x `[B, T, D]`
/// @param p gamma `[D]`, beta `[D]`, eps > 0
/// @return `[B, T, D]`; before gamma and beta every token has mean 0 and variance
///         \f$\sigma^2/(\sigma^2+\epsilon) \approx 1\f$ over its features.
///         <!-- clause: layer_norm.normalised -->
///         B or T = 0 gives an empty result (nothing to normalise is not an error).
///         <!-- clause: layer_norm.empty-batch -->
/// @throws ShapeError if D == 0 or gamma or beta is not `[D]` (the message names
///         wb::layer_norm, the parameter and both shapes) <!-- clause: layer_norm.bad-shape -->
/// @throws ValueError if eps <= 0, NaN or infinite (the message names the value `eps = …` and
///         the expectation: eps > 0 and finite; chapter 8's layer_norm_backward has the same
///         rule) <!-- clause: layer_norm.bad-eps -->
Tensor3 layer_norm(const Tensor3& x, const LayerNormParams& p);

/// RMSNorm, a variant of LayerNorm used by many modern models (§5): no mean is subtracted and
/// there is no shift, only a scale by the root mean square of the token's features:
/// \f[
///   \mathrm{RMSNorm}(x)_i = \gamma_i\,\frac{x_i}{\sqrt{\frac{1}{D}\sum_{j=1}^{D} x_j^2 + \epsilon}}
/// \f]
/// The mean square is taken over each token's own D features, with eps inside the square root.
/// <!-- clause: rms_norm.formula -->
/// @param x `[B, T, D]`; every token is normalised over its D features on its own
/// @param gamma `[D]`: the trainable scale
/// @param eps added to the mean square inside the square root; must be > 0
/// @return `[B, T, D]`; B or T = 0 gives an empty result <!-- clause: rms_norm.empty-batch -->
/// @throws ShapeError if D == 0 or gamma is not `[D]` (the message names wb::rms_norm)
///         <!-- clause: rms_norm.bad-shape -->
/// @throws ValueError if eps <= 0, NaN or infinite (the message names `eps = …` and the
///         expectation: eps > 0 and finite) <!-- clause: rms_norm.bad-eps -->
Tensor3 rms_norm(const Tensor3& x, const Tensor1& gamma, float eps = 1e-5f);

// ---- the feed-forward network (§5, §21.6) ---------------------------------------------------

/// GELU, the exact form: `nn.GELU()` (PyTorch's default, `approximate='none'`):
/// \f[
///   \mathrm{GELU}(x) = x\,\Phi(x) = \frac{x}{2}\left(1 + \mathrm{erf}\!\left(\frac{x}{\sqrt 2}\right)\right)
/// \f]
/// with \f$\Phi\f$ the standard normal CDF. Element-wise: GELU(1) = 0.8413447, GELU(-1) =
/// -0.1586553. <!-- clause: gelu.exact-erf -->
/// @param x any values `[B, T, F]`
/// @return same shape, every element passed through GELU
Tensor3 gelu(const Tensor3& x);

/// GELU, the tanh approximation: `nn.GELU(approximate='tanh')` (GPT-2's "gelu_new"):
/// \f[
///   \mathrm{GELU}_{\tanh}(x) = \frac{x}{2}\left(1 + \tanh\!\left(\sqrt{2/\pi}\,\bigl(x + 0.044715\,x^3\bigr)\right)\right)
/// \f]
/// It differs from the exact form by up to about 4.7e-4 (GELU_tanh(1) = 0.8411920).
/// <!-- clause: gelu_tanh.tanh-form -->
/// Not a promise of this function: a model trained with one form should be run with the same
/// one.
/// @param x any values `[B, T, F]`
/// @return same shape, every element passed through the approximation
Tensor3 gelu_tanh(const Tensor3& x);

/// The parameters of the position-wise feed-forward network: two Linear layers (chapter 2's
/// layout, weight `[out, in]`) with a GELU in between, like
/// `nn.Sequential(nn.Linear(D, 4D), nn.GELU(), nn.Linear(4D, D))`.
struct FfnParams {
    Linear up;    ///< D → hidden: weight `[hidden, D]`, bias `[hidden]` or empty
    Linear down;  ///< hidden → D: weight `[D, hidden]`, bias `[D]` or empty
};

/// Fresh FFN parameters, both layers with biases.
///
/// `up = init_linear(D, hidden, true, seed)` and `down = init_linear(hidden, D, true, seed + 1)`
/// (chapter 2). <!-- clause: init_ffn.seeds -->
/// @param D model width (in and out of the FFN)
/// @param hidden the hidden width; a GPT block uses 4D
/// @param seed seed of `up`; `down` uses seed + 1
/// @return up: weight `[hidden, D]`, bias `[hidden]`; down: weight `[D, hidden]`, bias `[D]`
///         <!-- clause: init_ffn.shapes -->
/// @throws ShapeError if D == 0 or hidden == 0 (the message names wb::init_ffn, D and hidden)
///         <!-- clause: init_ffn.zero-width -->
FfnParams init_ffn(std::size_t D, std::size_t hidden, std::uint32_t seed);

/// The position-wise feed-forward network (§5): \f$\mathrm{FFN}(x) = W_2\,\mathrm{GELU}(W_1 x +
/// b_1) + b_2\f$ for every token, i.e. `down(gelu(up(x)))` with the exact GELU.
/// <!-- clause: ffn.formula -->
///
/// Every token goes through the same two layers **on its own**: the FFN processes each
/// position's representation non-linearly but never mixes positions (attention does that).
/// Permuting the tokens permutes the output rows the same way.
/// <!-- clause: ffn.position-wise -->
/// @param x `[B, T, D]`
/// @param p up `[hidden, D]`, down `[D, hidden]` (biases `[hidden]`, `[D]` or empty)
/// @return `[B, T, D]`; the hidden activations are `[B, T, hidden]` in between
/// @throws ShapeError if D == 0, hidden == 0 or the layers do not fit x and each other: up's
///         input width is not D, down is not `[D, hidden]`, or a bias has a size other than 0
///         and its layer's output width (the message names wb::ffn, the parameter, e.g.
///         `up.weight` or `down.bias`, and the shapes) <!-- clause: ffn.bad-shape -->
Tensor3 ffn(const Tensor3& x, const FfnParams& p);

/// The parameters of a gated FFN with SiLU (SwiGLU), a variant used by many modern models.
struct SwiGluParams {
    Linear gate;  ///< D → hidden: weight `[hidden, D]`; its output goes through SiLU
    Linear up;    ///< D → hidden: weight `[hidden, D]`; its output is multiplied by the gate
    Linear down;  ///< hidden → D: weight `[D, hidden]`
};

/// The gated feed-forward network SwiGLU (§5's "gated FFN" variant):
/// \f[
///   \mathrm{SwiGLU}(x) = W_{\text{down}}\bigl(\mathrm{SiLU}(W_{\text{gate}}\,x) \odot W_{\text{up}}\,x\bigr),
///   \qquad \mathrm{SiLU}(a) = a\,\sigma(a) = \frac{a}{1 + e^{-a}}
/// \f]
/// (each Linear with its bias, if it has one). \f$\odot\f$ is the element-wise product: one
/// branch decides how much of the other passes. <!-- clause: swiglu_ffn.formula -->
/// Position-wise, like ffn: every token goes through the same layers on its own.
/// <!-- clause: swiglu_ffn.position-wise -->
/// @param x `[B, T, D]`
/// @param p gate and up `[hidden, D]`, down `[D, hidden]` (biases sized to fit, or empty)
/// @return `[B, T, D]`
/// @throws ShapeError if D == 0, hidden == 0 or the layers do not fit x and each other (the
///         message names wb::swiglu_ffn, the parameter, e.g. `gate.weight`, `up.weight` or
///         `down.weight`, and the shapes) <!-- clause: swiglu_ffn.bad-shape -->
Tensor3 swiglu_ffn(const Tensor3& x, const SwiGluParams& p);

// ---- the block (§5) -------------------------------------------------------------------------

/// The parameters of one Transformer block: two LayerNorms, multi-head attention (chapter 5)
/// and the FFN.
struct BlockParams {
    LayerNormParams ln1;  ///< the LayerNorm in front of attention, `[D]`
    MhaParams attn;       ///< causal multi-head self attention, D → D with H heads
    LayerNormParams ln2;  ///< the LayerNorm in front of the FFN, `[D]`
    FfnParams ffn;        ///< D → hidden → D
};

/// Fresh parameters of a GPT block of width D with H heads.
///
/// `ln1 = ln2 = init_layer_norm(D)`, `attn = init_mha(D, H, true, seed)` (which uses seeds
/// seed … seed + 3) and `ffn = init_ffn(D, 4 * D, seed + 4)` (seeds seed + 4, seed + 5): every
/// Linear has a bias, the FFN's hidden width is 4D. <!-- clause: init_block.seeds -->
/// @param D model width
/// @param H number of heads; must divide D
/// @param seed the first seed (see above); the next block of a stack may use seed + 6
/// @return the parameters; `ffn.up.weight` is `[4D, D]` <!-- clause: init_block.hidden-4d -->
/// @throws ShapeError if D == 0, H == 0 or D % H != 0 (the message names wb::init_block, D
///         and H) <!-- clause: init_block.bad-heads -->
BlockParams init_block(std::size_t D, std::size_t H, std::uint32_t seed);

/// What a block returns: its output and the attention weights (the `(output, weights)` pair of
/// the notes' PyTorch block).
struct BlockResult {
    Tensor3 output;   ///< `[B, T, D]`: the input of the next block
    Tensor4 weights;  ///< `[B, H, T, T]`: the attention weights of every head
};

/// One Pre-LN Transformer block (§5), the form of GPT-2 and most modern models:
/// \f[
///   Y = X + \mathrm{MHA}(\mathrm{LN}_1(X)),\qquad Z = Y + \mathrm{FFN}(\mathrm{LN}_2(Y))
/// \f]
/// <!-- clause: block_forward.pre-ln -->
/// Each sub-layer reads a normalised copy of the stream; its result is **added** to the stream
/// (the residual), so the input passes straight through and the sub-layers only contribute
/// updates. <!-- clause: block_forward.residual -->
/// Attention is self attention (`self_attention` of chapter 5) with `mask`; the FFN is ffn
/// (exact GELU). <!-- clause: block_forward.sub-layers -->
/// @param x `[B, T, D]`
/// @param p the block's parameters (LayerNorms `[D]`, attention D → D, FFN D → hidden → D)
/// @param mask optional; `allowed` `[B, T, T]` or `[1, T, T]` (a causal mask for a GPT)
/// @return output Z `[B, T, D]` and the weights `[B, H, T, T]` of the attention, computed from
///         \f$\mathrm{LN}_1(X)\f$ <!-- clause: block_forward.returns -->
/// @throws ShapeError (the message names wb::block_forward) if D == 0, B == 0 or T == 0, if a
///         LayerNorm's gamma or beta is not `[D]`, if the FFN does not fit D (as ffn), or if the
///         attention's input width is not D (the message names the parameter, e.g. `ln2.gamma`,
///         `ffn.down.weight` or `attn.w_q.weight`, and the shapes)
///         <!-- clause: block_forward.bad-shape -->
/// @throws ValueError if a LayerNorm's eps <= 0, NaN or infinite (named `ln1.eps` / `ln2.eps`)
///         <!-- clause: block_forward.bad-eps -->
/// @throws ShapeError from wb::multi_head_attention if the attention's own parameters are
///         inconsistent (D % H != 0, a weight not `[D, D]`) or the mask does not fit
///         <!-- clause: block_forward.attention-errors -->
BlockResult block_forward(const Tensor3& x, const BlockParams& p,
                          const std::optional<Mask>& mask = std::nullopt);

/// One Post-LN block, the form of the original Transformer (§5's variant): the LayerNorm comes
/// **after** each residual addition:
/// \f[
///   Y = \mathrm{LN}_1(X + \mathrm{MHA}(X)),\qquad Z = \mathrm{LN}_2(Y + \mathrm{FFN}(Y))
/// \f]
/// <!-- clause: post_ln_block_forward.post-ln -->
/// Same parameters as block_forward, different wiring: the stream itself is normalised, so the
/// output of every block has per-token mean β and scale γ.
/// <!-- clause: post_ln_block_forward.normalised-output -->
/// @param x `[B, T, D]`
/// @param p the block's parameters
/// @param mask optional; `allowed` `[B, T, T]` or `[1, T, T]`
/// @return output Z `[B, T, D]` and the weights `[B, H, T, T]` of the attention, computed from X
///         <!-- clause: post_ln_block_forward.returns -->
/// @throws ShapeError, ValueError as block_forward (the messages name
///         wb::post_ln_block_forward) <!-- clause: post_ln_block_forward.bad-params -->
BlockResult post_ln_block_forward(const Tensor3& x, const BlockParams& p,
                                  const std::optional<Mask>& mask = std::nullopt);

// ---- the stack (§2, §21.6) ------------------------------------------------------------------

/// What a stack of blocks returns.
struct StackResult {
    Tensor3 output;                ///< `[B, T, D]`: after the last block and the final norm
    std::vector<Tensor4> weights;  ///< L entries, entry l `[B, H, T, T]` from block l
};

/// L Pre-LN blocks, one after the other, then a final LayerNorm (§2's diagram: "repeat L
/// Transformer blocks", then "final normalisation"; §21.6's `ModuleList` loop):
/// \f[
///   X_0 = X,\qquad X_{l+1} = \mathrm{Block}_l(X_l)\ \ (l = 0, \dots, L-1),\qquad
///   \text{output} = \mathrm{LN}_f(X_L)
/// \f]
/// Block l reads the output of block l - 1 (not X), in the order of the vector.
/// <!-- clause: stack_forward.in-order -->
/// Every block gets the same mask. <!-- clause: stack_forward.same-mask -->
/// A Pre-LN stack needs the final LayerNorm: the stream itself is never normalised inside the
/// blocks. <!-- clause: stack_forward.final-norm -->
///
/// An empty `blocks` (L = 0) is allowed, like an empty `nn.ModuleList`: the output is then
/// \f$\mathrm{LN}_f(X)\f$ and `weights` is empty. <!-- clause: stack_forward.no-blocks -->
///
/// Every block and the final norm are checked before anything is computed.
/// <!-- clause: stack_forward.checked-first -->
/// @param x `[B, T, D]`
/// @param blocks L block parameters, applied in order (L >= 0)
/// @param final_norm the final LayerNorm, `[D]`
/// @param mask optional; `allowed` `[B, T, T]` or `[1, T, T]`, used by every block
/// @return output `[B, T, D]` and L weight tensors `[B, H_l, T, T]`
/// @throws ShapeError, ValueError as block_forward, found before anything is computed; the
///         message names wb::stack_forward and the parameter, e.g. `blocks[1].ln2.gamma` or
///         `final_norm.beta` (the attention's own parameters and the mask are still checked by
///         wb::multi_head_attention) <!-- clause: stack_forward.bad-params -->
StackResult stack_forward(const Tensor3& x, const std::vector<BlockParams>& blocks,
                          const LayerNormParams& final_norm,
                          const std::optional<Mask>& mask = std::nullopt);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
