// Chapter 2 — reference: encoding a stream with GPT-2's tokenizer (spec in
// chapters/2-embedding/gpt2_stream.hpp).
#include "2-embedding/gpt2_stream.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

namespace {

// How many bytes at the end of `text` begin a UTF-8 character that the text does not finish
// (0 to 3): they wait for the next chunk. Invalid bytes are left to gpt2_pretokenize to name.
std::size_t unfinished_character(const std::string& text) {
    const std::size_t n = text.size();
    for (std::size_t back = 1; back <= std::min<std::size_t>(3, n); ++back) {
        const auto byte = static_cast<unsigned char>(text[n - back]);
        if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: its lead is further back
        const std::size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
        return length > back ? back : 0;
    }
    return 0;
}

}  // namespace

std::size_t gpt2_encode_stream(std::istream& in, const Gpt2Vocab& vocab,
                               const std::function<void(std::int64_t)>& emit,
                               std::size_t chunk_bytes) {
    if (chunk_bytes == 0) {
        throw ValueError("wb::gpt2_encode_stream: chunk_bytes = 0, expected at least 1");
    }
    std::size_t count = 0;
    const auto give = [&](const std::string& text) {
        for (const std::int64_t id : gpt2_encode(text, vocab)) {
            emit(id);
            ++count;
        }
    };
    std::vector<char> chunk(chunk_bytes);
    std::string held;  // read, not yet encoded: it starts where a piece of the whole text starts
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk_bytes)) || in.gcount() > 0) {
        held.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
        const std::vector<std::string> pieces =
            gpt2_pretokenize(held.substr(0, held.size() - unfinished_character(held)));
        // The last two pieces may still change with the next chunk ("'" "l" + "l" is "'ll");
        // every piece before them is final, and is encoded alone, as gpt2_encode would.
        if (pieces.size() <= 2) continue;
        std::size_t done = 0;
        for (std::size_t i = 0; i + 2 < pieces.size(); ++i) {
            give(pieces[i]);
            done += pieces[i].size();
        }
        held.erase(0, done);
    }
    give(held);  // the last pieces, and a character the stream cut off (gpt2_pretokenize says so)
    return count;
}

}  // namespace WB_IMPL
}  // namespace wb
