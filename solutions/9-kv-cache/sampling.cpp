// Chapter 9 — reference implementation: the decoding strategy (§14) and the generation loop
// (§15, §16). The distribution is computed in double and handed back as float.
#include "9-kv-cache/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {

namespace {

void check_logits(const std::string& fn, const Vec<float>& logits) {
    if (logits.size() == 0) {
        throw ShapeError(fn + ": logits [V] has shape " + shape_str(logits.shape()) +
                         ", expected at least one token");
    }
    // A NaN or +inf logit would turn every probability into NaN; -inf is a masked token.
    bool any_finite = false;
    for (std::size_t i = 0; i < logits.size(); ++i) {
        const float z = logits(i);
        if (std::isnan(z) || z == INFINITY) {
            throw ValueError(fn + ": logits[" + std::to_string(i) + "] = " + std::to_string(z) +
                             ", expected a finite score (or -inf for a masked token)");
        }
        any_finite = any_finite || std::isfinite(z);
    }
    if (!any_finite) {
        throw ValueError(fn + ": every one of the " + std::to_string(logits.size()) +
                         " logits is -inf, expected at least one finite score");
    }
}

void check_options(const std::string& fn, const SamplingOptions& o) {
    if (!(o.temperature > 0.0f) || !std::isfinite(o.temperature)) {
        throw ValueError(fn + ": temperature = " + std::to_string(o.temperature) +
                         ", expected a finite temperature > 0 (use greedy for the limit 0)");
    }
    if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) {
        throw ValueError(fn + ": top_p = " + std::to_string(o.top_p) +
                         ", expected top_p in (0, 1]");
    }
}

// Ids sorted from most to least likely; equal probabilities keep the lower id first.
std::vector<std::size_t> by_probability(const std::vector<double>& p) {
    std::vector<std::size_t> order(p.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
    return order;
}

void renormalise(std::vector<double>& p) {
    const double total = std::accumulate(p.begin(), p.end(), 0.0);
    for (double& x : p) x /= total;
}

std::vector<double> distribution(const std::string& fn, const Vec<float>& logits,
                                 const SamplingOptions& o) {
    check_logits(fn, logits);
    check_options(fn, o);
    const std::size_t V = logits.size();

    // 1. Temperature: p = softmax(z / τ), shifted by the maximum for stability.
    const double tau = o.temperature;
    double m = -INFINITY;
    for (std::size_t i = 0; i < V; ++i) m = std::max(m, logits(i) / tau);
    std::vector<double> p(V);  // [V]
    for (std::size_t i = 0; i < V; ++i) p[i] = std::exp(logits(i) / tau - m);
    renormalise(p);

    // 2. Top-k: keep the k largest, in the order of by_probability.
    if (o.top_k > 0 && o.top_k < V) {
        const std::vector<std::size_t> order = by_probability(p);
        for (std::size_t r = o.top_k; r < V; ++r) p[order[r]] = 0.0;
        renormalise(p);
    }

    // 3. Top-p: the shortest prefix of the sorted tokens whose mass reaches top_p. The token
    //    that crosses the threshold is part of the nucleus.
    if (o.top_p < 1.0f) {
        const std::vector<std::size_t> order = by_probability(p);
        double cumulative = 0.0;
        std::size_t keep = 0;
        while (keep < V && cumulative < o.top_p) {
            cumulative += p[order[keep]];
            ++keep;
        }
        for (std::size_t r = keep; r < V; ++r) p[order[r]] = 0.0;
        renormalise(p);
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
    std::size_t best = 0;
    for (std::size_t i = 1; i < logits.size(); ++i) {
        if (logits(i) > logits(best)) best = i;  // strict: the first maximum wins ties
    }
    return static_cast<std::int64_t>(best);
}

std::int64_t sample(const Vec<float>& logits, const SamplingOptions& options,
                    std::mt19937_64& rng) {
    const std::vector<double> p = distribution("wb::sample", logits, options);
    // Inverse CDF: the first id whose cumulative probability exceeds u.
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    double cumulative = 0.0;
    std::size_t last_possible = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (p[i] == 0.0) continue;  // filtered out: never drawn
        cumulative += p[i];
        last_possible = i;
        if (u < cumulative) return static_cast<std::int64_t>(i);
    }
    return static_cast<std::int64_t>(last_possible);  // u above a total rounded below 1
}

std::vector<std::int64_t> generate(const GptParams<float>& params, const GptConfig& config,
                                   const std::vector<std::int64_t>& prompt,
                                   std::size_t max_new_tokens, const SamplingOptions& options,
                                   std::uint64_t seed, bool use_greedy) {
    const std::string fn = "wb::generate";
    if (prompt.empty()) {
        throw ShapeError(fn + ": the prompt is empty, expected at least one token");
    }
    // Compared without the sum, which would wrap around for max_new_tokens near SIZE_MAX.
    if (prompt.size() > config.T_max || max_new_tokens > config.T_max - prompt.size()) {
        throw ValueError(fn + ": prompt of " + std::to_string(prompt.size()) + " tokens + " +
                         std::to_string(max_new_tokens) +
                         " new tokens exceeds T_max = " + std::to_string(config.T_max));
    }
    for (std::size_t t = 0; t < prompt.size(); ++t) {
        if (prompt[t] < 0 || static_cast<std::size_t>(prompt[t]) >= config.V) {
            throw ValueError(fn + ": prompt[" + std::to_string(t) +
                             "] = " + std::to_string(prompt[t]) + " is outside [0, V) = [0, " +
                             std::to_string(config.V) + ")");
        }
    }
    check_options(fn, options);

    std::vector<std::int64_t> tokens = prompt;
    if (max_new_tokens == 0) return tokens;

    std::mt19937_64 rng(seed);
    KvCache cache = make_kv_cache(config, 1);
    TokenIds ids = TokenIds::from_shape({1, prompt.size()});  // [1, T]
    std::copy(prompt.begin(), prompt.end(), ids.begin());

    Mat<float> logits = prefill(params, config, ids, cache);  // [1, V]: the whole prompt once
    for (std::size_t step = 0; step < max_new_tokens; ++step) {
        const Vec<float> row = xt::row(logits, 0);  // [V]
        const std::int64_t next = use_greedy ? greedy(row) : sample(row, options, rng);
        tokens.push_back(next);
        if (step + 1 < max_new_tokens) {
            logits = decode_step(params, config, {next}, cache);  // only the new token runs
        }
    }
    return tokens;
}

}  // namespace WB_IMPL
}  // namespace wb
