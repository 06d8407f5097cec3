// Test support shared by every chapter's checks.
//
// A failing check must tell the student three things: what was expected, what came out, and
// the likely mistake. These helpers do that for whole tensors:
//
//   WB_CHECK_SHAPE(y, (wb::Shape{2, 4, 8}), "split_heads must give [B, H, T, d]");
//   WB_CHECK_CLOSE(y, expected, 1e-5, "did you subtract the row maximum?");
//   WB_CHECK_THROWS(wb::ShapeError, wb::split_heads(x, 3), "hint", "split_heads", "[2, 4, 8]");
//
// WB_CHECK_THROWS requires the exact exception type (a stub's wb::NotImplemented never
// satisfies it) and a message that names every fact listed after the hint (see
// message_names: any reasonable notation of the same numbers and names is accepted). A
// function's name ("wb::last_token") must stand whole, so a message of "wb::last_token_keep"
// does not name it; "wb::kv_cache_*" accepts any function whose name starts so, where the
// header lets the message name one of several.
//
// The facts are what `tools/workbook messages` reads: each a string literal (or literals joined
// with `+` to values the check computes, e.g. "truncated at byte " + std::to_string(n)), the
// call written inside the macro. Ask only for what the function's @throws states: its name,
// the offending values, the expectation. Catch's CHECK_THROWS_WITH / CHECK_THROWS_MATCHES with
// Contains, Equals, StartsWith, EndsWith, Message or Matches are read too; a message read any
// other way (e.what(), message_names called directly) is flagged, as the tool cannot see what
// it asks. A TEST_CASE names the header clauses it proves with tags [c:<function>.<name>]
// (`tools/workbook contract`).
#pragma once

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>
#include "catch.hpp"

#include "workbook/core.hpp"

namespace wbtest {

/// A flattened copy of a tensor in row-major order, with its shape.
struct Flat {
    wb::Shape shape;
    std::vector<double> values;
};

template <class E>
Flat flatten(const E& e) {
    Flat f;
    f.shape.assign(e.shape().begin(), e.shape().end());
    f.values.reserve(e.size());
    for (const auto& v : e) f.values.push_back(static_cast<double>(v));
    return f;
}

/// Empty when `actual` matches `expected` within `atol + rtol·|expected|` everywhere,
/// otherwise a report naming the worst index, both values and the hint.
std::optional<std::string> compare(const Flat& actual, const Flat& expected, double atol,
                                   double rtol, const std::string& hint);

/// Empty when the shapes agree, otherwise a report.
std::optional<std::string> compare_shape(const wb::Shape& actual, const wb::Shape& expected,
                                         const std::string& hint);

/// Empty when `message` names every fact of `parts`, otherwise a report. A fact is named when
/// the message contains it as written, or in another reasonable notation: its bracketed numbers
/// in the same order ("[2, 4, 8]" by "(2, 4, 8)" or "B = 2, T = 4, D = 8"), its other numbers
/// anywhere, its names of two letters or more (a plural "s" aside); function names as written.
std::optional<std::string> message_names(const std::string& message,
                                         const std::vector<std::string>& parts,
                                         const std::string& hint);

/// Seeded standard-normal tensor of any shape, the `torch.randn` of the checks.
template <class T>
T randn(const typename T::shape_type& shape, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    T t(shape);
    for (auto& v : t) v = normal(gen);
    return t;
}

/// Index string `[1, 2, 0]` of the flat position `k` in a row-major tensor of `shape`.
std::string index_str(const wb::Shape& shape, std::size_t k);

/// True when no element of `e` is NaN or ±infinity (a softmax of a fully masked row, an exp
/// that overflowed).
template <class E>
bool all_finite(const E& e) {
    for (auto v : e)
        if (!std::isfinite(static_cast<double>(v))) return false;
    return true;
}

/// The shape of any xtensor expression as a wb::Shape.
template <class E>
wb::Shape shape_of(const E& e) {
    return wb::Shape(e.shape().begin(), e.shape().end());
}

}  // namespace wbtest

// Each macro reports at the line of the check that uses it.
#define WB_REPORT(failure)                        \
    do {                                          \
        if (const auto wb_failure_ = (failure)) { \
            FAIL(*wb_failure_);                   \
        } else {                                  \
            SUCCEED();                            \
        }                                         \
    } while (false)

#define WB_CHECK_SHAPE(actual, expected_shape, hint) \
    WB_REPORT(::wbtest::compare_shape(::wbtest::shape_of(actual), expected_shape, hint))

#define WB_CHECK_CLOSE(actual, expected, tol, hint) \
    WB_REPORT(                                      \
        ::wbtest::compare(::wbtest::flatten(actual), ::wbtest::flatten(expected), tol, tol, hint))

// Runs `expr`; it must throw `type` whose message names every string listed after `hint`.
#define WB_CHECK_THROWS(type, expr, hint, ...)                                                     \
    do {                                                                                           \
        try {                                                                                      \
            (void)(expr);                                                                          \
            FAIL("expected " #type " from `" #expr "`, but nothing was thrown\nhint: " << (hint)); \
        } catch (const type& wb_error_) {                                                          \
            WB_REPORT(::wbtest::message_names(wb_error_.what(), {__VA_ARGS__}, hint));             \
        } catch (const ::wb::NotImplemented&) {                                                    \
            throw; /* a stub: reported as every stub is */                                         \
        } catch (const std::exception& wb_other_) {                                                \
            FAIL("expected " #type " from `" #expr "`, but it threw another exception: "           \
                 << wb_other_.what() << "\nhint: " << (hint));                                     \
        }                                                                                          \
    } while (false)
