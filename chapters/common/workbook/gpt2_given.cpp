// GPT-2's pre-tokenizer (PCRE2) and the reader of GPT-2's files: given code, see gpt2_given.hpp.
#include "workbook/gpt2_given.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#ifndef WB_GPT2_DEFAULT_DIR
#define WB_GPT2_DEFAULT_DIR ""
#endif

namespace wb {

namespace {

std::string pcre2_message(int code) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(code, buffer, sizeof buffer);
    return reinterpret_cast<const char*>(buffer);
}

// The pattern compiled once (a function-local static: initialised once, also across threads).
const pcre2_code* gpt2_pattern() {
    static const std::unique_ptr<pcre2_code, void (*)(pcre2_code*)> code = [] {
        int error = 0;
        PCRE2_SIZE offset = 0;
        pcre2_code* compiled =
            pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kGpt2Pattern), PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
        if (compiled == nullptr) {
            throw std::logic_error("wb::gpt2_pretokenize: PCRE2 cannot compile GPT-2's pattern: " +
                                   pcre2_message(error));
        }
        return std::unique_ptr<pcre2_code, void (*)(pcre2_code*)>(compiled, pcre2_code_free);
    }();
    return code.get();
}

// GPT-2's files take 456 KB (vocab.bpe) and 1.04 MB (encoder.json): a larger one is not theirs,
// and is refused before it is read.
constexpr std::uintmax_t kMaxGpt2FileBytes = std::uintmax_t(16) << 20;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw FileError("wb::gpt2_load: cannot open " + path);
    const auto size = static_cast<std::uintmax_t>(in.tellg());
    if (size > kMaxGpt2FileBytes) {
        throw FileError("wb::gpt2_load: " + path + " has " + std::to_string(size) +
                        " bytes, more than GPT-2's files ever take (at most 16 MiB)");
    }
    in.seekg(0);
    std::ostringstream data;
    data << in.rdbuf();
    return data.str();
}

// encoder.json: one JSON object of strings to non-negative integers, nothing else.
class EncoderJson {
  public:
    EncoderJson(const std::string& data, std::string path) : s_(data), path_(std::move(path)) {}

    std::vector<std::pair<std::string, std::int64_t>> parse() {
        std::vector<std::pair<std::string, std::int64_t>> entries;
        expect('{');
        skip_space();
        if (peek() == '}') {
            ++i_;
            return entries;
        }
        while (true) {
            std::string key = string();
            expect(':');
            skip_space();
            std::int64_t value = 0;
            std::size_t digits = 0;
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9' && digits < 12) {
                value = value * 10 + (s_[i_++] - '0');
                ++digits;
            }
            if (digits == 0) fail("a token id");
            entries.emplace_back(std::move(key), value);
            skip_space();
            if (peek() == ',') {
                ++i_;
                continue;
            }
            expect('}');
            skip_space();
            if (i_ != s_.size()) fail("the end of the file after '}'");
            return entries;
        }
    }

  private:
    [[noreturn]] void fail(const std::string& wanted) const {
        throw FileError("wb::gpt2_load: " + path_ + " is not GPT-2's encoder.json: expected " +
                        wanted + " at byte " + num(i_));
    }
    void skip_space() {
        while (i_ < s_.size() &&
               (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
            ++i_;
    }
    char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    void expect(char c) {
        skip_space();
        if (peek() != c) fail(std::string("'") + c + "'");
        ++i_;
    }
    std::uint32_t hex4() {
        if (i_ + 4 > s_.size()) fail("four hexadecimal digits");
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = s_[i_++];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= static_cast<std::uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= static_cast<std::uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v |= static_cast<std::uint32_t>(c - 'A' + 10);
            else
                fail("a hexadecimal digit");
        }
        return v;
    }
    std::string string() {
        expect('"');
        std::string out;
        while (true) {
            if (i_ >= s_.size()) fail("'\"'");
            const char c = s_[i_++];
            if (c == '"') return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= s_.size()) fail("an escape");
            const char e = s_[i_++];
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    std::uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
                        if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u')
                            fail("a low surrogate");
                        i_ += 2;
                        const std::uint32_t low = hex4();
                        if (low < 0xDC00 || low >= 0xE000) fail("a low surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    fail("an escape");
            }
        }
    }

    const std::string& s_;
    std::string path_;
    std::size_t i_ = 0;
};

}  // namespace

std::vector<std::string> gpt2_pretokenize(const std::string& text) {
    const pcre2_code* code = gpt2_pattern();
    std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> match(
        pcre2_match_data_create_from_pattern(code, nullptr), pcre2_match_data_free);
    std::vector<std::string> pieces;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    PCRE2_SIZE start = 0;
    std::uint32_t options = 0;  // the text's UTF-8 is checked once, by the first match
    while (start < text.size()) {
        const int rc =
            pcre2_match(code, subject, text.size(), start, options, match.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;  // cannot happen: \s+ or a class matches any character
        if (rc < 0) {
            if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21) {
                throw ValueError("wb::gpt2_pretokenize: the text is not valid UTF-8 at byte " +
                                 num(pcre2_get_startchar(match.get())) + " (" + pcre2_message(rc) +
                                 "); expected UTF-8 text");
            }
            throw std::runtime_error("wb::gpt2_pretokenize: PCRE2 failed: " + pcre2_message(rc));
        }
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
        pieces.emplace_back(text, ovector[0], ovector[1] - ovector[0]);
        start = ovector[1];
        options = PCRE2_NO_UTF_CHECK;
    }
    return pieces;
}

Gpt2Vocab gpt2_vocab(std::vector<std::pair<std::string, std::string>> merges,
                     std::vector<std::string> tokens) {
    Gpt2Vocab vocab;
    vocab.merge_rank.reserve(merges.size());
    for (std::size_t r = 0; r < merges.size(); ++r) {
        const std::string key = merges[r].first + " " + merges[r].second;
        if (!vocab.merge_rank.emplace(key, r).second) {
            throw ValueError("wb::gpt2_vocab: merge " + num(r) + " (" + key +
                             ") repeats an earlier merge; expected each merge once");
        }
    }
    vocab.encoder.reserve(tokens.size());
    for (std::size_t id = 0; id < tokens.size(); ++id) {
        if (!vocab.encoder.emplace(tokens[id], static_cast<std::int64_t>(id)).second) {
            throw ValueError("wb::gpt2_vocab: token " + num(id) + " (" + tokens[id] +
                             ") repeats an earlier token; expected each token once");
        }
    }
    vocab.merges = std::move(merges);
    vocab.tokens = std::move(tokens);
    return vocab;
}

Gpt2Vocab gpt2_load(const std::string& dir) {
    const std::string bpe_path = dir + "/vocab.bpe";
    const std::string json_path = dir + "/encoder.json";
    const std::string bpe = read_file(bpe_path);
    std::vector<std::pair<std::string, std::string>> merges;
    std::size_t pos = bpe.find('\n');
    if (bpe.rfind("#version", 0) != 0 || pos == std::string::npos) {
        throw FileError("wb::gpt2_load: " + bpe_path +
                        " is not GPT-2's vocab.bpe: expected a "
                        "first line \"#version: 0.2\"");
    }
    for (std::size_t line = 2; pos + 1 < bpe.size(); ++line) {
        const std::size_t begin = pos + 1;
        pos = bpe.find('\n', begin);
        if (pos == std::string::npos) pos = bpe.size();
        const std::string text = bpe.substr(begin, pos - begin);
        if (text.empty()) continue;
        const std::size_t space = text.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == text.size() ||
            text.find(' ', space + 1) != std::string::npos) {
            throw FileError("wb::gpt2_load: " + bpe_path + " line " + num(line) +
                            " is not two tokens separated by one space");
        }
        merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    }
    const std::string json = read_file(json_path);
    auto entries = EncoderJson(json, json_path).parse();
    std::vector<std::string> tokens(entries.size());
    std::vector<bool> seen(entries.size(), false);
    for (auto& [token, id] : entries) {
        if (id < 0 || static_cast<std::size_t>(id) >= entries.size() || seen[id]) {
            throw FileError("wb::gpt2_load: " + json_path + " gives the id " + std::to_string(id) +
                            " twice or outside [0, " + num(entries.size()) + ")");
        }
        seen[id] = true;
        tokens[id] = std::move(token);
    }
    try {
        return gpt2_vocab(std::move(merges), std::move(tokens));
    } catch (const ValueError& e) {
        throw FileError(std::string("wb::gpt2_load: ") + dir + ": " + e.what());
    }
}

std::string gpt2_files_dir() {
    if (const char* dir = std::getenv("WB_GPT2_DIR"); dir != nullptr && *dir != '\0') return dir;
    return WB_GPT2_DEFAULT_DIR;
}

}  // namespace wb
