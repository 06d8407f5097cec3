#include "2-embedding/bpe.hpp"
#include "check.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

// Checks of the byte-level BPE (bpe.hpp). The expected merges are worked out by hand in the
// comments, from the rules of bpe.hpp; the ids of letters are their ASCII codes
// (a = 97, b = 98, c = 99, d = 100).

namespace {

using wb::BpeMerge;
using Merges = std::vector<BpeMerge>;
using Ids = std::vector<std::int64_t>;

// "[(97, 97), (97, 98)]": a list that Catch prints in full when two lists differ.
std::string str(const Merges& merges) {
    std::string out = "[";
    for (std::size_t r = 0; r < merges.size(); ++r) {
        out += (r ? ", (" : "(") + std::to_string(merges[r].left) + ", " +
               std::to_string(merges[r].right) + ")";
    }
    return out + "]";
}

std::string str(const Ids& ids) {
    std::string out = "[";
    for (std::size_t t = 0; t < ids.size(); ++t) out += (t ? ", " : "") + std::to_string(ids[t]);
    return out + "]";
}

// The rules of bpe.hpp, the slow way: recount every pair of the whole sequence for every merge.
// Written here independently of any implementation, to compare with on many small corpora.
Merges train_by_recounting(const std::string& corpus, std::size_t vocab_size) {
    Ids seq;
    for (const char ch : corpus) seq.push_back(static_cast<unsigned char>(ch));
    Merges merges;
    while (256 + merges.size() < vocab_size) {
        std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> count;  // ordered by pair
        for (std::size_t i = 0; i + 1 < seq.size(); ++i) ++count[{seq[i], seq[i + 1]}];
        std::pair<std::int64_t, std::int64_t> best{-1, -1};
        std::int64_t most = 0;
        for (const auto& [pair, c] : count) {
            if (c > most) {  // strictly greater: the first (smallest) pair wins a tie
                most = c;
                best = pair;
            }
        }
        if (most < 2) break;
        const std::int64_t z = 256 + static_cast<std::int64_t>(merges.size());
        merges.push_back({best.first, best.second});
        Ids next;
        for (std::size_t i = 0; i < seq.size();) {
            if (i + 1 < seq.size() && seq[i] == best.first && seq[i + 1] == best.second) {
                next.push_back(z);
                i += 2;
            } else {
                next.push_back(seq[i++]);
            }
        }
        seq = next;
    }
    return merges;
}

// The notes' §2 and §3 in their own words, with English around them.
const std::string kNotes =
    "GPT 是自回归语言模型。token "
    "不一定是完整单词或一个汉字，也可能是词的一部分、标点或其他文本片段。"
    "输入文本：小猫趴在\n"
    "The cat sat on the mat. The cat sat on the mat again, and the mat was warm.\n"
    "苹果很好吃 苹果发布了手机\n";

}  // namespace

// ---- training -------------------------------------------------------------------------------

TEST_CASE("bpe_train on \"aaabdaaabac\" learns the hand-worked merges aa, ab, (aa)(ab)", "[bpe]") {
    // Worked out by hand from the rules of bpe.hpp (overlapping positions count):
    //   a a a b d a a a b a c   pairs: aa 4 (at 0, 1, 5, 6), ab 2, bd 1, da 1, ba 1, ac 1
    //   merge 0: (a, a) = (97, 97) -> 256 =: Z. Left to right, "aaa" -> "Z a":
    //   Z a b d Z a b a c       pairs: Za 2, ab 2, bd 1, dZ 1, ba 1, ac 1
    //   merge 1: a tie at 2 between (256, 97) and (97, 98): the smaller pair, (97, 98) -> 257 =: Y
    //   Z Y d Z Y a c           pairs: ZY 2, Yd 1, dZ 1, Ya 1, ac 1
    //   merge 2: (256, 257) -> 258 =: X
    //   X d X a c               every pair once: training stops with 3 merges, below V = 1000
    const Merges expected = {{97, 97}, {97, 98}, {256, 257}};
    INFO(
        "most frequent pair first, ties to the smallest (left, right), counts updated after "
        "each merge, stop when no pair occurs twice");
    CHECK(str(wb::bpe_train("aaabdaaabac", 1000)) == str(expected));
}

TEST_CASE("bpe_train breaks a tie by the smallest pair of ids, not by where it occurs first",
          "[bpe]") {
    // "abcdabcd": ab 2, bc 2, cd 2, da 1. Three pairs tie at 2; the smallest is (97, 98).
    //   Z c d Z c d (Z = 256): Zc 2, cd 2, dZ 1; tie (99, 100) < (256, 99): cd -> 257 =: Y
    //   Z Y Z Y: ZY 2, YZ 1: (256, 257) -> 258;  X X: one pair left, once: stop.
    INFO("ties go to the smallest left id, then the smallest right id (bpe.hpp)");
    CHECK(str(wb::bpe_train("abcdabcd", 300)) == str(Merges{{97, 98}, {99, 100}, {256, 257}}));
    // The same pairs, written in the opposite order: "dcbadcba" ties dc, cb, ba at 2, and the
    // smallest is (98, 97) = ba although it comes last. Then d c Z d c Z: dc 2, cZ 2, Zd 1:
    // (99, 256) < (100, 99): cZ -> 257;  d Y d Y: dY 2, Yd 1: (100, 257) -> 258;  X X: stop.
    CHECK(str(wb::bpe_train("dcbadcba", 300)) == str(Merges{{98, 97}, {99, 256}, {100, 257}}));
}

TEST_CASE("bpe_train counts overlapping pairs and merges them left to right", "[bpe]") {
    // "aaaa": aa 3 -> Z: "Z Z" (left to right: positions 0-1, then 2-3); ZZ 1: stop.
    CHECK(str(wb::bpe_train("aaaa", 300)) == str(Merges{{97, 97}}));
    // "aaaaaa": aa 5 -> "Z Z Z": ZZ 2 -> Y (left to right): "Y Z": stop.
    CHECK(str(wb::bpe_train("aaaaaa", 300)) == str(Merges{{97, 97}, {256, 256}}));
}

TEST_CASE("bpe_train stops at the vocabulary size, and when no pair occurs twice", "[bpe]") {
    // "abcabc": ab 2, bc 2, ca 1 -> ab = 256; Z c Z c: Zc 2 -> 257; Y Y: once: stop.
    CHECK(str(wb::bpe_train("abcabc", 1000)) == str(Merges{{97, 98}, {256, 99}}));
    CHECK(str(wb::bpe_train("abcabc", 257)) == str(Merges{{97, 98}}));  // V = 257: one merge
    CHECK(wb::bpe_train("abcabc", 256).empty());                        // V = 256: the bytes only
    CHECK(wb::bpe_train("abcdef", 1000).empty());  // every pair once: nothing to learn
    CHECK(wb::bpe_train("", 1000).empty());
}

TEST_CASE("bpe_train equals recounting every pair before each merge, on 40 random corpora",
          "[bpe]") {
    // Small alphabets make many overlaps and ties; the recount (above) is the rules of bpe.hpp
    // done the slow way, so an incremental count that goes stale shows up here.
    std::mt19937 gen(2);
    for (int trial = 0; trial < 40; ++trial) {
        const int letters = 2 + trial % 4;
        std::string corpus(20 + 10 * static_cast<std::size_t>(trial), ' ');
        for (char& ch : corpus) ch = static_cast<char>('a' + gen() % letters);
        INFO("corpus \"" << corpus << "\", vocab_size 300");
        CHECK(str(wb::bpe_train(corpus, 300)) == str(train_by_recounting(corpus, 300)));
    }
}

TEST_CASE("bpe_train gives the same merges on every run, on bytes of every value", "[bpe]") {
    std::string corpus = kNotes + kNotes;
    for (int b = 0; b < 256; ++b) corpus += static_cast<char>(b);  // NUL and 0xFF included
    const Merges first = wb::bpe_train(corpus, 320);
    REQUIRE(!first.empty());
    CHECK(str(wb::bpe_train(corpus, 320)) == str(first));
    CHECK(str(first) == str(train_by_recounting(corpus, 320)));
}

// ---- encode and decode ----------------------------------------------------------------------

TEST_CASE("bpe_encode applies the merges in the order learned, lowest rank first", "[bpe]") {
    // Merge 0 is (a, b) -> 256, merge 1 is (b, c) -> 257. "abc": merge 0 first gives
    // [256, c]; merge 1 then finds no (b, c). The other order would give [a, 257].
    const Merges merges = {{97, 98}, {98, 99}};
    INFO("encode applies merge 0 to the whole text, then merge 1, ... (not the last one first)");
    CHECK(str(wb::bpe_encode("abc", merges)) == str(Ids{256, 99}));
    CHECK(str(wb::bpe_encode("bcab", merges)) == str(Ids{257, 256}));
    // A merge of merges: (256, 256) -> 258 sees the result of merge 0. "ababab" -> Z Z Z ->
    // (left to right) [258, 256].
    CHECK(str(wb::bpe_encode("ababab", {{97, 98}, {98, 99}, {256, 256}})) == str(Ids{258, 256}));
    CHECK(wb::bpe_encode("", merges).empty());
}

TEST_CASE("bpe_encode of the training corpus gives the training's last sequence", "[bpe]") {
    // From the hand-worked training above: "aaabdaaabac" ends as X d X a c, X = 258.
    const Merges merges = {{97, 97}, {97, 98}, {256, 257}};
    CHECK(str(wb::bpe_encode("aaabdaaabac", merges)) == str(Ids{258, 100, 258, 97, 99}));
    // Without merges every byte is its own token, UTF-8 bytes of 猫 = e7 8c ab included.
    CHECK(str(wb::bpe_encode("a\xe7\x8c\xab", {})) == str(Ids{97, 0xe7, 0x8c, 0xab}));
}

TEST_CASE("bpe_vocab and bpe_decode give every token's bytes back", "[bpe]") {
    const Merges merges = {{97, 97}, {97, 98}, {256, 257}};
    const std::vector<std::string> vocab = wb::bpe_vocab(merges);
    REQUIRE(vocab.size() == 259);
    CHECK(vocab[0] == std::string(1, '\0'));
    CHECK(vocab[97] == "a");
    CHECK(vocab[255] == "\xff");
    CHECK(vocab[256] == "aa");
    CHECK(vocab[257] == "ab");
    CHECK(vocab[258] == "aaab");  // Z then Y
    CHECK(wb::bpe_decode({258, 100, 258, 97, 99}, merges) == "aaabdaaabac");
    CHECK(wb::bpe_decode({}, merges).empty());
}

TEST_CASE("bpe_decode(bpe_encode(text)) is the text for any UTF-8, the notes' Chinese included",
          "[bpe]") {
    const Merges merges = wb::bpe_train(kNotes, 400);
    REQUIRE(merges.size() > 20);
    // Chinese that the merges saw and did not see, emoji (4 bytes), mixed text, a lone newline,
    // and bytes that are not UTF-8 at all: byte-level BPE encodes anything.
    const std::vector<std::string> texts = {
        kNotes,
        "小猫趴在",
        "注意力机制：每个 Query 与各个 Key 计算匹配得分。",
        "The mat. 😀 é ü",
        "\n",
        std::string("\x00\xff\xc3", 3),
        "aaaaaaaaaaaaaaaaaaaaaaa",
    };
    for (const std::string& text : texts) {
        INFO("text \"" << text << "\"");
        const Ids ids = wb::bpe_encode(text, merges);
        for (const std::int64_t id : ids)
            CHECK((id >= 0 && id < 256 + std::int64_t(merges.size())));
        CHECK(wb::bpe_decode(ids, merges) == text);
    }
    // The notes compress: on the text the merges were learned on, fewer tokens than 2/3 of
    // its bytes.
    CHECK(wb::bpe_encode(kNotes, merges).size() < kNotes.size() * 2 / 3);
    std::mt19937 gen(5);
    for (int trial = 0; trial < 20; ++trial) {
        std::string bytes(static_cast<std::size_t>(gen() % 64), '\0');
        for (char& ch : bytes) ch = static_cast<char>(gen() % 256);
        CHECK(wb::bpe_decode(wb::bpe_encode(bytes, merges), merges) == bytes);
    }
}

// ---- serialization --------------------------------------------------------------------------

TEST_CASE("bpe_serialize writes the documented text, and bpe_deserialize reads it back", "[bpe]") {
    const Merges merges = {{97, 97}, {97, 98}, {256, 257}};
    CHECK(wb::bpe_serialize(merges) == "wb-bpe 1 3\n97 97\n97 98\n256 257\n");
    CHECK(str(wb::bpe_deserialize("wb-bpe 1 3\n97 97\n97 98\n256 257\n")) == str(merges));
    CHECK(wb::bpe_serialize({}) == "wb-bpe 1 0\n");
    CHECK(wb::bpe_deserialize("wb-bpe 1 0\n").empty());
    const Merges learned = wb::bpe_train(kNotes, 400);
    CHECK(str(wb::bpe_deserialize(wb::bpe_serialize(learned))) == str(learned));
}

// ---- bad inputs -----------------------------------------------------------------------------

TEST_CASE("bpe_train refuses a vocabulary smaller than the 256 bytes", "[bpe][errors]") {
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_train("abab", 255),
                    "the 256 byte tokens come first: vocab_size must be at least 256",
                    "wb::bpe_train", "vocab_size = 255", "256");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_train("abab", 0), "vocab_size = 0", "wb::bpe_train",
                    "0", "256");
}

TEST_CASE("bpe_decode refuses an id below 0 or at least V, naming it and its position",
          "[bpe][errors]") {
    const Merges one = {{97, 98}};  // V = 257
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_decode({97, 257}, one),
                    "ids are in [0, 256 + merges): id == V is one past the last token",
                    "wb::bpe_decode", "257", "position 1", "[0, 257)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_decode({-1}, one), "a negative id has no bytes",
                    "wb::bpe_decode", "-1", "position 0", "[0, 257)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_decode({256}, {}), "without merges V = 256",
                    "wb::bpe_decode", "256", "[0, 256)");
}

TEST_CASE("bpe_encode, bpe_vocab and bpe_serialize refuse a merge list training cannot make",
          "[bpe][errors]") {
    // Merge 0 may only use bytes; (97, 256) names itself. Merge 1 repeats merge 0's pair.
    const Merges uses_itself = {{97, 256}};
    const Merges repeated = {{97, 98}, {97, 98}};
    const Merges negative = {{97, 98}, {-3, 97}};
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_encode("ab", uses_itself),
                    "merge r may only use ids below 256 + r (bytes and earlier merges)",
                    "wb::bpe_encode", "merge 0", "256", "[0, 256)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_encode("ab", repeated),
                    "a pair is merged once: after merge 0 it never occurs again", "wb::bpe_encode",
                    "merge 1", "repeats", "(97, 98)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_vocab(negative), "an id is never negative",
                    "wb::bpe_vocab", "merge 1", "-3", "[0, 257)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_decode({97}, uses_itself), "check the merges first",
                    "merge 0", "256");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_serialize(repeated), "never write a bad list",
                    "wb::bpe_serialize", "merge 1", "repeats");
}

TEST_CASE("bpe_deserialize refuses a wrong header, a bad count and malformed lines",
          "[bpe][errors]") {
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-vocab 1 3\n97 97\n"),
                    "the first line must be \"wb-bpe 1 <count>\"", "wb::bpe_deserialize",
                    "wb-bpe 1");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize(""), "empty data is not a merge list",
                    "wb::bpe_deserialize", "wb-bpe 1");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 x3\n"),
                    "the count is a decimal number", "wb::bpe_deserialize", "x3");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 1048577\n"),
                    "refuse a count above kMaxBpeMerges before reading or allocating",
                    "wb::bpe_deserialize", "1048577", "1048576");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 1000\n97 97\n"),
                    "a count the data cannot hold is refused before anything is stored",
                    "wb::bpe_deserialize", "1000", "6 bytes");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 2\n97 97\n97,98\n"),
                    "each line is two decimal ids separated by one space", "wb::bpe_deserialize",
                    "line 3", "97,98");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 2\n97 97\n97 98"),
                    "the last line ends in a newline too", "wb::bpe_deserialize", "line 3");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 1\n97 97\n97 98\n"),
                    "more lines than announced", "wb::bpe_deserialize", "6 bytes", "1");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 2\n97 97\n256 300\n"),
                    "merge 1 may use ids below 257 only", "wb::bpe_deserialize", "line 3", "300",
                    "[0, 257)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 1\n99999999999 1\n"),
                    "at most 10 digits per id", "wb::bpe_deserialize", "line 2");
}
