// "See inside" a trained mini-GPT: the attention weights and next-token choices of chapter 8's
// forward on a prompt, as one self-contained HTML page and JSON (explain.hpp).
#include "minigpt/explain.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"
#include "minigpt/file_io.hpp"

namespace wb::minigpt {

namespace {

// A float with 9 significant digits: it reads back (in C++, Python or JavaScript) as the same
// float. JSON has no infinity or NaN: those become null.
std::string number(float x) {
    if (!std::isfinite(x)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
    return buf;
}

// A JSON string. '<', '>' and '&' are escaped too, so the JSON can sit inside a <script>.
std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

template <class T, class F>
std::string array(const std::vector<T>& items, F&& each) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ',';
        out += each(items[i]);
    }
    return out + "]";
}

// The page around the data (minigpt/explain.html, which the build embeds as one string
// literal); its script draws everything from the JSON put in place of the marker below.
const char* const kPage =
#include "explain_page.inc"
    ;
constexpr std::string_view kDataMarker = "{{data}}";

}  // namespace

Explanation explain(const Model& model, const std::string& prompt) {
    if (prompt.empty()) {
        throw ValueError("--prompt: the prompt is empty, expected at least one character to read");
    }
    std::vector<std::int64_t> ids;
    try {
        ids = model.tokenizer.encode(prompt);
    } catch (const ValueError& e) {
        throw ValueError(std::string("--prompt: ") + e.what());
    }
    if (!model.variant.is_default()) {  // chapter 8's forward would compute another model
        throw ValueError("wb::minigpt::explain: the model was trained with " +
                         variant_changes(model.variant) +
                         ", expected chapter 8's model: explain reads the attention weights "
                         "with chapter 8's gpt_forward, which builds only that one");
    }
    const GptConfig& config = model.config;
    if (ids.size() > config.T_max) ids.erase(ids.begin(), ids.end() - std::ptrdiff_t(config.T_max));
    const std::size_t T = ids.size(), V = config.V;

    Explanation e;
    e.prompt = model.tokenizer.decode(ids);
    e.step = model.step;
    e.config = config;
    e.ids = ids;
    for (std::size_t v = 0; v < V; ++v)
        e.vocab.push_back(model.tokenizer.decode({std::int64_t(v)}));

    // Chapter 8's forward on one sequence; no target is scored (all equal the ignore index).
    TokenIds inputs = TokenIds::from_shape({1, T});
    TokenIds targets = TokenIds::from_shape({1, T});
    for (std::size_t t = 0; t < T; ++t) {
        inputs(0, t) = ids[t];
        targets(0, t) = -1;
    }
    GptCache<float> cache;
    (void)gpt_forward(model.params, config, inputs, targets, -1, cache);

    e.attention.resize(config.L);
    for (std::size_t l = 0; l < config.L; ++l) {
        const Heads<float>& att = cache.blocks[l].att;  // [1, H, T, T]
        e.attention[l].assign(config.H, std::vector<float>(T * T));
        for (std::size_t h = 0; h < config.H; ++h) {
            for (std::size_t q = 0; q < T; ++q) {
                for (std::size_t k = 0; k < T; ++k) e.attention[l][h][q * T + k] = att(0, h, q, k);
            }
        }
    }
    for (std::size_t t = 0; t < T; ++t) {
        Vec<float> row = Vec<float>::from_shape({V});
        for (std::size_t v = 0; v < V; ++v) row(v) = cache.logits(t, v);
        e.logits.emplace_back(row.begin(), row.end());
        e.greedy.push_back(greedy(row));
    }
    return e;
}

std::string explanation_json(const Explanation& e) {
    const std::size_t T = e.ids.size();
    std::string out = "{\"prompt\":" + quoted(e.prompt) + ",\"step\":" + std::to_string(e.step);
    out += ",\"config\":{\"V\":" + std::to_string(e.config.V) +
           ",\"T_max\":" + std::to_string(e.config.T_max) + ",\"D\":" + std::to_string(e.config.D) +
           ",\"H\":" + std::to_string(e.config.H) + ",\"L\":" + std::to_string(e.config.L) +
           ",\"positions\":\"" + positions_name(e.config.positions) + "\"}";
    out += ",\n\"vocab\":" + array(e.vocab, quoted);
    out += ",\n\"tokens\":[";
    for (std::size_t t = 0; t < T; ++t) {
        if (t > 0) out += ',';
        out += "{\"id\":" + std::to_string(e.ids[t]) +
               ",\"text\":" + quoted(e.vocab[std::size_t(e.ids[t])]) + "}";
    }
    out += "],\n\"attention\":[";
    for (std::size_t l = 0; l < e.attention.size(); ++l) {
        out += l > 0 ? ",\n[" : "\n[";
        for (std::size_t h = 0; h < e.attention[l].size(); ++h) {
            out += h > 0 ? ",[" : "[";
            for (std::size_t q = 0; q < T; ++q) {
                out += q > 0 ? ",[" : "[";
                for (std::size_t k = 0; k < T; ++k) {
                    if (k > 0) out += ',';
                    out += number(e.attention[l][h][q * T + k]);
                }
                out += ']';
            }
            out += ']';
        }
        out += ']';
    }
    out += "],\n\"logits\":[";
    for (std::size_t t = 0; t < T; ++t) {
        out += (t > 0 ? ",\n" : "\n") + array(e.logits[t], number);
    }
    out += "],\n\"greedy\":" + array(e.greedy, [](std::int64_t id) { return std::to_string(id); });
    return out + "}\n";
}

std::string explanation_html(const Explanation& e) {
    const std::string_view page = kPage;
    const std::size_t at = page.find(kDataMarker);
    if (at == std::string_view::npos) {  // minigpt/explain.html lost its marker: a build fault
        throw ValueError("wb::minigpt::explanation_html: the embedded page has no " +
                         std::string(kDataMarker) + " marker, expected one where the JSON goes");
    }
    return std::string(page.substr(0, at)) + explanation_json(e) +
           std::string(page.substr(at + kDataMarker.size()));
}

std::string write_explanation(const std::string& html_path, const Explanation& e) {
    const std::string fn = "wb::minigpt::write_explanation";
    std::string json_path = std::filesystem::path(html_path).replace_extension(".json").string();
    if (std::filesystem::path(html_path).filename().empty()) {
        throw ValueError(fn + ": html_path \"" + html_path +
                         "\" names no file, expected a file name such as explain.html");
    }
    if (same_file(html_path, json_path)) {
        throw ValueError(fn + ": html_path " + html_path + " is also where the JSON goes (" +
                         json_path +
                         "), so the JSON would overwrite the page; expected a name "
                         "that does not end in .json, such as explain.html");
    }
    write_file_atomic(fn, html_path, explanation_html(e));
    write_file_atomic(fn, json_path, explanation_json(e));
    return json_path;
}

}  // namespace wb::minigpt
