#include "check.hpp"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <regex>
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
        << " elements (shape " << wb::shape_str(actual.shape) << ", tolerance " << atol << " + "
        << rtol << "*|expected|)\n"
        << "  first mismatch at " << index_str(actual.shape, first) << ": expected "
        << expected.values[first] << ", actual " << actual.values[first] << "\n"
        << "  max |actual - expected| = " << worst_diff << " at " << index_str(actual.shape, worst)
        << ": expected " << expected.values[worst] << ", actual " << actual.values[worst]
        << "\nhint: " << hint;
    return out.str();
}

namespace {

// The numbers of `text` in order, as written ("2", "0.5", "-1").
std::vector<std::string> numbers_in(const std::string& text) {
    static const std::regex number(R"(-?\d+(?:\.\d+)?)");
    std::vector<std::string> out;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), number);
         it != std::sregex_iterator(); ++it) {
        out.push_back(it->str());
    }
    return out;
}

// Two numbers as written are the same number: integers when they are written alike, and when
// either has a fraction, when their values are equal ("0.5" is "0.500000" of std::to_string,
// "1" is "1.000000").
bool same_number(const std::string& a, const std::string& b) {
    if (a == b) return true;
    const bool fraction = a.find('.') != std::string::npos || b.find('.') != std::string::npos;
    return fraction && std::stod(a) == std::stod(b);
}

bool contains_run(const std::vector<std::string>& haystack, const std::vector<std::string>& run) {
    if (run.empty()) return true;
    return std::search(haystack.begin(), haystack.end(), run.begin(), run.end(), same_number) !=
           haystack.end();
}

// True when `message` states the fact `part` in another reasonable notation: each bracketed
// group of numbers in `part` ("[2, 4, 8]", "[0, 5)", "(2)") appears as the same numbers in the
// same order in `message` ("[2, 4, 8]", "(2, 4, 8)", "2x4x8", "B = 2, T = 4, D = 8"), every other
// number appears somewhere (a number with a fraction by its value: "0.5" is named by "0.500000"),
// and every name of two letters or more appears (a plural "s" aside: "ids[1, 2] = 5" is named by
// "id 5 at [1, 2]"). Function names (with "::") must appear as written.
bool names_in_other_notation(const std::string& message, const std::string& part) {
    static const std::regex group(
        R"([\[(\{]\s*-?\d+(?:\.\d+)?(?:\s*,\s*-?\d+(?:\.\d+)?)*\s*[\])\}])");
    static const std::regex word(R"([A-Za-z_][A-Za-z_0-9:]*)");
    const std::vector<std::string> said = numbers_in(message);
    std::string rest = part;
    std::smatch m;
    while (std::regex_search(rest, m, group)) {
        if (!contains_run(said, numbers_in(m.str()))) return false;
        rest = m.prefix().str() + " " + m.suffix().str();
    }
    for (const std::string& n : numbers_in(rest)) {
        const auto same = [&n](const std::string& m) { return same_number(m, n); };
        if (std::find_if(said.begin(), said.end(), same) == said.end()) return false;
    }
    for (auto it = std::sregex_iterator(rest.begin(), rest.end(), word);
         it != std::sregex_iterator(); ++it) {
        std::string w = it->str();
        if (w.size() < 2) continue;
        if (message.find(w) != std::string::npos) continue;
        if (w.find("::") == std::string::npos && w.back() == 's' &&
            message.find(w.substr(0, w.size() - 1)) != std::string::npos) {
            continue;
        }
        return false;
    }
    return true;
}

// Whether `message` holds `name` as a whole name: not as the start of a longer one
// ("wb::last_token" is not named by "wb::last_token_keep: ...").
bool names_whole(const std::string& message, const std::string& name) {
    for (auto at = message.find(name); at != std::string::npos; at = message.find(name, at + 1)) {
        const std::size_t end = at + name.size();
        const bool longer =
            end < message.size() &&
            (std::isalnum(static_cast<unsigned char>(message[end])) != 0 || message[end] == '_');
        if (!longer) return true;
    }
    return false;
}

}  // namespace

std::optional<std::string> message_names(const std::string& message,
                                         const std::vector<std::string>& parts,
                                         const std::string& hint) {
    for (const auto& part : parts) {
        // A function's name ("wb::linear") must stand whole: a message of another function
        // whose name starts with it ("wb::linear_backward") names the wrong one.
        // "wb::kv_cache_*" (a trailing '*') asks for any function whose name starts so, where
        // the header lets the message name one of several.
        if (part.rfind("wb::", 0) == 0 && part.size() > 4 && part.back() == '*') {
            if (message.find(part.substr(0, part.size() - 1)) == std::string::npos) {
                return "the exception was thrown, but its message should name a function " + part +
                       "\n  message: " + message + "\nhint: " + hint;
            }
            continue;
        }
        // A number alone ("3") must be one of the message's numbers, not part of one ("300").
        static const std::regex lone_number(R"(-?\d+(?:\.\d+)?)");
        if (std::regex_match(part, lone_number)) {
            const std::vector<std::string> said = numbers_in(message);
            const auto same = [&part](const std::string& n) { return same_number(n, part); };
            if (std::find_if(said.begin(), said.end(), same) == said.end()) {
                return "the exception was thrown, but its message should name the number " + part +
                       " (as a number of its own, not a part of a longer one)\n  message: " +
                       message + "\nhint: " + hint;
            }
            continue;
        }
        if (part.rfind("wb::", 0) == 0 && part.find(' ') == std::string::npos) {
            if (!names_whole(message, part)) {
                return "the exception was thrown, but its message should name the function \"" +
                       part + "\" (as a whole name, not the start of a longer one)\n  message: " +
                       message + "\nhint: " + hint;
            }
            continue;
        }
        if (message.find(part) == std::string::npos && !names_in_other_notation(message, part)) {
            return "the exception was thrown, but its message should name \"" + part +
                   "\" (in this or another notation)\n  message: " + message + "\nhint: " + hint;
        }
    }
    return std::nullopt;
}

}  // namespace wbtest
