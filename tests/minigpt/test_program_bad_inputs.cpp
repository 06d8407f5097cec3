#include "check.hpp"
#include "child_process.hpp"
#include "minigpt/data.hpp"
#include "minigpt/explain.hpp"
#include "minigpt/fast/gpt_decode.hpp"
#include "minigpt/model_file.hpp"
#include "minigpt/tokenizer.hpp"
#include "minigpt/train.hpp"
#include "temp_files.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "8-training/checkpoint.hpp"
#include "8-training/model.hpp"

// Bad input to the program's C++ functions that used to be accepted and give garbage, or be
// refused with a misleading message: each is refused, naming the function, the value and what
// was expected, before anything is computed or written.

namespace {

using wbtest::TempDir;

using wb::ValueError;
using wb::minigpt::Model;
using wb::minigpt::Tokenizer;

namespace fs = std::filesystem;

Model tiny_model() {
    Model m;
    m.tokenizer = Tokenizer::from_text("abcd\n");
    m.config = {m.tokenizer.size(), 8, 8, 2, 1};
    m.params = wb::init_gpt<float>(m.config, 3);
    return m;
}

// The text of a BPE vocabulary whose merges form a chain: merge 0 joins 'a' and 'a', merge r
// joins the token of merge r - 1 (id 255 + r) and 'a', so token 256 + r holds r + 2 bytes and n
// merges hold about n^2 / 2 bytes in all. A valid list: every id is defined before it is used.
std::string chain_vocabulary(std::size_t n) {
    std::string text = "wb-minigpt-bpe 1\nwb-bpe 1 " + std::to_string(n) + "\n97 97\n";
    for (std::size_t r = 1; r < n; ++r) text += std::to_string(255 + r) + " 97\n";
    return text;
}

}  // namespace

TEST_CASE("clip_grad_norm refuses a norm that is finite only in double", "[minigpt]") {
    const wb::GptConfig c{5, 4, 8, 2, 1};
    wb::GptParams<float> g = wb::zeros_like(wb::init_gpt<float>(c, 1));
    for (auto& r : wb::parameters(g)) {
        for (std::size_t i = 0; i < r.size; ++i) r.data[i] = 3e38f;  // each finite
    }
    // sqrt(n) x 3e38 is about 1e40: finite in double, inf as the float returned.
    WB_CHECK_THROWS(ValueError, wb::minigpt::clip_grad_norm(g, 1.0f),
                    "gradients of 3e38 have a norm beyond float's range",
                    "wb::minigpt::clip_grad_norm", "gradient norm", "float");
    CHECK(g.wte(0, 0) == 3e38f);  // refused before anything was scaled
}

TEST_CASE("BatchLoader refuses sizes whose window or batch wraps around", "[minigpt]") {
    const std::vector<std::int64_t> ids(50, 1);
    // context + 1 = 0 for context = SIZE_MAX: the old check compared with 0 and let it pass.
    WB_CHECK_THROWS(ValueError, wb::minigpt::BatchLoader(ids, 1, SIZE_MAX, 1),
                    "a window of SIZE_MAX + 1 tokens", "wb::minigpt::BatchLoader", "50 tokens",
                    "context = " + std::to_string(SIZE_MAX));
    WB_CHECK_THROWS(ValueError, wb::minigpt::BatchLoader(ids, SIZE_MAX, 4, 1),
                    "a batch of SIZE_MAX windows", "wb::minigpt::BatchLoader",
                    "batch = " + std::to_string(SIZE_MAX), "2^48");
    wb::minigpt::BatchLoader fine(ids, 2, 49, 1);  // the largest window that fits
    CHECK(fine.next_windows().shape(1) == 50);
}

TEST_CASE("load_corpus refuses a tokenizer kind that is neither characters nor bpe", "[minigpt]") {
    wb::minigpt::TokenizerChoice odd;
    odd.kind = static_cast<wb::minigpt::TokenizerKind>(7);
    WB_CHECK_THROWS(ValueError,
                    wb::minigpt::load_corpus(wb::minigpt::bundled_corpus_path(), 10, odd),
                    "kind 7 is not a tokenizer, not characters by default",
                    "wb::minigpt::load_corpus", "7", "characters", "bpe");
}

TEST_CASE("the chapters engine refuses a backward after a forward that threw", "[minigpt]") {
    const wb::GptConfig c{7, 4, 8, 2, 1};
    const wb::GptParams<float> p = wb::init_gpt<float>(c, 1);
    wb::GptParams<float> grads = wb::zeros_like(p);
    for (const auto engine : {wb::minigpt::Engine::chapters, wb::minigpt::Engine::fast}) {
        INFO("engine " << wb::minigpt::engine_name(engine));
        const auto step = wb::minigpt::make_step_engine(engine, c, 1, 3);
        WB_CHECK_THROWS(ValueError, step->backward(p, grads), "no forward ran yet",
                        "no forward to differentiate");
        wb::TokenIds x = wb::TokenIds::from_shape({1, 3});
        x(0, 0) = 1, x(0, 1) = 2, x(0, 2) = 3;
        (void)step->forward(p, x, x);
        step->backward(p, grads);  // a good forward, then its backward
        wb::TokenIds bad = x;
        bad(0, 1) = 99;  // outside [0, V)
        CHECK_THROWS_AS(step->forward(p, bad, x), ValueError);
        // The last good forward's cache is still there, but it is not this batch's.
        WB_CHECK_THROWS(ValueError, step->backward(p, grads),
                        "the batch that threw has no gradients; the previous batch's are stale",
                        "no forward to differentiate", "threw");
    }
}

TEST_CASE("generate_fast refuses max_new_tokens = SIZE_MAX before decoding", "[minigpt]") {
    const Model m = tiny_model();
    wb::minigpt::GptDecoder decoder(m.params, m.config);
    const wb::SamplingOptions opts{1.0f, 0, 1.0f};
    for (std::size_t n : {SIZE_MAX, SIZE_MAX - 1}) {
        INFO("max_new_tokens = " << n);
        WB_CHECK_THROWS(ValueError, wb::minigpt::generate_fast(decoder, {1, 2}, n, opts, 1, true),
                        "2 + SIZE_MAX wraps around to 1 <= T_max: compare without the sum",
                        "wb::minigpt::generate_fast", std::to_string(n), "T_max = 8");
    }
    CHECK(decoder.length() == 0);  // nothing was decoded
}

TEST_CASE(
    "Tokenizer::deserialize refuses a BPE vocabulary whose tokens would hold more than "
    "64 MiB",
    "[minigpt]") {
    // 2^17 merges forming a chain: about 2^33 bytes of tokens, built by every decode.
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize(chain_vocabulary(std::size_t(1) << 17)),
                    "a valid list of merges whose table would take 8 GiB",
                    "wb::minigpt::Tokenizer::deserialize", "131328 tokens",
                    std::to_string(wb::minigpt::kMaxBpeVocabularyBytes));
    // A chain of 1000 merges (half a megabyte of tokens) is fine, and decodes.
    const Tokenizer t = Tokenizer::deserialize(chain_vocabulary(1000));
    CHECK(t.size() == 1256);
    CHECK(t.decode({1255}) == std::string(1001, 'a'));
}

TEST_CASE("Tokenizer::deserialize shows a CRLF line end and refuses a count with a leading zero",
          "[minigpt]") {
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-vocab 1 1\r\na"),
                    "a CRLF line: the \\r is shown, not sent to the terminal",
                    "wb::minigpt::Tokenizer::deserialize", "bad count \"1\\r\"", "\\r\\n");
    try {
        (void)Tokenizer::deserialize("wb-minigpt-vocab 1 1\r\na");
    } catch (const ValueError& e) {
        CHECK(std::strchr(e.what(), '\r') == nullptr);  // no raw carriage return
    }
    WB_CHECK_THROWS(ValueError, Tokenizer::deserialize("wb-minigpt-vocab 1 03\nabc"),
                    "serialize never writes 03", "wb::minigpt::Tokenizer::deserialize", "03",
                    "leading zero");
    CHECK(Tokenizer::deserialize("wb-minigpt-vocab 1 3\nabc").size() == 3);
}

TEST_CASE("a BPE vocabulary of the wrong size is counted in BPE tokens, not characters",
          "[minigpt]") {
    TempDir dir("bpe_size");
    const Model m = tiny_model();
    const std::string ckpt = (dir.path / "m.ckpt").string();
    const std::string vocab = (dir.path / "m.ckpt.vocab").string();
    wb::save_checkpoint(ckpt, m.config, m.params, nullptr, 0);
    std::ofstream(vocab, std::ios::binary) << "wb-minigpt-bpe 1\nwb-bpe 1 0\n";
    WB_CHECK_THROWS(wb::FileError, wb::minigpt::load_two_file_model(ckpt, vocab),
                    "256 BPE tokens for a model of V = 5", "256 BPE tokens", "V = 5");
}

TEST_CASE("write_explanation refuses a page name whose JSON would overwrite it", "[minigpt]") {
    TempDir dir("explain");
    const Model m = tiny_model();
    const wb::minigpt::Explanation e = wb::minigpt::explain(m, "abc");
    const std::string page = (dir.path / "x.json").string();
    WB_CHECK_THROWS(ValueError, wb::minigpt::write_explanation(page, e),
                    "x.json's JSON is x.json itself", "wb::minigpt::write_explanation", page,
                    ".json");
    WB_CHECK_THROWS(ValueError, wb::minigpt::write_explanation((dir.path / "").string() + "/", e),
                    "a folder is no page", "wb::minigpt::write_explanation", "names no file");
    CHECK(!fs::exists(page));  // nothing written
    const std::string json = wb::minigpt::write_explanation((dir.path / "x.html").string(), e);
    CHECK(fs::exists(json));
}

TEST_CASE(
    "load_corpus refuses a corpus it cannot tokenize in the memory it may allocate, before "
    "reading it",
    "[minigpt]") {
    TempDir dir("corpus_memory");
    const std::string path = (dir.path / "big.txt").string();
    std::ofstream(path) << "abc";
    fs::resize_file(path, std::uint64_t(200) << 20);  // 200 MiB, sparse: under the size limit
    CHECK(wb::minigpt::kCorpusMemoryPerByte * (std::uint64_t(200) << 20) >
          (std::uint64_t(6) << 30));
#if !WB_UNDER_ASAN  // AddressSanitizer reserves terabytes of address space
    // Under an address-space limit (ulimit -v) of 1 GiB more than the process maps.
    const std::string message = wbtest::error_under_address_limit(
        std::uint64_t(1) << 30, [&] { (void)wb::minigpt::load_corpus(path, 10); });
    INFO(message);
    CHECK(message.find("wb::minigpt::load_corpus") != std::string::npos);
    CHECK(message.find("tokenizing it needs about") != std::string::npos);
    CHECK(message.find("ulimit -v") != std::string::npos);
#endif
}
