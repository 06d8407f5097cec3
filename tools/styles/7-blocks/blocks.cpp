// Style answer for chapter 7 (tools/test-styles): plain loops with sums in double instead of the
// reference's whole-tensor expressions (LayerNorm and RMSNorm token by token, the FFN's Linear
// layers as hand-written dot products, the residuals element by element); GELU through erfc
// and its tanh form through the identity (1 + tanh(u)) / 2 = sigmoid(2u); one unchecked Pre-LN
// block shared by block_forward and stack_forward; the checks in another valid order (eps
// before the shapes, the FFN's down layer before up, the final norm before the blocks) and
// messages worded unlike the reference but naming each fact blocks.hpp promises. It exists
// because it is a correct answer: every check of chapter 7 must accept it.
#include "7-blocks/blocks.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <utility>

namespace wb {
inline namespace WB_IMPL {
namespace {

[[noreturn]] void shape_problem(const std::string& fn, const std::string& what) {
    throw ShapeError(fn + ": " + what);
}

// eps must be a positive, finite number; `name` is what the caller calls it ("eps", "ln2.eps").
void require_eps(const std::string& fn, const std::string& name, float eps) {
    if (std::isnan(eps) || std::isinf(eps) || eps <= 0.0f) {
        std::ostringstream out;
        out << fn << ": " << name << " = " << eps
            << " is not usable; eps must be finite and > 0 (it is added to the variance under "
               "the square root)";
        throw ValueError(out.str());
    }
}

// x [B, T, D] with D >= 1; with `tokens`, B >= 1 and T >= 1 as well.
void require_x(const std::string& fn, const Tensor3& x, bool tokens) {
    const bool empty = tokens && (x.shape(0) == 0 || x.shape(1) == 0);
    if (x.shape(2) == 0 || empty) {
        shape_problem(fn, "the input x is " + shape_str(x.shape()) +
                              (empty ? ", but a block needs at least one sequence (B) of at "
                                       "least one token (T) with at least one feature (D)"
                                     : ", but a token needs at least one feature (D >= 1)"));
    }
}

void require_features(const std::string& fn, const std::string& name, const Tensor1& v,
                      std::size_t D) {
    if (v.size() != D) {
        shape_problem(fn, name + " is " + shape_str(v.shape()) + " while x has D = " + num(D) +
                              " features, so it must be [" + num(D) + "]");
    }
}

void require_norm(const std::string& fn, const std::string& name, const LayerNormParams& p,
                  std::size_t D) {
    require_eps(fn, name + ".eps", p.eps);
    require_features(fn, name + ".beta", p.beta, D);
    require_features(fn, name + ".gamma", p.gamma, D);
}

// A Linear layer that must be weight [out, in] and bias [out] or empty.
void require_layer(const std::string& fn, const std::string& name, const Linear& l, std::size_t out,
                   std::size_t in) {
    if (l.weight.shape(0) != out || l.weight.shape(1) != in) {
        shape_problem(fn, name + ".weight is " + shape_str(l.weight.shape()) + ", it must be [" +
                              num(out) + ", " + num(in) + "]");
    }
    if (l.bias.size() != 0 && l.bias.size() != out) {
        shape_problem(fn, name + ".bias is " + shape_str(l.bias.shape()) +
                              "; a bias of this "
                              "layer is empty or has " +
                              num(out) + " entries: [" + num(out) + "]");
    }
}

// The FFN's down layer first (against the hidden width read off up.weight), then up itself.
void require_ffn(const std::string& fn, const std::string& name, const FfnParams& p,
                 std::size_t D) {
    const std::size_t hidden = p.up.weight.shape(0);
    require_layer(fn, name + ".down", p.down, D, hidden);
    if (hidden == 0) {
        shape_problem(fn, name + ".up.weight is " + shape_str(p.up.weight.shape()) +
                              ": the hidden width (its first axis) must be at least 1");
    }
    require_layer(fn, name + ".up", p.up, hidden, D);
}

// What a block itself can check; the attention's own consistency is multi_head_attention's.
void require_block(const std::string& fn, const std::string& prefix, const BlockParams& p,
                   std::size_t D) {
    if (p.attn.w_q.weight.shape(1) != D) {
        shape_problem(fn, prefix + "attn.w_q.weight is " + shape_str(p.attn.w_q.weight.shape()) +
                              ", but its input width must be the D = " + num(D) +
                              " features of x: [" + num(D) + ", " + num(D) + "]");
    }
    require_ffn(fn, prefix + "ffn", p.ffn, D);
    require_norm(fn, prefix + "ln2", p.ln2, D);
    require_norm(fn, prefix + "ln1", p.ln1, D);
}

// LayerNorm without checks: every token's mean and variance (/ D) in double, two passes.
Tensor3 normalise(const Tensor3& x, const LayerNormParams& p) {
    const std::size_t B = x.shape(0), T = x.shape(1), D = x.shape(2);
    Tensor3 y = Tensor3::from_shape({B, T, D});
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < T; ++t) {
            double sum = 0.0;
            for (std::size_t i = 0; i < D; ++i) sum += x(b, t, i);
            const double mean = sum / static_cast<double>(D);
            double squares = 0.0;
            for (std::size_t i = 0; i < D; ++i) {
                const double d = x(b, t, i) - mean;
                squares += d * d;
            }
            const double var = squares / static_cast<double>(D);
            const double inv = 1.0 / std::sqrt(var + static_cast<double>(p.eps));
            for (std::size_t i = 0; i < D; ++i) {
                y(b, t, i) = static_cast<float>((x(b, t, i) - mean) * inv * p.gamma(i) + p.beta(i));
            }
        }
    }
    return y;
}

// One Linear layer on every token: out[b, t, o] = bias[o] + sum_i weight[o, i] x[b, t, i].
Tensor3 dense(const Tensor3& x, const Linear& l) {
    const std::size_t B = x.shape(0), T = x.shape(1), in = x.shape(2);
    const std::size_t out = l.weight.shape(0);
    const bool has_bias = l.bias.size() != 0;
    Tensor3 y = Tensor3::from_shape({B, T, out});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t o = 0; o < out; ++o) {
                double acc = has_bias ? l.bias(o) : 0.0;
                for (std::size_t i = 0; i < in; ++i) acc += double(l.weight(o, i)) * x(b, t, i);
                y(b, t, o) = static_cast<float>(acc);
            }
    return y;
}

double gelu_of(double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }

Tensor3 feed_forward(const Tensor3& x, const FfnParams& p) {
    Tensor3 h = dense(x, p.up);
    for (auto& v : h) v = static_cast<float>(gelu_of(v));
    return dense(h, p.down);
}

Tensor3 plus(const Tensor3& a, const Tensor3& b) {
    Tensor3 s = a;
    auto ib = b.begin();
    for (auto& v : s) v += *ib++;
    return s;
}

// The Pre-LN block, parameters already checked.
BlockResult pre_ln(const Tensor3& x, const BlockParams& p, const std::optional<Mask>& mask) {
    MhaResult attention = self_attention(normalise(x, p.ln1), p.attn, mask);
    const Tensor3 stream = plus(x, attention.output);
    return {plus(stream, feed_forward(normalise(stream, p.ln2), p.ffn)),
            std::move(attention.weights)};
}

}  // namespace

// ---- normalisation --------------------------------------------------------------------------

LayerNormParams init_layer_norm(std::size_t D) {
    if (D == 0) {
        shape_problem("wb::init_layer_norm", "D = 0 features: there is nothing to normalise");
    }
    LayerNormParams p;
    p.gamma = Tensor1::from_shape({D});
    p.beta = Tensor1::from_shape({D});
    for (std::size_t i = 0; i < D; ++i) {
        p.gamma(i) = 1.0f;
        p.beta(i) = 0.0f;
    }
    p.eps = 1e-5f;
    return p;
}

Tensor3 layer_norm(const Tensor3& x, const LayerNormParams& p) {
    const std::string fn = "wb::layer_norm";
    require_eps(fn, "eps", p.eps);
    require_x(fn, x, false);
    require_features(fn, "gamma", p.gamma, x.shape(2));
    require_features(fn, "beta", p.beta, x.shape(2));
    return normalise(x, p);
}

Tensor3 rms_norm(const Tensor3& x, const Tensor1& gamma, float eps) {
    const std::string fn = "wb::rms_norm";
    require_eps(fn, "eps", eps);
    require_x(fn, x, false);
    const std::size_t B = x.shape(0), T = x.shape(1), D = x.shape(2);
    require_features(fn, "gamma", gamma, D);
    Tensor3 y = Tensor3::from_shape({B, T, D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            double squares = 0.0;
            for (std::size_t i = 0; i < D; ++i) squares += double(x(b, t, i)) * x(b, t, i);
            const double rms = std::sqrt(squares / static_cast<double>(D) + eps);
            for (std::size_t i = 0; i < D; ++i)
                y(b, t, i) = static_cast<float>(x(b, t, i) / rms * gamma(i));
        }
    return y;
}

// ---- the feed-forward network ---------------------------------------------------------------

Tensor3 gelu(const Tensor3& x) {
    Tensor3 y = Tensor3::from_shape({x.shape(0), x.shape(1), x.shape(2)});
    auto out = y.begin();
    for (const float v : x) *out++ = static_cast<float>(gelu_of(v));  // x Phi(x)
    return y;
}

Tensor3 gelu_tanh(const Tensor3& x) {
    // (1 + tanh(u)) / 2 = 1 / (1 + exp(-2u)), u = sqrt(2 / pi) (x + 0.044715 x^3).
    const double k = std::sqrt(2.0 / 3.14159265358979323846);
    Tensor3 y = Tensor3::from_shape({x.shape(0), x.shape(1), x.shape(2)});
    auto out = y.begin();
    for (const float f : x) {
        const double v = f;
        const double u = k * (v + 0.044715 * v * v * v);
        *out++ = static_cast<float>(v / (1.0 + std::exp(-2.0 * u)));
    }
    return y;
}

FfnParams init_ffn(std::size_t D, std::size_t hidden, std::uint32_t seed) {
    if (hidden == 0) {
        shape_problem("wb::init_ffn", "hidden = 0 (with D = " + num(D) +
                                          "): the FFN needs at least one hidden unit");
    }
    if (D == 0) {
        shape_problem("wb::init_ffn", "D = 0 (with hidden = " + num(hidden) +
                                          "): the FFN needs at least one feature");
    }
    return FfnParams{init_linear(D, hidden, true, seed), init_linear(hidden, D, true, seed + 1)};
}

Tensor3 ffn(const Tensor3& x, const FfnParams& p) {
    require_x("wb::ffn", x, false);
    require_ffn("wb::ffn", "p", p, x.shape(2));
    return feed_forward(x, p);
}

Tensor3 swiglu_ffn(const Tensor3& x, const SwiGluParams& p) {
    const std::string fn = "wb::swiglu_ffn";
    require_x(fn, x, false);
    const std::size_t D = x.shape(2);
    const std::size_t hidden = p.up.weight.shape(0);
    if (p.gate.weight.shape(0) != hidden) {
        shape_problem(fn, "gate.weight is " + shape_str(p.gate.weight.shape()) +
                              " and up.weight is " + shape_str(p.up.weight.shape()) +
                              ": both must be [hidden, D] with the same hidden width");
    }
    if (hidden == 0) {
        shape_problem(fn, "gate.weight is " + shape_str(p.gate.weight.shape()) + " and up.weight " +
                              shape_str(p.up.weight.shape()) +
                              ": the hidden width must be at least 1");
    }
    require_layer(fn, "down", p.down, D, hidden);
    require_layer(fn, "up", p.up, hidden, D);
    require_layer(fn, "gate", p.gate, hidden, D);

    const Tensor3 g = dense(x, p.gate);
    const Tensor3 u = dense(x, p.up);
    Tensor3 h = Tensor3::from_shape(g.shape());
    for (std::size_t k = 0; k < h.size(); ++k) {
        const double a = g.flat(k);
        h.flat(k) = static_cast<float>(a / (1.0 + std::exp(-a)) * u.flat(k));
    }
    return dense(h, p.down);
}

// ---- the block ------------------------------------------------------------------------------

BlockParams init_block(std::size_t D, std::size_t H, std::uint32_t seed) {
    const std::string fn = "wb::init_block";
    if (H == 0) shape_problem(fn, "H = 0 heads (D = " + num(D) + "): at least one is needed");
    if (D == 0) shape_problem(fn, "D = 0 (H = " + num(H) + "): a block needs features");
    if (D % H != 0) {
        shape_problem(fn, "D = " + num(D) + " is not a multiple of H = " + num(H) +
                              ", so the heads cannot share the features equally");
    }
    BlockParams p;
    p.attn = init_mha(D, H, true, seed);
    p.ffn = init_ffn(D, 4 * D, seed + 4);
    p.ln1 = init_layer_norm(D);
    p.ln2 = init_layer_norm(D);
    return p;
}

BlockResult block_forward(const Tensor3& x, const BlockParams& p, const std::optional<Mask>& mask) {
    require_x("wb::block_forward", x, true);
    require_block("wb::block_forward", "", p, x.shape(2));
    return pre_ln(x, p, mask);
}

BlockResult post_ln_block_forward(const Tensor3& x, const BlockParams& p,
                                  const std::optional<Mask>& mask) {
    require_x("wb::post_ln_block_forward", x, true);
    require_block("wb::post_ln_block_forward", "", p, x.shape(2));
    MhaResult attention = self_attention(x, p.attn, mask);
    const Tensor3 y = normalise(plus(x, attention.output), p.ln1);
    return {normalise(plus(y, feed_forward(y, p.ffn)), p.ln2), std::move(attention.weights)};
}

// ---- the stack ------------------------------------------------------------------------------

StackResult stack_forward(const Tensor3& x, const std::vector<BlockParams>& blocks,
                          const LayerNormParams& final_norm, const std::optional<Mask>& mask) {
    const std::string fn = "wb::stack_forward";
    require_x(fn, x, true);
    const std::size_t D = x.shape(2);
    require_norm(fn, "final_norm", final_norm, D);
    for (std::size_t l = 0; l < blocks.size(); ++l) {
        require_block(fn, "blocks[" + num(l) + "].", blocks[l], D);
    }

    StackResult r;
    r.weights.reserve(blocks.size());
    Tensor3 stream = x;
    for (std::size_t l = 0; l < blocks.size(); ++l) {
        BlockResult out = pre_ln(stream, blocks[l], mask);
        stream = std::move(out.output);
        r.weights.push_back(std::move(out.weights));
    }
    r.output = normalise(stream, final_norm);
    return r;
}

}  // namespace WB_IMPL
}  // namespace wb
