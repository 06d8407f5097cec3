#include "check.hpp"
#include "minigpt/data.hpp"
#include "temp_files.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

// Checks of the corpus loader, the split and the random-window loader.
//
// The bundled corpus's size and vocabulary were counted by Python 3
// (`s = open(path, encoding='utf-8').read(); len(s), len(set(s))`). The loader is checked on
// ids equal to their positions, so every window and every target can be predicted by hand.

namespace {

using wbtest::TempDir;

using wb::FileError;
using wb::ValueError;
using wb::minigpt::BatchLoader;
using wb::minigpt::load_corpus;
using wb::minigpt::split_tokens;

namespace fs = std::filesystem;

std::vector<std::int64_t> iota_ids(std::size_t n) {
    std::vector<std::int64_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = static_cast<std::int64_t>(i);
    return ids;
}

}  // namespace

TEST_CASE("load_corpus reads the bundled Shakespeare", "[minigpt]") {
    const auto c = load_corpus(wb::minigpt::bundled_corpus_path(), 1000);
    // Python 3: 154469 characters, 61 distinct (the ASCII of the plays: letters, punctuation,
    // space and newline).
    CHECK(c.ids.size() == 154469);
    CHECK(c.tokenizer.size() == 61);
    CHECK(c.text.rfind("First Citizen:\nBefore we proceed any further", 0) == 0);
    CHECK(c.tokenizer.decode(c.ids) == c.text);
}

TEST_CASE("load_corpus reads UTF-8 with Chinese characters as one token each", "[minigpt]") {
    TempDir dir;
    // 注意力 (3 characters, 9 bytes) twice, with a newline: 7 tokens, 4 distinct.
    const std::string text =
        "\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b\n\xe6\xb3\xa8\xe6\x84\x8f"
        "\xe5\x8a\x9b";
    const auto c = load_corpus(dir.write("zh.txt", text), 7);
    CHECK(c.ids.size() == 7);
    CHECK(c.tokenizer.size() == 4);
    CHECK(c.ids[0] == c.ids[4]);
}

TEST_CASE("load_corpus names the file and the problem", "[minigpt]") {
    TempDir dir;
    const std::string missing = (dir.path / "missing.txt").string();
    WB_CHECK_THROWS(FileError, load_corpus(missing, 10), "a missing file is a FileError",
                    "wb::minigpt::load_corpus", "cannot open", missing);
    WB_CHECK_THROWS(FileError, load_corpus(dir.path.string(), 10), "a directory is not a corpus",
                    dir.path.string(), "is a directory");
    const std::string empty = dir.write("empty.txt", "");
    WB_CHECK_THROWS(FileError, load_corpus(empty, 10), "an empty corpus is an error", empty,
                    "is empty");
    const std::string bad = dir.write("latin1.txt", "caf\xe9 au lait");  // Latin-1 é
    WB_CHECK_THROWS(FileError, load_corpus(bad, 3), "Latin-1 is not UTF-8", bad, "not UTF-8",
                    "byte offset 3");
    const std::string small = dir.write("small.txt", "to be or not");
    WB_CHECK_THROWS(ValueError, load_corpus(small, 100), "too short for the context", small,
                    "holds 12 characters", "at least 100");
}

TEST_CASE("split_tokens keeps the start for training and holds out the end", "[minigpt]") {
    const auto ids = iota_ids(20);
    const auto s = split_tokens(ids, 0.75, 3);  // floor(0.75 · 20) = 15
    REQUIRE(s.train.size() == 15);
    REQUIRE(s.held_out.size() == 5);
    CHECK(s.train.front() == 0);
    CHECK(s.train.back() == 14);
    CHECK(s.held_out.front() == 15);
    CHECK(s.held_out.back() == 19);
    // 0.9 of 154469 = 139022.1 → 139022 train, 15447 held out (the bundled corpus, Python 3).
    const auto b = split_tokens(iota_ids(154469), 0.9, 65);
    CHECK(b.train.size() == 139022);
    CHECK(b.held_out.size() == 15447);

    WB_CHECK_THROWS(ValueError, split_tokens(ids, 0.0, 3), "the fraction is in (0, 1)",
                    "wb::minigpt::split_tokens", "(0, 1)");
    WB_CHECK_THROWS(ValueError, split_tokens(ids, 1.0, 3), "the fraction is in (0, 1)", "(0, 1)");
    WB_CHECK_THROWS(ValueError, split_tokens(ids, 0.9, 3), "18 + 2: the held-out part is short",
                    "18 for training", "2 held out", "at least 3");
}

TEST_CASE("BatchLoader draws windows of T + 1 consecutive tokens", "[minigpt]") {
    const auto ids = iota_ids(100);  // id = position, so a window is start, start+1, ...
    BatchLoader loader(ids, 4, 8, 7);
    std::set<std::int64_t> starts;
    for (int draw = 0; draw < 50; ++draw) {
        const wb::TokenIds w = loader.next_windows();
        REQUIRE(w.shape()[0] == 4);
        REQUIRE(w.shape()[1] == 9);
        for (std::size_t b = 0; b < 4; ++b) {
            CHECK(w(b, 0) >= 0);
            CHECK(w(b, 0) <= 91);  // the last window that fits starts at 100 − 9
            for (std::size_t t = 1; t < 9; ++t) CHECK(w(b, t) == w(b, 0) + std::int64_t(t));
            starts.insert(w(b, 0));
        }
    }
    CHECK(starts.size() > 50);  // 200 draws over 92 starts: random, not one fixed window
}

TEST_CASE("BatchLoader::next gives targets shifted by one and repeats for a seed", "[minigpt]") {
    const auto ids = iota_ids(40);
    BatchLoader a(ids, 3, 5, 42), b(ids, 3, 5, 42), c(ids, 3, 5, 43);
    const wb::NextToken xa = a.next();
    const wb::NextToken xb = b.next();
    REQUIRE(xa.inputs.shape()[0] == 3);
    REQUIRE(xa.inputs.shape()[1] == 5);
    REQUIRE(xa.targets.shape()[1] == 5);
    for (std::size_t r = 0; r < 3; ++r) {
        for (std::size_t t = 0; t < 5; ++t) {
            CHECK(xa.targets(r, t) == xa.inputs(r, t) + 1);  // the next token
            CHECK(xa.inputs(r, t) == xb.inputs(r, t));       // same seed, same batch
        }
    }
    bool differs = false;
    for (int i = 0; i < 5 && !differs; ++i) {
        const wb::TokenIds wa = a.next_windows(), wc = c.next_windows();
        for (std::size_t r = 0; r < 3; ++r) differs = differs || wa(r, 0) != wc(r, 0);
    }
    CHECK(differs);
    // The smallest corpus: exactly one window, always the same.
    const auto nine = iota_ids(9);
    BatchLoader one(nine, 2, 8, 1);
    const wb::TokenIds w = one.next_windows();
    CHECK(w(0, 0) == 0);
    CHECK(w(1, 8) == 8);
}

TEST_CASE("BatchLoader rejects a zero batch or context and too few tokens", "[minigpt]") {
    const auto ids = iota_ids(8);
    WB_CHECK_THROWS(ValueError, BatchLoader(ids, 0, 4, 1), "B >= 1", "wb::minigpt::BatchLoader",
                    "batch = 0");
    WB_CHECK_THROWS(ValueError, BatchLoader(ids, 2, 0, 1), "T >= 1", "context = 0");
    WB_CHECK_THROWS(ValueError, BatchLoader(ids, 2, 8, 1), "a window needs T + 1 tokens",
                    "8 tokens", "context + 1 = 9");
}
