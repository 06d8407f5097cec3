#include "check.hpp"
#include "minigpt/explain.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"

// Checks of the data behind `minigpt explain`: the attention weights it reports equal the ones
// recomputed here from the model's own projections (softmax of q·kᵀ / √d under the causal mask),
// the logits equal chapter 8's gpt_logits, the greedy choices chapter 9's greedy, and the JSON
// holds exactly those numbers. tools/check-explain checks the page itself in a browser.

namespace {

using wb::ValueError;
using wb::minigpt::Explanation;
using wb::minigpt::Model;

Model tiny_model() {
    Model m;
    m.tokenizer = wb::minigpt::Tokenizer::from_text("abcd\n");
    m.config = {m.tokenizer.size(), 6, 8, 2, 2};  // V = 5, T_max = 6, D = 8, H = 2, L = 2
    m.params = wb::init_gpt<float>(m.config, 7);
    // Larger query and key weights than the initialisation's, so the weights are far from uniform.
    for (auto& b : m.params.blocks) {
        b.w_q *= 8.0f;
        b.w_k *= 8.0f;
    }
    m.step = 3;
    return m;
}

// The numbers of the JSON array that follows `"key":`, in order (null read as NaN).
std::vector<double> json_numbers(const std::string& json, const std::string& key) {
    std::size_t i = json.find("\"" + key + "\":");
    REQUIRE(i != std::string::npos);
    i = json.find('[', i);
    std::vector<double> out;
    int depth = 0;
    do {
        const char c = json[i];
        if (c == '[') {
            ++depth, ++i;
        } else if (c == ']') {
            --depth, ++i;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            char* end = nullptr;
            out.push_back(std::strtod(json.c_str() + i, &end));
            i = std::size_t(end - json.c_str());
        } else if (json.compare(i, 4, "null") == 0) {
            out.push_back(NAN);
            i += 4;
        } else {
            ++i;
        }
    } while (depth > 0 && i < json.size());
    return out;
}

}  // namespace

TEST_CASE(
    "explain: attention weights are softmax(q k^T / sqrt(d)) of the model, masked after the "
    "query") {
    const Model m = tiny_model();
    const std::string prompt = "abca\nd";
    const Explanation e = wb::minigpt::explain(m, prompt);
    const std::size_t T = 6, D = 8, H = 2, d = D / H;
    REQUIRE(e.ids == m.tokenizer.encode(prompt));
    REQUIRE(e.attention.size() == 2);

    // The block inputs (LN1 outputs) from chapter 8's forward; q, k and the softmax here.
    wb::TokenIds inputs = wb::TokenIds::from_shape({1, T});
    wb::TokenIds targets = wb::TokenIds::from_shape({1, T});
    for (std::size_t t = 0; t < T; ++t) inputs(0, t) = e.ids[t], targets(0, t) = -1;
    wb::GptCache<float> cache;
    (void)wb::gpt_forward(m.params, m.config, inputs, targets, -1, cache);
    double largest = 0.0;
    for (std::size_t l = 0; l < 2; ++l) {
        const auto& b = m.params.blocks[l];
        const auto& x = cache.blocks[l].ln1;  // [T, D]
        auto project = [&](const wb::Mat<float>& w, const wb::Vec<float>& bias, std::size_t t,
                           std::size_t j) {
            double s = bias(j);
            for (std::size_t i = 0; i < D; ++i) s += double(x(t, i)) * w(j, i);
            return s;
        };
        REQUIRE(e.attention[l].size() == H);
        for (std::size_t h = 0; h < H; ++h) {
            REQUIRE(e.attention[l][h].size() == T * T);
            for (std::size_t q = 0; q < T; ++q) {
                std::vector<double> score(T, 0.0);
                double top = -INFINITY, total = 0.0;
                for (std::size_t k = 0; k <= q; ++k) {
                    for (std::size_t j = h * d; j < (h + 1) * d; ++j) {
                        score[k] += project(b.w_q, b.b_q, q, j) * project(b.w_k, b.b_k, k, j);
                    }
                    score[k] /= std::sqrt(double(d));
                    top = std::max(top, score[k]);
                }
                for (std::size_t k = 0; k <= q; ++k) total += std::exp(score[k] - top);
                for (std::size_t k = 0; k < T; ++k) {
                    const float got = e.attention[l][h][q * T + k];
                    if (k > q) {
                        INFO("layer " << l << " head " << h << " query " << q << " key " << k);
                        CHECK(got == 0.0f);  // the future is masked: exactly 0
                    } else {
                        const double want = std::exp(score[k] - top) / total;
                        INFO("layer " << l << " head " << h << " query " << q << " key " << k);
                        CHECK(std::abs(got - want) < 1e-5);
                        largest = std::max(largest, want);
                    }
                }
            }
        }
    }
    CHECK(largest > 0.6);  // the test model's weights are not all uniform
}

TEST_CASE(
    "explain: logits are chapter 8's, greedy is chapter 9's, and the JSON holds them exactly") {
    const Model m = tiny_model();
    const Explanation e = wb::minigpt::explain(m, "dcba");
    const std::size_t T = 4, V = 5;
    wb::TokenIds inputs = wb::TokenIds::from_shape({1, T});
    for (std::size_t t = 0; t < T; ++t) inputs(0, t) = e.ids[t];
    const wb::Mat<float> logits = wb::gpt_logits(m.params, m.config, inputs);
    REQUIRE(e.logits.size() == T);
    for (std::size_t t = 0; t < T; ++t) {
        wb::Vec<float> row = wb::Vec<float>::from_shape({V});
        for (std::size_t v = 0; v < V; ++v) {
            row(v) = logits(t, v);
            CHECK(std::abs(e.logits[t][v] - logits(t, v)) < 1e-5);
        }
        CHECK(e.greedy[t] == wb::greedy(row));
    }

    const std::string json = wb::minigpt::explanation_json(e);
    const std::vector<double> att = json_numbers(json, "attention");
    std::vector<double> want;
    for (const auto& layer : e.attention) {
        for (const auto& head : layer) want.insert(want.end(), head.begin(), head.end());
    }
    REQUIRE(att.size() == want.size());
    for (std::size_t i = 0; i < att.size(); ++i) CHECK(float(att[i]) == float(want[i]));
    const std::vector<double> z = json_numbers(json, "logits");
    REQUIRE(z.size() == T * V);
    for (std::size_t i = 0; i < z.size(); ++i) CHECK(float(z[i]) == e.logits[i / V][i % V]);
    CHECK(json.find("\"text\":\"\\u000a\"") == std::string::npos);    // no newline in "dcba"
    CHECK(json.find("\"vocab\":[\"\\u000a\"") != std::string::npos);  // escaped, id 0

    const std::string html = wb::minigpt::explanation_html(e);
    CHECK(html.find("Attention weights are not an explanation") != std::string::npos);
    CHECK(html.find("src=") == std::string::npos);   // nothing to fetch: no script, image
    CHECK(html.find("<link") == std::string::npos);  // or style sheet from elsewhere
}

TEST_CASE("explain: reads the last T_max characters and refuses an empty or unknown prompt") {
    const Model m = tiny_model();
    const Explanation e = wb::minigpt::explain(m, "aaaaabcd\n");
    CHECK(e.prompt == "aabcd\n");
    CHECK(e.ids.size() == 6);
    WB_CHECK_THROWS(ValueError, wb::minigpt::explain(m, ""), "an empty prompt has nothing to read",
                    "--prompt", "empty");
    WB_CHECK_THROWS(ValueError, wb::minigpt::explain(m, "abz"), "z is not in the vocabulary",
                    "--prompt", "z");
}
