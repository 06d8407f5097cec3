// Style answer for chapter 5 (tools/test-styles): one head at a time, as §10 draws it: head h
// projects x with rows h*d .. (h+1)*d of W_Q, W_K, W_V (and their biases), attends with
// chapter 4's sdpa on a [B, 1, N, d] slice, and its output is multiplied by columns
// h*d .. (h+1)*d of W_O and added up; the checks run inputs first, then parameters; messages
// worded unlike the reference but naming each fact mha.hpp promises. It exists because it is a
// correct answer: every check of chapter 5 must accept it.
#include "5-mha/mha.hpp"

#include <string>

namespace wb {
inline namespace WB_IMPL {
namespace {

const char* const kFn = "wb::multi_head_attention";

[[noreturn]] void fail(const std::string& what) {
    throw ShapeError(std::string(kFn) + ": " + what);
}

void check_layer(const char* name, const Linear& l, std::size_t D) {
    if (l.weight.shape(0) != D || l.weight.shape(1) != D) {
        fail(std::string(name) + ".weight is " + shape_str(l.weight.shape()) + ", expected [" +
             num(D) + ", " + num(D) + "] (D from w_q's input width)");
    }
    if (l.bias.size() != 0 && l.bias.size() != D) {
        fail(std::string(name) + ".bias is " + shape_str(l.bias.shape()) + ", expected [0] or [" +
             num(D) + "]");
    }
}

// Rows r0 .. r0 + n of a layer (weight rows and bias entries): a layer with n outputs.
Linear rows_of(const Linear& l, std::size_t r0, std::size_t n) {
    Linear out;
    out.weight = Tensor2::from_shape({n, l.weight.shape(1)});
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t c = 0; c < l.weight.shape(1); ++c) out.weight(r, c) = l.weight(r0 + r, c);
    out.bias = Tensor1::from_shape({l.bias.size() == 0 ? 0 : n});
    for (std::size_t r = 0; r < out.bias.size(); ++r) out.bias(r) = l.bias(r0 + r);
    return out;
}

// [B, T, d] as one head [B, 1, T, d].
Tensor4 as_head(const Tensor3& x) {
    Tensor4 out = Tensor4::from_shape({x.shape(0), 1, x.shape(1), x.shape(2)});
    for (std::size_t b = 0; b < x.shape(0); ++b)
        for (std::size_t t = 0; t < x.shape(1); ++t)
            for (std::size_t c = 0; c < x.shape(2); ++c) out(b, 0, t, c) = x(b, t, c);
    return out;
}

}  // namespace

MhaParams init_mha(std::size_t D, std::size_t H, bool bias, std::uint32_t seed) {
    if (D == 0 || H == 0 || D % H != 0) {
        throw ShapeError("wb::init_mha: D = " + num(D) + " cannot be split into H = " + num(H) +
                         " heads of equal width");
    }
    MhaParams p;
    p.H = H;
    p.w_q = init_linear(D, D, bias, seed);
    p.w_k = init_linear(D, D, bias, seed + 1u);
    p.w_v = init_linear(D, D, bias, seed + 2u);
    p.w_o = init_linear(D, D, bias, seed + 3u);
    return p;
}

MhaResult multi_head_attention(const Tensor3& x_q, const Tensor3& x_kv, const MhaParams& p,
                               const std::optional<Mask>& mask) {
    const std::size_t B = x_q.shape(0), N = x_q.shape(1), M = x_kv.shape(1);
    const std::size_t D = p.w_q.weight.shape(1);
    const std::string shapes =
        "x_q " + shape_str(x_q.shape()) + ", x_kv " + shape_str(x_kv.shape());
    if (x_kv.shape(0) != B) fail(shapes + ": the batch sizes differ");
    if (B == 0 || N == 0 || M == 0) fail(shapes + ": B, N and M must all be at least 1");
    if (p.H == 0 || D == 0 || D % p.H != 0) {
        fail("H = " + num(p.H) + " heads do not divide D = " + num(D) + " (w_q.weight " +
             shape_str(p.w_q.weight.shape()) + ")");
    }
    check_layer("w_q", p.w_q, D);
    check_layer("w_k", p.w_k, D);
    check_layer("w_v", p.w_v, D);
    check_layer("w_o", p.w_o, D);
    if (x_q.shape(2) != D || x_kv.shape(2) != D)
        fail(shapes + ": the last axis must be D = " + num(D));
    if (mask) {
        const auto& s = mask->allowed.shape();
        if (!((s[0] == B || s[0] == 1) && s[1] == N && s[2] == M)) {
            fail("mask.allowed " + shape_str(s) + " does not fit " + shapes + "; expected [" +
                 num(B) + " or 1, " + num(N) + ", " + num(M) + "]");
        }
    }
    const std::size_t H = p.H, d = D / H;
    MhaResult r;
    r.weights = Tensor4::from_shape({B, H, N, M});
    r.output = Tensor3::from_shape({B, N, D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < N; ++i)
            for (std::size_t o = 0; o < D; ++o)
                r.output(b, i, o) = p.w_o.bias.size() ? p.w_o.bias(o) : 0.0f;
    for (std::size_t h = 0; h < H; ++h) {
        const Tensor4 q = as_head(linear(x_q, rows_of(p.w_q, h * d, d)));
        const Tensor4 k = as_head(linear(x_kv, rows_of(p.w_k, h * d, d)));
        const Tensor4 v = as_head(linear(x_kv, rows_of(p.w_v, h * d, d)));
        const Attention a = sdpa(q, k, v, mask);
        for (std::size_t b = 0; b < B; ++b) {
            for (std::size_t i = 0; i < N; ++i) {
                for (std::size_t j = 0; j < M; ++j) r.weights(b, h, i, j) = a.weights(b, 0, i, j);
                for (std::size_t o = 0; o < D; ++o) {
                    float s = 0.0f;
                    for (std::size_t c = 0; c < d; ++c)
                        s += a.output(b, 0, i, c) * p.w_o.weight(o, h * d + c);
                    r.output(b, i, o) += s;
                }
            }
        }
    }
    return r;
}

MhaResult self_attention(const Tensor3& x, const MhaParams& p, const std::optional<Mask>& mask) {
    return multi_head_attention(x, x, p, mask);
}

}  // namespace WB_IMPL
}  // namespace wb
