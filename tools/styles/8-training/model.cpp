// Chapter 8, a second answer: the model through a small "rows" helper pair, the cache checked by
// one table of expected shapes, the backward in one function without helpers per half.
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

namespace wb {
inline namespace WB_IMPL {

namespace {

Mat<float> as_rows(const Tensor3& x) {
    Mat<float> out = Mat<float>::from_shape({x.shape()[0] * x.shape()[1], x.shape()[2]});
    std::copy(x.begin(), x.end(), out.begin());
    return out;
}

Tensor3 as_seq(const Mat<float>& x, std::size_t B, std::size_t T) {
    Tensor3 out = Tensor3::from_shape({B, T, x.shape()[1]});
    std::copy(x.begin(), x.end(), out.begin());
    return out;
}

Linear lin(const Mat<float>& w, const Vec<float>& b) { return Linear{w, b}; }

LayerNormParams norm(const Vec<float>& g, const Vec<float>& b) {
    return LayerNormParams{g, b, static_cast<float>(kGptLayerNormEps)};
}

void check_inputs(const char* fn, const GptParams<float>& p, const GptConfig& c,
                  const TokenIds& inputs) {
    require_valid_config(fn, c);
    require_gpt_shapes(fn, "params", p, c);
    if (inputs.size() == 0) {
        throw ShapeError(std::string(fn) + ": inputs has shape " + shape_str(inputs.shape()) +
                         ", at least one token is needed");
    }
    const std::size_t T = inputs.shape()[1];
    if (T > c.T_max) {
        throw ValueError(std::string(fn) + ": T = " + num(T) +
                         " tokens exceeds T_max = " + num(c.T_max));
    }
    for (std::size_t b = 0; b < inputs.shape()[0]; ++b) {
        for (std::size_t t = 0; t < T; ++t) {
            const std::int64_t id = inputs(b, t);
            if (id < 0 || static_cast<std::uint64_t>(id) >= c.V) {
                throw ValueError(std::string(fn) + ": inputs[" + num(b) + ", " + num(t) +
                                 "] = " + std::to_string(id) + " is outside [0, " + num(c.V) + ")");
            }
        }
    }
}

// The forward up to the logits; fills `cache` (its blocks, x_final, ln_f, logits, B, T, inputs).
void run_forward(const GptParams<float>& p, const GptConfig& c, const TokenIds& inputs,
                 GptCache<float>& cache) {
    const std::size_t B = inputs.shape()[0], T = inputs.shape()[1];
    cache.batch = B;
    cache.seq_len = T;
    cache.inputs = inputs;
    cache.blocks.assign(c.L, GptBlockCache<float>{});
    Tensor3 x = embed(p.wte, inputs);
    if (c.positions == Positions::learned) x = add_positions(x, p.wpe, 0);
    const Mask mask = causal_mask(T);
    for (std::size_t l = 0; l < c.L; ++l) {
        const GptBlock<float>& w = p.blocks[l];
        GptBlockCache<float>& a = cache.blocks[l];
        a.x_in = as_rows(x);
        const Tensor3 h = layer_norm(x, norm(w.ln1_g, w.ln1_b));
        a.ln1 = as_rows(h);
        Tensor4 q = split_heads(linear(h, lin(w.w_q, w.b_q)), c.H);
        Tensor4 k = split_heads(linear(h, lin(w.w_k, w.b_k)), c.H);
        const Tensor4 v = split_heads(linear(h, lin(w.w_v, w.b_v)), c.H);
        if (c.positions == Positions::rope) {
            q = apply_rope(q, 0, kRopeBase);
            k = apply_rope(k, 0, kRopeBase);
        }
        const Attention att = sdpa(q, k, v, mask);
        a.q = q;
        a.k = k;
        a.v = v;
        a.att = att.weights;
        const Tensor3 merged = merge_heads(att.output);
        a.att_out = as_rows(merged);
        x = x + linear(merged, lin(w.w_o, w.b_o));
        a.x_mid = as_rows(x);
        const Tensor3 h2 = layer_norm(x, norm(w.ln2_g, w.ln2_b));
        a.ln2 = as_rows(h2);
        const Tensor3 fc = linear(h2, lin(w.w_fc, w.b_fc));
        a.fc = as_rows(fc);
        const Tensor3 act = c.gelu == Gelu::exact ? gelu(fc) : gelu_tanh(fc);
        a.fc_gelu = as_rows(act);
        x = x + linear(act, lin(w.w_proj, w.b_proj));
    }
    cache.x_final = as_rows(x);
    const Tensor3 hf = layer_norm(x, norm(p.ln_f_g, p.ln_f_b));
    cache.ln_f = as_rows(hf);
    cache.logits = as_rows(lm_head(hf, Linear{p.lm_head, Tensor1::from_shape({0})}));
}

template <class E>
void cache_shape(const char* what, const E& t, const Shape& expected) {
    require_shape("wb::gpt_backward", what, t, expected, "from cache.batch and cache.seq_len");
}

}  // namespace

template <class Real>
GptParams<Real> init_gpt(const GptConfig& config, std::uint64_t seed) {
    const std::string fn = "wb::init_gpt";
    require_valid_config(fn, config);
    const std::size_t V = config.V, D = config.D, F = 4 * D;
    const std::size_t P = config.positions == Positions::learned ? config.T_max : 0;
    checked_size(fn, "wte", {V, D});
    checked_size(fn, "wpe", {config.T_max, D});
    checked_size(fn, "the FFN weights", {config.L, 4, D, D});
    GptParams<Real> p;
    p.wte = Mat<Real>::from_shape({V, D});
    p.wpe = Mat<Real>::from_shape({P, D});
    p.blocks.resize(config.L);
    for (GptBlock<Real>& b : p.blocks) {
        for (Vec<Real>* v :
             {&b.ln1_g, &b.ln1_b, &b.b_q, &b.b_k, &b.b_v, &b.b_o, &b.ln2_g, &b.ln2_b, &b.b_proj}) {
            *v = Vec<Real>::from_shape({D});
        }
        for (Mat<Real>* m : {&b.w_q, &b.w_k, &b.w_v, &b.w_o}) *m = Mat<Real>::from_shape({D, D});
        b.w_fc = Mat<Real>::from_shape({F, D});
        b.b_fc = Vec<Real>::from_shape({F});
        b.w_proj = Mat<Real>::from_shape({D, F});
    }
    p.ln_f_g = Vec<Real>::from_shape({D});
    p.ln_f_b = Vec<Real>::from_shape({D});
    p.lm_head = Mat<Real>::from_shape({V, D});
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal(0.0, 0.02);
    for (ParamRef<Real>& r : parameters(p)) {
        const bool gain = r.name.size() >= 2 && r.name.compare(r.name.size() - 2, 2, "_g") == 0;
        if (r.shape.size() == 2) {
            for (std::size_t i = 0; i < r.size; ++i) r.data[i] = static_cast<Real>(normal(gen));
        } else {
            std::fill(r.data, r.data + r.size, gain ? Real(1) : Real(0));
        }
    }
    return p;
}

template <class Real>
GptParams<Real> zeros_like(const GptParams<Real>& params) {
    GptParams<Real> z;
    z.wte = xt::zeros<Real>(params.wte.shape());
    z.wpe = xt::zeros<Real>(params.wpe.shape());
    z.ln_f_g = xt::zeros<Real>(params.ln_f_g.shape());
    z.ln_f_b = xt::zeros<Real>(params.ln_f_b.shape());
    z.lm_head = xt::zeros<Real>(params.lm_head.shape());
    for (const GptBlock<Real>& b : params.blocks) {
        GptBlock<Real> g;
        g.ln1_g = xt::zeros<Real>(b.ln1_g.shape());
        g.ln1_b = xt::zeros<Real>(b.ln1_b.shape());
        g.w_q = xt::zeros<Real>(b.w_q.shape());
        g.b_q = xt::zeros<Real>(b.b_q.shape());
        g.w_k = xt::zeros<Real>(b.w_k.shape());
        g.b_k = xt::zeros<Real>(b.b_k.shape());
        g.w_v = xt::zeros<Real>(b.w_v.shape());
        g.b_v = xt::zeros<Real>(b.b_v.shape());
        g.w_o = xt::zeros<Real>(b.w_o.shape());
        g.b_o = xt::zeros<Real>(b.b_o.shape());
        g.ln2_g = xt::zeros<Real>(b.ln2_g.shape());
        g.ln2_b = xt::zeros<Real>(b.ln2_b.shape());
        g.w_fc = xt::zeros<Real>(b.w_fc.shape());
        g.b_fc = xt::zeros<Real>(b.b_fc.shape());
        g.w_proj = xt::zeros<Real>(b.w_proj.shape());
        g.b_proj = xt::zeros<Real>(b.b_proj.shape());
        z.blocks.push_back(std::move(g));
    }
    return z;
}

namespace {
template <class P, class Ref>
std::vector<Ref> walk(P& params) {
    std::vector<Ref> refs;
    auto add = [&refs](std::string name, auto& t) {
        refs.push_back(
            Ref{std::move(name), t.data(), t.size(), Shape(t.shape().begin(), t.shape().end())});
    };
    add("wte", params.wte);
    add("wpe", params.wpe);
    for (std::size_t l = 0; l < params.blocks.size(); ++l) {
        auto& b = params.blocks[l];
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
    add("ln_f_g", params.ln_f_g);
    add("ln_f_b", params.ln_f_b);
    add("lm_head", params.lm_head);
    return refs;
}
}  // namespace

template <class Real>
std::vector<ParamRef<Real>> parameters(GptParams<Real>& params) {
    return walk<GptParams<Real>, ParamRef<Real>>(params);
}

template <class Real>
std::vector<ParamRef<const Real>> parameters(const GptParams<Real>& params) {
    return walk<const GptParams<Real>, ParamRef<const Real>>(params);
}

NextToken shift_for_next_token(const TokenIds& tokens) {
    const std::size_t B = tokens.shape()[0], len = tokens.shape()[1];
    if (B == 0 || len < 2) {
        throw ShapeError("wb::shift_for_next_token: tokens of shape " + shape_str(tokens.shape()) +
                         " cannot be split; need B >= 1 and at least 2 tokens per sequence");
    }
    NextToken out{TokenIds::from_shape({B, len - 1}), TokenIds::from_shape({B, len - 1})};
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t + 1 < len; ++t) {
            out.inputs(b, t) = tokens(b, t);
            out.targets(b, t) = tokens(b, t + 1);
        }
    }
    return out;
}

float gpt_forward(const GptParams<float>& params, const GptConfig& config, const TokenIds& inputs,
                  const TokenIds& targets, std::int64_t ignore_index, GptCache<float>& cache) {
    const char* fn = "wb::gpt_forward";
    check_inputs(fn, params, config, inputs);
    require_shape(fn, "targets", targets, Shape(inputs.shape().begin(), inputs.shape().end()),
                  "the shape of inputs");
    const std::size_t B = inputs.shape()[0], T = inputs.shape()[1];
    xt::xtensor<std::int64_t, 1> flat = xt::xtensor<std::int64_t, 1>::from_shape({B * T});
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < T; ++t) {
            const std::int64_t y = targets(b, t);
            if (y != ignore_index && (y < 0 || static_cast<std::uint64_t>(y) >= config.V)) {
                throw ValueError(std::string(fn) + ": targets[" + num(b) + ", " + num(t) + "] = " +
                                 std::to_string(y) + " is neither in [0, " + num(config.V) +
                                 ") nor ignore_index " + std::to_string(ignore_index));
            }
            flat(b * T + t) = y;
        }
    }
    run_forward(params, config, inputs, cache);
    cache.targets = flat;
    cache.ignore_index = ignore_index;
    cache.has_loss = true;
    return cross_entropy_forward(cache.logits, cache.targets, ignore_index);
}

Mat<float> gpt_logits(const GptParams<float>& params, const GptConfig& config,
                      const TokenIds& inputs) {
    check_inputs("wb::gpt_logits", params, config, inputs);
    GptCache<float> scratch;
    run_forward(params, config, inputs, scratch);
    return std::move(scratch.logits);
}

void gpt_backward(const GptParams<float>& params, const GptConfig& config,
                  const GptCache<float>& cache, GptParams<float>& grads) {
    const char* fn = "wb::gpt_backward";
    require_valid_config(fn, config);
    require_gpt_shapes(fn, "params", params, config);
    require_gpt_shapes(fn, "grads", grads, config);
    if (config.gelu != Gelu::exact) {
        throw ValueError(std::string(fn) + ": only gelu = exact can be trained, got gelu = " +
                         gelu_name(config.gelu));
    }
    if (!cache.has_loss) {
        throw ValueError(std::string(fn) + ": the cache holds no loss; call gpt_forward first");
    }
    const std::size_t B = cache.batch, T = cache.seq_len, N = B * T, D = config.D, H = config.H,
                      d = D / H, V = config.V;
    cache_shape("cache.inputs", cache.inputs, {B, T});
    cache_shape("cache.targets", cache.targets, {N});
    if (cache.blocks.size() != config.L) {
        throw ShapeError(std::string(fn) + ": cache has " + num(cache.blocks.size()) +
                         " blocks, expected L = " + num(config.L));
    }
    for (const GptBlockCache<float>& a : cache.blocks) {
        for (const Mat<float>* m : {&a.x_in, &a.ln1, &a.att_out, &a.x_mid, &a.ln2}) {
            cache_shape("a block's [N, D] activation", *m, {N, D});
        }
        cache_shape("cache fc", a.fc, {N, 4 * D});
        cache_shape("cache fc_gelu", a.fc_gelu, {N, 4 * D});
        for (const Heads<float>* h : {&a.q, &a.k, &a.v})
            cache_shape("cache q/k/v", *h, {B, H, T, d});
        cache_shape("cache att", a.att, {B, H, T, T});
    }
    cache_shape("cache x_final", cache.x_final, {N, D});
    cache_shape("cache ln_f", cache.ln_f, {N, D});
    cache_shape("cache logits", cache.logits, {N, V});

    const float eps = static_cast<float>(kGptLayerNormEps);
    Vec<float> no_bias = Vec<float>::from_shape({0});
    const Mat<float> dlogits =
        cross_entropy_backward(cache.logits, cache.targets, cache.ignore_index);
    Mat<float> dh, dx;
    linear_backward(dlogits, cache.ln_f, params.lm_head, dh, grads.lm_head, no_bias);
    layer_norm_backward(dh, cache.x_final, params.ln_f_g, eps, dx, grads.ln_f_g, grads.ln_f_b);
    for (std::size_t l = config.L; l-- > 0;) {
        const GptBlock<float>& w = params.blocks[l];
        GptBlock<float>& g = grads.blocks[l];
        const GptBlockCache<float>& a = cache.blocks[l];
        // FFN half: x'' = x' + proj(gelu(fc(ln2(x'))))
        Mat<float> dact, dfc_in, dln2, dbranch;
        linear_backward(dx, a.fc_gelu, w.w_proj, dact, g.w_proj, g.b_proj);
        const Mat<float> dfc = gelu_backward(dact, a.fc);
        linear_backward(dfc, a.ln2, w.w_fc, dln2, g.w_fc, g.b_fc);
        layer_norm_backward(dln2, a.x_mid, w.ln2_g, eps, dbranch, g.ln2_g, g.ln2_b);
        const Mat<float> dmid = dx + dbranch;
        // attention half: x' = x + o(attn(q, k, v))
        Mat<float> dmerged;
        linear_backward(dmid, a.att_out, w.w_o, dmerged, g.w_o, g.b_o);
        const Tensor4 dheads = split_heads(as_seq(dmerged, B, T), H);
        Heads<float> dq, dk, dv;
        causal_attention_backward(dheads, a.q, a.k, a.v, a.att, dq, dk, dv);
        if (config.positions == Positions::rope) {
            dq = rope_backward(dq, 0, kRopeBase);
            dk = rope_backward(dk, 0, kRopeBase);
        }
        Mat<float> dln1 = xt::zeros<float>({N, D}), part;
        linear_backward(as_rows(merge_heads(dq)), a.ln1, w.w_q, part, g.w_q, g.b_q);
        dln1 += part;
        linear_backward(as_rows(merge_heads(dk)), a.ln1, w.w_k, part, g.w_k, g.b_k);
        dln1 += part;
        linear_backward(as_rows(merge_heads(dv)), a.ln1, w.w_v, part, g.w_v, g.b_v);
        dln1 += part;
        layer_norm_backward(dln1, a.x_in, w.ln1_g, eps, dbranch, g.ln1_g, g.ln1_b);
        dx = dmid + dbranch;
    }
    embedding_backward(cache.inputs, dx, grads.wte);
    if (config.positions == Positions::learned) {
        for (std::size_t r = 0; r < N; ++r) {
            for (std::size_t c = 0; c < D; ++c) grads.wpe(r % T, c) += dx(r, c);
        }
    }
}

template <class Real>
void zero_grad(GptParams<Real>& grads) {
    for (ParamRef<Real>& r : parameters(grads)) {
        for (std::size_t i = 0; i < r.size; ++i) r.data[i] = Real(0);
    }
}

WB_INSTANTIATE_MODEL(float)
WB_INSTANTIATE_MODEL(double)

}  // namespace WB_IMPL
}  // namespace wb
