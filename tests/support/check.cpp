#include "check.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace wbtest {

std::string index_str(const wb::Shape& shape, std::size_t k) {
    std::vector<std::size_t> index(shape.size());
    for (std::size_t axis = shape.size(); axis-- > 0;) {
        index[axis] = shape[axis] ? k % shape[axis] : 0;
        k = shape[axis] ? k / shape[axis] : 0;
    }
    return wb::shape_str(index);
}

std::optional<std::string> compare_shape(const wb::Shape& actual, const wb::Shape& expected,
                                         const std::string& hint) {
    if (actual == expected) return std::nullopt;
    return "shape differs\n  expected " + wb::shape_str(expected) + "\n  actual   " +
           wb::shape_str(actual) + "\nhint: " + hint;
}

std::optional<std::string> compare(const Flat& actual, const Flat& expected, double atol,
                                   double rtol, const std::string& hint) {
    if (auto bad = compare_shape(actual.shape, expected.shape, hint)) return bad;
    std::size_t worst = 0, first = actual.values.size();
    double worst_excess = 0.0, worst_diff = 0.0;
    for (std::size_t k = 0; k < actual.values.size(); ++k) {
        const double a = actual.values[k], e = expected.values[k];
        const double diff = std::fabs(a - e);
        const double allowed = atol + rtol * std::fabs(e);
        // NaN compares false everywhere: treat it as the worst possible mismatch.
        const bool bad = !(diff <= allowed);
        if (!bad) continue;
        if (first == actual.values.size()) first = k;
        const double excess = std::isnan(diff) ? INFINITY : diff - allowed;
        if (excess > worst_excess || worst_excess == 0.0) {
            worst_excess = excess;
            worst = k;
            worst_diff = diff;
        }
    }
    if (first == actual.values.size()) return std::nullopt;
    std::size_t mismatches = 0;
    for (std::size_t k = 0; k < actual.values.size(); ++k) {
        const double d = std::fabs(actual.values[k] - expected.values[k]);
        if (!(d <= atol + rtol * std::fabs(expected.values[k]))) ++mismatches;
    }
    std::ostringstream out;
    out << std::setprecision(7);
    out << "values differ in " << mismatches << " of " << actual.values.size()
        << " elements (shape " << wb::shape_str(actual.shape) << ", tolerance " << atol
        << " + " << rtol << "*|expected|)\n"
        << "  first mismatch at " << index_str(actual.shape, first) << ": expected "
        << expected.values[first] << ", actual " << actual.values[first] << "\n"
        << "  max |actual - expected| = " << worst_diff << " at " << index_str(actual.shape, worst)
        << ": expected " << expected.values[worst] << ", actual " << actual.values[worst]
        << "\nhint: " << hint;
    return out.str();
}

std::optional<std::string> message_names(const std::string& message,
                                         const std::vector<std::string>& parts,
                                         const std::string& hint) {
    for (const auto& part : parts) {
        if (message.find(part) == std::string::npos) {
            return "the exception was thrown, but its message should name \"" + part +
                   "\"\n  message: " + message + "\nhint: " + hint;
        }
    }
    return std::nullopt;
}

}  // namespace wbtest
