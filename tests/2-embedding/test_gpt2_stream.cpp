#include "2-embedding/gpt2_stream.hpp"
#include "check.hpp"
#include "golden.hpp"
#include "gpt2_files.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

// Checks of the streaming encoder (gpt2_stream.hpp). Every expected id is GPT-2's own, from the
// goldens of the two npm tokenizers (test_gpt2.cpp reads the same files); the seams between
// chunks fall everywhere in every text of the fixed corpus, contractions and runs of spaces
// included.

namespace {

using wbtest::gpt2_vocab_or_fail;
using wbtest::Gpt2Golden;
using wbtest::Ids;
using wbtest::read_goldens;
using wbtest::shown;
using wbtest::str;

// The ids gpt2_encode_stream gives for `text` read in chunks of `chunk` bytes, and what it
// returned.
struct Streamed {
    Ids ids;
    std::size_t returned = 0;
};

Streamed streamed(const std::string& text, const wb::Gpt2Vocab& vocab, std::size_t chunk) {
    std::istringstream in(text);
    Streamed out;
    out.returned = wb::gpt2_encode_stream(
        in, vocab, [&](std::int64_t id) { out.ids.push_back(id); }, chunk);
    return out;
}

// Streams every golden text with every chunk size CHUNKS(text) gives; reports how many (text,
// chunk) pairs are wrong and the shortest text with its smallest wrong chunk, both id sequences
// side by side.
template <class Chunks>
void check_streamed(const std::vector<Gpt2Golden>& goldens, const wb::Gpt2Vocab& vocab,
                    Chunks chunks, const std::string& what) {
    std::size_t tried = 0, wrong = 0;
    const Gpt2Golden* worst = nullptr;
    std::size_t worst_chunk = 0;
    Streamed worst_out;
    bool worst_threw = false;
    for (const Gpt2Golden& g : goldens) {
        for (const std::size_t chunk : chunks(g.text)) {
            ++tried;
            Streamed out;
            bool threw = false;
            try {
                out = streamed(g.text, vocab, chunk);
            } catch (const wb::NotImplemented&) {
                throw;
            } catch (const std::exception&) {
                threw = true;  // counted as wrong; the pair is shown below
            }
            if (threw || out.ids != g.ids || out.returned != g.ids.size()) {
                ++wrong;
                if (!worst || g.text.size() < worst->text.size() ||
                    (&g == worst && chunk < worst_chunk)) {
                    worst = &g, worst_chunk = chunk, worst_out = out, worst_threw = threw;
                }
            }
        }
    }
    INFO(what << ": " << wrong << " of " << tried << " (text, chunk size) pairs streamed wrong");
    if (worst) {
        INFO("the shortest wrong text, "
             << shown(worst->text) << ", read in chunks of " << worst_chunk << " bytes:\n  yours: "
             << (worst_threw ? "threw (its message is below)" : str(worst_out.ids)) << " (returned "
             << worst_out.returned << ")\n  GPT-2: " << str(worst->ids));
        INFO(
            "hint: a chunk may end inside a UTF-8 character, and the last pieces of "
            "gpt2_pretokenize may still change when the next chunk comes (\"you'l\" + \"l\" is "
            "`you` `'ll`); hold them back, encode only the pieces before them, and encode what "
            "is held at the end of the stream");
        CHECK(wrong == 0);
        if (worst_threw) CHECK_NOTHROW(streamed(worst->text, vocab, worst_chunk));
    }
    CHECK(tried > 0);
}

// Every chunk size from 1 byte to the whole text, and a large one: a seam at every position.
std::vector<std::size_t> every_seam(const std::string& text) {
    std::vector<std::size_t> sizes;
    for (std::size_t c = 1; c <= text.size() + 1; ++c) sizes.push_back(c);
    sizes.push_back(65536);
    return sizes;
}

// The number of bytes an id stands for: its token's characters, one byte each (gpt2_bytes_to_
// unicode), counted as UTF-8 characters.
std::size_t token_bytes(std::int64_t id, const wb::Gpt2Vocab& vocab) {
    const std::string& token = vocab.tokens.at(static_cast<std::size_t>(id));
    return static_cast<std::size_t>(std::count_if(token.begin(), token.end(), [](char ch) {
        return (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
    }));
}

}  // namespace

TEST_CASE("gpt2_encode_stream gives GPT-2's ids of every corpus text, with a seam at every byte",
          "[gpt2_stream][goldens][c:gpt2_encode_stream.same-ids]") {
    const wb::Gpt2Vocab& vocab = gpt2_vocab_or_fail();
    {  // "you'll": a seam after "you'l" must not cut the contraction "'ll". GPT-2's ids, from
        // tiktoken's gpt2 encoding: you 5832, 'll 1183.
        const std::string text = "you'll";
        for (std::size_t chunk = 1; chunk <= text.size(); ++chunk) {
            const Streamed out = streamed(text, vocab, chunk);
            INFO("\"you'll\" in chunks of " << chunk << " bytes: yours " << str(out.ids)
                                            << ", GPT-2's [5832, 1183]");
            INFO(
                "hint: hold back the last two pieces of what was read: \"'\" and \"l\" become "
                "\"'ll\" when the next \"l\" comes");
            CHECK(out.ids == Ids{5832, 1183});
            CHECK(out.returned == 2);
        }
    }
    check_streamed(read_goldens(wbtest::golden_path("2-embedding/gpt2_corpus.txt")), vocab,
                   every_seam, "texts of the fixed corpus");
}

TEST_CASE("gpt2_encode_stream gives GPT-2's ids on 10,000 random strings, chunks of 1 to 7 bytes",
          "[gpt2_stream][goldens][c:gpt2_encode_stream.same-ids]") {
    const wb::Gpt2Vocab& vocab = gpt2_vocab_or_fail();
    const std::vector<Gpt2Golden> goldens = read_goldens(wb::gpt2_files_dir() + "/gpt2_random.txt");
    CHECK(goldens.size() >= 10000);
    std::size_t k = 0;
    check_streamed(
        goldens, vocab, [&k](const std::string&) { return std::vector<std::size_t>{1 + k++ % 7}; },
        "random strings");
}

TEST_CASE("gpt2_encode_stream holds at most a chunk and two pieces, not the whole text",
          "[gpt2_stream][c:gpt2_encode_stream.bounded]") {
    const wb::Gpt2Vocab& vocab = gpt2_vocab_or_fail();
    // About 300 KB of the corpus's texts, one per line, over and over.
    std::string text;
    const std::vector<Gpt2Golden> corpus =
        read_goldens(wbtest::golden_path("2-embedding/gpt2_corpus.txt"));
    while (text.size() < 300000) {
        for (const Gpt2Golden& g : corpus) text += g.text + "\n";
    }
    std::size_t longest = 0;
    for (const std::string& piece : wb::gpt2_pretokenize(text)) {
        longest = std::max(longest, piece.size());
    }
    for (const std::size_t chunk : {std::size_t{64}, std::size_t{4096}}) {
        std::istringstream in(text);
        std::size_t given_bytes = 0, most_held = 0, ids = 0;
        const std::size_t returned = wb::gpt2_encode_stream(
            in, vocab,
            [&](std::int64_t id) {
                // The bytes read from the stream so far, minus the bytes of the ids given so far.
                const auto read = static_cast<std::size_t>(
                    in.rdbuf()->pubseekoff(0, std::ios::cur, std::ios::in));
                most_held = std::max(most_held, read - std::min(read, given_bytes));
                given_bytes += token_bytes(id, vocab);
                ++ids;
            },
            chunk);
        const std::size_t bound = chunk + 2 * (longest + 1) + 3;
        INFO("a " << text.size() << "-byte text in chunks of " << chunk << " bytes: at most "
                  << most_held << " bytes were read and not yet given as ids; the header allows "
                  << bound << " (chunk + 2 (longest piece " << longest << " + 1) + 3)");
        INFO(
            "hint: read with in.read, one chunk at a time, and give the ids of every final "
            "piece before reading on; never read the whole stream first");
        CHECK(most_held <= bound);
        CHECK(given_bytes == text.size());
        CHECK(returned == ids);
    }
}

TEST_CASE("gpt2_encode_stream gives no ids for an empty stream",
          "[gpt2_stream][c:gpt2_encode_stream.empty]") {
    const wb::Gpt2Vocab& vocab = gpt2_vocab_or_fail();
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{65536}}) {
        const Streamed out = streamed("", vocab, chunk);
        INFO("an empty stream in chunks of " << chunk << ": yours " << str(out.ids));
        CHECK(out.ids.empty());
        CHECK(out.returned == 0);
    }
}

TEST_CASE("gpt2_encode_stream refuses chunk_bytes = 0 before reading anything",
          "[gpt2_stream][errors][c:gpt2_encode_stream.chunk-zero]") {
    const wb::Gpt2Vocab& vocab = gpt2_vocab_or_fail();
    std::istringstream in("Hello world");
    std::size_t given = 0;
    WB_CHECK_THROWS(wb::ValueError,
                    wb::gpt2_encode_stream(
                        in, vocab, [&](std::int64_t) { ++given; }, 0),
                    "a chunk of 0 bytes never reads on: refuse it first", "wb::gpt2_encode_stream",
                    "0", "1");
    INFO("the stream's position after the refusal: " << in.tellg() << " (expected 0)");
    CHECK(in.tellg() == 0);
    CHECK(given == 0);
}

TEST_CASE("gpt2_encode_stream refuses text that is not UTF-8, a character cut by the end too",
          "[gpt2_stream][errors][c:gpt2_encode_stream.invalid-utf8]") {
    const wb::Gpt2Vocab& vocab = gpt2_vocab_or_fail();
    for (const std::size_t chunk :
         {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{65536}}) {
        INFO("chunks of " << chunk << " bytes");
        std::istringstream bad(
            "ab\xFF"
            "cd");
        WB_CHECK_THROWS(wb::ValueError,
                        wb::gpt2_encode_stream(
                            bad, vocab, [](std::int64_t) {}, chunk),
                        "0xFF is never UTF-8: the pre-tokenizer refuses it",
                        "wb::gpt2_pretokenize");
        // The first two bytes of "中" (E4 B8 AD): the stream ends inside the character.
        std::istringstream cut("ab\xE4\xB8");
        WB_CHECK_THROWS(wb::ValueError,
                        wb::gpt2_encode_stream(
                            cut, vocab, [](std::int64_t) {}, chunk),
                        "bytes held back for the next chunk must still be encoded (and refused) "
                        "when the stream ends",
                        "wb::gpt2_pretokenize");
    }
}
