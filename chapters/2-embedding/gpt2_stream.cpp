// Chapter 2 — encoding a stream with GPT-2's tokenizer. Replace WB_STUB() with the body; the
// spec is in gpt2_stream.hpp, the idea in README.md, section 6.
// Check your work with:  ctest --preset student -L chapter2  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 2  /  tools/workbook watch 2
#include "2-embedding/gpt2_stream.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>

namespace wb {
inline namespace WB_IMPL {

std::size_t gpt2_encode_stream(std::istream& in, const Gpt2Vocab& vocab,
                               const std::function<void(std::int64_t)>& emit,
                               std::size_t chunk_bytes) {
    // Spec: gpt2_stream.hpp, @throws first. Guide §6 (the seam between two chunks).
    (void)in, (void)vocab, (void)emit, (void)chunk_bytes;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
