// Chapter 8 — reference implementation: the GPT assembled from the layers of layers.cpp.
// The structure follows llm.c's gpt2_forward / gpt2_backward: a forward that keeps every
// activation the backward needs, and a backward that walks the same steps in reverse.
// In the templates T is the scalar type (float or double); the sequence length is `seq`.
#include "8-training/model.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace wb {
inline namespace WB_IMPL {

namespace {

std::string num(std::size_t n) { return std::to_string(n); }

// Ids [B, T] with B, T >= 1, T <= T_max, each id in [0, V).
void check_inputs(const std::string& fn, const TokenIds& ids, const GptConfig& c) {
    const std::size_t B = ids.shape(0), seq = ids.shape(1);
    if (B == 0 || seq == 0) {
        throw ShapeError(fn + ": inputs [B, T] has shape " + shape_str(ids.shape()) +
                         ", expected B >= 1 and T >= 1");
    }
    if (seq > c.T_max) {
        throw ValueError(fn + ": inputs [B, T] has shape " + shape_str(ids.shape()) + ": T = " +
                         num(seq) + " exceeds T_max = " + num(c.T_max) +
                         " (the position table wpe has T_max rows)");
    }
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < seq; ++t) {
            const std::int64_t id = ids(b, t);
            if (id < 0 || static_cast<std::size_t>(id) >= c.V) {
                throw ValueError(fn + ": inputs[" + num(b) + ", " + num(t) + "] = " +
                                 std::to_string(id) + " is outside [0, V) = [0, " + num(c.V) + ")");
            }
        }
    }
}

// [N, D] rows (b·T + t, column h·d + i) -> [B, H, T, d]: the heads split apart.
template <class T>
Cube<T> split_heads(const Mat<T>& x, std::size_t B, std::size_t seq, std::size_t H) {
    const std::size_t d = x.shape(1) / H;
    Cube<T> out = Cube<T>::from_shape({B, H, seq, d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < seq; ++t)
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t i = 0; i < d; ++i) out(b, h, t, i) = x(b * seq + t, h * d + i);
    return out;
}

// [B, H, T, d] -> [N, D]: the inverse of split_heads.
template <class T>
Mat<T> merge_heads(const Cube<T>& x) {
    const std::size_t B = x.shape(0), H = x.shape(1), seq = x.shape(2), d = x.shape(3);
    Mat<T> out = Mat<T>::from_shape({B * seq, H * d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < seq; ++t)
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t i = 0; i < d; ++i) out(b * seq + t, h * d + i) = x(b, h, t, i);
    return out;
}

// The forward up to the logits; fills everything in cache but the targets and the loss.
template <class T>
void forward_to_logits(const GptParams<T>& p, const GptConfig& c, const TokenIds& inputs,
                       GptCache<T>& cache) {
    const std::size_t B = inputs.shape(0), seq = inputs.shape(1), D = c.D, H = c.H;
    const std::size_t N = B * seq;
    const T eps = static_cast<T>(kGptLayerNormEps);
    cache.batch = B;
    cache.seq_len = seq;
    cache.inputs = inputs;
    cache.targets = xt::xtensor<std::int64_t, 1>::from_shape({0});
    cache.has_loss = false;

    // Token embedding plus position embedding: row b·T + t = wte[id] + wpe[t].
    Mat<T> x = Mat<T>::from_shape({N, D});  // [N, D]
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < seq; ++t) {
            const auto id = static_cast<std::size_t>(inputs(b, t));
            for (std::size_t j = 0; j < D; ++j) x(b * seq + t, j) = p.wte(id, j) + p.wpe(t, j);
        }
    }

    cache.blocks.resize(c.L);
    for (std::size_t l = 0; l < c.L; ++l) {
        const GptBlock<T>& w = p.blocks[l];
        GptBlockCache<T>& a = cache.blocks[l];
        a.x_in = x;  // [N, D]

        // Attention half: x_mid = x + w_o · attention(LN1(x)).
        a.ln1 = layer_norm_forward(x, w.ln1_g, w.ln1_b, eps, a.ln1_mean, a.ln1_rstd);  // [N, D]
        a.q = split_heads(Mat<T>(linear_forward(a.ln1, w.w_q, w.b_q)), B, seq, H);  // [B, H, T, d]
        a.k = split_heads(Mat<T>(linear_forward(a.ln1, w.w_k, w.b_k)), B, seq, H);  // [B, H, T, d]
        a.v = split_heads(Mat<T>(linear_forward(a.ln1, w.w_v, w.b_v)), B, seq, H);  // [B, H, T, d]
        const Cube<T> heads = causal_attention_forward(a.q, a.k, a.v, a.att);  // [B, H, T, d]
        a.att_out = merge_heads(heads);                                         // [N, D]
        const Mat<T> attn = linear_forward(a.att_out, w.w_o, w.b_o);            // [N, D]
        a.x_mid = x + attn;  // the residual: the block adds to the stream, never replaces it

        // FFN half: x_out = x_mid + w_proj · GELU(w_fc · LN2(x_mid)).
        a.ln2 = layer_norm_forward(a.x_mid, w.ln2_g, w.ln2_b, eps, a.ln2_mean, a.ln2_rstd);
        a.fc = linear_forward(a.ln2, w.w_fc, w.b_fc);            // [N, 4D]
        a.fc_gelu = gelu_forward(a.fc);                          // [N, 4D]
        const Mat<T> ffn = linear_forward(a.fc_gelu, w.w_proj, w.b_proj);  // [N, D]
        x = a.x_mid + ffn;
    }

    // Final LayerNorm, then the vocabulary projection (§14): logits, never softmaxed here.
    cache.x_final = x;                                                          // [N, D]
    cache.ln_f = layer_norm_forward(x, p.ln_f_g, p.ln_f_b, eps, cache.ln_f_mean, cache.ln_f_rstd);
    const Vec<T> no_bias = Vec<T>::from_shape({0});
    cache.logits = linear_forward(cache.ln_f, p.lm_head, no_bias);              // [N, V]
}

}  // namespace

template <class T>
GptParams<T> init_gpt(const GptConfig& config, std::uint64_t seed) {
    require_valid_config("wb::init_gpt", config);
    const std::size_t V = config.V, D = config.D;
    checked_size("wb::init_gpt", "wte [V, D]", {V, D});
    checked_size("wb::init_gpt", "wpe [T_max, D]", {config.T_max, D});
    checked_size("wb::init_gpt", "w_fc [4D, D] of every block", {config.L, 4, D, D});
    GptParams<T> p;
    p.wte = Mat<T>::from_shape({V, D});
    p.wpe = Mat<T>::from_shape({config.T_max, D});
    p.blocks.resize(config.L);
    for (GptBlock<T>& b : p.blocks) {
        b.ln1_g = Vec<T>::from_shape({D});
        b.ln1_b = Vec<T>::from_shape({D});
        b.w_q = Mat<T>::from_shape({D, D});
        b.b_q = Vec<T>::from_shape({D});
        b.w_k = Mat<T>::from_shape({D, D});
        b.b_k = Vec<T>::from_shape({D});
        b.w_v = Mat<T>::from_shape({D, D});
        b.b_v = Vec<T>::from_shape({D});
        b.w_o = Mat<T>::from_shape({D, D});
        b.b_o = Vec<T>::from_shape({D});
        b.ln2_g = Vec<T>::from_shape({D});
        b.ln2_b = Vec<T>::from_shape({D});
        b.w_fc = Mat<T>::from_shape({4 * D, D});
        b.b_fc = Vec<T>::from_shape({4 * D});
        b.w_proj = Mat<T>::from_shape({D, 4 * D});
        b.b_proj = Vec<T>::from_shape({D});
    }
    p.ln_f_g = Vec<T>::from_shape({D});
    p.ln_f_b = Vec<T>::from_shape({D});
    p.lm_head = Mat<T>::from_shape({V, D});

    // Matrices ~ N(0, 0.02²), vectors: LayerNorm gains 1, everything else (biases, betas) 0.
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal(0.0, 0.02);
    for (ParamRef<T>& r : parameters(p)) {
        const bool matrix = r.shape.size() == 2;
        const bool gain = r.name.size() >= 2 && r.name.compare(r.name.size() - 2, 2, "_g") == 0;
        for (std::size_t i = 0; i < r.size; ++i) {
            r.data[i] = matrix ? static_cast<T>(normal(gen)) : (gain ? T(1) : T(0));
        }
    }
    return p;
}

template <class T>
GptParams<T> zeros_like(const GptParams<T>& params) {
    GptParams<T> z = params;  // same shapes
    zero_grad(z);
    return z;
}

template <class T>
std::vector<ParamRef<T>> parameters(GptParams<T>& p) {
    std::vector<ParamRef<T>> refs;
    auto add = [&refs](const std::string& name, auto& t) {
        refs.push_back({name, t.data(), t.size(), Shape(t.shape().begin(), t.shape().end())});
    };
    add("wte", p.wte);
    add("wpe", p.wpe);
    for (std::size_t l = 0; l < p.blocks.size(); ++l) {
        GptBlock<T>& b = p.blocks[l];
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

template <class T>
std::vector<ParamRef<const T>> parameters(const GptParams<T>& p) {
    // The same walk, read-only: nothing is written through the mutable references.
    std::vector<ParamRef<const T>> refs;
    for (const ParamRef<T>& r : parameters(const_cast<GptParams<T>&>(p))) {
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

template <class T>
T gpt_forward(const GptParams<T>& params, const GptConfig& config, const TokenIds& inputs,
              const TokenIds& targets, std::int64_t ignore_index, GptCache<T>& cache) {
    const std::string fn = "wb::gpt_forward";
    require_valid_config(fn, config);
    require_gpt_shapes(fn.c_str(), "params", params, config);
    check_inputs(fn, inputs, config);
    require_shape(fn.c_str(), "targets [B, T]", targets,
                  Shape(inputs.shape().begin(), inputs.shape().end()));
    const std::size_t B = inputs.shape(0), seq = inputs.shape(1);
    xt::xtensor<std::int64_t, 1> flat = xt::xtensor<std::int64_t, 1>::from_shape({B * seq});
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < seq; ++t) {
            const std::int64_t id = targets(b, t);
            if (id != ignore_index && (id < 0 || static_cast<std::size_t>(id) >= config.V)) {
                throw ValueError(fn + ": targets[" + num(b) + ", " + num(t) + "] = " +
                                 std::to_string(id) + " is outside [0, V) = [0, " +
                                 num(config.V) + ") and is not ignore_index = " +
                                 std::to_string(ignore_index));
            }
            flat(b * seq + t) = id;  // [B, T] -> [B·T], like the logits' rows (§21.7)
        }
    }

    forward_to_logits(params, config, inputs, cache);
    cache.targets = flat;
    cache.ignore_index = ignore_index;
    cache.has_loss = true;
    return cross_entropy_forward(cache.logits, cache.targets, ignore_index);
}

template <class T>
Mat<T> gpt_logits(const GptParams<T>& params, const GptConfig& config, const TokenIds& inputs) {
    const std::string fn = "wb::gpt_logits";
    require_valid_config(fn, config);
    require_gpt_shapes(fn.c_str(), "params", params, config);
    check_inputs(fn, inputs, config);
    GptCache<T> cache;
    forward_to_logits(params, config, inputs, cache);
    return cache.logits;  // [B·T, V]
}

// The cache must be what gpt_forward wrote for its B and T: a cache edited by hand (another
// batch, a tensor of another size) would make the backward read outside its tensors.
template <class T>
void check_backward_cache(const std::string& fn, const GptCache<T>& c, const GptConfig& config) {
    const std::size_t B = c.batch, seq = c.seq_len, D = config.D, H = config.H, d = D / H;
    const std::size_t N = checked_size(fn, "cache rows B x T", {B, seq});
    const char* f = fn.c_str();
    require_shape(f, "cache.inputs [B, T]", c.inputs, {B, seq});
    require_shape(f, "cache.targets [N]", c.targets, {N});
    require_shape(f, "cache.x_final [N, D]", c.x_final, {N, D});
    require_shape(f, "cache.ln_f [N, D]", c.ln_f, {N, D});
    require_shape(f, "cache.ln_f_mean [N]", c.ln_f_mean, {N});
    require_shape(f, "cache.ln_f_rstd [N]", c.ln_f_rstd, {N});
    require_shape(f, "cache.logits [N, V]", c.logits, {N, config.V});
    for (const GptBlockCache<T>& a : c.blocks) {
        for (const Mat<T>* m : {&a.x_in, &a.ln1, &a.att_out, &a.x_mid, &a.ln2}) {
            require_shape(f, "a block cache's [N, D] tensor", *m, {N, D});
        }
        for (const Vec<T>* v : {&a.ln1_mean, &a.ln1_rstd, &a.ln2_mean, &a.ln2_rstd}) {
            require_shape(f, "a block cache's LayerNorm statistics [N]", *v, {N});
        }
        for (const Cube<T>* x : {&a.q, &a.k, &a.v}) {
            require_shape(f, "a block cache's q, k or v [B, H, T, d]", *x, {B, H, seq, d});
        }
        require_shape(f, "a block cache's att [B, H, T, T]", a.att, {B, H, seq, seq});
        require_shape(f, "a block cache's fc [N, 4D]", a.fc, {N, 4 * D});
        require_shape(f, "a block cache's fc_gelu [N, 4D]", a.fc_gelu, {N, 4 * D});
    }
}

template <class T>
void gpt_backward(const GptParams<T>& params, const GptConfig& config, const GptCache<T>& cache,
                  GptParams<T>& grads) {
    const std::string fn = "wb::gpt_backward";
    require_valid_config(fn, config);
    require_gpt_shapes(fn.c_str(), "params", params, config);
    require_gpt_shapes(fn.c_str(), "grads", grads, config);
    if (!cache.has_loss || cache.blocks.size() != config.L) {
        throw ValueError(fn + ": the cache holds no loss: call gpt_forward (with targets) first; "
                              "gpt_logits does not prepare a backward");
    }
    const std::size_t B = cache.batch, seq = cache.seq_len, H = config.H;
    check_backward_cache(fn, cache, config);  // every shape before any read
    Vec<T> no_bias = Vec<T>::from_shape({0});

    // Loss -> logits -> final LayerNorm.
    const Mat<T> dlogits =
        cross_entropy_backward(cache.logits, cache.targets, cache.ignore_index);  // [N, V]
    Mat<T> dln_f;                                                                // [N, D]
    linear_backward(dlogits, cache.ln_f, params.lm_head, dln_f, grads.lm_head, no_bias);
    Mat<T> dx;  // [N, D] gradient of the residual stream, walked back block by block
    layer_norm_backward(dln_f, cache.x_final, params.ln_f_g, cache.ln_f_mean, cache.ln_f_rstd,
                        dx, grads.ln_f_g, grads.ln_f_b);

    for (std::size_t l = config.L; l-- > 0;) {
        const GptBlock<T>& w = params.blocks[l];
        GptBlock<T>& g = grads.blocks[l];
        const GptBlockCache<T>& a = cache.blocks[l];

        // FFN half, x_out = x_mid + ffn(x_mid): dx reaches x_mid directly (the residual) and
        // through the FFN branch.
        Mat<T> dfc_gelu;  // [N, 4D]
        linear_backward(dx, a.fc_gelu, w.w_proj, dfc_gelu, g.w_proj, g.b_proj);
        const Mat<T> dfc = gelu_backward(dfc_gelu, a.fc);  // [N, 4D]
        Mat<T> dln2;                                        // [N, D]
        linear_backward(dfc, a.ln2, w.w_fc, dln2, g.w_fc, g.b_fc);
        Mat<T> dx_branch;  // [N, D]
        layer_norm_backward(dln2, a.x_mid, w.ln2_g, a.ln2_mean, a.ln2_rstd, dx_branch, g.ln2_g,
                            g.ln2_b);
        const Mat<T> dx_mid = dx + dx_branch;

        // Attention half, x_mid = x_in + attn(x_in).
        Mat<T> datt_out;  // [N, D]
        linear_backward(dx_mid, a.att_out, w.w_o, datt_out, g.w_o, g.b_o);
        const Cube<T> dheads = split_heads(datt_out, B, seq, H);  // [B, H, T, d]
        Cube<T> dq, dk, dv;                                       // [B, H, T, d]
        causal_attention_backward(dheads, a.q, a.k, a.v, a.att, dq, dk, dv);
        // ln1 feeds three projections: its gradient is the sum of the three.
        Mat<T> dln1, dpart;  // [N, D]
        linear_backward(merge_heads(dq), a.ln1, w.w_q, dln1, g.w_q, g.b_q);
        linear_backward(merge_heads(dk), a.ln1, w.w_k, dpart, g.w_k, g.b_k);
        dln1 += dpart;
        linear_backward(merge_heads(dv), a.ln1, w.w_v, dpart, g.w_v, g.b_v);
        dln1 += dpart;
        layer_norm_backward(dln1, a.x_in, w.ln1_g, a.ln1_mean, a.ln1_rstd, dx_branch, g.ln1_g,
                            g.ln1_b);
        dx = dx_mid + dx_branch;
    }

    // Embeddings: x0[b·T + t] = wte[id] + wpe[t], so both tables receive dx's rows.
    embedding_backward(cache.inputs, dx, grads.wte);
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < seq; ++t) {
            for (std::size_t j = 0; j < config.D; ++j) grads.wpe(t, j) += dx(b * seq + t, j);
        }
    }
}

template <class T>
void zero_grad(GptParams<T>& grads) {
    for (ParamRef<T>& r : parameters(grads)) std::fill(r.data, r.data + r.size, T(0));
}

// The two instantiations: float for training, double for the gradient checks.
#define WB_INSTANTIATE_MODEL(T)                                                                  \
    template GptParams<T> init_gpt<T>(const GptConfig&, std::uint64_t);                        \
    template GptParams<T> zeros_like<T>(const GptParams<T>&);                                   \
    template std::vector<ParamRef<T>> parameters<T>(GptParams<T>&);                             \
    template std::vector<ParamRef<const T>> parameters<T>(const GptParams<T>&);                 \
    template T gpt_forward<T>(const GptParams<T>&, const GptConfig&, const TokenIds&,           \
                              const TokenIds&, std::int64_t, GptCache<T>&);                     \
    template Mat<T> gpt_logits<T>(const GptParams<T>&, const GptConfig&, const TokenIds&);      \
    template void gpt_backward<T>(const GptParams<T>&, const GptConfig&, const GptCache<T>&,    \
                                  GptParams<T>&);                                               \
    template void zero_grad<T>(GptParams<T>&);

WB_INSTANTIATE_MODEL(float)
WB_INSTANTIATE_MODEL(double)

#undef WB_INSTANTIATE_MODEL

}  // namespace WB_IMPL
}  // namespace wb
