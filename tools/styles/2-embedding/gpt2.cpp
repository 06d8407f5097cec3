// Style answer for chapter 2's GPT-2 tokenizer (tools/test-styles): the byte map built as
// GPT-2's Python builds it (the printable bytes listed first, then the others appended),
// merging by splicing one pair at a time in a std::vector, decoding through a table from each
// character's UTF-8 text to its byte, and messages worded unlike the reference but naming each
// fact gpt2.hpp promises. It exists because it is a correct answer: every check of chapter 2
// must accept it.
#include "2-embedding/gpt2.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

namespace {

std::string utf8_of(char32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
    } else {  // every character of the map is below U+0800
        s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return s;
}

const std::map<std::string, unsigned char>& byte_of_character() {
    static const std::map<std::string, unsigned char> table = [] {
        std::map<std::string, unsigned char> t;
        const std::vector<char32_t> map = gpt2_bytes_to_unicode();
        for (int b = 0; b < 256; ++b) t[utf8_of(map[b])] = static_cast<unsigned char>(b);
        return t;
    }();
    return table;
}

}  // namespace

std::vector<char32_t> gpt2_bytes_to_unicode() {
    std::vector<int> bs;
    for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
    for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
    for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
    std::vector<char32_t> cs(bs.begin(), bs.end());
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        bool listed = false;
        for (const int x : bs) listed = listed || x == b;
        if (!listed) {
            bs.push_back(b);
            cs.push_back(static_cast<char32_t>(256 + n));
            ++n;
        }
    }
    std::vector<char32_t> out(256);
    for (std::size_t i = 0; i < bs.size(); ++i) out[static_cast<std::size_t>(bs[i])] = cs[i];
    return out;
}

std::vector<std::string> gpt2_bpe(const std::string& piece, const Gpt2Vocab& vocab) {
    const std::vector<char32_t> map = gpt2_bytes_to_unicode();
    std::vector<std::string> symbols;
    for (const unsigned char byte : piece) symbols.push_back(utf8_of(map[byte]));
    for (;;) {
        bool any = false;
        std::size_t lowest = 0;
        std::string pair;
        for (std::size_t i = 1; i < symbols.size(); ++i) {
            const std::string candidate = symbols[i - 1] + " " + symbols[i];
            const auto it = vocab.merge_rank.find(candidate);
            if (it == vocab.merge_rank.end()) continue;
            if (!any || it->second < lowest) {
                any = true;
                lowest = it->second;
                pair = candidate;
            }
        }
        if (!any) return symbols;
        const std::string first = pair.substr(0, pair.find(' '));
        const std::string second = pair.substr(pair.find(' ') + 1);
        std::size_t i = 0;
        while (i + 1 < symbols.size()) {
            if (symbols[i] == first && symbols[i + 1] == second) {
                symbols[i] += symbols[i + 1];
                symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(i) + 1);
            }
            ++i;
        }
    }
}

std::vector<std::int64_t> gpt2_encode(const std::string& text, const Gpt2Vocab& vocab) {
    std::vector<std::int64_t> out;
    const std::vector<std::string> pieces = gpt2_pretokenize(text);
    for (const std::string& piece : pieces) {
        const std::vector<std::string> merged = gpt2_bpe(piece, vocab);
        for (const std::string& s : merged) {
            if (vocab.encoder.count(s) == 0) {
                throw ValueError("wb::gpt2_encode: no token for symbol '" + s + "'");
            }
            out.push_back(vocab.encoder.at(s));
        }
    }
    return out;
}

std::string gpt2_decode(const std::vector<std::int64_t>& ids, const Gpt2Vocab& vocab) {
    const std::map<std::string, unsigned char>& table = byte_of_character();
    const std::size_t V = vocab.tokens.size();
    std::string out;
    for (std::size_t pos = 0; pos < ids.size(); ++pos) {
        if (ids[pos] < 0 || static_cast<std::size_t>(ids[pos]) >= V) {
            throw ValueError("wb::gpt2_decode: position " + std::to_string(pos) + " has id " +
                             std::to_string(ids[pos]) + ", expected an id in [0, " +
                             std::to_string(V) + ")");
        }
        const std::string& token = vocab.tokens[static_cast<std::size_t>(ids[pos])];
        std::size_t i = 0;
        while (i < token.size()) {
            const std::size_t width = static_cast<unsigned char>(token[i]) >= 0xC0 ? 2 : 1;
            const auto it = table.find(token.substr(i, width));
            if (it == table.end()) {
                throw ValueError("wb::gpt2_decode: id " + std::to_string(ids[pos]) + " (position " +
                                 std::to_string(pos) + ") is not made of GPT-2's byte characters");
            }
            out.push_back(static_cast<char>(it->second));
            i += width;
        }
    }
    return out;
}

}  // namespace WB_IMPL
}  // namespace wb
