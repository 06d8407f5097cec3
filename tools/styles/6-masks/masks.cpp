// Style answer for chapter 6 (tools/test-styles): whole-tensor xtensor expressions
// (broadcast comparisons of aranges, && with batch broadcasting, !, xt::any) instead of the
// reference's element loops; causal_padding_mask built in one expression rather than through
// combine_masks; the checks in another valid order (the lengths before the axes in
// padding_mask); messages worded unlike the reference but naming each fact masks.hpp promises.
// It exists because it is a correct answer: every check of chapter 6 must accept it.
#include "6-masks/masks.hpp"

#include <string>

#include <xtensor/xadapt.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {
namespace {

using Bool3 = xt::xtensor<bool, 3>;
using std::to_string;

// lengths as a [B, 1, 1] column, ready to broadcast against key positions [1, 1, M].
xt::xtensor<std::size_t, 3> length_column(const std::vector<std::size_t>& lengths) {
    return xt::view(xt::adapt(lengths), xt::all(), xt::newaxis(), xt::newaxis());
}

// Key positions 0 .. M-1 as [1, 1, M]; query positions 0 .. N-1 as [1, N, 1].
auto keys(std::size_t M) {
    return xt::view(xt::arange<std::size_t>(M), xt::newaxis(), xt::newaxis(), xt::all());
}
auto queries(std::size_t N) {
    return xt::view(xt::arange<std::size_t>(N), xt::newaxis(), xt::all(), xt::newaxis());
}

void lengths_fit(const char* name, const std::vector<std::size_t>& lengths, std::size_t limit,
                 const char* limit_name) {
    if (lengths.empty()) {
        throw ShapeError(std::string(name) + ": no sequence lengths were given (B = 0)");
    }
    for (std::size_t b = 0; b < lengths.size(); ++b) {
        if (lengths[b] <= limit) continue;
        throw ValueError(std::string(name) + ": sequence " + to_string(b) + " has length " +
                         to_string(lengths[b]) + ", more than the " + to_string(limit) +
                         " key positions (" + limit_name + " = " + to_string(limit) + ")");
    }
}

}  // namespace

Mask causal_mask(std::size_t T) {
    if (!T) throw ShapeError("wb::causal_mask: cannot build a mask over T = 0 tokens");
    checked_size("wb::causal_mask", "a causal mask [1, T, T]", {1, T, T});
    return Mask{Bool3(keys(T) <= queries(T))};  // allowed(0, i, j) = j <= i
}

Mask padding_mask(const std::vector<std::size_t>& lengths, std::size_t N, std::size_t M) {
    if (lengths.empty()) lengths_fit("wb::padding_mask", lengths, M, "M");
    if (!N) throw ShapeError("wb::padding_mask: a padding mask needs queries, got N = 0");
    if (!M) throw ShapeError("wb::padding_mask: a padding mask needs keys, got M = 0");
    checked_size("wb::padding_mask", "a padding mask [B, N, M]", {lengths.size(), N, M});
    lengths_fit("wb::padding_mask", lengths, M, "M");
    Bool3 allowed = xt::broadcast(keys(M) < length_column(lengths), {lengths.size(), N, M});
    return Mask{allowed};
}

Mask combine_masks(const Mask& a, const Mask& b) {
    const auto& sa = a.allowed.shape();
    const auto& sb = b.allowed.shape();
    for (const Mask* m : {&a, &b}) {
        if (m->allowed.size() == 0) {
            throw ShapeError("wb::combine_masks: mask " + std::string(m == &a ? "a" : "b") +
                             " of shape " + shape_str(m->allowed.shape()) +
                             " is empty and cannot be combined");
        }
    }
    const bool batches = sa[0] == sb[0] || sa[0] == 1 || sb[0] == 1;
    if (!batches || sa[1] != sb[1] || sa[2] != sb[2]) {
        throw ShapeError("wb::combine_masks: " + shape_str(sa) + " and " + shape_str(sb) +
                         " do not broadcast (N and M must agree, batches equal or 1)");
    }
    return Mask{Bool3(a.allowed && b.allowed)};  // xtensor broadcasts a batch of 1
}

Mask causal_padding_mask(const std::vector<std::size_t>& lengths, std::size_t T) {
    if (!T) throw ShapeError("wb::causal_padding_mask: cannot build a mask over T = 0 tokens");
    if (lengths.empty()) lengths_fit("wb::causal_padding_mask", lengths, T, "T");
    checked_size("wb::causal_padding_mask", "a causal padding mask [B, T, T]",
                 {lengths.size(), T, T});
    lengths_fit("wb::causal_padding_mask", lengths, T, "T");
    const auto col = length_column(lengths);
    Bool3 allowed =
        xt::broadcast((keys(T) <= queries(T)) && (keys(T) < col), {lengths.size(), T, T});
    return Mask{allowed};
}

Mask from_forbidden(const xt::xtensor<bool, 3>& forbidden) {
    if (forbidden.size() == 0) {
        throw ShapeError("wb::from_forbidden: forbidden " + shape_str(forbidden.shape()) +
                         " is empty; a mask needs a batch, queries and keys");
    }
    return Mask{Bool3(!forbidden)};
}

std::vector<std::size_t> fully_masked_rows(const Mask& m, std::size_t b) {
    const std::size_t B = m.allowed.shape(0);
    if (b >= B) {
        throw ValueError("wb::fully_masked_rows: there is no sequence b = " + to_string(b) +
                         " in a mask of shape " + shape_str(m.allowed.shape()));
    }
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < m.allowed.shape(1); ++i) {
        if (!xt::any(xt::view(m.allowed, b, i, xt::all()))) rows.push_back(i);  // reads nothing
    }
    return rows;
}

}  // namespace WB_IMPL
}  // namespace wb
