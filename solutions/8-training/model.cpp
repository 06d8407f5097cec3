// Chapter 8 — reference implementation: the GPT assembled from chapters 1–7 (the forward)
// and the backwards of layers.cpp. The structure follows llm.c's gpt2_forward /
// gpt2_backward: a forward that keeps every activation the backward needs, and a backward
// that walks the same steps in reverse. In the templates Real is the scalar type (float
// or double); T is the sequence length, as everywhere.
#include "8-training/model.hpp"

#include "1-tensors/tensors.hpp"
#include "2-embedding/embedding.hpp"
#include "3-positions/positions.hpp"
#include "4-sdpa/sdpa.hpp"
#include "6-masks/masks.hpp"
#include "7-blocks/blocks.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>

namespace wb {
inline namespace WB_IMPL {

namespace {

// Ids [B, T] with B, T >= 1, T <= T_max, each id in [0, V).
void check_inputs(const std::string& fn, const TokenIds& ids, const GptConfig& c) {
    const std::size_t B = ids.shape(0), T = ids.shape(1);
    if (B == 0 || T == 0) {
        throw ShapeError(fn + ": inputs [B, T] has shape " + shape_str(ids.shape()) +
                         ", expected B >= 1 and T >= 1");
    }
    if (T > c.T_max) {
        throw ValueError(fn + ": inputs [B, T] has shape " + shape_str(ids.shape()) +
                         ": T = " + num(T) + " exceeds T_max = " + num(c.T_max) +
                         " (the longest sequence the model was made for)");
    }
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < T; ++t) {
            const std::int64_t id = ids(b, t);
            if (id < 0 || static_cast<std::size_t>(id) >= c.V) {
                throw ValueError(fn + ": inputs[" + num(b) + ", " + num(t) + "] = " +
                                 std::to_string(id) + " is outside [0, V) = [0, " + num(c.V) + ")");
            }
        }
    }
}

// [B, T, F] -> [N, F] rows (row b·T + t): the layout of the row-wise backwards. Row-major
// storage is the same, so the rows take x's buffer instead of copying it: x gets the new
// [N, F] buffer in exchange and keeps its shape, so it stays a tensor one can assign to (its
// values are garbage). Called on a tensor at its last use, or on a temporary.
Mat<float> rows(Tensor3&& x) {
    Mat<float> m = Mat<float>::from_shape({x.shape(0) * x.shape(1), x.shape(2)});
    std::swap(m.storage(), x.storage());
    return m;
}

// [N, F] rows -> [B, T, F]: the inverse of rows(), for chapters 1–7's functions (the same
// exchange of buffers).
Tensor3 seqs(Mat<float>&& m, std::size_t B, std::size_t T) {
    Tensor3 x = Tensor3::from_shape({B, T, m.shape(1)});
    std::swap(x.storage(), m.storage());
    return x;
}

// Chapter 2's Linear from the model's weight [out, in] and bias [out] (a copy: the model keeps
// its tensors in the flat layout of GptParams, the chapters take a Linear).
Linear as_linear(const Mat<float>& weight, const Vec<float>& bias) { return Linear{weight, bias}; }

LayerNormParams as_layer_norm(const Vec<float>& gamma, const Vec<float>& beta) {
    return LayerNormParams{gamma, beta, static_cast<float>(kGptLayerNormEps)};
}

// The forward up to the logits, made of chapters 1–7; fills everything in cache but the
// targets and the loss.
void forward_to_logits(const GptParams<float>& p, const GptConfig& c, const TokenIds& inputs,
                       GptCache<float>& cache) {
    const std::size_t B = inputs.shape(0), T = inputs.shape(1), H = c.H;
    const bool rope = c.positions == Positions::rope;
    cache.batch = B;
    cache.seq_len = T;
    cache.inputs = inputs;
    cache.targets = xt::xtensor<std::int64_t, 1>::from_shape({0});
    cache.has_loss = false;

    // Token embedding (chapter 2), then learned positions (chapter 3); RoPE adds nothing here,
    // it turns q and k inside every block.
    Tensor3 x = embed(p.wte, inputs);           // [B, T, D]
    if (!rope) x = add_positions(x, p.wpe, 0);  // + wpe[0..T)
    const Mask causal = causal_mask(T);         // [1, T, T], chapter 6

    cache.blocks.resize(c.L);
    for (std::size_t l = 0; l < c.L; ++l) {
        const GptBlock<float>& w = p.blocks[l];
        GptBlockCache<float>& a = cache.blocks[l];
        // Each activation goes to the cache (as [N, ·] rows) at its last use: rows() takes its
        // buffer, nothing is copied.

        // Attention half (chapter 7's Pre-LN block, step by step):
        // x_mid = x + w_o · attention(LN1(x)).
        Tensor3 h = layer_norm(x, as_layer_norm(w.ln1_g, w.ln1_b));  // [B, T, D]
        a.q = split_heads(linear(h, as_linear(w.w_q, w.b_q)), H);    // [B, H, T, d]
        a.k = split_heads(linear(h, as_linear(w.w_k, w.b_k)), H);    // [B, H, T, d]
        a.v = split_heads(linear(h, as_linear(w.w_v, w.b_v)), H);    // [B, H, T, d]
        a.ln1 = rows(std::move(h));
        if (rope) {  // chapter 3: the positions enter through q and k only, never v
            a.q = apply_rope(a.q, 0, kRopeBase);
            a.k = apply_rope(a.k, 0, kRopeBase);
        }
        Attention att = sdpa(a.q, a.k, a.v, causal);  // chapters 4 and 6, scaled by 1/sqrt(d)
        a.att = std::move(att.weights);               // [B, H, T, T]
        Tensor3 merged = merge_heads(att.output);     // [B, T, D]
        Tensor3 x_mid = x + linear(merged, as_linear(w.w_o, w.b_o));  // the residual: add
        a.att_out = rows(std::move(merged));
        a.x_in = rows(std::move(x));  // [N, D], the stream that entered the block

        // FFN half: x_out = x_mid + w_proj · GELU(w_fc · LN2(x_mid)).
        Tensor3 h2 = layer_norm(x_mid, as_layer_norm(w.ln2_g, w.ln2_b));  // [B, T, D]
        Tensor3 fc = linear(h2, as_linear(w.w_fc, w.b_fc));               // [B, T, 4D]
        a.ln2 = rows(std::move(h2));
        // [B, T, 4D], chapter 7: the exact GELU, or GPT-2's tanh form
        Tensor3 fc_gelu = c.gelu == Gelu::tanh ? gelu_tanh(fc) : gelu(fc);
        a.fc = rows(std::move(fc));
        x = x_mid + linear(fc_gelu, as_linear(w.w_proj, w.b_proj));
        a.fc_gelu = rows(std::move(fc_gelu));
        a.x_mid = rows(std::move(x_mid));
    }

    // Final LayerNorm, then the vocabulary projection (§14): logits, never softmaxed here.
    Tensor3 ln_f = layer_norm(x, as_layer_norm(p.ln_f_g, p.ln_f_b));  // [B, T, D]
    cache.x_final = rows(std::move(x));                               // [N, D]
    cache.logits =
        rows(lm_head(ln_f, as_linear(p.lm_head, Vec<float>::from_shape({0}))));  // [N, V]
    cache.ln_f = rows(std::move(ln_f));
}

}  // namespace

template <class Real>
GptParams<Real> init_gpt(const GptConfig& config, std::uint64_t seed) {
    require_valid_config("wb::init_gpt", config);
    const std::size_t V = config.V, D = config.D;
    checked_size("wb::init_gpt", "wte [V, D]", {V, D});
    const std::size_t wpe_rows = config.positions == Positions::learned ? config.T_max : 0;
    checked_size("wb::init_gpt", "wpe [T_max, D]", {wpe_rows, D});
    checked_size("wb::init_gpt", "w_fc [4D, D] of every block", {config.L, 4, D, D});
    GptParams<Real> p;
    p.wte = Mat<Real>::from_shape({V, D});
    p.wpe = Mat<Real>::from_shape({wpe_rows, D});  // RoPE: no table, [0, D]
    p.blocks.resize(config.L);
    for (GptBlock<Real>& b : p.blocks) {
        b.ln1_g = Vec<Real>::from_shape({D});
        b.ln1_b = Vec<Real>::from_shape({D});
        b.w_q = Mat<Real>::from_shape({D, D});
        b.b_q = Vec<Real>::from_shape({D});
        b.w_k = Mat<Real>::from_shape({D, D});
        b.b_k = Vec<Real>::from_shape({D});
        b.w_v = Mat<Real>::from_shape({D, D});
        b.b_v = Vec<Real>::from_shape({D});
        b.w_o = Mat<Real>::from_shape({D, D});
        b.b_o = Vec<Real>::from_shape({D});
        b.ln2_g = Vec<Real>::from_shape({D});
        b.ln2_b = Vec<Real>::from_shape({D});
        b.w_fc = Mat<Real>::from_shape({4 * D, D});
        b.b_fc = Vec<Real>::from_shape({4 * D});
        b.w_proj = Mat<Real>::from_shape({D, 4 * D});
        b.b_proj = Vec<Real>::from_shape({D});
    }
    p.ln_f_g = Vec<Real>::from_shape({D});
    p.ln_f_b = Vec<Real>::from_shape({D});
    p.lm_head = Mat<Real>::from_shape({V, D});

    // Matrices ~ N(0, 0.02²), vectors: LayerNorm gains 1, everything else (biases, betas) 0.
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal(0.0, 0.02);
    for (ParamRef<Real>& r : parameters(p)) {
        const bool matrix = r.shape.size() == 2;
        const bool gain = r.name.size() >= 2 && r.name.compare(r.name.size() - 2, 2, "_g") == 0;
        for (std::size_t i = 0; i < r.size; ++i) {
            r.data[i] = matrix ? static_cast<Real>(normal(gen)) : (gain ? Real(1) : Real(0));
        }
    }
    return p;
}

template <class Real>
GptParams<Real> zeros_like(const GptParams<Real>& params) {
    GptParams<Real> z = params;  // same shapes
    zero_grad(z);
    return z;
}

template <class Real>
std::vector<ParamRef<Real>> parameters(GptParams<Real>& p) {
    std::vector<ParamRef<Real>> refs;
    auto add = [&refs](const std::string& name, auto& t) {
        refs.push_back({name, t.data(), t.size(), Shape(t.shape().begin(), t.shape().end())});
    };
    add("wte", p.wte);
    add("wpe", p.wpe);
    for (std::size_t l = 0; l < p.blocks.size(); ++l) {
        GptBlock<Real>& b = p.blocks[l];
        const std::string pre = "blocks." + std::to_string(l) + ".";
        add(pre + "ln1_g", b.ln1_g);
        add(pre + "ln1_b", b.ln1_b);
        add(pre + "w_q", b.w_q);
        add(pre + "b_q", b.b_q);
        add(pre + "w_k", b.w_k);
        add(pre + "b_k", b.b_k);
        add(pre + "w_v", b.w_v);
        add(pre + "b_v", b.b_v);
        add(pre + "w_o", b.w_o);
        add(pre + "b_o", b.b_o);
        add(pre + "ln2_g", b.ln2_g);
        add(pre + "ln2_b", b.ln2_b);
        add(pre + "w_fc", b.w_fc);
        add(pre + "b_fc", b.b_fc);
        add(pre + "w_proj", b.w_proj);
        add(pre + "b_proj", b.b_proj);
    }
    add("ln_f_g", p.ln_f_g);
    add("ln_f_b", p.ln_f_b);
    add("lm_head", p.lm_head);
    return refs;
}

template <class Real>
std::vector<ParamRef<const Real>> parameters(const GptParams<Real>& p) {
    // The same walk, read-only: nothing is written through the mutable references.
    std::vector<ParamRef<const Real>> refs;
    for (const ParamRef<Real>& r : parameters(const_cast<GptParams<Real>&>(p))) {
        refs.push_back({r.name, r.data, r.size, r.shape});
    }
    return refs;
}

NextToken shift_for_next_token(const TokenIds& tokens) {
    const std::size_t B = tokens.shape(0), len = tokens.shape(1);
    if (B == 0 || len < 2) {
        throw ShapeError("wb::shift_for_next_token: tokens [B, T + 1] has shape " +
                         shape_str(tokens.shape()) +
                         ", expected B >= 1 and at least 2 tokens per sequence (one input and "
                         "the target after it)");
    }
    NextToken out{TokenIds::from_shape({B, len - 1}), TokenIds::from_shape({B, len - 1})};
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t + 1 < len; ++t) {
            out.inputs(b, t) = tokens(b, t);       // the model reads token t
            out.targets(b, t) = tokens(b, t + 1);  // and must predict token t + 1
        }
    }
    return out;
}

float gpt_forward(const GptParams<float>& params, const GptConfig& config, const TokenIds& inputs,
                  const TokenIds& targets, std::int64_t ignore_index, GptCache<float>& cache) {
    const std::string fn = "wb::gpt_forward";
    require_valid_config(fn, config);
    require_gpt_shapes(fn.c_str(), "params", params, config);
    check_inputs(fn, inputs, config);
    require_shape(fn.c_str(), "targets [B, T]", targets,
                  Shape(inputs.shape().begin(), inputs.shape().end()));
    const std::size_t B = inputs.shape(0), T = inputs.shape(1);
    xt::xtensor<std::int64_t, 1> flat = xt::xtensor<std::int64_t, 1>::from_shape({B * T});
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < T; ++t) {
            const std::int64_t id = targets(b, t);
            if (id != ignore_index && (id < 0 || static_cast<std::size_t>(id) >= config.V)) {
                throw ValueError(fn + ": targets[" + num(b) + ", " + num(t) + "] = " +
                                 std::to_string(id) + " is outside [0, V) = [0, " + num(config.V) +
                                 ") and is not ignore_index = " + std::to_string(ignore_index));
            }
            flat(b * T + t) = id;  // [B, T] -> [B·T], like the logits' rows (§21.7)
        }
    }

    forward_to_logits(params, config, inputs, cache);
    cache.targets = flat;
    cache.ignore_index = ignore_index;
    cache.has_loss = true;
    return cross_entropy_forward(cache.logits, cache.targets, ignore_index);
}

Mat<float> gpt_logits(const GptParams<float>& params, const GptConfig& config,
                      const TokenIds& inputs) {
    const std::string fn = "wb::gpt_logits";
    require_valid_config(fn, config);
    require_gpt_shapes(fn.c_str(), "params", params, config);
    check_inputs(fn, inputs, config);
    GptCache<float> cache;
    forward_to_logits(params, config, inputs, cache);
    return cache.logits;  // [B·T, V]
}

// The cache must be what gpt_forward wrote for its B and T: a cache edited by hand (another
// batch, a tensor of another size) would make the backward read outside its tensors.
void check_backward_cache(const std::string& fn, const GptCache<float>& c,
                          const GptConfig& config) {
    const std::size_t B = c.batch, T = c.seq_len, D = config.D, H = config.H, d = D / H;
    const std::size_t N = checked_size(fn, "cache rows B x T", {B, T});
    const char* f = fn.c_str();
    require_shape(f, "cache.inputs [B, T]", c.inputs, {B, T});
    require_shape(f, "cache.targets [N]", c.targets, {N});
    require_shape(f, "cache.x_final [N, D]", c.x_final, {N, D});
    require_shape(f, "cache.ln_f [N, D]", c.ln_f, {N, D});
    require_shape(f, "cache.logits [N, V]", c.logits, {N, config.V});
    for (const GptBlockCache<float>& a : c.blocks) {
        for (const Mat<float>* m : {&a.x_in, &a.ln1, &a.att_out, &a.x_mid, &a.ln2}) {
            require_shape(f, "a block cache's [N, D] tensor", *m, {N, D});
        }
        for (const Heads<float>* x : {&a.q, &a.k, &a.v}) {
            require_shape(f, "a block cache's q, k or v [B, H, T, d]", *x, {B, H, T, d});
        }
        require_shape(f, "a block cache's att [B, H, T, T]", a.att, {B, H, T, T});
        require_shape(f, "a block cache's fc [N, 4D]", a.fc, {N, 4 * D});
        require_shape(f, "a block cache's fc_gelu [N, 4D]", a.fc_gelu, {N, 4 * D});
    }
}

void gpt_backward(const GptParams<float>& params, const GptConfig& config,
                  const GptCache<float>& cache, GptParams<float>& grads) {
    const std::string fn = "wb::gpt_backward";
    require_valid_config(fn, config);
    require_gpt_shapes(fn.c_str(), "params", params, config);
    require_gpt_shapes(fn.c_str(), "grads", grads, config);
    if (config.gelu == Gelu::tanh) {
        throw ValueError(fn + ": config " + config_str(config) +
                         ": gelu = tanh has no backward here (gelu_backward is the exact "
                         "form's); expected gelu = exact");
    }
    if (!cache.has_loss) {
        throw ValueError(fn +
                         ": the cache holds no loss: call gpt_forward (with targets) first; "
                         "gpt_logits does not prepare a backward");
    }
    if (cache.blocks.size() != config.L) {
        throw ShapeError(fn + ": the cache holds " + std::to_string(cache.blocks.size()) +
                         " block caches, expected L = " + std::to_string(config.L) +
                         " (one per block, as gpt_forward stores them)");
    }
    const std::size_t B = cache.batch, T = cache.seq_len, H = config.H;
    const bool rope = config.positions == Positions::rope;
    check_backward_cache(fn, cache, config);  // every shape before any read
    using Real = float;
    const float eps = static_cast<float>(kGptLayerNormEps);
    Vec<Real> no_bias = Vec<Real>::from_shape({0});

    // Loss -> logits -> final LayerNorm.
    const Mat<Real> dlogits =
        cross_entropy_backward(cache.logits, cache.targets, cache.ignore_index);  // [N, V]
    Mat<Real> dln_f;                                                              // [N, D]
    linear_backward(dlogits, cache.ln_f, params.lm_head, dln_f, grads.lm_head, no_bias);
    Mat<Real> dx;  // [N, D] gradient of the residual stream, walked back block by block
    layer_norm_backward(dln_f, cache.x_final, params.ln_f_g, eps, dx, grads.ln_f_g, grads.ln_f_b);

    for (std::size_t l = config.L; l-- > 0;) {
        const GptBlock<Real>& w = params.blocks[l];
        GptBlock<Real>& g = grads.blocks[l];
        const GptBlockCache<Real>& a = cache.blocks[l];

        // FFN half, x_out = x_mid + ffn(x_mid): dx reaches x_mid directly (the residual) and
        // through the FFN branch.
        Mat<Real> dfc_gelu;  // [N, 4D]
        linear_backward(dx, a.fc_gelu, w.w_proj, dfc_gelu, g.w_proj, g.b_proj);
        const Mat<Real> dfc = gelu_backward(dfc_gelu, a.fc);  // [N, 4D]
        Mat<Real> dln2;                                       // [N, D]
        linear_backward(dfc, a.ln2, w.w_fc, dln2, g.w_fc, g.b_fc);
        Mat<Real> dx_branch;  // [N, D]
        layer_norm_backward(dln2, a.x_mid, w.ln2_g, eps, dx_branch, g.ln2_g, g.ln2_b);
        const Mat<Real> dx_mid = dx + dx_branch;

        // Attention half, x_mid = x_in + attn(x_in).
        Mat<Real> datt_out;  // [N, D]
        linear_backward(dx_mid, a.att_out, w.w_o, datt_out, g.w_o, g.b_o);
        const Heads<Real> dheads = split_heads(seqs(std::move(datt_out), B, T), H);  // [B, H, T, d]
        Heads<Real> dq, dk, dv;                                                      // [B, H, T, d]
        causal_attention_backward(dheads, a.q, a.k, a.v, a.att, dq, dk, dv);
        if (rope) {  // the gradients of the rotated q and k, turned back (chapter 3's angles)
            dq = rope_backward(dq, 0, kRopeBase);
            dk = rope_backward(dk, 0, kRopeBase);
        }
        // ln1 feeds three projections: its gradient is the sum of the three.
        Mat<Real> dln1, dpart;  // [N, D]
        linear_backward(rows(merge_heads(dq)), a.ln1, w.w_q, dln1, g.w_q, g.b_q);
        linear_backward(rows(merge_heads(dk)), a.ln1, w.w_k, dpart, g.w_k, g.b_k);
        dln1 += dpart;
        linear_backward(rows(merge_heads(dv)), a.ln1, w.w_v, dpart, g.w_v, g.b_v);
        dln1 += dpart;
        layer_norm_backward(dln1, a.x_in, w.ln1_g, eps, dx_branch, g.ln1_g, g.ln1_b);
        dx = dx_mid + dx_branch;
    }

    // Embeddings: x0[b·T + t] = wte[id] (+ wpe[t] with learned positions), so both tables
    // receive dx's rows.
    embedding_backward(cache.inputs, dx, grads.wte);
    if (!rope) {
        for (std::size_t b = 0; b < B; ++b) {
            for (std::size_t t = 0; t < T; ++t) {
                for (std::size_t j = 0; j < config.D; ++j) grads.wpe(t, j) += dx(b * T + t, j);
            }
        }
    }
}

template <class Real>
void zero_grad(GptParams<Real>& grads) {
    for (ParamRef<Real>& r : parameters(grads)) std::fill(r.data, r.data + r.size, Real(0));
}

// The parameter helpers' two instantiations: float for training, double for the gradient
// checks.
WB_INSTANTIATE_MODEL(float)
WB_INSTANTIATE_MODEL(double)

}  // namespace WB_IMPL
}  // namespace wb
