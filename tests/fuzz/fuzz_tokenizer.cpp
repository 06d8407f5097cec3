// Fuzz target: the mini-GPT's UTF-8 tokenizers (minigpt: characters, and
// chapter 2's byte-level BPE) on arbitrary bytes. Every input goes through all the doors of the
// tokenizer:
//
//   - utf8_decode: refuses invalid UTF-8 with wb::ValueError naming wb::minigpt::utf8_decode,
//     or returns code points (none a surrogate, none above U+10FFFF) that utf8_encode turns
//     back into exactly the input (valid UTF-8 has one encoding of each text);
//   - Tokenizer::deserialize: refuses what is not a vocabulary with wb::ValueError naming
//     wb::minigpt::Tokenizer::deserialize, or gives a tokenizer whose serialized form reads
//     back to the same vocabulary, and whose every id decodes to one character that encodes
//     back to that id (characters) or to valid UTF-8 (BPE: a token may be part of a character);
//   - Tokenizer::from_text (when the input is valid, non-empty UTF-8): encode gives one id per
//     code point, each in [0, size()), size() is the number of distinct code points, decode
//     gives back the input, and ids outside [0, size()) are refused with wb::ValueError;
//   - Tokenizer::bpe_from_text (the same inputs, V = 272): every id in [0, 256 + merges),
//     decode gives back the input, and the serialized merges encode alike.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "minigpt/tokenizer.hpp"
#include "workbook/core.hpp"

namespace {

using wb::minigpt::Tokenizer;
using wbfuzz::require;

// Every id of `t` decodes to one character that encodes back to the same id.
void check_ids(const Tokenizer& t, const char* where) {
    const std::size_t n = std::min<std::size_t>(t.size(), 512);  // bounded work per input
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t id = static_cast<std::int64_t>(i);
        const std::string text = t.decode({id});
        if (t.kind() == wb::minigpt::TokenizerKind::bpe) {
            (void)wb::minigpt::utf8_decode(text);  // throws (and the fuzzer stops) if not UTF-8
            continue;
        }
        require(wb::minigpt::utf8_decode(text).size() == 1,
                std::string(where) + ": an id decodes to exactly one character");
        require(t.encode(text) == std::vector<std::int64_t>{id},
                std::string(where) + ": decode then encode gives the id back");
    }
}

// ids outside [0, size()) are refused with ValueError.
void check_bad_ids(const Tokenizer& t) {
    for (std::int64_t bad : {std::int64_t{-1}, static_cast<std::int64_t>(t.size())}) {
        bool refused = false;
        try {
            (void)t.decode({bad});
        } catch (const wb::ValueError&) {
            refused = true;
        }
        require(refused, "decode refuses the id " + std::to_string(bad) + " with ValueError");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);

    // 1. UTF-8 decoding and encoding.
    std::optional<std::vector<char32_t>> code_points;
    try {
        code_points = wb::minigpt::utf8_decode(bytes);
    } catch (const wb::ValueError& e) {
        require(wbfuzz::names(e.what(), "wb::minigpt::utf8_decode"),
                std::string("utf8_decode's ValueError names the function, got: ") + e.what());
    }
    if (code_points) {
        for (char32_t c : *code_points) {
            require(c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF),
                    "utf8_decode returns only Unicode scalar values");
        }
        require(wb::minigpt::utf8_encode(*code_points) == bytes,
                "utf8_encode(utf8_decode(s)) == s for valid UTF-8");
    }

    // 2. A vocabulary read from bytes.
    std::optional<Tokenizer> read;
    try {
        read = Tokenizer::deserialize(bytes);
    } catch (const wb::ValueError& e) {
        require(wbfuzz::names(e.what(), "wb::minigpt::Tokenizer::deserialize"),
                std::string("deserialize's ValueError names the function, got: ") + e.what());
    }
    if (read) {
        require(read->size() >= 1, "a vocabulary that deserializes is not empty");
        const std::string form = read->serialize();
        const Tokenizer again = Tokenizer::deserialize(form);
        require(again.size() == read->size() && again.serialize() == form,
                "serialize then deserialize gives the same vocabulary");
        check_ids(*read, "deserialize");
        check_bad_ids(*read);
    }

    // 3. A vocabulary built from the text, and the text's round trip through it.
    if (code_points && !code_points->empty()) {
        const Tokenizer t = Tokenizer::from_text(bytes);
        std::vector<char32_t> distinct = *code_points;
        std::sort(distinct.begin(), distinct.end());
        distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
        require(t.size() == distinct.size(), "size() is the number of distinct code points");
        const std::vector<std::int64_t> ids = t.encode(bytes);
        require(ids.size() == code_points->size(), "one id per code point");
        for (std::size_t i = 0; i < ids.size(); ++i) {
            require(ids[i] >= 0 && static_cast<std::size_t>(ids[i]) < t.size(),
                    "every id is in [0, size())");
            // id = rank of the character among the sorted distinct code points
            const auto rank =
                std::lower_bound(distinct.begin(), distinct.end(), (*code_points)[i]) -
                distinct.begin();
            require(ids[i] == rank, "the id of a character is its rank in the sorted vocabulary");
        }
        require(t.decode(ids) == bytes, "decode(encode(text)) == text");
        const Tokenizer copy = Tokenizer::deserialize(t.serialize());
        require(copy.encode(bytes) == ids, "a serialized vocabulary encodes alike");
        check_ids(t, "from_text");
        check_bad_ids(t);

        std::optional<Tokenizer> bpe;
        try {
            bpe = Tokenizer::bpe_from_text(bytes, 256 + 16);
        } catch (const wb::NotImplemented&) {
            // chapter 2 is still the stub: the character checks above stand on their own
        }
        if (bpe) {
            const std::vector<std::int64_t> pieces = bpe->encode(bytes);
            for (const std::int64_t id : pieces) {
                require(id >= 0 && static_cast<std::size_t>(id) < bpe->size(),
                        "every BPE id is in [0, 256 + merges)");
            }
            require(bpe->decode(pieces) == bytes, "BPE decode(encode(text)) == text");
            require(Tokenizer::deserialize(bpe->serialize()).encode(bytes) == pieces,
                    "serialized BPE merges encode alike");
            check_ids(*bpe, "bpe_from_text");
            check_bad_ids(*bpe);
        }
    }
    return 0;
}
