// Saving, loading and sampling a trained mini-GPT.
#include "capstone/minigpt/model_file.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "8-training/checkpoint.hpp"

namespace wb::minigpt {

std::string vocab_path(const std::string& checkpoint_path) { return checkpoint_path + ".vocab"; }

void save_model(const std::string& path, const Model& model) {
    const std::string fn = "wb::minigpt::save_model";
    if (model.config.V != model.tokenizer.size()) {
        throw ValueError(fn + ": config V = " + std::to_string(model.config.V) +
                         ", expected the vocabulary's size " +
                         std::to_string(model.tokenizer.size()));
    }
    const std::string vpath = vocab_path(path);
    const std::string tmp = vpath + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        const std::string data = model.tokenizer.serialize();
        out.write(data.data(), static_cast<std::streamsize>(data.size()));
        out.flush();
        if (!out) {
            std::error_code ec;
            std::filesystem::remove(tmp, ec);
            throw FileError(fn + ": cannot write " + tmp + " (expected a writable directory)");
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, vpath, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        throw FileError(fn + ": cannot rename " + tmp + " to " + vpath + ": " + ec.message());
    }
    save_checkpoint(path, model.config, model.params, nullptr, model.step);
}

Model load_model(const std::string& path) {
    const std::string fn = "wb::minigpt::load_model";
    Checkpoint ckpt = load_checkpoint(path);  // validates the whole file
    const std::string vpath = vocab_path(path);
    std::ifstream in(vpath, std::ios::binary);
    if (!in) {
        throw FileError(fn + ": cannot open " + vpath +
                        " (expected the vocabulary saved beside " + path + ")");
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    Model m;
    try {
        m.tokenizer = Tokenizer::deserialize(buffer.str());
    } catch (const ValueError& e) {
        throw FileError(fn + ": " + vpath + " is not a vocabulary: " + e.what());
    }
    if (m.tokenizer.size() != ckpt.config.V) {
        throw FileError(fn + ": " + vpath + " holds " + std::to_string(m.tokenizer.size()) +
                        " characters, expected V = " + std::to_string(ckpt.config.V) +
                        " of the checkpoint " + path + " (the two files do not belong together)");
    }
    m.config = ckpt.config;
    m.params = std::move(ckpt.params);
    m.step = ckpt.step;
    return m;
}

std::size_t parameter_count(const GptParams<float>& params) {
    std::size_t n = 0;
    for (const auto& r : parameters(params)) n += r.size;
    return n;
}

std::string generate_text(const Model& model, const std::string& prompt,
                          std::size_t max_new_tokens, const SamplingOptions& options,
                          std::uint64_t seed, bool use_greedy) {
    std::vector<std::int64_t> ids = model.tokenizer.encode(prompt);
    if (ids.empty()) {
        // No prompt: start after a newline, as if at the start of a speech.
        std::int64_t start = 0;
        try {
            start = model.tokenizer.encode("\n").front();
        } catch (const ValueError&) {
        }
        ids.push_back(start);
    }
    const std::size_t t_max = model.config.T_max;
    const std::size_t prompt_len = ids.size();
    std::size_t remaining = max_new_tokens;
    for (std::uint64_t piece = 0; remaining > 0; ++piece) {
        // The first piece keeps as much of the prompt as fits beside one new token, later
        // pieces the last T_max / 2 tokens: half the window is context, half is new text.
        const std::size_t keep =
            std::min(ids.size(), piece == 0 ? t_max - 1 : std::max<std::size_t>(1, t_max / 2));
        const std::vector<std::int64_t> context(ids.end() - static_cast<std::ptrdiff_t>(keep),
                                                ids.end());
        const std::size_t n = std::min(remaining, t_max - keep);
        const auto out =
            generate(model.params, model.config, context, n, options, seed + piece, use_greedy);
        ids.insert(ids.end(), out.begin() + static_cast<std::ptrdiff_t>(keep), out.end());
        remaining -= n;
    }
    // An empty prompt returns only the generated text, not the newline it started from.
    const std::size_t skip = prompt.empty() ? prompt_len : 0;
    return model.tokenizer.decode(std::vector<std::int64_t>(
        ids.begin() + static_cast<std::ptrdiff_t>(skip), ids.end()));
}

}  // namespace wb::minigpt
