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

TEST_CASE("bpe_train on \"aaabdaaabac\" learns the hand-worked merges aa, ab, (aa)(ab)",
          "[bpe][c:bpe_train.merge-ids][c:bpe_train.count-overlaps]"
          "[c:bpe_train.tie-smallest-pair][c:bpe_train.stop]") {
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
          "[bpe][c:bpe_train.tie-smallest-pair]") {
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

TEST_CASE("bpe_train counts overlapping pairs and merges them left to right",
          "[bpe][c:bpe_train.count-overlaps][c:bpe_train.merge-left-to-right]") {
    // "aaaa": aa 3 -> Z: "Z Z" (left to right: positions 0-1, then 2-3); ZZ 1: stop.
    CHECK(str(wb::bpe_train("aaaa", 300)) == str(Merges{{97, 97}}));
    // "aaaaaa": aa 5 -> "Z Z Z": ZZ 2 -> Y (left to right): "Y Z": stop.
    CHECK(str(wb::bpe_train("aaaaaa", 300)) == str(Merges{{97, 97}, {256, 256}}));
}

TEST_CASE("bpe_train stops at the vocabulary size, and when no pair occurs twice",
          "[bpe][c:bpe_train.stop][c:bpe_train.any-bytes]") {
    // "abcabc": ab 2, bc 2, ca 1 -> ab = 256; Z c Z c: Zc 2 -> 257; Y Y: once: stop.
    CHECK(str(wb::bpe_train("abcabc", 1000)) == str(Merges{{97, 98}, {256, 99}}));
    CHECK(str(wb::bpe_train("abcabc", 257)) == str(Merges{{97, 98}}));  // V = 257: one merge
    CHECK(wb::bpe_train("abcabc", 256).empty());                        // V = 256: the bytes only
    CHECK(wb::bpe_train("abcdef", 1000).empty());  // every pair once: nothing to learn
    CHECK(wb::bpe_train("", 1000).empty());
}

TEST_CASE("bpe_train takes vocab_size as an upper bound, even SIZE_MAX",
          "[bpe][c:bpe_train.stop]") {
    INFO(
        "hint: training stops early when no pair occurs twice; do not reserve vocab_size - 256 "
        "merges up front (std::vector::reserve throws for SIZE_MAX - 256)");
    // "aaabdaaabac" stops after 3 merges whatever the vocabulary asked for.
    const Merges three{{97, 97}, {97, 98}, {256, 257}};
    CHECK(str(wb::bpe_train("aaabdaaabac", SIZE_MAX)) == str(three));
    CHECK(str(wb::bpe_train("aaabdaaabac", std::size_t(1) << 40)) == str(three));
}

TEST_CASE("bpe_train equals recounting every pair before each merge, on 40 random corpora",
          "[bpe][c:bpe_train.count-overlaps][c:bpe_train.tie-smallest-pair]"
          "[c:bpe_train.merge-left-to-right][c:bpe_train.stop]") {
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

TEST_CASE("bpe_train gives the same merges on every run, on bytes of every value",
          "[bpe][c:bpe_train.deterministic][c:bpe_train.any-bytes]") {
    std::string corpus = kNotes + kNotes;
    for (int b = 0; b < 256; ++b) corpus += static_cast<char>(b);  // NUL and 0xFF included
    const Merges first = wb::bpe_train(corpus, 320);
    REQUIRE(!first.empty());
    CHECK(str(wb::bpe_train(corpus, 320)) == str(first));
    CHECK(str(first) == str(train_by_recounting(corpus, 320)));
}

TEST_CASE("bpe_train breaks a tie among 119 pairs by the smallest pair, written last",
          "[bpe][c:bpe_train.tie-smallest-pair][c:bpe_train.stop]") {
    // S = the bytes 255, 254, ..., 136 (120 distinct bytes); the corpus is S twice. Each of the
    // 119 adjacent pairs of S occurs twice and ties; the smallest, (137, 136), is the last one
    // written. A heap or a hash map that keeps the first pair found, or any order other than
    // (left, right), picks another. Each merge then ties again among every remaining pair.
    std::string s;
    for (int b = 255; b >= 136; --b) s += static_cast<char>(b);
    const std::string corpus = s + s;
    const Merges merges = wb::bpe_train(corpus, 256 + 300);
    REQUIRE(!merges.empty());
    INFO("ties go to the smallest (left, right), however many pairs tie (bpe.hpp)");
    CHECK(str(Merges{merges[0]}) == str(Merges{{137, 136}}));
    CHECK(str(merges) == str(train_by_recounting(corpus, 256 + 300)));
}

// ---- encode and decode ----------------------------------------------------------------------

TEST_CASE("bpe_encode applies the merges in the order learned, lowest rank first",
          "[bpe][c:bpe_encode.merge-order][c:bpe_encode.empty-text]") {
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

TEST_CASE("bpe_encode of the training corpus gives the training's last sequence",
          "[bpe][c:bpe_encode.training-sequence]") {
    // From the hand-worked training above: "aaabdaaabac" ends as X d X a c, X = 258.
    const Merges merges = {{97, 97}, {97, 98}, {256, 257}};
    CHECK(str(wb::bpe_encode("aaabdaaabac", merges)) == str(Ids{258, 100, 258, 97, 99}));
    // Without merges every byte is its own token, UTF-8 bytes of 猫 = e7 8c ab included.
    CHECK(str(wb::bpe_encode("a\xe7\x8c\xab", {})) == str(Ids{97, 0xe7, 0x8c, 0xab}));
}

TEST_CASE("bpe_vocab and bpe_decode give every token's bytes back", "[bpe][c:bpe_vocab.entries]") {
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
          "[bpe][c:bpe_decode.round-trip][c:bpe_decode.raw-bytes][c:bpe_encode.ids-in-range]") {
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

TEST_CASE("bpe_serialize writes the documented text, and bpe_deserialize reads it back",
          "[bpe][c:bpe_serialize.format][c:bpe_deserialize.round-trip]") {
    const Merges merges = {{97, 97}, {97, 98}, {256, 257}};
    CHECK(wb::bpe_serialize(merges) == "wb-bpe 1 3\n97 97\n97 98\n256 257\n");
    CHECK(str(wb::bpe_deserialize("wb-bpe 1 3\n97 97\n97 98\n256 257\n")) == str(merges));
    CHECK(wb::bpe_serialize({}) == "wb-bpe 1 0\n");
    CHECK(wb::bpe_deserialize("wb-bpe 1 0\n").empty());
    const Merges learned = wb::bpe_train(kNotes, 400);
    CHECK(str(wb::bpe_deserialize(wb::bpe_serialize(learned))) == str(learned));
}

// ---- bad inputs -----------------------------------------------------------------------------

TEST_CASE("bpe_train refuses a vocabulary smaller than the 256 bytes",
          "[bpe][errors][c:bpe_train.vocab-too-small]") {
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_train("abab", 255),
                    "the 256 byte tokens come first: vocab_size must be at least 256",
                    "wb::bpe_train", "255", "256");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_train("abab", 0), "vocab_size = 0", "wb::bpe_train",
                    "0", "256");
}

TEST_CASE("bpe_decode refuses an id below 0 or at least V, naming it and its position",
          "[bpe][errors][c:bpe_decode.id-out-of-range]") {
    const Merges one = {{97, 98}};  // V = 257
    // The bad id sits at position 3 (a number no other fact of the message holds).
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_decode({97, 98, 99, 257}, one),
                    "ids are in [0, 256 + merges): id == V is one past the last token",
                    "wb::bpe_decode", "257", "3", "[0, 257)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_decode({97, 98, 99, 100, -1}, one),
                    "a negative id has no bytes", "wb::bpe_decode", "-1", "4", "[0, 257)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_decode({256}, {}), "without merges V = 256",
                    "wb::bpe_decode", "256", "[0, 256)");
}

TEST_CASE("bpe_decode names the bad id's position among the ids, not among the bytes",
          "[bpe][errors][c:bpe_decode.id-out-of-range]") {
    INFO(
        "hint: the position is the index of the id in ids, not the number of bytes decoded "
        "before it");
    const Merges one = {{97, 98}};  // V = 257; token 256 is "ab"
    // Four tokens of two bytes each come first: the bad id is at position 4, after 8 bytes. The
    // fact is the number alone (a message may write the position as ids[4]); 4 is a digit that
    // no other number of the message (300, 257, 256, 1) holds.
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_decode({256, 256, 256, 256, 300}, one),
                    "id 300 is the fifth id (position 4), whatever the bytes before it",
                    "wb::bpe_decode", "300", "4", "[0, 257)");
}

TEST_CASE("bpe_encode, bpe_vocab and bpe_serialize refuse a merge list training cannot make",
          "[bpe][errors][c:bpe_encode.merge-id-out-of-range][c:bpe_encode.merge-repeated]"
          "[c:bpe_vocab.invalid-merges][c:bpe_decode.invalid-merges]"
          "[c:bpe_serialize.invalid-merges]") {
    // Merge 0 may only use bytes; (97, 256) names itself. Merge 1 repeats merge 0's pair.
    const Merges uses_itself = {{97, 256}};
    const Merges repeated = {{97, 98}, {97, 98}};
    const Merges negative = {{97, 98}, {-3, 97}};
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_encode("ab", uses_itself),
                    "merge r may only use ids below 256 + r (bytes and earlier merges)",
                    "wb::bpe_encode", "0", "256", "[0, 256)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_encode("ab", repeated),
                    "a pair is merged once: after merge 0 it never occurs again", "wb::bpe_encode",
                    "1");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_vocab(negative), "an id is never negative",
                    "wb::bpe_vocab", "1", "-3", "[0, 257)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_decode({97}, uses_itself),
                    "bpe_decode checks the merges too, under its own name (not bpe_vocab's)",
                    "wb::bpe_decode", "0", "256");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_serialize(repeated), "never write a bad list",
                    "wb::bpe_serialize", "1");
}

TEST_CASE("bpe_deserialize refuses a wrong header, a bad count and malformed lines",
          "[bpe][errors][c:bpe_deserialize.bad-header][c:bpe_deserialize.count-above-limit]"
          "[c:bpe_deserialize.count-exceeds-data][c:bpe_deserialize.bad-line]"
          "[c:bpe_deserialize.trailing-data][c:bpe_deserialize.invalid-merges]"
          "[c:bpe_deserialize.ten-digits]") {
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-vocab 1 3\n97 97\n"),
                    "the first line must be \"wb-bpe 1 <count>\"", "wb::bpe_deserialize");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize(""), "empty data is not a merge list",
                    "wb::bpe_deserialize");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 x3\n"),
                    "the count is a decimal number", "wb::bpe_deserialize");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 1048577\n"),
                    "refuse a count above kMaxBpeMerges before reading or allocating",
                    "wb::bpe_deserialize", "1048577", "1048576");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 1000\n97 97\n"),
                    "a count the data cannot hold is refused before anything is stored",
                    "wb::bpe_deserialize", "1000");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 2\n97 97\n97,98\n"),
                    "each line is two decimal ids separated by one space", "wb::bpe_deserialize",
                    "3");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 2\n97 97\n97 98"),
                    "the last line ends in a newline too", "wb::bpe_deserialize", "3");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 1\n97 97\n97 98\n"),
                    "more lines than announced: the data must end after the last one",
                    "wb::bpe_deserialize");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 2\n97 97\n256 300\n"),
                    "merge 1 may use ids below 257 only", "wb::bpe_deserialize", "3", "300",
                    "[0, 257)");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 3\n97 97\n97 98\n97 97\n"),
                    "line 4 repeats the pair of line 2: a pair is merged once (bpe_encode's rule)",
                    "wb::bpe_deserialize", "4");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 1\n99999999999 1\n"),
                    "at most 10 digits per id", "wb::bpe_deserialize", "2");
}

TEST_CASE("bpe_deserialize checks the count against the data before it reads a line",
          "[bpe][errors][c:bpe_deserialize.count-before-lines]") {
    // 1000 merges announced, 6 bytes after the first line, and line 2 is malformed as well:
    // the count is refused first, as a count (the message names 1000), not as a bad line 2.
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 1000\n97,97\n"),
                    "check the count against kMaxBpeMerges and against the bytes that follow "
                    "(a line takes at least 4) before reading any line",
                    "wb::bpe_deserialize", "1000");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 2000000\n97,97\n"),
                    "a count above kMaxBpeMerges is refused before anything else is read",
                    "wb::bpe_deserialize", "2000000", "1048576");
}

TEST_CASE(
    "bpe_deserialize counts 4 bytes a line after the first line, and allows 2^20 merges",
    "[bpe][errors][c:bpe_deserialize.count-exceeds-data][c:bpe_deserialize.count-before-lines]"
    "[c:bpe_deserialize.count-above-limit][c:bpe_deserialize.round-trip]") {
    INFO(
        "hint: compare the count with (bytes after the first line) / 4, the shortest line being "
        "\"0 0\\n\"; and refuse only a count ABOVE kMaxBpeMerges, not one equal to it");
    // 7 merges announced, 27 bytes after the first line: 7 lines need at least 28. Refused as a
    // count, before line 2 (malformed too) is read.
    const std::string body27 = std::string(26, 'x') + "\n";
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 7\n" + body27),
                    "7 lines of at least 4 bytes cannot fit in 27 bytes: a count error, "
                    "checked before any line (not 27 / 3, not the whole data's length)",
                    "wb::bpe_deserialize", "7");
    // 6 lines of exactly 4 bytes fit in 24: read, not refused.
    const std::string six = "wb-bpe 1 6\n1 1\n2 2\n3 3\n4 4\n5 5\n6 6\n";
    const Merges six_merges{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}};
    CHECK(str(wb::bpe_deserialize(six)) == str(six_merges));
    // Exactly kMaxBpeMerges merges: merge r is (0, 255 + r), each new. Allowed, and read back.
    Merges most(wb::kMaxBpeMerges);
    for (std::size_t r = 0; r < most.size(); ++r) most[r] = {0, 255 + static_cast<std::int64_t>(r)};
    const Merges back = wb::bpe_deserialize(wb::bpe_serialize(most));
    CHECK(back.size() == most.size());
    CHECK(back == most);
}

TEST_CASE("bpe_deserialize reads decimal digits only: no sign, no blank, no CR, no wrap-around",
          "[bpe][errors][c:bpe_deserialize.ten-digits][c:bpe_deserialize.bad-line]"
          "[c:bpe_deserialize.bad-header][c:bpe_deserialize.trailing-data]") {
    // Each of these differs from what bpe_serialize writes by one character; a reader built
    // on std::stoll, std::istringstream or a trimmed line accepts some of them.
    // Read leniently, each would be the valid merge (97, 98) after the merge (97, 97).
    const std::vector<std::string> bad_lines = {
        "+97 98", " 97 98", "97 98 ", "97  98", "97\t98", "97 98\r", "9798", "97 -98", "97 9a",
        // 20 digits: 18446744073709551714 is 2^64 + 98, which wraps to 98 in 64 bits.
        "97 18446744073709551714"};
    for (const std::string& line : bad_lines) {
        const std::string data = "wb-bpe 1 2\n97 97\n" + line + "\n";
        INFO("line 3 = \"" << line << "\"");
        WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize(data),
                        "a line is exactly <digits> <space> <digits> <newline>, 1 to 10 digits "
                        "each (bpe.hpp)",
                        "wb::bpe_deserialize", "3");
    }
    const std::vector<std::string> bad_headers = {
        "wb-bpe 1 +1\n97 97\n", "wb-bpe 1  1\n97 97\n", "wb-bpe 1 1 \n97 97\n",
        "wb-bpe 1 1\r\n97 97\n", "wb-bpe 1 \n",
        // 2^64 + 1 wraps to 1 in 64 bits: refused by the 10-digit rule.
        "wb-bpe 1 18446744073709551617\n97 97\n",
        // The first line without its newline, even for an empty list.
        "wb-bpe 1 0", "WB-BPE 1 0\n", "wb-bpe 2 0\n"};
    for (const std::string& data : bad_headers) {
        INFO("data = \"" << data << "\"");
        WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize(data),
                        "the first line is exactly \"wb-bpe 1 <count>\" and its newline, the "
                        "count 1 to 10 decimal digits",
                        "wb::bpe_deserialize");
    }
    // An empty list ends right after its first line, like every other list.
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 0\n97 97\n"),
                    "no merge announced: the data must end after the first line",
                    "wb::bpe_deserialize");
    // Ten digits are allowed: the id is then simply out of range for merge 0, a list error.
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 1\n9999999999 97\n"),
                    "an id of 10 digits is read, then refused as outside [0, 256)",
                    "wb::bpe_deserialize", "2", "9999999999", "[0, 256)");
}
