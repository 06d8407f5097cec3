// Chapter 2 — your GPT-2 tokenizer. Replace each WB_STUB() with the body; the spec of every
// function is in gpt2.hpp, the pre-tokenizer and GPT-2's files are given (workbook/gpt2_given.hpp);
// the ideas are in README.md, section 5.
// Check your work with:  ctest --preset student -L chapter2  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 2  /  tools/workbook watch 2
#include "2-embedding/gpt2.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

std::vector<char32_t> gpt2_bytes_to_unicode() {
    // Spec: gpt2.hpp. Guide §5 (bytes as printable characters).
    WB_STUB();
}

std::vector<std::string> gpt2_bpe(const std::string& piece, const Gpt2Vocab& vocab) {
    // Spec: gpt2.hpp. Guide §5 (merging by rank).
    (void)piece, (void)vocab;
    WB_STUB();
}

std::vector<std::int64_t> gpt2_encode(const std::string& text, const Gpt2Vocab& vocab) {
    // Spec: gpt2.hpp, @throws first. Guide §5 (the pre-tokenizer, then the pieces).
    (void)text, (void)vocab;
    WB_STUB();
}

std::string gpt2_decode(const std::vector<std::int64_t>& ids, const Gpt2Vocab& vocab) {
    // Spec: gpt2.hpp, @throws first. Guide §5 (decoding).
    (void)ids, (void)vocab;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
