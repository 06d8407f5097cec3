/// @file core.hpp
/// @brief What every chapter shares: tensor types, the exceptions, and argument checks.
///
/// This file is given, not an exercise. Chapters include it through their own header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

/// @def WB_IMPL
/// The inline namespace that holds one implementation of the exercises.
///
/// Every chapter declares its functions inside `namespace wb { inline namespace WB_IMPL {`.
/// You call them as `wb::softmax(...)` and never see this name. It exists so that a benchmark
/// can link your version (`WB_IMPL = impl`) and the reference (`WB_IMPL = reference`) into one
/// program and time them side by side.
#ifndef WB_IMPL
#define WB_IMPL impl
#endif

/// Everything in the workbook lives in namespace `wb`.
///
/// The dimension letters, the same in the notes, every guide, header and check:
///
/// | letter | meaning |
/// |---|---|
/// | `B` | batch: sequences processed together |
/// | `T` | tokens: the sequence length (`T_max` the longest a model takes) |
/// | `D` | model width: the size of each token's vector |
/// | `H` | attention heads; `d = D / H` the width of one head |
/// | `d_k`, `d_v` | width of queries/keys and of values, when one head is discussed |
/// | `N`, `M` | number of queries and of keys, where they differ (cross attention); with a KV cache (chapter 9) the `T` new tokens are the queries and `M` the positions held |
/// | `N` (chapter 8) | rows of the flattened batch, `N = B·T`: `[B, T, ·]` read as `[B·T, ·]` |
/// | `F` | the feature width of an element-wise layer (GELU, LayerNorm): `D`, or the FFN's hidden `4D` |
/// | `V` | vocabulary size: token ids are in `[0, V)` |
/// | `L` | number of layers (blocks) |
///
/// N means query rows in both senses: chapter 8's rows are the B·T tokens, each of which is a
/// query. M is always the number of keys, the positions held in a KV cache included (chapter 9).
/// Not a dimension: chapter 8's templates call their scalar type `Real` (`float` or `double`).
namespace wb {

using Tensor1 = xt::xtensor<float, 1>;  ///< a vector, e.g. one token's features `[D]`
using Tensor2 = xt::xtensor<float, 2>;  ///< a matrix, e.g. `[T, D]` or a weight `[out, in]`
using Tensor3 = xt::xtensor<float, 3>;  ///< a batch of sequences `[B, T, D]`
using Tensor4 = xt::xtensor<float, 4>;  ///< a batch of heads `[B, H, T, d]`
using Array = xt::xarray<float>;        ///< a tensor of any rank (chapter 1's general tools)
using TokenIds = xt::xtensor<std::int64_t, 2>;  ///< token ids `[B, T]`, each in `[0, V)`
using Shape = std::vector<std::size_t>;         ///< a shape, outermost axis first

/// Thrown by every stub: the exercise named in the message is still to be written.
struct NotImplemented : std::logic_error {
    using std::logic_error::logic_error;
};

/// Bad input: a function received something it cannot work with.
/// The message names the function, what it got and what it expected.
struct InvalidInput : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

/// Bad input of the wrong rank or shape (a mismatched axis, `D % H != 0`, an empty tensor).
struct ShapeError : InvalidInput {
    using InvalidInput::InvalidInput;
};

/// Bad input of the right shape but a wrong value (a token id out of range, a negative position).
struct ValueError : InvalidInput {
    using InvalidInput::InvalidInput;
};

/// A file that cannot be used: missing, truncated, corrupted, of another format or version.
/// The message names the file and what is wrong with it.
struct FileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// A size in a message, e.g. `"T = " + num(T)`: the one spelling of `std::to_string` that every
/// chapter's error messages use.
inline std::string num(std::size_t n) { return std::to_string(n); }

/// n rounded up to a multiple of `to` (> 0): the padded width of a tile or a panel in the fast
/// kernels.
constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

/// Formats a shape as `[2, 4, 8]`.
template <class S>
std::string shape_str(const S& shape) {
    std::ostringstream out;
    out << '[';
    bool first = true;
    for (auto n : shape) {
        out << (first ? "" : ", ") << n;
        first = false;
    }
    out << ']';
    return out.str();
}

/// The most elements one tensor may hold: 2^48 (a petabyte of floats, more than any machine
/// has). A larger count is refused before anything is allocated.
inline constexpr std::size_t kMaxElements = std::size_t(1) << 48;

/// The product of `sizes` (e.g. `{B, T, D}`), checked: raises a ShapeError from `function`
/// when it would exceed kMaxElements or overflow `std::size_t`, naming `what` and the sizes.
/// Every size product that decides an allocation or a loop goes through this helper, so that
/// `causal_mask(SIZE_MAX)` is an error and not a wrapped-around size.
inline std::size_t checked_size(const std::string& function, const char* what,
                                std::initializer_list<std::size_t> sizes) {
    std::size_t product = 1;
    bool too_big = false;
    for (std::size_t n : sizes) {
        if (n != 0 && product > kMaxElements / n) too_big = true;
        if (!too_big) product *= n;
    }
    bool has_zero = false;
    for (std::size_t n : sizes) has_zero = has_zero || n == 0;
    if (too_big && !has_zero) {
        std::string list;
        for (std::size_t n : sizes) list += (list.empty() ? "" : " x ") + std::to_string(n);
        throw ShapeError(function + ": " + what + " = " + list +
                         " is more than 2^48 elements, expected a size that fits in memory");
    }
    return too_big ? 0 : product;
}

/// Appends code point `cp` to `out` as UTF-8 (1 to 4 bytes). `cp` must be a Unicode scalar
/// value (below U+110000 and not a surrogate): the caller checks.
inline void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

/// Builds the message of a stub: which function, which file to open.
inline std::string not_implemented_message(const char* function, const char* file, int line) {
    std::string path = file;
    for (const char* root : {"chapters/", "solutions/"}) {
        auto at = path.rfind(root);
        if (at != std::string::npos) {
            path = path.substr(at);
            break;
        }
    }
    return std::string("wb::") + function + " is not implemented yet: write its body in " + path +
           ":" + std::to_string(line) + " (the chapter's README.md explains the task)";
}

/// Raises a ShapeError from `function` unless `x` has exactly the shape `expected`.
/// `what` names the argument and its axes, e.g. `"x [B, T, D]"`; `why`, when given, says where
/// the expected shape comes from (`"N from x, out from weight"`) and ends the message in
/// parentheses.
template <class E>
void require_shape(const char* function, const char* what, const E& x, const Shape& expected,
                   const std::string& why = "") {
    const Shape got(x.shape().begin(), x.shape().end());
    if (got != expected) {
        throw ShapeError(std::string(function) + ": " + what + " has shape " + shape_str(got) +
                         ", expected " + shape_str(expected) +
                         (why.empty() ? "" : " (" + why + ")"));
    }
}

/// Raises a ShapeError from `function` unless axis `axis` of `x` has size `expected`.
template <class E>
void require_axis(const char* function, const char* what, const E& x, std::size_t axis,
                  std::size_t expected) {
    if (x.dimension() <= axis || x.shape()[axis] != expected) {
        throw ShapeError(std::string(function) + ": " + what + " has shape " +
                         shape_str(x.shape()) + ", expected axis " + std::to_string(axis) +
                         " to be " + std::to_string(expected));
    }
}

/// Raises a ShapeError from `function` if `x` has no elements.
template <class E>
void require_nonempty(const char* function, const char* what, const E& x) {
    if (x.size() == 0) {
        throw ShapeError(std::string(function) + ": " + what + " has shape " +
                         shape_str(x.shape()) + ", expected at least one element");
    }
}

}  // namespace wb

/// Body of every stub: throws wb::NotImplemented naming this function and this file.
#define WB_STUB() \
    throw ::wb::NotImplemented(::wb::not_implemented_message(__func__, __FILE__, __LINE__))
