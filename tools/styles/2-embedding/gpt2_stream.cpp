// Style answer for chapter 2's streaming encoder (tools/test-styles): a std::string buffer
// refilled with in.read, the held-back tail found by walking back over the pieces' lengths, the
// final pieces encoded one after the other as the buffer's prefix goes, a half character
// found by counting the continuation bytes at the end, and the refusal of a zero chunk worded
// unlike the reference. It exists because it is a correct answer: every check of chapter 2
// must accept it.
#include "2-embedding/gpt2_stream.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

namespace {

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0U) == 0x80U; }

// The length of the complete-characters prefix of `s`: a trailing lead byte with fewer than
// its continuation bytes after it is left out.
std::size_t whole_characters(const std::string& s) {
    std::size_t tail = 0;  // continuation bytes at the very end
    while (tail < s.size() && tail < 3 && is_continuation(s[s.size() - 1 - tail])) ++tail;
    if (tail == s.size()) return s.size();  // nothing but continuation bytes: not ours to judge
    const auto lead = static_cast<unsigned char>(s[s.size() - 1 - tail]);
    std::size_t wanted = 0;
    if ((lead & 0xE0U) == 0xC0U) wanted = 1;
    if ((lead & 0xF0U) == 0xE0U) wanted = 2;
    if ((lead & 0xF8U) == 0xF0U) wanted = 3;
    return tail < wanted ? s.size() - 1 - tail : s.size();
}

}  // namespace

std::size_t gpt2_encode_stream(std::istream& in, const Gpt2Vocab& vocab,
                               const std::function<void(std::int64_t)>& emit,
                               std::size_t chunk_bytes) {
    if (chunk_bytes < 1) {
        throw ValueError("wb::gpt2_encode_stream: a chunk of " + std::to_string(chunk_bytes) +
                         " bytes reads nothing; chunk_bytes must be 1 or more");
    }
    std::size_t given = 0;
    std::string buffer;
    std::string block(chunk_bytes, '\0');
    for (;;) {
        in.read(&block[0], static_cast<std::streamsize>(chunk_bytes));
        const auto got = static_cast<std::size_t>(in.gcount());
        if (got == 0) break;
        buffer.append(block, 0, got);
        const std::vector<std::string> pieces =
            gpt2_pretokenize(buffer.substr(0, whole_characters(buffer)));
        if (pieces.size() < 3) continue;
        // Everything before the second-to-last piece is final.
        const std::size_t keep_from = whole_characters(buffer) - pieces[pieces.size() - 1].size() -
                                      pieces[pieces.size() - 2].size();
        std::size_t at = 0;
        for (std::size_t i = 0; at < keep_from; ++i) {
            for (const std::int64_t id : gpt2_encode(pieces[i], vocab)) {
                emit(id);
                ++given;
            }
            at += pieces[i].size();
        }
        buffer = buffer.substr(keep_from);
    }
    for (const std::int64_t id : gpt2_encode(buffer, vocab)) {
        emit(id);
        ++given;
    }
    return given;
}

}  // namespace WB_IMPL
}  // namespace wb
