// Chapter 2 — reference: GPT-2's byte-level BPE (spec in chapters/2-embedding/gpt2.hpp).
#include "2-embedding/gpt2.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

namespace {

void append_utf8(std::string& out, char32_t cp) {
    // GPT-2's characters are all below U+0800: one or two bytes.
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// The byte of each of GPT-2's characters (index: the code point, up to U+0143).
std::vector<int> unicode_to_byte() {
    const std::vector<char32_t> map = gpt2_bytes_to_unicode();
    std::vector<int> back(*std::max_element(map.begin(), map.end()) + 1, -1);
    for (int b = 0; b < 256; ++b) back[map[b]] = b;
    return back;
}

}  // namespace

std::vector<char32_t> gpt2_bytes_to_unicode() {
    std::vector<char32_t> map(256);
    char32_t next = 0x100;  // the characters given, in turn, to the bytes that are not printable
    for (int b = 0; b < 256; ++b) {
        const bool printable =
            (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        map[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return map;
}

std::vector<std::string> gpt2_bpe(const std::string& piece, const Gpt2Vocab& vocab) {
    static const std::vector<char32_t> map = gpt2_bytes_to_unicode();
    std::vector<std::string> word;
    word.reserve(piece.size());
    for (const char ch : piece) {
        std::string symbol;
        append_utf8(symbol, map[static_cast<unsigned char>(ch)]);
        word.push_back(std::move(symbol));
    }
    while (word.size() > 1) {
        // The adjacent pair of lowest rank.
        std::size_t best_rank = std::numeric_limits<std::size_t>::max();
        std::size_t best = 0;
        for (std::size_t i = 0; i + 1 < word.size(); ++i) {
            const auto found = vocab.merge_rank.find(word[i] + " " + word[i + 1]);
            if (found != vocab.merge_rank.end() && found->second < best_rank) {
                best_rank = found->second;
                best = i;
            }
        }
        if (best_rank == std::numeric_limits<std::size_t>::max()) break;
        // Every occurrence of that pair, left to right, never overlapping.
        const std::string left = word[best];
        const std::string right = word[best + 1];
        std::vector<std::string> next;
        next.reserve(word.size());
        for (std::size_t i = 0; i < word.size();) {
            if (i + 1 < word.size() && word[i] == left && word[i + 1] == right) {
                next.push_back(left + right);
                i += 2;
            } else {
                next.push_back(word[i]);
                i += 1;
            }
        }
        word.swap(next);
    }
    return word;
}

std::vector<std::int64_t> gpt2_encode(const std::string& text, const Gpt2Vocab& vocab) {
    std::vector<std::int64_t> ids;
    for (const std::string& piece : gpt2_pretokenize(text)) {
        for (const std::string& symbol : gpt2_bpe(piece, vocab)) {
            const auto found = vocab.encoder.find(symbol);
            if (found == vocab.encoder.end()) {
                throw ValueError("wb::gpt2_encode: the symbol \"" + symbol +
                                 "\" has no id in the vocabulary's encoder; expected every "
                                 "symbol of a merged piece to be a token");
            }
            ids.push_back(found->second);
        }
    }
    return ids;
}

std::string gpt2_decode(const std::vector<std::int64_t>& ids, const Gpt2Vocab& vocab) {
    static const std::vector<int> back = unicode_to_byte();
    const auto V = static_cast<std::int64_t>(vocab.tokens.size());
    std::string bytes;
    for (std::size_t t = 0; t < ids.size(); ++t) {
        const std::int64_t id = ids[t];
        if (id < 0 || id >= V) {
            throw ValueError("wb::gpt2_decode: id " + std::to_string(id) + " at position " +
                             num(t) + " is outside [0, " + std::to_string(V) + ")");
        }
        const std::string& token = vocab.tokens[static_cast<std::size_t>(id)];
        // The token's characters, one or two bytes of UTF-8 each, back to the bytes they stand for.
        for (std::size_t i = 0; i < token.size();) {
            const auto lead = static_cast<unsigned char>(token[i]);
            char32_t cp = lead;
            std::size_t width = 1;
            if (lead >= 0xC0 && i + 1 < token.size()) {
                cp = static_cast<char32_t>(((lead & 0x1F) << 6) |
                                           (static_cast<unsigned char>(token[i + 1]) & 0x3F));
                width = 2;
            }
            if (cp >= back.size() || back[cp] < 0) {
                throw ValueError("wb::gpt2_decode: the token of id " + std::to_string(id) +
                                 " at position " + num(t) +
                                 " holds a character that stands for no byte");
            }
            bytes += static_cast<char>(back[cp]);
            i += width;
        }
    }
    return bytes;
}

}  // namespace WB_IMPL
}  // namespace wb
