// Chapter 6 — reference implementation.
//
// A mask is a [B, N, M] table of booleans: allowed(b, i, j) == true means query i of sequence b
// may read key j. Plain loops, one rule per line: the rules are what this chapter teaches.
#include "6-masks/masks.hpp"

#include <algorithm>
#include <string>

namespace wb {
inline namespace WB_IMPL {
namespace {

using Bool3 = xt::xtensor<bool, 3>;

// One length per sequence: no lengths at all is an empty batch axis (a ShapeError).
void require_lengths(const char* function, const std::vector<std::size_t>& lengths) {
    if (lengths.empty()) {
        throw ShapeError(std::string(function) +
                         ": lengths is empty (B = 0), expected one length per sequence");
    }
}

// Every length must fit in the M key positions; names the first one that does not. Called
// after every shape check: the ShapeErrors (the size of the mask included) come first.
void check_lengths(const char* function, const std::vector<std::size_t>& lengths, std::size_t M,
                   const char* M_name) {
    for (std::size_t b = 0; b < lengths.size(); ++b) {
        if (lengths[b] > M) {
            throw ValueError(std::string(function) + ": lengths[" + std::to_string(b) +
                             "] = " + std::to_string(lengths[b]) + " is larger than " + M_name +
                             " = " + std::to_string(M) + ", expected each length <= " + M_name);
        }
    }
}

}  // namespace

Mask causal_mask(std::size_t T) {
    if (T == 0) {
        throw ShapeError("wb::causal_mask: T = 0, expected at least one token");
    }
    checked_size("wb::causal_mask", "the mask [1, T, T]", {T, T});
    Mask m{Bool3::from_shape({1, T, T})};  // [1, T, T], batch 1 is shared by every sequence
    for (std::size_t i = 0; i < T; ++i) {
        for (std::size_t j = 0; j < T; ++j) {
            m.allowed(0, i, j) = j <= i;  // the past and itself; never the future
        }
    }
    return m;
}

Mask padding_mask(const std::vector<std::size_t>& lengths, std::size_t N, std::size_t M) {
    if (N == 0 || M == 0) {
        throw ShapeError("wb::padding_mask: N = " + std::to_string(N) + " queries and M = " +
                         std::to_string(M) + " keys, expected N >= 1 and M >= 1");
    }
    require_lengths("wb::padding_mask", lengths);
    const std::size_t B = lengths.size();
    checked_size("wb::padding_mask", "the mask [B, N, M]", {B, N, M});
    check_lengths("wb::padding_mask", lengths, M, "M");
    Mask m{Bool3::from_shape({B, N, M})};  // [B, N, M]
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < N; ++i) {
            for (std::size_t j = 0; j < M; ++j) {
                // Only the KEY axis is cut: a padded key is hidden from every query; a padded
                // query still reads the real keys (its output is ignored by the loss instead).
                m.allowed(b, i, j) = j < lengths[b];
            }
        }
    }
    return m;
}

Mask combine_masks(const Mask& a, const Mask& b) {
    const auto& sa = a.allowed.shape();
    const auto& sb = b.allowed.shape();
    // An empty mask (an axis of size 0) has no batch 0 to share: reading it would be out of
    // bounds.
    require_nonempty("wb::combine_masks", "a.allowed [B, N, M]", a.allowed);
    require_nonempty("wb::combine_masks", "b.allowed [B, N, M]", b.allowed);
    const bool batch_fits = sa[0] == sb[0] || sa[0] == 1 || sb[0] == 1;
    if (sa[1] != sb[1] || sa[2] != sb[2] || !batch_fits) {
        throw ShapeError("wb::combine_masks: a has shape " + shape_str(sa) + " and b has shape " +
                         shape_str(sb) +
                         ", expected the same [N, M] and batches that are equal or 1");
    }
    const std::size_t B = std::max(sa[0], sb[0]);
    const std::size_t N = sa[1];
    const std::size_t M = sa[2];
    Mask m{Bool3::from_shape({B, N, M})};  // [B, N, M]
    for (std::size_t s = 0; s < B; ++s) {
        const std::size_t sa_b = sa[0] == 1 ? 0 : s;  // a batch of 1 is shared by every s
        const std::size_t sb_b = sb[0] == 1 ? 0 : s;
        for (std::size_t i = 0; i < N; ++i) {
            for (std::size_t j = 0; j < M; ++j) {
                // Readable only if both masks allow it: either one may hide the key.
                m.allowed(s, i, j) = a.allowed(sa_b, i, j) && b.allowed(sb_b, i, j);
            }
        }
    }
    return m;
}

Mask causal_padding_mask(const std::vector<std::size_t>& lengths, std::size_t T) {
    if (T == 0) {
        throw ShapeError("wb::causal_padding_mask: T = 0, expected at least one token");
    }
    require_lengths("wb::causal_padding_mask", lengths);
    checked_size("wb::causal_padding_mask", "the mask [B, T, T]", {lengths.size(), T, T});
    check_lengths("wb::causal_padding_mask", lengths, T, "T");
    return combine_masks(causal_mask(T), padding_mask(lengths, T, T));  // [B, T, T]
}

Mask from_forbidden(const xt::xtensor<bool, 3>& forbidden) {
    require_nonempty("wb::from_forbidden", "forbidden [B, N, M]", forbidden);
    Mask m{Bool3::from_shape(forbidden.shape())};  // same [B, N, M]
    std::transform(forbidden.begin(), forbidden.end(), m.allowed.begin(),
                   [](bool hidden) { return !hidden; });  // true = hidden  ->  true = may read
    return m;
}

std::vector<std::size_t> fully_masked_rows(const Mask& m, std::size_t b) {
    const auto& shape = m.allowed.shape();
    if (b >= shape[0]) {
        throw ValueError("wb::fully_masked_rows: b = " + std::to_string(b) +
                         " is out of range for a mask of shape " + shape_str(shape) +
                         ", expected b < " + std::to_string(shape[0]));
    }
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < shape[1]; ++i) {
        bool reads_something = false;
        for (std::size_t j = 0; j < shape[2]; ++j) {
            reads_something = reads_something || m.allowed(b, i, j);
        }
        if (!reads_something) rows.push_back(i);  // softmax over no key: 0/0 without the guard
    }
    return rows;
}

}  // namespace WB_IMPL
}  // namespace wb
