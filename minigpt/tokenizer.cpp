// The two tokenizers: characters (strict UTF-8 in and out, one id per code point) and
// chapter 2's byte-level BPE.
#include "minigpt/tokenizer.hpp"

#include <memory>
#include <utility>

#include "2-embedding/gpt2.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "workbook/core.hpp"

namespace wb::minigpt {

namespace {

std::string hex_byte(unsigned char b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(b));
    return buf;
}

std::string code_point_str(char32_t c) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
    return buf;
}

// Decodes `bytes` strictly (RFC 3629): code points and the byte offset where each starts.
// Errors name `fn` and the offset of the sequence that is wrong.
void decode_with_offsets(const std::string& fn, const std::string& bytes,
                         std::vector<char32_t>& out, std::vector<std::size_t>* offsets) {
    const std::size_t n = bytes.size();
    std::size_t i = 0;
    auto fail = [&](std::size_t at, const std::string& why) {
        throw ValueError(fn + ": invalid UTF-8 at byte offset " + std::to_string(at) + ": " + why +
                         " (expected UTF-8 text)");
    };
    while (i < n) {
        const auto b0 = static_cast<unsigned char>(bytes[i]);
        if (b0 < 0x80) {
            if (offsets) offsets->push_back(i);
            out.push_back(b0);
            ++i;
            continue;
        }
        std::size_t len = 0;
        char32_t cp = 0;
        unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
        if (b0 >= 0x80 && b0 <= 0xBF) {
            fail(i, "unexpected continuation byte " + hex_byte(b0) + " where a character starts");
        } else if (b0 == 0xC0 || b0 == 0xC1) {
            fail(i, "overlong form (lead byte " + hex_byte(b0) + " encodes an ASCII character)");
        } else if (b0 <= 0xDF) {
            len = 2;
            cp = b0 & 0x1F;
        } else if (b0 <= 0xEF) {
            len = 3;
            cp = b0 & 0x0F;
            if (b0 == 0xE0) lo = 0xA0;  // below: overlong
            if (b0 == 0xED) hi = 0x9F;  // above: surrogates U+D800..U+DFFF
        } else if (b0 <= 0xF4) {
            len = 4;
            cp = b0 & 0x07;
            if (b0 == 0xF0) lo = 0x90;  // below: overlong
            if (b0 == 0xF4) hi = 0x8F;  // above: beyond U+10FFFF
        } else {
            fail(i, "bad lead byte " + hex_byte(b0) + " (beyond U+10FFFF or not UTF-8)");
        }
        if (i + len > n) {
            // Check the bytes that are there first, so a wrong byte is not called truncation.
            for (std::size_t j = i + 1; j < n; ++j) {
                const auto b = static_cast<unsigned char>(bytes[j]);
                if (b < 0x80 || b > 0xBF) {
                    fail(i, "truncated sequence: lead byte " + hex_byte(b0) + " expects " +
                                std::to_string(len - 1) + " continuation bytes, byte " +
                                hex_byte(b) + " at offset " + std::to_string(j) + " is not one");
                }
            }
            fail(i, "truncated sequence: lead byte " + hex_byte(b0) + " expects " +
                        std::to_string(len - 1) + " continuation bytes, the text ends after " +
                        std::to_string(n - i - 1));
        }
        for (std::size_t j = 1; j < len; ++j) {
            const auto b = static_cast<unsigned char>(bytes[i + j]);
            const unsigned char l = j == 1 ? lo : 0x80;
            const unsigned char h = j == 1 ? hi : 0xBF;
            if (b < 0x80 || b > 0xBF) {
                fail(i, "truncated sequence: lead byte " + hex_byte(b0) + " expects " +
                            std::to_string(len - 1) + " continuation bytes, byte " + hex_byte(b) +
                            " at offset " + std::to_string(i + j) + " is not one");
            }
            if (b < l) fail(i, "overlong form (" + hex_byte(b0) + " " + hex_byte(b) + ")");
            if (b > h) {
                if (b0 == 0xED) fail(i, "surrogate code point (ED " + hex_byte(b) + ")");
                fail(i, "code point above U+10FFFF (F4 " + hex_byte(b) + ")");
            }
            cp = (cp << 6) | (b & 0x3F);
        }
        if (offsets) offsets->push_back(i);
        out.push_back(cp);
        i += len;
    }
}

// A readable name of a character for error messages: 'a', or U+000A for controls.
std::string char_display(char32_t c) {
    if (c >= 0x20 && c != 0x7F) return "'" + utf8_encode({c}) + "' (" + code_point_str(c) + ")";
    return code_point_str(c);
}

// `text` as a message can show it on a terminal: control bytes (a CRLF line's \r, a tab, a
// NUL) and bytes above 0x7E are written as escapes; at most `most` bytes of it.
std::string printable(const std::string& text, std::size_t most = 40) {
    std::string out;
    const std::string cut = text.substr(0, most);
    for (std::size_t i = 0; i < cut.size(); ++i) {
        const auto b = static_cast<unsigned char>(cut[i]);
        if (b == '\r') {
            out += "\\r";
        } else if (b == '\t') {
            out += "\\t";
        } else if (b == '\\' || b == '"') {
            out += '\\';
            out += cut[i];
        } else if (b < 0x20 || b == 0x7F || b >= 0x80) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(b));
            out += buf;
        } else {
            out += cut[i];
        }
    }
    return text.size() > most ? out + "..." : out;
}

// The bytes that all the tokens of `merges` hold together (256 for the bytes alone), counted
// without building them; saturates just above kMaxBpeVocabularyBytes.
std::uint64_t bpe_vocabulary_bytes(const std::vector<BpeMerge>& merges) {
    const std::uint64_t cap = kMaxBpeVocabularyBytes + 1;
    std::vector<std::uint64_t> length(256 + merges.size(), 1);
    std::uint64_t total = 256;
    for (std::size_t r = 0; r < merges.size(); ++r) {
        const auto l = static_cast<std::size_t>(merges[r].left);
        const auto rr = static_cast<std::size_t>(merges[r].right);
        const std::uint64_t n = length[l] + length[rr];  // each is at most cap: no overflow
        length[256 + r] = std::min(n, cap);
        total = std::min(total + length[256 + r], cap);
    }
    return total;
}

void require_bpe_size(const std::string& fn, const std::vector<BpeMerge>& merges) {
    const std::uint64_t bytes = bpe_vocabulary_bytes(merges);
    if (bytes > kMaxBpeVocabularyBytes) {
        throw ValueError(fn + ": the " + std::to_string(256 + merges.size()) +
                         " tokens of the BPE vocabulary hold more than " +
                         std::to_string(kMaxBpeVocabularyBytes) +
                         " bytes in all, the limit (expected a vocabulary whose tokens hold at "
                         "most " +
                         std::to_string(kMaxBpeVocabularyBytes) + " bytes)");
    }
}

const char* const kVocabHeader = "wb-minigpt-vocab 1 ";
const char* const kBpeHeader = "wb-minigpt-bpe 1\n";   // then chapter 2's bpe_serialize
const char* const kGpt2Header = "wb-minigpt-gpt2 1 ";  // then "<tokens> <merges>\n", the lines

// A count of the GPT-2 header: 1 to 7 decimal digits without a leading zero, at most
// kMaxGpt2Entries.
std::size_t gpt2_count(const std::string& fn, const std::string& text, const char* what) {
    if (text.empty() || text.size() > 7 || (text.size() > 1 && text[0] == '0') ||
        !std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
        std::stoul(text) > kMaxGpt2Entries) {
        throw ValueError(fn + ": bad count of " + what + " \"" + printable(text) +
                         "\" in the GPT-2 header (expected a decimal number up to " +
                         std::to_string(kMaxGpt2Entries) + ")");
    }
    return std::stoul(text);
}

// The GPT-2 form of serialize(), after its header's "wb-minigpt-gpt2 1 ".
Gpt2Vocab gpt2_deserialize(const std::string& fn, const std::string& data) {
    std::size_t at = 0;
    const auto line = [&](const char* what, std::size_t index) {
        const std::size_t end = data.find('\n', at);
        if (end == std::string::npos) {
            throw ValueError(fn + ": the GPT-2 vocabulary ends inside " + what + " " +
                             std::to_string(index) + " (expected every line to end in \\n)");
        }
        std::string text = data.substr(at, end - at);
        at = end + 1;
        return text;
    };
    const std::string counts = line("the header", 0);
    const std::size_t space = counts.find(' ');
    if (space == std::string::npos) {
        throw ValueError(fn + ": bad GPT-2 header \"" + printable(counts) +
                         "\" (expected \"<tokens> <merges>\")");
    }
    const std::size_t n_tokens = gpt2_count(fn, counts.substr(0, space), "tokens");
    const std::size_t n_merges = gpt2_count(fn, counts.substr(space + 1), "merges");
    if (n_tokens == 0) throw ValueError(fn + ": the GPT-2 vocabulary has no tokens");
    std::vector<std::string> tokens;
    tokens.reserve(n_tokens);
    for (std::size_t i = 0; i < n_tokens; ++i) {
        tokens.push_back(line("token", i));
        if (tokens.back().empty()) {
            throw ValueError(fn + ": GPT-2 token " + std::to_string(i) + " is empty");
        }
    }
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(n_merges);
    for (std::size_t r = 0; r < n_merges; ++r) {
        const std::string text = line("merge", r);
        const std::size_t sp = text.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == text.size() ||
            text.find(' ', sp + 1) != std::string::npos) {
            throw ValueError(fn + ": GPT-2 merge " + std::to_string(r) + " \"" + printable(text) +
                             "\" is not two tokens separated by one space");
        }
        merges.emplace_back(text.substr(0, sp), text.substr(sp + 1));
    }
    if (at != data.size()) {
        throw ValueError(fn + ": " + std::to_string(data.size() - at) +
                         " bytes after the GPT-2 vocabulary's last merge");
    }
    try {
        return gpt2_vocab(std::move(merges), std::move(tokens));  // refuses repeated entries
    } catch (const ValueError& e) {
        throw ValueError(fn + ": " + e.what());
    }
}

// Length of the valid UTF-8 sequence that starts at bytes[i] (the rules of
// decode_with_offsets), or 0 when none starts there.
std::size_t utf8_length_at(const std::string& bytes, std::size_t i) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    if (b0 < 0x80) return 1;
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3;
        if (b0 == 0xE0) lo = 0xA0;  // below: overlong
        if (b0 == 0xED) hi = 0x9F;  // above: surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4;
        if (b0 == 0xF0) lo = 0x90;  // below: overlong
        if (b0 == 0xF4) hi = 0x8F;  // above: beyond U+10FFFF
    } else {
        return 0;
    }
    if (i + len > bytes.size()) return 0;
    for (std::size_t j = 1; j < len; ++j) {
        const auto b = static_cast<unsigned char>(bytes[i + j]);
        if (b < (j == 1 ? lo : 0x80) || b > (j == 1 ? hi : 0xBF)) return 0;
    }
    return len;
}

}  // namespace

std::string utf8_repair(const std::string& bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (std::size_t i = 0; i < bytes.size();) {
        const std::size_t len = utf8_length_at(bytes, i);
        if (len == 0) {
            out += "\xEF\xBF\xBD";  // U+FFFD for the byte that starts no character
            ++i;
        } else {
            out.append(bytes, i, len);
            i += len;
        }
    }
    return out;
}

std::vector<char32_t> utf8_decode(const std::string& bytes) {
    std::vector<char32_t> out;
    out.reserve(bytes.size());
    decode_with_offsets("wb::minigpt::utf8_decode", bytes, out, nullptr);
    return out;
}

std::string utf8_encode(const std::vector<char32_t>& code_points) {
    std::string out;
    out.reserve(code_points.size());
    for (std::size_t i = 0; i < code_points.size(); ++i) {
        const char32_t c = code_points[i];
        if ((c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) {
            throw ValueError("wb::minigpt::utf8_encode: code point " + code_point_str(c) +
                             " at index " + std::to_string(i) +
                             " is a surrogate or above U+10FFFF (expected a Unicode scalar value)");
        }
        append_utf8(out, c);
    }
    return out;
}

Tokenizer Tokenizer::from_text(const std::string& text) {
    const std::string fn = "wb::minigpt::Tokenizer::from_text";
    if (text.empty())
        throw ValueError(fn + ": the text is empty (expected at least one character)");
    std::vector<char32_t> cps;
    decode_with_offsets(fn, text, cps, nullptr);
    std::sort(cps.begin(), cps.end());
    cps.erase(std::unique(cps.begin(), cps.end()), cps.end());
    Tokenizer t;
    t.chars_ = std::move(cps);
    return t;
}

Tokenizer Tokenizer::bpe_from_text(const std::string& text, std::size_t vocab_size) {
    const std::string fn = "wb::minigpt::Tokenizer::bpe_from_text";
    if (text.empty())
        throw ValueError(fn + ": the text is empty (expected at least one character)");
    if (vocab_size < 256) {
        throw ValueError(fn + ": vocab_size = " + std::to_string(vocab_size) +
                         ", expected at least 256 (the byte tokens)");
    }
    std::vector<char32_t> cps;
    decode_with_offsets(fn, text, cps, nullptr);  // the model reads and writes UTF-8 only
    Tokenizer t;
    t.kind_ = TokenizerKind::bpe;
    t.merges_ = bpe_train(text, vocab_size);  // chapter 2
    require_bpe_size(fn, t.merges_);
    return t;
}

Tokenizer Tokenizer::from_gpt2(Gpt2Vocab vocab) {
    Tokenizer t;
    t.kind_ = TokenizerKind::gpt2;
    t.gpt2_ = std::make_shared<const Gpt2Vocab>(std::move(vocab));
    return t;
}

std::string Tokenizer::serialize() const {
    if (kind_ == TokenizerKind::bpe) return kBpeHeader + bpe_serialize(merges_);
    if (kind_ == TokenizerKind::gpt2) {
        std::string out = kGpt2Header + std::to_string(gpt2_->tokens.size()) + " " +
                          std::to_string(gpt2_->merges.size()) + "\n";
        for (const std::string& token : gpt2_->tokens) out += token + "\n";
        for (const auto& [first, second] : gpt2_->merges) out += first + " " + second + "\n";
        return out;
    }
    // Header "wb-minigpt-vocab 1 <count>\n", then the characters in id order, concatenated
    // (a newline is a character like any other, so no separator is needed).
    return kVocabHeader + std::to_string(chars_.size()) + "\n" + utf8_encode(chars_);
}

Tokenizer Tokenizer::deserialize(const std::string& data) {
    const std::string fn = "wb::minigpt::Tokenizer::deserialize";
    const std::string gpt2_header = kGpt2Header;
    if (data.compare(0, gpt2_header.size(), gpt2_header) == 0) {
        return from_gpt2(gpt2_deserialize(fn, data.substr(gpt2_header.size())));
    }
    const std::string bpe_header = kBpeHeader;
    if (data.compare(0, bpe_header.size(), bpe_header) == 0) {
        // The size of `data` is bounded by the model file's header; chapter 2 bounds the rest.
        Tokenizer t;
        t.kind_ = TokenizerKind::bpe;
        try {
            t.merges_ = bpe_deserialize(data.substr(bpe_header.size()));
        } catch (const ValueError& e) {
            throw ValueError(fn + ": a BPE vocabulary that cannot be read: " + e.what());
        }
        require_bpe_size(fn, t.merges_);
        return t;
    }
    const std::string header = kVocabHeader;
    const auto newline = data.find('\n');
    if (data.compare(0, header.size(), header) != 0 || newline == std::string::npos ||
        newline <= header.size()) {
        throw ValueError(fn + ": not a vocabulary (expected a first line \"" + header +
                         "<count>\", \"wb-minigpt-bpe 1\" or \"" + gpt2_header +
                         "<tokens> <merges>\")");
    }
    const std::string count_text = data.substr(header.size(), newline - header.size());
    if (count_text.size() > 9 || !std::all_of(count_text.begin(), count_text.end(),
                                              [](char ch) { return ch >= '0' && ch <= '9'; })) {
        const bool crlf = !count_text.empty() && count_text.back() == '\r';
        throw ValueError(fn + ": bad count \"" + printable(count_text) +
                         "\" in the header (expected a decimal number of characters" +
                         (crlf ? " and a line ending in \\n alone, not \\r\\n)" : ")"));
    }
    if (count_text.size() > 1 && count_text[0] == '0') {
        throw ValueError(fn + ": bad count \"" + count_text +
                         "\" in the header (expected a decimal number without a leading zero, "
                         "as serialize() writes it)");
    }
    const std::size_t count = std::stoul(count_text);
    if (count == 0) throw ValueError(fn + ": the vocabulary is empty (expected >= 1 character)");
    std::vector<char32_t> cps;
    decode_with_offsets(fn, data.substr(newline + 1), cps, nullptr);
    if (cps.size() != count) {
        throw ValueError(fn + ": the header announces " + std::to_string(count) +
                         " characters, the data holds " + std::to_string(cps.size()));
    }
    for (std::size_t i = 1; i < cps.size(); ++i) {
        if (cps[i] <= cps[i - 1]) {
            throw ValueError(fn + ": entry " + std::to_string(i) + " " + code_point_str(cps[i]) +
                             (cps[i] == cps[i - 1] ? " is a duplicate" : " is out of order") +
                             " (expected distinct characters in increasing order)");
        }
    }
    Tokenizer t;
    t.chars_ = std::move(cps);
    return t;
}

std::vector<std::int64_t> Tokenizer::encode(const std::string& text) const {
    const std::string fn = "wb::minigpt::Tokenizer::encode";
    std::vector<char32_t> cps;
    std::vector<std::size_t> offsets;
    decode_with_offsets(fn, text, cps, &offsets);
    if (kind_ == TokenizerKind::bpe) return bpe_encode(text, merges_);   // chapter 2
    if (kind_ == TokenizerKind::gpt2) return gpt2_encode(text, *gpt2_);  // chapter 2
    std::vector<std::int64_t> ids(cps.size());
    for (std::size_t i = 0; i < cps.size(); ++i) {
        const auto it = std::lower_bound(chars_.begin(), chars_.end(), cps[i]);
        if (it == chars_.end() || *it != cps[i]) {
            throw ValueError(fn + ": character " + char_display(cps[i]) + " at byte offset " +
                             std::to_string(offsets[i]) + " is not in the vocabulary of " +
                             std::to_string(chars_.size()) +
                             " characters (expected only characters of the training text)");
        }
        ids[i] = static_cast<std::int64_t>(it - chars_.begin());
    }
    return ids;
}

std::string Tokenizer::decode(const std::vector<std::int64_t>& ids) const {
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || static_cast<std::uint64_t>(ids[i]) >= size()) {
            throw ValueError("wb::minigpt::Tokenizer::decode: id " + std::to_string(ids[i]) +
                             " at position " + std::to_string(i) + " is outside [0, " +
                             std::to_string(size()) + ")");
        }
    }
    if (kind_ == TokenizerKind::bpe) return utf8_repair(bpe_decode(ids, merges_));   // chapter 2
    if (kind_ == TokenizerKind::gpt2) return utf8_repair(gpt2_decode(ids, *gpt2_));  // chapter 2
    std::vector<char32_t> cps(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) cps[i] = chars_[static_cast<std::size_t>(ids[i])];
    return utf8_encode(cps);
}

std::size_t Tokenizer::size() const {
    if (kind_ == TokenizerKind::gpt2) return gpt2_->tokens.size();
    return kind_ == TokenizerKind::bpe ? 256 + merges_.size() : chars_.size();
}

TokenizerKind Tokenizer::kind() const { return kind_; }

const std::vector<BpeMerge>& Tokenizer::merges() const { return merges_; }

}  // namespace wb::minigpt
