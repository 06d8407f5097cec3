#include "2-embedding/gpt2.hpp"
#include "check.hpp"
#include "golden.hpp"
#include "gpt2_files.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

// Checks of GPT-2's tokenizer (gpt2.hpp). The small cases use made-up vocabularies whose
// results are worked out by hand in the comments; the goldens are GPT-2's own ids, from two
// independent tokenizers (tools/goldens/gpt2_tokenizer.js): the fixed corpus is committed in
// tests/goldens/2-embedding/gpt2_corpus.txt, the 10,000 random strings are written by
// tools/setup.sh beside GPT-2's files.

namespace {

using wbtest::gpt2_vocab_or_fail;
using wbtest::Gpt2Golden;
using wbtest::Ids;
using wbtest::read_goldens;
using wbtest::shown;
using wbtest::str;
using Symbols = std::vector<std::string>;
using Merges = std::vector<std::pair<std::string, std::string>>;

std::string utf8(char32_t cp) {
    std::string out;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
}

std::string str(const Symbols& symbols) {
    std::string out = "[";
    for (std::size_t t = 0; t < symbols.size(); ++t) out += (t ? ", \"" : "\"") + symbols[t] + "\"";
    return out + "]";
}

// The characters of GPT-2's byte map, written out from its three printable ranges: the
// printable bytes in byte order, then the rest from U+0100 on (GPT-2's encoder.py).
std::vector<std::string> byte_characters() {
    std::vector<std::string> chars(256);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
        const bool kept = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        chars[b] = utf8(kept ? static_cast<char32_t>(b) : next++);
    }
    return chars;
}

// A made-up vocabulary: the 256 byte characters as ids 0..255 (in byte order, unlike GPT-2),
// then `extra` tokens from 256 on.
wb::Gpt2Vocab tiny_vocab(Merges merges, const Symbols& extra) {
    Symbols tokens = byte_characters();
    tokens.insert(tokens.end(), extra.begin(), extra.end());
    return wb::gpt2_vocab(std::move(merges), std::move(tokens));
}

// GPT-2's merge of one piece written plainly (encoder.py's bpe()), used only to say which piece
// of a failing text goes wrong: the comparison itself is with the goldens.
Ids piece_ids_plainly(const std::string& piece, const wb::Gpt2Vocab& vocab) {
    static const std::vector<std::string> chars = byte_characters();
    Symbols word;
    for (const char ch : piece) word.push_back(chars[static_cast<unsigned char>(ch)]);
    while (word.size() > 1) {
        std::size_t best = std::numeric_limits<std::size_t>::max(), at = 0;
        for (std::size_t i = 0; i + 1 < word.size(); ++i) {
            auto found = vocab.merge_rank.find(word[i] + " " + word[i + 1]);
            if (found != vocab.merge_rank.end() && found->second < best) {
                best = found->second;
                at = i;
            }
        }
        if (best == std::numeric_limits<std::size_t>::max()) break;
        const std::string a = word[at], b = word[at + 1];
        Symbols next;
        for (std::size_t i = 0; i < word.size(); ++i) {
            if (i + 1 < word.size() && word[i] == a && word[i + 1] == b) {
                next.push_back(a + b);
                ++i;
            } else {
                next.push_back(word[i]);
            }
        }
        word.swap(next);
    }
    Ids ids;
    for (const auto& s : word) ids.push_back(vocab.encoder.at(s));
    return ids;
}

// Encodes every golden text and decodes the ids back; reports the number of failures and the
// shortest failing text, its shortest failing piece and both id sequences of each.
void check_goldens(const std::vector<Gpt2Golden>& goldens, const wb::Gpt2Vocab& vocab,
                   const std::string& what) {
    std::size_t wrong = 0, not_back = 0;
    const Gpt2Golden* shortest = nullptr;
    Ids shortest_ids;
    const Gpt2Golden* shortest_back = nullptr;
    std::string shortest_back_bytes;
    for (const Gpt2Golden& g : goldens) {
        Ids ids;
        bool threw = false;
        try {
            ids = wb::gpt2_encode(g.text, vocab);
        } catch (const wb::NotImplemented&) {
            throw;
        } catch (const std::exception&) {
            threw = true;  // counted as a wrong encoding; the shortest is encoded again below
        }
        if (ids != g.ids || threw) {
            ++wrong;
            if (!shortest || g.text.size() < shortest->text.size()) {
                shortest = &g;
                shortest_ids = ids;
            }
        }
        const std::string back = wb::gpt2_decode(g.ids, vocab);
        if (back != g.text) {
            ++not_back;
            if (!shortest_back || g.text.size() < shortest_back->text.size()) {
                shortest_back = &g;
                shortest_back_bytes = back;
            }
        }
    }
    if (shortest) {
        std::ostringstream out;
        out << "gpt2_encode gives other ids than GPT-2 on " << wrong << " of " << goldens.size()
            << " " << what << ". The shortest: " << shown(shortest->text)
            << "\n  yours: " << str(shortest_ids) << "\n  GPT-2: " << str(shortest->ids) << "\n";
        // The shortest of its pieces that goes wrong on its own.
        const std::vector<std::string> pieces = wb::gpt2_pretokenize(shortest->text);
        const std::string* piece_wrong = nullptr;
        Ids piece_yours, piece_gpt2;
        for (const std::string& piece : pieces) {
            Ids yours;
            try {
                yours = wb::gpt2_encode(piece, vocab);
            } catch (const std::exception&) {
            }
            Ids gpt2 = piece_ids_plainly(piece, vocab);
            if (yours != gpt2 && (!piece_wrong || piece.size() < piece_wrong->size())) {
                piece_wrong = &piece;
                piece_yours = yours;
                piece_gpt2 = gpt2;
            }
        }
        if (piece_wrong) {
            out << "The shortest piece (of wb::gpt2_pretokenize) that goes wrong alone: "
                << shown(*piece_wrong) << "\n  yours: " << str(piece_yours)
                << "\n  GPT-2: " << str(piece_gpt2) << "\n";
        } else {
            out << "Every piece of wb::gpt2_pretokenize alone gives GPT-2's ids: are the pieces "
                   "merged separately, never across two pieces?\n";
        }
        FAIL_CHECK(out.str());
    }
    if (shortest_back) {
        FAIL_CHECK("gpt2_decode does not give the text back on "
                   << not_back << " of " << goldens.size() << " " << what
                   << ". The shortest: " << shown(shortest_back->text) << " from the ids "
                   << str(shortest_back->ids) << " came back as " << shown(shortest_back_bytes));
    }
    CHECK(wrong == 0);
    CHECK(not_back == 0);
}

}  // namespace

TEST_CASE("gpt2_bytes_to_unicode keeps the printable bytes of Latin-1 as they are",
          "[gpt2][c:gpt2_bytes_to_unicode.printable-kept]") {
    const std::vector<char32_t> map = wb::gpt2_bytes_to_unicode();
    REQUIRE(map.size() == 256);
    for (int b : {33, 65, 122, 126, 161, 172, 174, 200, 255}) {
        INFO("byte " << b << " is printable: it stands for itself");
        CHECK(map[b] == static_cast<char32_t>(b));
    }
    for (int b = 0; b < 256; ++b) {
        const bool kept = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
        INFO("byte " << b
                     << (kept ? " is printable: it keeps its character"
                              : " is not printable: it takes a character from U+0100 on"));
        CHECK((map[b] == static_cast<char32_t>(b)) == kept);
    }
}

TEST_CASE("gpt2_bytes_to_unicode gives the other 68 bytes U+0100, U+0101, ... in byte order",
          "[gpt2][c:gpt2_bytes_to_unicode.others-shifted]") {
    const std::vector<char32_t> map = wb::gpt2_bytes_to_unicode();
    REQUIRE(map.size() == 256);
    // Bytes 0..32 are the first 33 (U+0100..U+0120), 127..160 the next 34, 173 the last.
    CHECK(map[0] == 0x100);    // Ā
    CHECK(map[10] == 0x10A);   // Ċ, the newline
    CHECK(map[32] == 0x120);   // Ġ, the space: " world" is written "Ġworld" in vocab.bpe
    CHECK(map[127] == 0x121);  // DEL
    CHECK(map[160] == 0x142);  // no-break space
    CHECK(map[173] == 0x143);  // soft hyphen, the last
    std::vector<char32_t> sorted = map;
    std::sort(sorted.begin(), sorted.end());
    INFO("no two bytes share a character (decoding must be able to go back)");
    CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
    CHECK(sorted.back() == 0x143);
}

TEST_CASE("gpt2_bpe writes each byte as its character before merging",
          "[gpt2][c:gpt2_bpe.bytes-as-characters][c:gpt2_bpe.stop]") {
    const wb::Gpt2Vocab none = tiny_vocab({}, {});
    // No merges: one symbol per byte. ' ' is Ġ, '\n' is Ċ, 0xFF is ÿ, 0x00 is Ā.
    const Symbols expected{"a", "\xC4\xA0", "b", "\xC4\x8A", "\xC3\xBF", "\xC4\x80"};
    const Symbols got = wb::gpt2_bpe(std::string("a b\n\xFF", 5) + std::string(1, '\0'), none);
    INFO("gpt2_bpe(\"a b\\n\\xff\\x00\") without merges: yours " << str(got));
    CHECK(got == expected);
    CHECK(wb::gpt2_bpe("", none).empty());
    // The two bytes of "é" (C3 A9) are two symbols, "Ã" and "©".
    CHECK(wb::gpt2_bpe("\xC3\xA9", none) == Symbols{"\xC3\x83", "\xC2\xA9"});
}

TEST_CASE("gpt2_bpe merges the pair of lowest rank first, every occurrence left to right",
          "[gpt2][c:gpt2_bpe.lowest-rank-first][c:gpt2_bpe.stop]") {
    // Ranks: (b, c) 0, (a, b) 1, (ab, c) 2, (a, a) 3, (aa, aa) 4.
    const wb::Gpt2Vocab vocab =
        tiny_vocab({{"b", "c"}, {"a", "b"}, {"ab", "c"}, {"a", "a"}, {"aa", "aa"}},
                   {"bc", "ab", "abc", "aa", "aaaa"});
    // "abc": (a, b) has rank 1, (b, c) rank 0: b c merge first, then (a, bc) has no rank.
    // Taking the leftmost pair instead would give ab, then abc.
    Symbols got = wb::gpt2_bpe("abc", vocab);
    INFO("gpt2_bpe(\"abc\"), ranks (b, c) 0, (a, b) 1, (ab, c) 2: yours " << str(got));
    CHECK(got == Symbols{"a", "bc"});
    // "aaa": (a, a) joins left to right without overlap: aa, a.
    got = wb::gpt2_bpe("aaa", vocab);
    INFO("gpt2_bpe(\"aaa\") with the merge (a, a): yours " << str(got));
    CHECK(got == Symbols{"aa", "a"});
    // "aaaaa": aa, aa, a, then (aa, aa) joins: aaaa, a.
    got = wb::gpt2_bpe("aaaaa", vocab);
    INFO("gpt2_bpe(\"aaaaa\") with (a, a) then (aa, aa): yours " << str(got));
    CHECK(got == Symbols{"aaaa", "a"});
    // "cab": (c, a) has no rank, (a, b) rank 1: c, ab; then (c, ab) has none.
    got = wb::gpt2_bpe("cab", vocab);
    INFO("gpt2_bpe(\"cab\"): yours " << str(got));
    CHECK(got == Symbols{"c", "ab"});
}

TEST_CASE("gpt2_bpe joins every occurrence of the chosen pair before it ranks the pairs again",
          "[gpt2][c:gpt2_bpe.lowest-rank-first]") {
    INFO(
        "hint: join EVERY occurrence of the lowest-ranked pair, left to right, in one pass; "
        "joining only the first and ranking again lets a pair it creates take the next one");
    // Ranks: (ab, a) 0, (a, b) 1. "abab": only (a, b) has a rank, both occurrences join: ab, ab.
    // Joining the first only gives ab, a, b; then (ab, a) of rank 0 takes the a: aba, b.
    const wb::Gpt2Vocab vocab = tiny_vocab({{"ab", "a"}, {"a", "b"}}, {"aba", "ab"});
    const Symbols got = wb::gpt2_bpe("abab", vocab);
    INFO("gpt2_bpe(\"abab\"), ranks (ab, a) 0, (a, b) 1: yours " << str(got));
    CHECK(got == Symbols{"ab", "ab"});
}

TEST_CASE("gpt2_encode merges within the pieces of gpt2_pretokenize, never across them",
          "[gpt2][c:gpt2_encode.pieces]") {
    // Ids: bytes as 0..255, then "aĠ" 256 and "Ġb" 257; (a, Ġ) has the lower rank.
    const wb::Gpt2Vocab vocab = tiny_vocab({{"a", "\xC4\xA0"}, {"\xC4\xA0", "b"}}, {"a\xC4\xA0",
                                                                                    "\xC4\xA0"
                                                                                    "b"});
    // "a b" is cut into "a" and " b": (a, Ġ) spans the two and may not merge; " b" is Ġb.
    Ids got = wb::gpt2_encode("a b", vocab);
    INFO("gpt2_encode(\"a b\"): the pieces are \"a\" and \" b\"; yours " << str(got));
    CHECK(got == Ids{97, 257});
    CHECK(wb::gpt2_encode("", vocab).empty());
    // "a  b": pieces "a", " " (the last space goes to the word after), " b".
    got = wb::gpt2_encode("a  b", vocab);
    INFO("gpt2_encode(\"a  b\"): pieces \"a\", \" \", \" b\"; yours " << str(got));
    CHECK(got == Ids{97, 32, 257});
}

TEST_CASE("gpt2_encode refuses a symbol without an id, and text that is not UTF-8",
          "[gpt2][errors][c:gpt2_encode.unknown-symbol][c:gpt2_encode.invalid-utf8]") {
    // The merge (x, y) makes the symbol "xy", which this vocabulary has no id for.
    const wb::Gpt2Vocab vocab = tiny_vocab({{"x", "y"}}, {});
    WB_CHECK_THROWS(wb::ValueError, wb::gpt2_encode("xy", vocab),
                    "the merged symbol has no id: name it", "wb::gpt2_encode", "xy");
    WB_CHECK_THROWS(wb::ValueError, wb::gpt2_encode("ab\xFF", vocab),
                    "0xFF is never UTF-8: the pre-tokenizer refuses it", "wb::gpt2_pretokenize",
                    "byte 2");
}

TEST_CASE("gpt2_decode turns each character back into its byte, also half a UTF-8 character",
          "[gpt2][c:gpt2_decode.raw-bytes][c:gpt2_decode.round-trip]") {
    const wb::Gpt2Vocab vocab = tiny_vocab({{"a", "\xC4\xA0"}}, {"a\xC4\xA0"});
    // 256 is "aĠ", i.e. "a "; 0xE4 alone is the first byte of "中".
    std::string got = wb::gpt2_decode({256, 98, 10, 0, 0xE4}, vocab);
    INFO("gpt2_decode([256, 98, 10, 0, 228]): yours " << shown(got));
    CHECK(got == std::string("a b\n", 4) + std::string(1, '\0') + "\xE4");
    for (const std::string text : {"a b", "a  b\n", "\x01\x7F\xC2\xA0", ""}) {
        got = wb::gpt2_decode(wb::gpt2_encode(text, vocab), vocab);
        INFO("decoding the ids of " << shown(text) << " gives " << shown(got));
        CHECK(got == text);
    }
}

TEST_CASE("gpt2_decode refuses ids outside the vocabulary",
          "[gpt2][errors][c:gpt2_decode.id-out-of-range]") {
    const wb::Gpt2Vocab vocab = tiny_vocab({}, {"ab"});  // V = 257
    WB_CHECK_THROWS(wb::ValueError, wb::gpt2_decode({97, 257}, vocab),
                    "id 257 is one past the last", "wb::gpt2_decode", "257", "position 1",
                    "[0, 257)");
    WB_CHECK_THROWS(wb::ValueError, wb::gpt2_decode({-1}, vocab), "a negative id",
                    "wb::gpt2_decode", "-1", "position 0", "[0, 257)");
}

TEST_CASE("gpt2_decode names the bad id's position among the ids, not among the bytes",
          "[gpt2][errors][c:gpt2_decode.id-out-of-range]") {
    INFO(
        "hint: the position is the index of the id in ids, not the number of bytes decoded "
        "before it");
    const wb::Gpt2Vocab vocab = tiny_vocab({}, {"ab"});  // V = 257; token 256 is "ab"
    // Three tokens of two bytes each come first: the bad id is at position 3, after 6 bytes
    // (numbers the rest of the message does not hold: "gpt2" holds a 2).
    WB_CHECK_THROWS(wb::ValueError, wb::gpt2_decode({256, 256, 256, 300}, vocab),
                    "id 300 is the fourth id (position 3), whatever the bytes before it",
                    "wb::gpt2_decode", "300", "position 3", "[0, 257)");
}

TEST_CASE("gpt2_encode gives GPT-2's ids on the fixed corpus, and gpt2_decode the text back",
          "[gpt2][goldens][c:gpt2_encode.gpt2-ids][c:gpt2_decode.round-trip]") {
    const wb::Gpt2Vocab& vocab = gpt2_vocab_or_fail();
    {  // The ids every GPT-2 tutorial shows: "Hello" 15496, " world" 995.
        const Ids hello = wb::gpt2_encode("Hello world", vocab);
        INFO("gpt2_encode(\"Hello world\"): yours " << str(hello));
        CHECK(hello == Ids{15496, 995});
    }
    check_goldens(read_goldens(wbtest::golden_path("2-embedding/gpt2_corpus.txt")), vocab,
                  "texts of the fixed corpus");
}

TEST_CASE("gpt2_encode gives GPT-2's ids on 10,000 random strings drawn by Unicode category",
          "[gpt2][goldens][c:gpt2_encode.gpt2-ids][c:gpt2_decode.round-trip]") {
    const wb::Gpt2Vocab& vocab = gpt2_vocab_or_fail();
    const std::vector<Gpt2Golden> goldens = read_goldens(wb::gpt2_files_dir() + "/gpt2_random.txt");
    CHECK(goldens.size() >= 10000);
    check_goldens(goldens, vocab, "random strings");
}
