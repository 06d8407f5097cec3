// The mini-GPT's fast decode (see gpt_decode.hpp): chapter 9's prefill / decode_step on
// packed weights and preallocated buffers, one OpenMP parallel region per token.
//
// One token at position t is one OpenMP parallel region with two barriers per block:
//   every thread: LayerNorm 1 of its own copy of the residual stream x (all copies equal)
//   each head, on one thread: q, k, v of the head (rows of w_q, w_k, w_v), k and v into the
//     head's cache at t, the head's attention over [0, t], and its share of the output
//     projection, w_o[:, head] · att_head                         -> barrier
//   every thread: x += the heads' shares, summed in head order, + b_o; LayerNorm 2
//   each chunk of 64 hidden units, on one thread: GELU(w_fc[chunk] · ln + b_fc[chunk]) and its
//     share of the projection, w_proj[:, chunk] · hidden[chunk]  -> barrier
//   every thread: x += the chunks' shares, summed in chunk order, + b_proj
// then the final LayerNorm and the logits = lm_head ln (the lm_head's panels shared). Every
// share and every sum has an order set by the shapes, never by the thread count.
// With RoPE there is no wpe: a head's q and k are turned by the angles of position t (cos /
// sin tables made once, for T_max positions) before k enters the cache and q meets the keys;
// v is not turned. Without positions (Variant::no_positions, RoPE's layout: no wpe) the
// embedding is wte[id] alone and nothing is turned.
//
// A weight matrix [out, in] is stored as panels of 16 outputs: panel p holds, for each input
// i in order, the 16 weights W[16p .. 16p+15][i]. A product walks its panels front to back:
// acc(16 outputs) += panel[i] · x[i] for i = 0 .. in-1, one vector multiply-add per input, the
// panels 8 at a time for independent chains. Each output's sum has the same order whoever
// computes it, so the thread count never changes a bit.
#include "minigpt/fast/gpt_decode.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <utility>

#include "8-training/layers.hpp"
#include "minigpt/fast/rope_tables.hpp"
#include "workbook/core.hpp"
#include "workbook/fast_math.hpp"
#include "workbook/simd.hpp"

// -fno-trapping-math for this file's functions: lets g++ vectorise the plain loops that compare
// floats (the scores' running max) with SIMD selects (nothing here reads the floating-point
// exception flags).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

// The hot loops are compiled for AVX-512, AVX2 + FMA and the default target, and the widest
// the processor has (capped by WB_SIMD) runs: WB_SIMD_DISPATCH (workbook/simd.hpp).

namespace wb::minigpt {

namespace {

const char* const kName = "wb::minigpt::GptDecoder";
constexpr std::size_t kLanes = 16;  // outputs per panel (one AVX-512 register of floats)
using Lanes = F32x16;               // workbook/simd.hpp's 16 float lanes

// A float buffer aligned to 64 bytes, zero-filled.
struct Buffer {
    float* data = nullptr;
    std::size_t size = 0;
    Buffer() = default;
    explicit Buffer(std::size_t n) : size(n) {
        if (n == 0) return;
        data = static_cast<float*>(std::aligned_alloc(64, round_up(n * sizeof(float), 64)));
        if (data == nullptr) throw std::bad_alloc();
        std::memset(data, 0, n * sizeof(float));
    }
    Buffer(Buffer&& o) noexcept : data(std::exchange(o.data, nullptr)), size(o.size) {}
    Buffer& operator=(Buffer&& o) noexcept {
        std::swap(data, o.data);
        std::swap(size, o.size);
        return *this;
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { std::free(data); }
};

// A weight matrix [out, in] as panels of 16 outputs (out padded with zero rows). Panels come in
// groups of 8, each group one stream [in][8][16] (the 8 panels' weights of input i side by
// side); the panels past the last whole group are stored one by one, [in][16] each.
constexpr std::size_t kGroup = 8;
constexpr std::size_t kChunk = 64;  // hidden units of the FFN per chunk (4 panels)

struct Panels {
    std::size_t out = 0, in = 0, count = 0, groups = 0;
    Buffer w;
    // Where panel p's weight of input i starts, and the distance from one input to the next.
    std::size_t at(std::size_t p, std::size_t i) const {
        if (p < groups * kGroup)
            return (p / kGroup * in + i) * kGroup * kLanes + p % kGroup * kLanes;
        return groups * kGroup * in * kLanes + ((p - groups * kGroup) * in + i) * kLanes;
    }
    // A thread's panels: an even share of `count`, its ends moved onto group boundaries inside
    // the grouped part (the same cut for a given thread count; any cut gives the same bits).
    std::pair<std::size_t, std::size_t> share(int tid, int nth) const {
        auto cut = [&](int t) {
            std::size_t b = count * static_cast<std::size_t>(t) / static_cast<std::size_t>(nth);
            if (b < groups * kGroup) b = (b + kGroup / 2) / kGroup * kGroup;
            return b;
        };
        return {cut(tid), cut(tid + 1)};
    }
};

// A block of a weight matrix: rows [r0, r0 + rows), columns [c0, c0 + cols).
struct Slice {
    const Mat<float>* m;
    std::size_t r0, rows, c0, cols;
};

Slice whole(const Mat<float>& m) { return {&m, 0, m.shape(0), 0, m.shape(1)}; }

// Packs the rows of one or more blocks of the same width, stacked, into panels.
Panels pack(std::initializer_list<Slice> parts) {
    Panels p;
    p.in = parts.begin()->cols;
    for (const Slice& b : parts) p.out += b.rows;
    p.count = (p.out + kLanes - 1) / kLanes;
    p.groups = p.count / kGroup;
    p.w = Buffer(p.count * p.in * kLanes);
    std::size_t row = 0;
    for (const Slice& b : parts) {
        const std::size_t ld = b.m->shape(1);
        for (std::size_t r = 0; r < b.rows; ++r, ++row) {
            const std::size_t panel = row / kLanes, lane = row % kLanes;
            const float* src = b.m->data() + (b.r0 + r) * ld + b.c0;
            for (std::size_t i = 0; i < p.in; ++i) p.w.data[p.at(panel, i) + lane] = src[i];
        }
    }
    return p;
}

// Elements [at, at + n) of a vector.
Buffer part_of(const Vec<float>& v, std::size_t at, std::size_t n) {
    Buffer b(n);
    std::copy(v.begin() + static_cast<std::ptrdiff_t>(at),
              v.begin() + static_cast<std::ptrdiff_t>(at + n), b.data);
    return b;
}

Buffer copy_of(std::initializer_list<const Vec<float>*> parts) {
    std::size_t n = 0;
    for (const Vec<float>* v : parts) n += v->size();
    Buffer b(n);
    std::size_t at = 0;
    for (const Vec<float>* v : parts) {
        std::copy(v->begin(), v->end(), b.data + at);
        at += v->size();
    }
    return b;
}

// ---- the hot loops ---------------------------------------------------------------------------

// y[16p + l] = Σ_i W[16p + l][i] · x[i] for the panels [p0, p1) of a matrix packed by pack()
// with `groups` whole groups, the sum in input order. p0 and p1 are group boundaries inside
// the grouped part.
WB_SIMD_BODY void panel_products_body(const float* w, std::size_t in, std::size_t groups,
                                      std::size_t p0, std::size_t p1, const float* x, float* y) {
    std::size_t p = p0;
    for (; p + kGroup <= std::min(p1, groups * kGroup); p += kGroup) {
        const float* base = w + p * in * kLanes;  // group p / 8: [in][8][16]
        Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {}, a4 = {}, a5 = {}, a6 = {}, a7 = {};
        for (std::size_t i = 0; i < in; ++i) {
            const float xi = x[i];
            const Lanes* wi = reinterpret_cast<const Lanes*>(base + i * kGroup * kLanes);
            a0 += wi[0] * xi;
            a1 += wi[1] * xi;
            a2 += wi[2] * xi;
            a3 += wi[3] * xi;
            a4 += wi[4] * xi;
            a5 += wi[5] * xi;
            a6 += wi[6] * xi;
            a7 += wi[7] * xi;
        }
        Lanes* out = reinterpret_cast<Lanes*>(y + p * kLanes);
        out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3;
        out[4] = a4, out[5] = a5, out[6] = a6, out[7] = a7;
    }
    // The panels after the last group, stored one by one: [in][16] each.
    const std::size_t stride = in * kLanes;
    for (; p + 2 <= p1; p += 2) {
        const float* base = w + p * stride;
        Lanes a0 = {}, a1 = {};
        for (std::size_t i = 0; i < in; ++i) {
            const float xi = x[i];
            a0 += *reinterpret_cast<const Lanes*>(base + i * kLanes) * xi;
            a1 += *reinterpret_cast<const Lanes*>(base + stride + i * kLanes) * xi;
        }
        Lanes* out = reinterpret_cast<Lanes*>(y + p * kLanes);
        out[0] = a0, out[1] = a1;
    }
    for (; p < p1; ++p) {
        const float* base = w + p * stride;
        Lanes a0 = {};
        for (std::size_t i = 0; i < in; ++i)
            a0 += *reinterpret_cast<const Lanes*>(base + i * kLanes) * x[i];
        *reinterpret_cast<Lanes*>(y + p * kLanes) = a0;
    }
}
WB_SIMD_DISPATCH(void, panel_products,
                 (const float* w, std::size_t in, std::size_t groups, std::size_t p0,
                  std::size_t p1, const float* x, float* y),
                 (w, in, groups, p0, p1, x, y))

// y[r] = GELU(y[r] + b[r]) for r in [r0, r1): the trainer's own GELU (workbook/fast_math.hpp),
// so a model decodes with the numbers it was trained with.
void bias_gelu(float* y, const float* b, std::size_t r0, std::size_t r1) {
    wb::gelu_bias_row(y + r0, nullptr, b + r0, r1 - r0);
}

// LayerNorm of one row of D: y = (x − mean) · rstd · g + b, variance with correction 0.
WB_SIMD_BODY void layer_norm_body(const float* x, const float* g, const float* b, std::size_t D,
                                  float eps, float* y) {
    float sum = 0.0f;
    for (std::size_t j = 0; j < D; ++j) sum += x[j];
    const float mean = sum / static_cast<float>(D);
    float var = 0.0f;
    for (std::size_t j = 0; j < D; ++j) var += (x[j] - mean) * (x[j] - mean);
    var /= static_cast<float>(D);
    const float rstd = 1.0f / std::sqrt(var + eps);
    std::size_t j = 0;
    for (; j + kLanes <= D; j += kLanes) {
        Lanes xj, gj, bj;
        load_lanes(xj, x + j);
        load_lanes(gj, g + j);
        load_lanes(bj, b + j);
        store_lanes(y + j, (xj - mean) * rstd * gj + bj);
    }
    for (; j < D; ++j) y[j] = (x[j] - mean) * rstd * g[j] + b[j];
}
WB_SIMD_DISPATCH(void, layer_norm,
                 (const float* x, const float* g, const float* b, std::size_t D, float eps,
                  float* y),
                 (x, g, b, D, eps, y))

// One head's attention for the query at position n − 1: s = q·k_j · scale for j < n (keys
// transposed: kt[e][j], row stride tp), softmax, out = Σ_j p_j v_j (values [j][e], width d).
WB_SIMD_BODY void attend_body(const float* q, const float* kt, const float* v, std::size_t n,
                              std::size_t d, std::size_t tp, float scale, float* s, float* out) {
    const std::size_t chunks = (n + kLanes - 1) / kLanes;
    std::size_t c = 0;
    for (; c + 4 <= chunks; c += 4) {
        Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {};
        const float* k0 = kt + c * kLanes;
        for (std::size_t e = 0; e < d; ++e) {
            const float qe = q[e];
            const float* ke = k0 + e * tp;
            a0 += *reinterpret_cast<const Lanes*>(ke) * qe;
            a1 += *reinterpret_cast<const Lanes*>(ke + kLanes) * qe;
            a2 += *reinterpret_cast<const Lanes*>(ke + 2 * kLanes) * qe;
            a3 += *reinterpret_cast<const Lanes*>(ke + 3 * kLanes) * qe;
        }
        Lanes* sc = reinterpret_cast<Lanes*>(s + c * kLanes);
        sc[0] = a0 * scale, sc[1] = a1 * scale, sc[2] = a2 * scale, sc[3] = a3 * scale;
    }
    for (; c < chunks; ++c) {
        Lanes a0 = {};
        const float* k0 = kt + c * kLanes;
        for (std::size_t e = 0; e < d; ++e)
            a0 += *reinterpret_cast<const Lanes*>(k0 + e * tp) * q[e];
        *reinterpret_cast<Lanes*>(s + c * kLanes) = a0 * scale;
    }
    float m = s[0];
    for (std::size_t j = 1; j < n; ++j) m = s[j] > m ? s[j] : m;
    std::size_t j = 0;
    for (; j + kLanes <= n; j += kLanes) {  // s - max <= 0
        Lanes e;
        load_lanes(e, s + j);
        e -= m;
        fast_exp_nonpositive_lanes<Lanes, U32x16>(e);
        store_lanes(s + j, e);
    }
    for (; j < n; ++j) s[j] = fast_exp_nonpositive(s[j] - m);
    // The sum in 16 lanes, then the lanes in order, then the tail: an order set by n alone.
    Lanes total = {};
    j = 0;
    for (; j + kLanes <= n; j += kLanes) total += *reinterpret_cast<const Lanes*>(s + j);
    float sum = 0.0f;
    for (std::size_t l = 0; l < kLanes; ++l) sum += total[l];
    for (; j < n; ++j) sum += s[j];
    const float inv = 1.0f / sum;
    for (std::size_t e = 0; e < d; ++e) out[e] = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
        const float a = s[i] * inv;
        const float* vi = v + i * d;
        std::size_t e = 0;
        for (; e + kLanes <= d; e += kLanes) {
            Lanes oe, ve;
            load_lanes(oe, out + e);
            load_lanes(ve, vi + e);
            store_lanes(out + e, oe + a * ve);
        }
        for (; e < d; ++e) out[e] += a * vi[e];
    }
}
WB_SIMD_DISPATCH(void, attend,
                 (const float* q, const float* kt, const float* v, std::size_t n, std::size_t d,
                  std::size_t tp, float scale, float* s, float* out),
                 (q, kt, v, n, d, tp, scale, s, out))

// The rows [r0, r1) of a thread's share of `count` items split evenly among `nth` threads.
std::pair<std::size_t, std::size_t> share(std::size_t count, int tid, int nth) {
    return {count * static_cast<std::size_t>(tid) / static_cast<std::size_t>(nth),
            count * static_cast<std::size_t>(tid + 1) / static_cast<std::size_t>(nth)};
}

}  // namespace

struct GptDecoder::Impl {
    GptConfig c;
    Variant var;
    std::size_t D, H, d, F, V, tp;  // tp: T_max rounded up to 16 (the transposed keys' row)
    std::size_t Dp;                 // D rounded up to 16 (a product's padded output)
    std::size_t chunks;             // the FFN's chunks of kChunk hidden units
    float eps, scale;
    struct Head {
        Panels qkv;    // rows h·d .. h·d + d of w_q, w_k, w_v: [3d, D]
        Buffer b_qkv;  // [3d]
        Panels o;      // columns h·d .. h·d + d of w_o: [D, d]
        Buffer kt;     // [d][tp] this head's keys, transposed
        Buffer v;      // [tp][d] this head's values
    };
    struct Chunk {
        Panels fc;    // rows of w_fc: [n, D]
        Buffer b_fc;  // [n]
        Panels proj;  // the same columns of w_proj: [D, n]
    };
    struct Layer {
        Buffer ln1_g, ln1_b, b_o, ln2_g, ln2_b, b_proj;
        std::vector<Head> heads;
        std::vector<Chunk> chunks;
    };
    std::vector<Layer> layers;
    Buffer wte, wpe, lnf_g, lnf_b;  // wpe [T_max, D] with learned positions, else empty
    bool table = false;             // learned positions: x = wte[id] + wpe[pos]
    bool rope = false;              // RoPE: q and k of every head turned by their position
    RopeTables rope_tables;         // cos / sin [T_max, d/2], made once (RoPE only)
    Panels head;
    // Activations of the token being decoded.
    Buffer x;          // [threads][Dp] each thread's copy of the residual stream (all equal)
    Buffer ln;         // [threads][Dp] each thread's LayerNorm output
    Buffer qkv;        // [H][3d padded to 16] each head's q, k, v
    Buffer att;        // [H][d] each head's attention output
    Buffer scores;     // [H][tp]
    Buffer part_o;     // [H][Dp] each head's share of w_o · att
    Buffer hidden;     // [chunks][kChunk] each chunk's GELU(fc)
    Buffer part_proj;  // [chunks][Dp] each chunk's share of w_proj · hidden
    Buffer logits;     // [V padded to 16]
    std::size_t length = 0;
    int threads = 0;

    void ensure_threads(int n) {
        if (n <= threads) return;
        x = Buffer(static_cast<std::size_t>(n) * Dp);
        ln = Buffer(static_cast<std::size_t>(n) * Dp);
        threads = n;
    }

    const float* run(std::int64_t token);
};

const float* GptDecoder::Impl::run(std::int64_t token) {
    const std::size_t pos = length;
    const auto id = static_cast<std::size_t>(token);
    ensure_threads(omp_get_max_threads());
    const std::size_t qkv_ld = round_up(3 * d, kLanes);

#pragma omp parallel
    {
        const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        float* my_x = x.data + static_cast<std::size_t>(tid) * Dp;
        float* my_ln = ln.data + static_cast<std::size_t>(tid) * Dp;
        for (std::size_t j = 0; j < D; ++j) {
            my_x[j] = wte.data[id * D + j] + (table ? wpe.data[pos * D + j] : 0.0f);
        }
        const auto [h0, h1] = share(H, tid, nth);
        const auto [c0, c1] = share(chunks, tid, nth);
        for (Layer& L : layers) {
            // Attention half, one head at a time: q, k, v of the head, the head's attention,
            // and its share of the output projection, w_o[:, head] · att_head. Pre-LN: of
            // LN1(x); Post-LN: of x itself, and x = LN1(x + attention) after.
            const bool post = var.norm == Norm::post;
            if (!post) layer_norm(my_x, L.ln1_g.data, L.ln1_b.data, D, eps, my_ln);
            const float* in = post ? my_x : my_ln;  // [D] the sublayers' input
            for (std::size_t h = h0; h < h1; ++h) {
                Head& hd = L.heads[h];
                float* y = qkv.data + h * qkv_ld;
                panel_products(hd.qkv.w.data, D, hd.qkv.groups, 0, hd.qkv.count, in, y);
                if (rope) {
                    // q and k turned by the angles of position pos (in place), as the
                    // trainer turns them at the same position; the cache keeps turned keys.
                    const float* cs = rope_tables.cos_at(pos);
                    const float* sn = rope_tables.sin_at(pos);
                    rope_turn(y, hd.b_qkv.data, cs, sn, d, y);
                    rope_turn(y + d, hd.b_qkv.data + d, cs, sn, d, y + d);
                    for (std::size_t e = 0; e < d; ++e) {
                        hd.kt.data[e * tp + pos] = y[d + e];
                        hd.v.data[pos * d + e] = y[2 * d + e] + hd.b_qkv.data[2 * d + e];
                    }
                } else {
                    for (std::size_t e = 0; e < d; ++e) {
                        y[e] += hd.b_qkv.data[e];
                        hd.kt.data[e * tp + pos] = y[d + e] + hd.b_qkv.data[d + e];
                        hd.v.data[pos * d + e] = y[2 * d + e] + hd.b_qkv.data[2 * d + e];
                    }
                }
                attend(y, hd.kt.data, hd.v.data, pos + 1, d, tp, scale, scores.data + h * tp,
                       att.data + h * d);
                panel_products(hd.o.w.data, d, hd.o.groups, 0, hd.o.count, att.data + h * d,
                               part_o.data + h * Dp);
            }
#pragma omp barrier
            // Every thread adds the heads' shares in head order: the same x everywhere.
            for (std::size_t j = 0; j < D; ++j) {
                float sum = part_o.data[j];
                for (std::size_t h = 1; h < H; ++h) sum += part_o.data[h * Dp + j];
                my_x[j] += sum + L.b_o.data[j];
            }
            if (post) {  // x = LN1(x + attention(x))
                layer_norm(my_x, L.ln1_g.data, L.ln1_b.data, D, eps, my_ln);
                std::copy(my_ln, my_ln + D, my_x);
            }
            // FFN half, one chunk of hidden units at a time: GELU(w_fc[chunk] · ln + b), and
            // its share of the projection, w_proj[:, chunk] · hidden[chunk] (Post-LN: of x,
            // and x = LN2(x + FFN(x)) after).
            if (!post) layer_norm(my_x, L.ln2_g.data, L.ln2_b.data, D, eps, my_ln);
            for (std::size_t c = c0; c < c1; ++c) {
                Chunk& ch = L.chunks[c];
                float* hid = hidden.data + c * kChunk;
                panel_products(ch.fc.w.data, D, ch.fc.groups, 0, ch.fc.count, in, hid);
                bias_gelu(hid, ch.b_fc.data, 0, ch.fc.out);
                panel_products(ch.proj.w.data, ch.fc.out, ch.proj.groups, 0, ch.proj.count, hid,
                               part_proj.data + c * Dp);
            }
#pragma omp barrier
            for (std::size_t j = 0; j < D; ++j) {
                float sum = part_proj.data[j];
                for (std::size_t c = 1; c < chunks; ++c) sum += part_proj.data[c * Dp + j];
                my_x[j] += sum + L.b_proj.data[j];
            }
            if (post) {  // x = LN2(x + FFN(x))
                layer_norm(my_x, L.ln2_g.data, L.ln2_b.data, D, eps, my_ln);
                std::copy(my_ln, my_ln + D, my_x);
            }
        }
        // The final LayerNorm, unless --final-norm off: then lm_head reads the stream itself.
        if (var.final_norm) layer_norm(my_x, lnf_g.data, lnf_b.data, D, eps, my_ln);
        const auto [v0, v1] = head.share(tid, nth);
        panel_products(head.w.data, D, head.groups, v0, v1, var.final_norm ? my_ln : my_x,
                       logits.data);
    }
    length = pos + 1;
    return logits.data;
}

GptDecoder::GptDecoder(const GptParams<float>& p, const GptConfig& config, const Variant& variant)
    : impl_(std::make_unique<Impl>()) {
    require_valid_config(kName, config);
    if (config.gelu != Gelu::exact) {  // the fast engine computes the exact GELU only
        throw ValueError(std::string(kName) + ": config " + config_str(config) +
                         ": the fast engine computes the exact GELU only; expected gelu = exact "
                         "(GPT-2's tanh form runs on the chapters, --engine chapters)");
    }
    if (p.blocks.size() != config.L) {
        throw ShapeError(std::string(kName) + ": params has " + num(p.blocks.size()) +
                         " blocks, expected L = " + num(config.L) + " for config " +
                         config_str(config));
    }
    Impl& m = *impl_;
    m.c = config;
    m.var = variant;
    m.D = config.D;
    m.H = config.H;
    m.d = config.D / config.H;
    m.F = 4 * config.D;
    m.V = config.V;
    m.tp = round_up(config.T_max, kLanes);
    m.Dp = round_up(config.D, kLanes);
    m.chunks = (m.F + kChunk - 1) / kChunk;
    m.eps = static_cast<float>(kGptLayerNormEps);
    // The scores' scale: 1/√d, or 1 without it (--attention-scale none).
    m.scale = variant.attention_scale == AttentionScale::none
                  ? 1.0f
                  : 1.0f / std::sqrt(static_cast<float>(m.d));
    const std::size_t D = m.D, F = m.F, d = m.d;
    require_shape(kName, "wte [V, D]", p.wte, {config.V, D});
    require_positions_fit(kName, config, variant);
    const bool rope = config.positions == Positions::rope;
    if (rope) {
        require_shape(kName, "wpe [0, D] (RoPE: no position table)", p.wpe, {0, D});
    } else {
        require_shape(kName, "wpe [T_max, D]", p.wpe, {config.T_max, D});
    }
    require_shape(kName, "ln_f_g [D]", p.ln_f_g, {D});
    require_shape(kName, "ln_f_b [D]", p.ln_f_b, {D});
    require_shape(kName, "lm_head [V, D]", p.lm_head, {config.V, D});
    for (const GptBlock<float>& b : p.blocks) {
        for (const Mat<float>* w : {&b.w_q, &b.w_k, &b.w_v, &b.w_o})
            require_shape(kName, "blocks[l] attention weight [D, D]", *w, {D, D});
        for (const Vec<float>* v :
             {&b.b_q, &b.b_k, &b.b_v, &b.b_o, &b.ln1_g, &b.ln1_b, &b.ln2_g, &b.ln2_b, &b.b_proj})
            require_shape(kName, "blocks[l] vector [D]", *v, {D});
        require_shape(kName, "blocks[l].w_fc [4D, D]", b.w_fc, {F, D});
        require_shape(kName, "blocks[l].b_fc [4D]", b.b_fc, {F});
        require_shape(kName, "blocks[l].w_proj [D, 4D]", b.w_proj, {D, F});
        Impl::Layer L;
        L.ln1_g = copy_of({&b.ln1_g});
        L.ln1_b = copy_of({&b.ln1_b});
        L.b_o = copy_of({&b.b_o});
        L.ln2_g = copy_of({&b.ln2_g});
        L.ln2_b = copy_of({&b.ln2_b});
        L.b_proj = copy_of({&b.b_proj});
        for (std::size_t h = 0; h < m.H; ++h) {
            Impl::Head hd;
            hd.qkv = pack({Slice{&b.w_q, h * d, d, 0, D}, Slice{&b.w_k, h * d, d, 0, D},
                           Slice{&b.w_v, h * d, d, 0, D}});
            hd.b_qkv = Buffer(3 * d);
            for (std::size_t e = 0; e < d; ++e) {
                hd.b_qkv.data[e] = b.b_q(h * d + e);
                hd.b_qkv.data[d + e] = b.b_k(h * d + e);
                hd.b_qkv.data[2 * d + e] = b.b_v(h * d + e);
            }
            hd.o = pack({Slice{&b.w_o, 0, D, h * d, d}});
            hd.kt = Buffer(d * m.tp);
            hd.v = Buffer(m.tp * d);
            L.heads.push_back(std::move(hd));
        }
        for (std::size_t c = 0; c < m.chunks; ++c) {
            const std::size_t r0 = c * kChunk, n = std::min(kChunk, F - r0);
            Impl::Chunk ch;
            ch.fc = pack({Slice{&b.w_fc, r0, n, 0, D}});
            ch.b_fc = part_of(b.b_fc, r0, n);
            ch.proj = pack({Slice{&b.w_proj, 0, D, r0, n}});
            L.chunks.push_back(std::move(ch));
        }
        m.layers.push_back(std::move(L));
    }
    m.wte = Buffer(p.wte.size());
    std::copy(p.wte.begin(), p.wte.end(), m.wte.data);
    m.wpe = Buffer(p.wpe.size());
    std::copy(p.wpe.begin(), p.wpe.end(), m.wpe.data);
    m.table = !rope;
    m.rope = rope && !variant.no_positions;  // none: RoPE's layout, nothing turned
    if (m.rope) m.rope_tables = RopeTables(config.T_max, d);
    m.lnf_g = copy_of({&p.ln_f_g});
    m.lnf_b = copy_of({&p.ln_f_b});
    m.head = pack({whole(p.lm_head)});
    m.qkv = Buffer(m.H * round_up(3 * d, kLanes));
    m.att = Buffer(D);
    m.scores = Buffer(m.H * m.tp);
    m.part_o = Buffer(m.H * m.Dp);
    m.hidden = Buffer(m.chunks * kChunk);
    m.part_proj = Buffer(m.chunks * m.Dp);
    m.logits = Buffer(m.head.count * kLanes);
    m.ensure_threads(omp_get_max_threads());
}

GptDecoder::~GptDecoder() = default;
GptDecoder::GptDecoder(GptDecoder&&) noexcept = default;
GptDecoder& GptDecoder::operator=(GptDecoder&&) noexcept = default;

void GptDecoder::reset() { impl_->length = 0; }

std::size_t GptDecoder::length() const { return impl_->length; }

const GptConfig& GptDecoder::config() const { return impl_->c; }
const Variant& GptDecoder::variant() const { return impl_->var; }

const float* GptDecoder::step(std::int64_t token) {
    Impl& m = *impl_;
    if (m.length >= m.c.T_max) {
        throw ValueError(std::string(kName) + "::step: the cache is full: length = " +
                         num(m.length) + " positions, T_max = " + num(m.c.T_max));
    }
    if (token < 0 || static_cast<std::size_t>(token) >= m.V) {
        throw ValueError(std::string(kName) + "::step: token = " + std::to_string(token) +
                         " is outside [0, V) = [0, " + num(m.V) + ")");
    }
    return m.run(token);
}

const float* GptDecoder::prefill(const std::vector<std::int64_t>& prompt) {
    Impl& m = *impl_;
    const std::string fn = std::string(kName) + "::prefill";
    if (prompt.empty()) throw ShapeError(fn + ": the prompt is empty, expected at least one token");
    if (prompt.size() > m.c.T_max) {
        throw ValueError(fn + ": prompt of " + num(prompt.size()) +
                         " tokens exceeds T_max = " + num(m.c.T_max));
    }
    for (std::size_t t = 0; t < prompt.size(); ++t) {
        if (prompt[t] < 0 || static_cast<std::size_t>(prompt[t]) >= m.V) {
            throw ValueError(fn + ": prompt[" + num(t) + "] = " + std::to_string(prompt[t]) +
                             " is outside [0, V) = [0, " + num(m.V) + ")");
        }
    }
    m.length = 0;
    const float* logits = nullptr;
    for (std::int64_t id : prompt) logits = m.run(id);
    return logits;
}

std::vector<std::int64_t> generate_fast(GptDecoder& decoder,
                                        const std::vector<std::int64_t>& prompt,
                                        std::size_t max_new_tokens, const SamplingOptions& options,
                                        std::uint64_t seed, bool use_greedy) {
    const std::string fn = "wb::minigpt::generate_fast";
    const GptConfig& c = decoder.config();
    if (prompt.empty()) throw ShapeError(fn + ": the prompt is empty, expected at least one token");
    // Compared without the sum, which wraps around for max_new_tokens near SIZE_MAX.
    if (prompt.size() > c.T_max || max_new_tokens > c.T_max - prompt.size()) {
        throw ValueError(fn + ": prompt of " + num(prompt.size()) + " tokens + " +
                         num(max_new_tokens) + " new tokens exceeds T_max = " + num(c.T_max));
    }
    if (!(options.temperature > 0.0f) || !std::isfinite(options.temperature)) {
        throw ValueError(fn + ": temperature = " + std::to_string(options.temperature) +
                         ", expected a finite temperature > 0 (use greedy for the limit 0)");
    }
    if (!(options.top_p > 0.0f && options.top_p <= 1.0f)) {
        throw ValueError(fn + ": top_p = " + std::to_string(options.top_p) +
                         ", expected top_p in (0, 1]");
    }
    std::vector<std::int64_t> tokens = prompt;
    if (max_new_tokens == 0) {
        for (std::size_t t = 0; t < prompt.size(); ++t) {
            if (prompt[t] < 0 || static_cast<std::size_t>(prompt[t]) >= c.V) {
                throw ValueError(fn + ": prompt[" + num(t) + "] = " + std::to_string(prompt[t]) +
                                 " is outside [0, V) = [0, " + num(c.V) + ")");
            }
        }
        return tokens;
    }
    std::mt19937_64 rng(seed);
    Vec<float> row = Vec<float>::from_shape({c.V});  // [V], reused every step
    const float* logits = decoder.prefill(prompt);
    for (std::size_t step = 0; step < max_new_tokens; ++step) {
        std::copy(logits, logits + c.V, row.begin());
        const std::int64_t next = use_greedy ? greedy(row) : sample(row, options, rng);
        tokens.push_back(next);
        if (step + 1 < max_new_tokens) logits = decoder.step(next);
    }
    return tokens;
}

std::string generate_text_fast(const Model& model, const std::string& prompt,
                               std::size_t max_new_tokens, const SamplingOptions& options,
                               std::uint64_t seed, bool use_greedy, GenerationSpeed* speed) {
    const auto t0 = std::chrono::steady_clock::now();
    GptDecoder decoder(model.params, model.config,
                       model.variant);  // packed once, reused by every piece
    std::string text = generate_text_in_pieces(
        model, prompt, max_new_tokens, seed,
        [&](const std::vector<std::int64_t>& context, std::size_t n, std::uint64_t piece_seed) {
            return generate_fast(decoder, context, n, options, piece_seed, use_greedy);
        });
    if (speed != nullptr) {
        speed->tokens = max_new_tokens;
        speed->seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        speed->threads = omp_get_max_threads();
    }
    return text;
}

}  // namespace wb::minigpt
