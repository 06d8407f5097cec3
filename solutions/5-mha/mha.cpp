// Chapter 5 — reference implementation.
#include "5-mha/mha.hpp"

#include <string>
#include <utility>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "1-tensors/tensors.hpp"

namespace wb {
inline namespace WB_IMPL {

namespace {

const std::string kMha = "wb::multi_head_attention";

// One projection must map D features to D features: weight [D, D], bias [D] or none.
void check_projection(const char* name, const Linear& w, std::size_t D) {
    if (w.weight.shape(0) != D || w.weight.shape(1) != D) {
        throw ShapeError(kMha + ": " + name + ".weight has shape " + shape_str(w.weight.shape()) +
                         ", expected [D, D] = [" + num(D) + ", " + num(D) + "] (D = " + num(D) +
                         " is w_q's input width)");
    }
    if (w.bias.size() != 0 && w.bias.size() != D) {
        throw ShapeError(kMha + ": " + name + ".bias has shape " + shape_str(w.bias.shape()) +
                         ", expected [" + num(D) + "] (D) or [0] (no bias)");
    }
}

// The parameters must agree with each other before any input is looked at. Returns D.
std::size_t check_params(const MhaParams& p) {
    const std::size_t D = p.w_q.weight.shape(1);  // w_q [D, D]: its input width is D
    if (p.H == 0 || D == 0 || D % p.H != 0) {
        throw ShapeError(kMha + ": the parameters have D = " + num(D) + " and H = " + num(p.H) +
                         ", expected H >= 1 dividing D (each head has width d = D / H)");
    }
    check_projection("w_q", p.w_q, D);
    check_projection("w_k", p.w_k, D);
    check_projection("w_v", p.w_v, D);
    check_projection("w_o", p.w_o, D);
    return D;
}

void check_inputs(const Tensor3& x_q, const Tensor3& x_kv, std::size_t D) {
    const std::string shapes = "x_q [B, N, D] has shape " + shape_str(x_q.shape()) +
                               " and x_kv [B, M, D] has shape " + shape_str(x_kv.shape());
    if (x_q.shape(2) != D || x_kv.shape(2) != D) {
        throw ShapeError(kMha + ": " + shapes + ", but the projections are [D, D] with D = " +
                         num(D) + ": the last axis of both must be D");
    }
    if (x_q.shape(0) != x_kv.shape(0)) {
        throw ShapeError(kMha + ": " + shapes + ": expected the same batch size B " +
                         "(sequence b of x_q reads sequence b of x_kv)");
    }
    if (x_q.shape(0) == 0 || x_q.shape(1) == 0 || x_kv.shape(1) == 0) {
        throw ShapeError(kMha + ": " + shapes + ": expected B, N and M >= 1 " +
                         "(there is nothing to attend to)");
    }
}

void check_mask(const Mask& mask, std::size_t B, std::size_t N, std::size_t M) {
    const auto& s = mask.allowed.shape();
    if ((s[0] != B && s[0] != 1) || s[1] != N || s[2] != M) {
        throw ShapeError(kMha + ": mask.allowed has shape " + shape_str(s) + ", expected [" +
                         num(B) + ", " + num(N) + ", " + num(M) + "] or [1, " + num(N) + ", " +
                         num(M) + "] ([B, N, M]: queries x keys)");
    }
}

}  // namespace

MhaParams init_mha(std::size_t D, std::size_t H, bool bias, std::uint32_t seed) {
    if (D == 0 || H == 0 || D % H != 0) {
        throw ShapeError("wb::init_mha: got D = " + num(D) + " and H = " + num(H) +
                         ", expected H >= 1 dividing D (each head has width d = D / H)");
    }
    MhaParams p;
    p.H = H;
    // Four independent [D, D] layers. Equal seeds would make W_Q == W_K: symmetric scores.
    p.w_q = init_linear(D, D, bias, seed);
    p.w_k = init_linear(D, D, bias, seed + 1);
    p.w_v = init_linear(D, D, bias, seed + 2);
    p.w_o = init_linear(D, D, bias, seed + 3);
    return p;
}

MhaResult multi_head_attention(const Tensor3& x_q, const Tensor3& x_kv, const MhaParams& p,
                               const std::optional<Mask>& mask) {
    const std::size_t D = check_params(p);
    check_inputs(x_q, x_kv, D);
    const std::size_t B = x_q.shape(0), N = x_q.shape(1), M = x_kv.shape(1), H = p.H;
    if (mask) check_mask(*mask, B, N, M);

    // 1. Project: the queries come from x_q, the keys and values from x_kv (§13). Every row of
    //    W_Q reads all D input features, so every head sees the whole input (§10).
    Tensor3 q = linear(x_q, p.w_q);   // [B, N, D]
    Tensor3 k = linear(x_kv, p.w_k);  // [B, M, D]
    Tensor3 v = linear(x_kv, p.w_v);  // [B, M, D]

    // 2. Split heads: feature h*d + i of a projection becomes column i of head h, and the head
    //    axis moves in front of the tokens (reshape to [B, T, H, d], then transpose).
    Tensor4 qh = split_heads(q, H);  // [B, H, N, d]
    Tensor4 kh = split_heads(k, H);  // [B, H, M, d]
    Tensor4 vh = split_heads(v, H);  // [B, H, M, d]

    // 3. Every head attends on its own, all in one call; sdpa divides by sqrt(d), d = D / H is
    //    the width of ONE head (its q and k are d wide), not sqrt(D).
    Attention a = sdpa(qh, kh, vh, mask);  // output [B, H, N, d], weights [B, H, N, M]

    // 4. Merge heads: [B, H, N, d] -> [B, N, H, d] -> [B, N, D]; head h fills features
    //    h*d .. (h+1)*d of each query again (the concatenation of §10).
    Tensor3 merged = merge_heads(a.output);  // [B, N, D]

    // 5. Output projection: column block h of W_O reads head h, and every output feature
    //    mixes all heads. Without it the heads would never talk to each other.
    MhaResult r;
    r.output = linear(merged, p.w_o);  // [B, N, D]
    r.weights = std::move(a.weights);  // [B, H, N, M]
    return r;
}

MhaResult self_attention(const Tensor3& x, const MhaParams& p, const std::optional<Mask>& mask) {
    // Self attention is a special case, not another algorithm: x is both sequences.
    return multi_head_attention(x, x, p, mask);
}

}  // namespace WB_IMPL
}  // namespace wb
