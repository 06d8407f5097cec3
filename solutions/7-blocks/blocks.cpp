// Chapter 7 — reference implementation.
#include "7-blocks/blocks.hpp"

#include <cmath>
#include <string>
#include <utility>

#include <xtensor/xmath.hpp>

#include "1-tensors/tensors.hpp"

namespace wb {
inline namespace WB_IMPL {

namespace {

// ---- argument checks, shared by the functions and by the block checks ----------------------
// `fn` is the function the user called ("wb::block_forward"), `name` the parameter as the user
// sees it ("ln2", "blocks[1].ffn"), so a message points at the exact tensor to fix.

void check_x(const char* fn, const Tensor3& x) {
    if (x.shape(2) == 0) {
        throw ShapeError(std::string(fn) + ": x [B, T, D] has shape " + shape_str(x.shape()) +
                         ", expected D >= 1 features per token");
    }
}

void check_tokens(const char* fn, const Tensor3& x) {
    if (x.shape(0) == 0 || x.shape(1) == 0) {
        throw ShapeError(std::string(fn) + ": x [B, T, D] has shape " + shape_str(x.shape()) +
                         ", expected B >= 1 and T >= 1 (attention needs a token to read)");
    }
}

void check_eps(const char* fn, const std::string& name, float eps) {
    if (!(eps > 0.0f) || !std::isfinite(eps)) {  // also catches NaN and +inf
        throw ValueError(std::string(fn) + ": " + name + " = " + std::to_string(eps) +
                         ", expected eps > 0 and finite (it keeps the division finite for a "
                         "constant token)");
    }
}

void check_vector(const char* fn, const std::string& name, const Tensor1& v, std::size_t D) {
    if (v.size() != D) {
        throw ShapeError(std::string(fn) + ": " + name + " has shape " + shape_str(v.shape()) +
                         ", expected [D] = [" + num(D) + "] (one entry per feature of x)");
    }
}

void check_layer_norm(const char* fn, const std::string& name, const LayerNormParams& p,
                      std::size_t D) {
    check_vector(fn, name + ".gamma", p.gamma, D);
    check_vector(fn, name + ".beta", p.beta, D);
    check_eps(fn, name + ".eps", p.eps);
}

// One Linear of a feed-forward network: weight [out, in] with `in` known, bias [out] or empty.
void check_layer(const char* fn, const std::string& name, const Linear& l, std::size_t out,
                 std::size_t in, const char* expected) {
    if (l.weight.shape(0) != out || l.weight.shape(1) != in) {
        throw ShapeError(std::string(fn) + ": " + name + ".weight has shape " +
                         shape_str(l.weight.shape()) + ", expected " + expected + " = [" +
                         num(out) + ", " + num(in) + "]");
    }
    if (l.bias.size() != 0 && l.bias.size() != out) {
        throw ShapeError(std::string(fn) + ": " + name + ".bias has shape " +
                         shape_str(l.bias.shape()) + ", expected [" + num(out) +
                         "] or [0] (no bias)");
    }
}

// The FFN's hidden width comes from up.weight [hidden, D]; everything else must agree.
void check_ffn(const char* fn, const std::string& name, const FfnParams& p, std::size_t D) {
    const std::size_t hidden = p.up.weight.shape(0);
    if (hidden == 0) {
        throw ShapeError(std::string(fn) + ": " + name + ".up.weight has shape " +
                         shape_str(p.up.weight.shape()) +
                         ", expected [hidden, D] with hidden >= 1");
    }
    check_layer(fn, name + ".up", p.up, hidden, D, "[hidden, D]");
    check_layer(fn, name + ".down", p.down, D, hidden, "[D, hidden]");
}

void check_block(const char* fn, const std::string& prefix, const BlockParams& p, std::size_t D) {
    check_layer_norm(fn, prefix + "ln1", p.ln1, D);
    check_layer_norm(fn, prefix + "ln2", p.ln2, D);
    check_ffn(fn, prefix + "ffn", p.ffn, D);
    // multi_head_attention checks the rest of its parameters itself; only the link to x here.
    if (p.attn.w_q.weight.shape(1) != D) {
        throw ShapeError(std::string(fn) + ": " + prefix + "attn.w_q.weight has shape " +
                         shape_str(p.attn.w_q.weight.shape()) +
                         ", expected [D, D] with D = " + num(D) + " (the width of x)");
    }
}

float sigmoid(float a) { return 1.0f / (1.0f + std::exp(-a)); }

}  // namespace

// ---- normalisation --------------------------------------------------------------------------

LayerNormParams init_layer_norm(std::size_t D) {
    if (D == 0) {
        throw ShapeError("wb::init_layer_norm: got D = 0, expected D >= 1 features");
    }
    LayerNormParams p;
    p.gamma = xt::ones<float>({D});  // [D] scale 1: normalise only, until training says else
    p.beta = xt::zeros<float>({D});  // [D] shift 0
    p.eps = 1e-5f;                   // nn.LayerNorm's default
    return p;
}

Tensor3 layer_norm(const Tensor3& x, const LayerNormParams& p) {
    check_x("wb::layer_norm", x);
    const std::size_t D = x.shape(2);
    check_layer_norm("wb::layer_norm", "p", p, D);

    // Statistics of every token over its own D features (the last axis), kept as [B, T, 1] so
    // that they broadcast back against x. Chapter 1's mean/var return evaluated tensors, which
    // avoids xtensor's lazy keep_dims trap. correction 0: divide by D, as nn.LayerNorm does.
    const Array xa = x;                             // [B, T, D]
    const Array mu = wb::mean(xa, -1, true);        // [B, T, 1]
    const Array v = wb::var(xa, -1, 0, true);       // [B, T, 1]
    const Array rstd = 1.0f / xt::sqrt(v + p.eps);  // [B, T, 1], eps inside the sqrt
    const Array xhat = (xa - mu) * rstd;            // [B, T, D]: mean 0, variance ~1 per token
    // Scale and shift per feature: gamma [D] and beta [D] broadcast over B and T.
    return xhat * p.gamma + p.beta;  // [B, T, D]
}

Tensor3 rms_norm(const Tensor3& x, const Tensor1& gamma, float eps) {
    check_x("wb::rms_norm", x);
    const std::size_t D = x.shape(2);
    check_vector("wb::rms_norm", "gamma", gamma, D);
    check_eps("wb::rms_norm", "eps", eps);

    // No mean subtracted: only the size of the token vector is normalised.
    const Array xa = x;                                   // [B, T, D]
    const Array ms = wb::mean(Array(xa * xa), -1, true);  // [B, T, 1] mean of squares
    const Array rrms = 1.0f / xt::sqrt(ms + eps);         // [B, T, 1]
    return xa * rrms * gamma;                             // [B, T, D]
}

// ---- the feed-forward network ---------------------------------------------------------------

Tensor3 gelu(const Tensor3& x) {
    // x * Phi(x), Phi the standard normal CDF written with erf (nn.GELU()'s default).
    const float inv_sqrt2 = 0.70710678118654752f;
    Tensor3 y = x;
    for (auto& v : y) v = 0.5f * v * (1.0f + std::erf(v * inv_sqrt2));
    return y;
}

Tensor3 gelu_tanh(const Tensor3& x) {
    // The tanh approximation of GPT-2 (nn.GELU(approximate='tanh')).
    const float k = 0.79788456080286536f;  // sqrt(2 / pi)
    Tensor3 y = x;
    for (auto& v : y) v = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
    return y;
}

FfnParams init_ffn(std::size_t D, std::size_t hidden, std::uint32_t seed) {
    if (D == 0 || hidden == 0) {
        throw ShapeError("wb::init_ffn: got D = " + num(D) + " and hidden = " + num(hidden) +
                         ", expected both >= 1");
    }
    FfnParams p;
    p.up = init_linear(D, hidden, true, seed);        // weight [hidden, D], bias [hidden]
    p.down = init_linear(hidden, D, true, seed + 1);  // weight [D, hidden], bias [D]
    return p;
}

Tensor3 ffn(const Tensor3& x, const FfnParams& p) {
    check_x("wb::ffn", x);
    check_ffn("wb::ffn", "p", p, x.shape(2));
    // linear transforms only the last axis: every token goes through the same layers on its
    // own, so positions never mix here.
    const Tensor3 h = linear(x, p.up);  // [B, T, hidden]
    const Tensor3 a = gelu(h);          // [B, T, hidden]: the non-linearity
    return linear(a, p.down);           // [B, T, D]
}

Tensor3 swiglu_ffn(const Tensor3& x, const SwiGluParams& p) {
    check_x("wb::swiglu_ffn", x);
    const std::size_t D = x.shape(2);
    const std::size_t hidden = p.gate.weight.shape(0);
    if (hidden == 0) {
        throw ShapeError("wb::swiglu_ffn: gate.weight has shape " +
                         shape_str(p.gate.weight.shape()) +
                         ", expected [hidden, D] with hidden >= 1");
    }
    check_layer("wb::swiglu_ffn", "gate", p.gate, hidden, D, "[hidden, D]");
    check_layer("wb::swiglu_ffn", "up", p.up, hidden, D, "[hidden, D]");
    check_layer("wb::swiglu_ffn", "down", p.down, D, hidden, "[D, hidden]");

    Tensor3 g = linear(x, p.gate);      // [B, T, hidden]
    const Tensor3 u = linear(x, p.up);  // [B, T, hidden]
    auto iu = u.begin();
    for (auto& v : g) v = v * sigmoid(v) * *iu++;  // SiLU(gate) ⊙ up
    return linear(g, p.down);                      // [B, T, D]
}

// ---- the block ------------------------------------------------------------------------------

BlockParams init_block(std::size_t D, std::size_t H, std::uint32_t seed) {
    if (D == 0 || H == 0 || D % H != 0) {
        throw ShapeError("wb::init_block: got D = " + num(D) + " and H = " + num(H) +
                         ", expected H >= 1 dividing D (each head has width d = D / H)");
    }
    BlockParams p;
    p.ln1 = init_layer_norm(D);
    p.attn = init_mha(D, H, true, seed);  // seeds seed .. seed + 3
    p.ln2 = init_layer_norm(D);
    p.ffn = init_ffn(D, 4 * D, seed + 4);  // hidden 4D; seeds seed + 4, seed + 5
    return p;
}

BlockResult block_forward(const Tensor3& x, const BlockParams& p, const std::optional<Mask>& mask) {
    const char* fn = "wb::block_forward";
    check_x(fn, x);
    check_tokens(fn, x);
    check_block(fn, "", p, x.shape(2));

    // Attention sub-layer: read a normalised copy, add the result to the stream.
    const Tensor3 h1 = layer_norm(x, p.ln1);         // [B, T, D]
    MhaResult a = self_attention(h1, p.attn, mask);  // output [B, T, D], weights [B, H, T, T]
    const Tensor3 y = x + a.output;                  // [B, T, D] residual
    // FFN sub-layer: the same pattern on the updated stream.
    const Tensor3 h2 = layer_norm(y, p.ln2);  // [B, T, D]
    BlockResult r;
    r.output = y + ffn(h2, p.ffn);     // [B, T, D] residual
    r.weights = std::move(a.weights);  // [B, H, T, T]
    return r;
}

BlockResult post_ln_block_forward(const Tensor3& x, const BlockParams& p,
                                  const std::optional<Mask>& mask) {
    const char* fn = "wb::post_ln_block_forward";
    check_x(fn, x);
    check_tokens(fn, x);
    check_block(fn, "", p, x.shape(2));

    // The original Transformer: add first, normalise the sum (the stream itself).
    MhaResult a = self_attention(x, p.attn, mask);               // reads X directly
    const Tensor3 y = layer_norm(Tensor3(x + a.output), p.ln1);  // [B, T, D]
    BlockResult r;
    r.output = layer_norm(Tensor3(y + ffn(y, p.ffn)), p.ln2);  // [B, T, D]
    r.weights = std::move(a.weights);                          // [B, H, T, T]
    return r;
}

// ---- the stack ------------------------------------------------------------------------------

StackResult stack_forward(const Tensor3& x, const std::vector<BlockParams>& blocks,
                          const LayerNormParams& final_norm, const std::optional<Mask>& mask) {
    const char* fn = "wb::stack_forward";
    check_x(fn, x);
    check_tokens(fn, x);
    const std::size_t D = x.shape(2);
    // Check every block before computing anything, so the message can say which one is wrong.
    for (std::size_t l = 0; l < blocks.size(); ++l) {
        check_block(fn, "blocks[" + num(l) + "].", blocks[l], D);
    }
    check_layer_norm(fn, "final_norm", final_norm, D);

    StackResult r;
    Tensor3 h = x;  // [B, T, D]: the residual stream
    for (const BlockParams& block : blocks) {
        BlockResult b = block_forward(h, block, mask);  // block l reads block l-1's output
        h = std::move(b.output);                        // [B, T, D]
        r.weights.push_back(std::move(b.weights));      // [B, H, T, T]
    }
    // Pre-LN blocks never normalise the stream itself: the final LayerNorm does, once.
    r.output = layer_norm(h, final_norm);  // [B, T, D]
    return r;
}

}  // namespace WB_IMPL
}  // namespace wb
