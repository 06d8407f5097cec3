// Chapter 2 — your byte-level BPE. Replace each WB_STUB() with the body; the spec of every
// function, and the rules they share (counting, ties, merging, stopping), is in bpe.hpp; the
// ideas are in README.md, section 4.
// Check your work with:  ctest --preset student -L chapter2  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 2  /  tools/workbook watch 2
#include "2-embedding/bpe.hpp"

#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

std::vector<BpeMerge> bpe_train(const std::string& corpus, std::size_t vocab_size) {
    // Spec: bpe.hpp, @throws first. Guide §4 (training, and keeping the counts up to date).
    (void)corpus, (void)vocab_size;
    WB_STUB();
}

std::vector<std::int64_t> bpe_encode(const std::string& text, const std::vector<BpeMerge>& merges) {
    // Spec: bpe.hpp. Guide §4 (encoding: the merges in the order learned).
    (void)text, (void)merges;
    WB_STUB();
}

std::vector<std::string> bpe_vocab(const std::vector<BpeMerge>& merges) {
    // Spec: bpe.hpp. Guide §4 (decoding).
    (void)merges;
    WB_STUB();
}

std::string bpe_decode(const std::vector<std::int64_t>& ids, const std::vector<BpeMerge>& merges) {
    // Spec: bpe.hpp, @throws first. Guide §4 (decoding).
    (void)ids, (void)merges;
    WB_STUB();
}

std::string bpe_serialize(const std::vector<BpeMerge>& merges) {
    // Spec: bpe.hpp (the text form). Guide §4 (the vocabulary in the model file).
    (void)merges;
    WB_STUB();
}

std::vector<BpeMerge> bpe_deserialize(const std::string& data) {
    // Spec: bpe.hpp, @throws first. Guide §4 (the vocabulary in the model file).
    (void)data;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
