#include "check.hpp"
#include "minigpt/tokenizer.hpp"
#include "temp_files.hpp"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "minigpt/data.hpp"
#include "minigpt/model_file.hpp"

// Checks of the UTF-8 character tokenizer.
//
// Expected bytes and code points were printed by Python 3 (`c.encode('utf-8').hex()`,
// `hex(ord(c))`), and the invalid sequences are the classes of RFC 3629 §3 / the Unicode
// standard's Table 3-7 (well-formed byte sequences), written out by hand.

namespace {

using wb::ValueError;
using wb::minigpt::Tokenizer;
using wb::minigpt::utf8_decode;
using wb::minigpt::utf8_encode;

using Ids = std::vector<std::int64_t>;
using Cps = std::vector<char32_t>;

}  // namespace

TEST_CASE("utf8_decode reads 1- to 4-byte characters, Chinese included", "[minigpt]") {
    // 注 U+6CE8 = e6 b3 a8, 意 U+610F = e6 84 8f, 力 U+529B = e5 8a 9b (Python 3).
    CHECK(utf8_decode("\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b") == Cps{0x6CE8, 0x610F, 0x529B});
    // a, é U+00E9 = c3 a9, 😀 U+1F600 = f0 9f 98 80.
    CHECK(utf8_decode("a\xc3\xa9\xf0\x9f\x98\x80") == Cps{0x61, 0xE9, 0x1F600});
    CHECK(utf8_decode("") == Cps{});
    // The edges of each length and of the ranges around the surrogates.
    CHECK(utf8_decode(std::string("\x00", 1)) == Cps{0x0});
    CHECK(utf8_decode("\x7f") == Cps{0x7F});
    CHECK(utf8_decode("\xc2\x80") == Cps{0x80});
    CHECK(utf8_decode("\xdf\xbf") == Cps{0x7FF});
    CHECK(utf8_decode("\xe0\xa0\x80") == Cps{0x800});
    CHECK(utf8_decode("\xed\x9f\xbf") == Cps{0xD7FF});
    CHECK(utf8_decode("\xee\x80\x80") == Cps{0xE000});
    CHECK(utf8_decode("\xef\xbf\xbf") == Cps{0xFFFF});
    CHECK(utf8_decode("\xf0\x90\x80\x80") == Cps{0x10000});
    CHECK(utf8_decode("\xf4\x8f\xbf\xbf") == Cps{0x10FFFF});
}

TEST_CASE("utf8_decode rejects every kind of invalid UTF-8 and names the byte offset",
          "[minigpt]") {
    const char* hint = "strict UTF-8 (RFC 3629): the error names the offset of the bad sequence";
    // A continuation byte where a character starts.
    WB_CHECK_THROWS(ValueError, utf8_decode("ab\x80"), hint, "wb::minigpt::utf8_decode",
                    "byte offset 2", "continuation");
    WB_CHECK_THROWS(ValueError, utf8_decode("\xbf"), hint, "byte offset 0");
    // Lead bytes that never occur: F5..FF.
    WB_CHECK_THROWS(ValueError, utf8_decode("\xff"), hint, "byte offset 0", "0xFF");
    WB_CHECK_THROWS(ValueError, utf8_decode("x\xf5\x80\x80\x80"), hint, "byte offset 1", "0xF5");
    WB_CHECK_THROWS(ValueError, utf8_decode("\xf8\x88\x80\x80\x80"), hint, "byte offset 0");
    // Overlong forms: '/' as C0 AF, U+007F as C1 BF, U+0000 as E0 80 80, as F0 80 80 80.
    WB_CHECK_THROWS(ValueError, utf8_decode("\xc0\xaf"), hint, "byte offset 0", "overlong");
    WB_CHECK_THROWS(ValueError, utf8_decode("\xc1\xbf"), hint, "overlong");
    WB_CHECK_THROWS(ValueError, utf8_decode("a\xe0\x80\x80"), hint, "byte offset 1", "overlong");
    WB_CHECK_THROWS(ValueError, utf8_decode("\xe0\x9f\xbf"), hint, "overlong");
    WB_CHECK_THROWS(ValueError, utf8_decode("\xf0\x80\x80\x80"), hint, "overlong");
    WB_CHECK_THROWS(ValueError, utf8_decode("\xf0\x8f\xbf\xbf"), hint, "overlong");
    // Surrogates U+D800 and U+DFFF.
    WB_CHECK_THROWS(ValueError, utf8_decode("\xed\xa0\x80"), hint, "byte offset 0", "surrogate");
    WB_CHECK_THROWS(ValueError, utf8_decode("\xed\xbf\xbf"), hint, "surrogate");
    // Beyond U+10FFFF: F4 90 80 80 would be U+110000.
    WB_CHECK_THROWS(ValueError, utf8_decode("\xf4\x90\x80\x80"), hint, "U+10FFFF");
    // Truncated at the end of the text, and interrupted by a non-continuation byte.
    WB_CHECK_THROWS(ValueError, utf8_decode("\xe6\xb3"), hint, "byte offset 0", "truncated");
    WB_CHECK_THROWS(ValueError, utf8_decode("ok\xc3"), hint, "byte offset 2", "truncated");
    WB_CHECK_THROWS(ValueError, utf8_decode("\xf0\x9f\x98"), hint, "truncated");
    WB_CHECK_THROWS(ValueError, utf8_decode("\xe6\x41\xa8"), hint, "byte offset 0", "truncated");
    WB_CHECK_THROWS(ValueError, utf8_decode("\xc3\xc3\xa9"), hint, "byte offset 0");
}

TEST_CASE("utf8_encode writes each length and rejects surrogates and values past U+10FFFF",
          "[minigpt]") {
    CHECK(utf8_encode({0x6CE8, 0x610F, 0x529B}) == "\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b");
    CHECK(utf8_encode({0x61, 0xE9, 0x1F600}) == "a\xc3\xa9\xf0\x9f\x98\x80");
    CHECK(utf8_encode({0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF}) ==
          "\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
    const char* hint = "only Unicode scalar values can be encoded";
    WB_CHECK_THROWS(ValueError, utf8_encode({0x41, 0xD800}), hint, "wb::minigpt::utf8_encode",
                    "U+D800", "index 1");
    WB_CHECK_THROWS(ValueError, utf8_encode({0x110000}), hint, "U+110000");
}

TEST_CASE("Tokenizer gives each distinct character an id in code-point order", "[minigpt]") {
    // "hello": distinct e < h < l < o, so e=0 h=1 l=2 o=3.
    const Tokenizer t = Tokenizer::from_text("hello");
    CHECK(t.size() == 4);
    CHECK(t.encode("hello") == Ids{1, 0, 2, 2, 3});
    CHECK(t.decode({3, 2, 0}) == "ole");
    CHECK(t.encode("") == Ids{});
    CHECK(t.decode({}) == "");
}

TEST_CASE("Tokenizer makes one token per Chinese character and round-trips the text", "[minigpt]") {
    // 注意力就是一切: code points 6CE8 610F 529B 5C31 662F 4E00 5207; sorted, 一=0 切=1 力=2
    // 就=3 意=4 是=5 注=6 (Python: sorted(set(s)), [v.index(c) for c in s]).
    const std::string text =
        "\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b\xe5\xb0\xb1\xe6\x98\xaf"
        "\xe4\xb8\x80\xe5\x88\x87";
    const Tokenizer t = Tokenizer::from_text(text);
    CHECK(t.size() == 7);
    CHECK(t.encode(text) == Ids{6, 4, 2, 3, 5, 0, 1});
    CHECK(t.decode(t.encode(text)) == text);
    // Mixed scripts and a newline round-trip too.
    const std::string mixed = "ROMEO:\n\xe6\xb3\xa8\xe6\x84\x8f \xf0\x9f\x98\x80!";
    const Tokenizer m = Tokenizer::from_text(mixed);
    CHECK(m.decode(m.encode(mixed)) == mixed);
    CHECK(m.encode(mixed).size() == 12);  // R O M E O : \n 注 意 space 😀 !
}

TEST_CASE("Tokenizer rejects unknown characters, bad ids, empty and invalid text", "[minigpt]") {
    const Tokenizer t = Tokenizer::from_text("abc");
    WB_CHECK_THROWS(ValueError, t.encode("abz"), "name the character and where it is",
                    "wb::minigpt::Tokenizer::encode", "'z'", "byte offset 2", "vocabulary");
    // 注 after two ASCII bytes starts at byte 2.
    WB_CHECK_THROWS(ValueError, t.encode("ab\xe6\xb3\xa8"), "offsets count bytes, not characters",
                    "U+6CE8", "byte offset 2");
    WB_CHECK_THROWS(ValueError, t.encode("a\n"), "a control character is shown as U+XXXX", "U+000A",
                    "byte offset 1");
    WB_CHECK_THROWS(ValueError, t.encode("a\xff"), "invalid UTF-8 is an error", "byte offset 1");
    WB_CHECK_THROWS(ValueError, t.decode({0, 3}), "ids are in [0, size())",
                    "wb::minigpt::Tokenizer::decode", "id 3", "position 1", "[0, 3)");
    WB_CHECK_THROWS(ValueError, t.decode({-1}), "negative ids are rejected", "id -1");
    WB_CHECK_THROWS(ValueError, Tokenizer::from_text(""), "an empty text has no vocabulary",
                    "wb::minigpt::Tokenizer::from_text", "empty");
    WB_CHECK_THROWS(ValueError, Tokenizer::from_text("ok\xed\xa0\x80"), "the text must be UTF-8",
                    "from_text", "byte offset 2", "surrogate");
}

TEST_CASE("Tokenizer::serialize writes a header and the characters, and deserialize reads it back",
          "[minigpt]") {
    // Distinct characters of "ba\n" in code-point order: '\n' (10), 'a', 'b'.
    const Tokenizer t = Tokenizer::from_text("ba\n");
    CHECK(t.serialize() == "wb-minigpt-vocab 1 3\n\nab");
    const Tokenizer back = Tokenizer::deserialize(t.serialize());
    CHECK(back.size() == 3);
    CHECK(back.encode("ab\n") == t.encode("ab\n"));
    CHECK(back.serialize() == t.serialize());

    const std::string chinese = "\xe4\xb8\x80\xe5\x88\x87 ok";  // 一切 ok
    const Tokenizer c = Tokenizer::from_text(chinese);
    const Tokenizer c2 = Tokenizer::deserialize(c.serialize());
    CHECK(c2.encode(chinese) == c.encode(chinese));
    CHECK(c2.decode(c.encode(chinese)) == chinese);
}

TEST_CASE("Tokenizer::deserialize rejects what is not a vocabulary", "[minigpt]") {
    const char* fn = "wb::minigpt::Tokenizer::deserialize";
    const char* hint = "a damaged vocabulary file must be rejected, not half-read";
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize(""), hint, fn, "not a vocabulary");
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("hello\nabc"), hint, fn, "not a vocabulary");
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-vocab 1 3"), hint, fn);
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-vocab 1 \nab"), hint, fn);
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-vocab 1 x2\nab"), hint, fn,
                    "bad count");
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-vocab 1 0\n"), hint, fn,
                    "empty");
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-vocab 1 3\nab"), hint, fn,
                    "announces 3", "holds 2");
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-vocab 1 2\naa"), hint, fn,
                    "duplicate");
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-vocab 1 2\nba"), hint, fn,
                    "out of order");
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-vocab 1 2\na\xc3"), hint, fn,
                    "truncated");
    WB_CHECK_THROWS(ValueError,
                    Tokenizer::deserialize("wb-minigpt-vocab 1 99999999999999999999\na"), hint, fn,
                    "bad count");
}

// ---- the BPE kind: chapter 2's byte-level BPE inside the program ------------------------------

namespace {

// English and the notes' Chinese: the BPE checks below learn their merges on this.
const std::string kMixed =
    "First Citizen:\nBefore we proceed any further, hear me speak.\n"
    "All:\nSpeak, speak.\n"
    "\xe5\xb0\x8f\xe7\x8c\xab\xe8\xb6\xb4\xe5\x9c\xa8 \xe5\xb0\x8f\xe7\x8c\xab\xe8\xb6\xb4"
    "\xe5\x9c\xa8\n";  // 小猫趴在 twice

}  // namespace

TEST_CASE("Tokenizer::bpe_from_text is chapter 2's BPE and round-trips any UTF-8 text",
          "[minigpt]") {
    const Tokenizer t = Tokenizer::bpe_from_text(kMixed, 300);
    CHECK(t.kind() == wb::minigpt::TokenizerKind::bpe);
    const auto merges = wb::bpe_train(kMixed, 300);
    REQUIRE(!merges.empty());
    CHECK(t.merges() == merges);
    CHECK(t.size() == 256 + merges.size());
    CHECK(t.encode(kMixed) == wb::bpe_encode(kMixed, merges));
    CHECK(t.encode(kMixed).size() < kMixed.size());  // merges shorten the text they learned on
    // Text the merges never saw still encodes, byte by byte where nothing applies.
    for (const std::string& text : {kMixed, std::string("\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b"),
                                    std::string("\xf0\x9f\x98\x80 zebra"), std::string()}) {
        CHECK(t.decode(t.encode(text)) == text);
    }
    CHECK(t.encode("\xe6\xb3\xa8") == Ids{0xe6, 0xb3, 0xa8});  // 注: three byte tokens
}

TEST_CASE("Tokenizer::decode of BPE ids that cut a character shows U+FFFD", "[minigpt]") {
    const Tokenizer t = Tokenizer::bpe_from_text("no pair repeats", 256);  // V = 256: bytes only
    CHECK(t.size() == 256);
    // 猫 = e7 8c ab; its first two bytes alone are no character: one U+FFFD (ef bf bd) each.
    CHECK(t.decode({0xe7, 0x8c}) == "\xef\xbf\xbd\xef\xbf\xbd");
    CHECK(t.decode({0x61, 0xe7, 0x8c, 0xab}) == "a\xe7\x8c\xab");
    CHECK(wb::minigpt::utf8_repair("ok \xe7\x8c\xab") == "ok \xe7\x8c\xab");
    CHECK(wb::minigpt::utf8_repair("a\xff"
                                   "b\xed\xa0\x80") ==
          "a\xef\xbf\xbd"
          "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("Tokenizer serializes a BPE vocabulary and still reads the character form", "[minigpt]") {
    const Tokenizer t = Tokenizer::bpe_from_text(kMixed, 300);
    const std::string data = t.serialize();
    CHECK(data == "wb-minigpt-bpe 1\n" + wb::bpe_serialize(t.merges()));
    const Tokenizer back = Tokenizer::deserialize(data);
    CHECK(back.kind() == wb::minigpt::TokenizerKind::bpe);
    CHECK(back.merges() == t.merges());
    CHECK(back.encode(kMixed) == t.encode(kMixed));
    // The character form, as earlier versions of the program wrote it.
    const Tokenizer chars = Tokenizer::deserialize("wb-minigpt-vocab 1 3\n\nab");
    CHECK(chars.kind() == wb::minigpt::TokenizerKind::characters);
    CHECK(chars.encode("ab\n") == Ids{1, 2, 0});
}

TEST_CASE("Tokenizer's BPE kind rejects a bad size, bad text, bad ids and a bad vocabulary",
          "[minigpt]") {
    const std::string fn = "wb::minigpt::Tokenizer::bpe_from_text";
    WB_CHECK_THROWS(ValueError, Tokenizer::bpe_from_text("", 300), "an empty text has no merges",
                    fn, "empty");
    WB_CHECK_THROWS(ValueError, Tokenizer::bpe_from_text("abab", 255),
                    "V counts the 256 byte tokens", fn, "vocab_size = 255", "256");
    WB_CHECK_THROWS(ValueError, Tokenizer::bpe_from_text("ab\xff", 300),
                    "the model reads and writes UTF-8", fn, "byte offset 2");
    const Tokenizer t = Tokenizer::bpe_from_text(kMixed, 300);
    WB_CHECK_THROWS(ValueError, t.encode("a\xff"), "a prompt must be UTF-8",
                    "wb::minigpt::Tokenizer::encode", "byte offset 1");
    WB_CHECK_THROWS(ValueError, t.decode({97, std::int64_t(t.size())}), "ids are in [0, V)",
                    "wb::minigpt::Tokenizer::decode", std::to_string(t.size()), "position 1");
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-bpe 1\nwb-bpe 1 1\n300 1\n"),
                    "merge 0 may only use bytes", "wb::minigpt::Tokenizer::deserialize",
                    "wb::bpe_deserialize", "line 2", "300");
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-bpe 1\nwb-bpe 1 9999999\n"),
                    "a count the data cannot hold", "wb::minigpt::Tokenizer::deserialize",
                    "9999999");
}

namespace {

// A folder of its own for the files of one check, removed afterwards.
struct BpeTempDir {
    std::filesystem::path path;
    BpeTempDir() {
        path = std::filesystem::temp_directory_path() /
               ("wb_minigpt_bpe_" + std::to_string(::getpid()));
        std::filesystem::create_directories(path);
    }
    ~BpeTempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
};

wb::minigpt::Model tiny_bpe_model() {
    wb::minigpt::Model m;
    m.tokenizer = Tokenizer::bpe_from_text(kMixed, 280);
    m.config = {m.tokenizer.size(), 8, 8, 2, 1};
    m.params = wb::init_gpt<float>(m.config, 4);
    m.step = 3;
    return m;
}

}  // namespace

TEST_CASE("a model with a BPE vocabulary is one file: saved, loaded, and generating UTF-8",
          "[minigpt]") {
    BpeTempDir dir;
    const std::string path = (dir.path / "bpe.ckpt").string();
    const wb::minigpt::Model m = tiny_bpe_model();
    wb::minigpt::save_model(path, m);
    CHECK(!std::filesystem::exists(wb::minigpt::vocab_path(path)));  // no .vocab beside it
    const wb::minigpt::Model back = wb::minigpt::load_model(path);
    CHECK(back.tokenizer.kind() == wb::minigpt::TokenizerKind::bpe);
    CHECK(back.tokenizer.merges() == m.tokenizer.merges());
    CHECK(back.config.V == m.tokenizer.size());
    // Random weights draw any token, partial characters too: the text is still UTF-8.
    const std::string text =
        wb::minigpt::generate_text(back, "Speak", 6, wb::SamplingOptions{1.0f, 0, 1.0f}, 7, false);
    CHECK(text.rfind("Speak", 0) == 0);
    CHECK_NOTHROW(utf8_decode(text));
}

TEST_CASE("load_model rejects a damaged BPE vocabulary even behind a valid checksum", "[minigpt]") {
    BpeTempDir dir;
    const std::string path = (dir.path / "bpe.ckpt").string();
    wb::minigpt::save_model(path, tiny_bpe_model());
    std::string bytes = wbtest::read_all(path);
    // The first merge line follows "wb-bpe 1 24\n"; its first digit becomes 9: an id of 900
    // or more, which merge 0 may not use. Then the checksum is made right again.
    const std::size_t at = bytes.find("wb-bpe 1 ");
    REQUIRE(at != std::string::npos);
    const std::size_t line = bytes.find('\n', at) + 1;
    bytes[line] = '9';
    wbtest::rehash_model_file(bytes);
    wbtest::write_all(path, bytes);
    WB_CHECK_THROWS(wb::FileError, wb::minigpt::load_model(path),
                    "the vocabulary part is checked like the checkpoint part",
                    "wb::minigpt::load_model", "not a vocabulary", "wb::bpe_deserialize", "line 2");
}

TEST_CASE("load_corpus with a BPE choice learns V = 512 on the bundled corpus", "[minigpt]") {
    const wb::minigpt::TokenizerChoice bpe{wb::minigpt::TokenizerKind::bpe, 512};
    const auto c = wb::minigpt::load_corpus(wb::minigpt::bundled_corpus_path(), 1000, bpe);
    CHECK(c.tokenizer.size() == 512);
    CHECK(c.tokenizer.decode(c.ids) == c.text);
    // 154469 characters (test_data.cpp) in fewer tokens: more than 1.5 characters per token.
    CHECK(c.ids.size() < 154469 / 3 * 2);
    CHECK(wb::minigpt::characters_per_token(c.tokenizer, c.ids) ==
          Approx(154469.0 / double(c.ids.size())));
    CHECK(wb::minigpt::token_summary(c).find("BPE tokens (V = 512: 256 bytes + 256 merges)") !=
          std::string::npos);
    WB_CHECK_THROWS(ValueError,
                    wb::minigpt::load_corpus(wb::minigpt::bundled_corpus_path(), 1000,
                                             {wb::minigpt::TokenizerKind::bpe, 100}),
                    "a BPE vocabulary starts with the 256 bytes", "wb::minigpt::load_corpus",
                    "vocab_size = 100", "256");
}
