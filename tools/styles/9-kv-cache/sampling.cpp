// Style answer for chapter 9 (tools/test-styles): the filters ordered by std::sort with an
// explicit (probability, id) comparison instead of a stable sort; the nucleus found by
// counting how many ranks fall short of top_p; checks in another valid order (the logits
// before the options) with messages worded unlike the reference but naming each fact
// sampling.hpp promises. It exists because it is a correct answer: every check of chapter 9
// must accept it.
#include "9-kv-cache/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>

#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {
namespace {

using std::to_string;

std::string fmt(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    return buf;
}

// Logits: nonempty, no NaN / +inf, not all -inf.
void check_logits(const char* fn, const Vec<float>& z) {
    if (z.size() == 0) {
        throw ShapeError(std::string(fn) + ": no logits (shape [0]); need at least one token");
    }
    bool any_finite = false;
    for (std::size_t i = 0; i < z.size(); ++i) {
        const float x = z(i);
        if (std::isnan(x) || x == std::numeric_limits<float>::infinity()) {
            throw ValueError(std::string(fn) + ": logit " + to_string(i) + " is " + fmt(x) +
                             ", which is not allowed (NaN and +inf are rejected)");
        }
        any_finite = any_finite || std::isfinite(x);
    }
    if (!any_finite) {
        throw ValueError(std::string(fn) + ": every one of the " + to_string(z.size()) +
                         " logits is -inf (logit 0 = " + fmt(z(0)) +
                         "); at least one must be finite");
    }
}

void check_options(const char* fn, const SamplingOptions& o) {
    if (!(o.temperature > 0.0f) || !std::isfinite(o.temperature)) {
        throw ValueError(std::string(fn) + ": temperature = " + fmt(o.temperature) +
                         " is invalid, it must be finite and > 0");
    }
    if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) {
        throw ValueError(std::string(fn) + ": top_p = " + fmt(o.top_p) +
                         " is invalid, it must lie in (0, 1]");
    }
}

// Ids by decreasing probability, the lower id first among equals.
std::vector<std::size_t> ranked(const std::vector<double>& p) {
    std::vector<std::size_t> ids(p.size());
    std::iota(ids.begin(), ids.end(), std::size_t{0});
    std::sort(ids.begin(), ids.end(),
              [&](std::size_t a, std::size_t b) { return p[a] != p[b] ? p[a] > p[b] : a < b; });
    return ids;
}

void normalise(std::vector<double>& p) {
    const double s = std::accumulate(p.begin(), p.end(), 0.0);
    for (double& x : p) x /= s;
}

std::vector<double> distribution(const char* fn, const Vec<float>& z, const SamplingOptions& o) {
    check_logits(fn, z);
    check_options(fn, o);
    const std::size_t V = z.size();
    const double tau = o.temperature;
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < V; ++i) top = std::max(top, static_cast<double>(z(i)) / tau);
    std::vector<double> p(V);
    for (std::size_t i = 0; i < V; ++i) p[i] = std::exp(static_cast<double>(z(i)) / tau - top);
    normalise(p);

    if (o.top_k > 0 && o.top_k < V) {
        const std::vector<std::size_t> order = ranked(p);
        for (std::size_t r = o.top_k; r < V; ++r) p[order[r]] = 0.0;
        normalise(p);
    }
    if (o.top_p < 1.0f) {
        const std::vector<std::size_t> order = ranked(p);
        const double target = o.top_p;
        // The nucleus: every rank whose preceding mass is still below top_p.
        double before = 0.0;
        std::size_t r = 0;
        for (; r < V; ++r) {
            if (before >= target) break;
            before += p[order[r]];
        }
        for (; r < V; ++r) p[order[r]] = 0.0;
        normalise(p);
    }
    return p;
}

}  // namespace

std::vector<float> sampling_distribution(const Vec<float>& logits, const SamplingOptions& options) {
    const std::vector<double> p = distribution("wb::sampling_distribution", logits, options);
    return std::vector<float>(p.begin(), p.end());
}

std::int64_t greedy(const Vec<float>& logits) {
    check_logits("wb::greedy", logits);
    const auto it = std::max_element(logits.begin(), logits.end());
    return static_cast<std::int64_t>(std::distance(logits.begin(), it));
}

std::int64_t sample(const Vec<float>& logits, const SamplingOptions& options,
                    std::mt19937_64& rng) {
    const std::vector<double> p = distribution("wb::sample", logits, options);
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    double cumulative = 0.0;
    std::int64_t last = -1;
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (p[i] == 0.0) continue;
        cumulative += p[i];
        last = static_cast<std::int64_t>(i);
        if (cumulative > u) return last;
    }
    return last;
}

std::vector<std::int64_t> generate(const GptParams<float>& params, const GptConfig& config,
                                   const std::vector<std::int64_t>& prompt,
                                   std::size_t max_new_tokens, const SamplingOptions& options,
                                   std::uint64_t seed, bool use_greedy) {
    const char* fn = "wb::generate";
    if (prompt.empty()) throw ShapeError(std::string(fn) + ": the prompt is empty (0 tokens)");
    check_options(fn, options);
    const std::size_t T = prompt.size();
    if (T > config.T_max || max_new_tokens > config.T_max - T) {
        throw ValueError(std::string(fn) + ": a prompt of " + to_string(T) + " tokens plus " +
                         to_string(max_new_tokens) +
                         " new ones does not fit in T_max = " + to_string(config.T_max));
    }
    for (std::size_t t = 0; t < T; ++t) {
        if (prompt[t] < 0 || static_cast<std::size_t>(prompt[t]) >= config.V) {
            throw ValueError(std::string(fn) + ": prompt token " + to_string(t) + " has id " +
                             to_string(prompt[t]) +
                             ", outside [0, V) with V = " + to_string(config.V));
        }
    }
    std::vector<std::int64_t> out(prompt);
    if (max_new_tokens == 0) return out;

    std::mt19937_64 rng(seed);
    KvCache cache = make_kv_cache(config, 1);
    TokenIds ids = TokenIds::from_shape({1, T});
    std::copy(prompt.begin(), prompt.end(), ids.begin());
    Mat<float> logits = prefill(params, config, ids, cache);
    out.reserve(T + max_new_tokens);
    for (std::size_t step = 0;; ++step) {
        const Vec<float> row = xt::row(logits, 0);
        const std::int64_t next = use_greedy ? greedy(row) : sample(row, options, rng);
        out.push_back(next);
        if (step + 1 == max_new_tokens) break;
        logits = decode_step(params, config, {next}, cache);
    }
    return out;
}

}  // namespace WB_IMPL
}  // namespace wb
