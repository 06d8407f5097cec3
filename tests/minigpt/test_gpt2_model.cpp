#include "check.hpp"
#include "minigpt/fast/gpt_decode.hpp"
#include "minigpt/fast/gpt_train.hpp"
#include "minigpt/model_file.hpp"
#include "temp_files.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"
#include "golden.hpp"
#include "gpt2_golden.hpp"

// Checks of a GPT-2 in the program: GPT-2's vocabulary as the model file's vocabulary part,
// GPT-2's tanh GELU in format version 3, and the tiny GPT-2 of tests/goldens/8-training/
// gpt2_tiny.txt generating the greedy text GPT-2's own forward (PyTorch) gives it. The whole way
// from GPT-2's files (tools/convert-gpt2, the command line) is cli_checks.sh's.

namespace {

using wb::minigpt::Model;
using wb::minigpt::Tokenizer;
using wb::minigpt::TokenizerKind;

// The golden's tiny vocabulary (tools/goldens/gpt2_model.py wrote its vocab.bpe and
// encoder.json): "Hello world" is He llo Ġw o r l d.
Tokenizer tiny_gpt2_tokenizer() {
    return Tokenizer::from_gpt2(wb::gpt2_load(wbtest::golden_path("8-training/gpt2_tiny_vocab")));
}

Model tiny_gpt2_model() {
    const wbtest::Golden g("8-training/gpt2_tiny.txt");
    Model m;
    m.tokenizer = tiny_gpt2_tokenizer();
    m.config = wbtest::gpt2_golden_config(g);
    m.params = wbtest::gpt2_golden_params(g, m.config);
    return m;
}

}  // namespace

TEST_CASE("a GPT-2 vocabulary serializes as its tokens and merges and reads back", "[minigpt]") {
    const Tokenizer t = tiny_gpt2_tokenizer();
    CHECK(t.kind() == TokenizerKind::gpt2);
    CHECK(t.size() == 13);
    const std::string text = t.serialize();
    CHECK(text.rfind("wb-minigpt-gpt2 1 13 4\nH\ne\n", 0) == 0);
    const Tokenizer back = Tokenizer::deserialize(text);
    CHECK(back.kind() == TokenizerKind::gpt2);
    CHECK(back.serialize() == text);
    // Encoding is chapter 2's gpt2_encode: pieces, then merges by rank.
    CHECK(back.encode("Hello world") == std::vector<std::int64_t>{10, 11, 12, 3, 6, 2, 7});
    CHECK(back.decode({10, 11, 12, 3, 6, 2, 7}) == "Hello world");
}

TEST_CASE("Tokenizer::deserialize refuses a damaged GPT-2 vocabulary", "[minigpt]") {
    const std::string fn = "wb::minigpt::Tokenizer::deserialize";
    const auto refuse = [&](const std::string& data, const char* hint, const char* fact) {
        WB_CHECK_THROWS(wb::ValueError, Tokenizer::deserialize(data), hint, fn, fact);
    };
    refuse("wb-minigpt-gpt2 1 2\nH\ne\n", "a header without the merges' count",
           "<tokens> <merges>");
    refuse("wb-minigpt-gpt2 1 02 0\nH\ne\n", "a count with a leading zero", "02");
    refuse("wb-minigpt-gpt2 1 9999999 0\n", "a count over the limit", "9999999");
    refuse("wb-minigpt-gpt2 1 0 0\n", "no tokens", "no tokens");
    refuse("wb-minigpt-gpt2 1 3 0\nH\ne\n", "fewer token lines than announced", "token 2");
    refuse("wb-minigpt-gpt2 1 2 0\nH\n\n", "an empty token", "token 1");
    refuse("wb-minigpt-gpt2 1 2 1\nH\ne\nHe\n", "a merge that is not two tokens", "merge 0");
    refuse("wb-minigpt-gpt2 1 2 0\nH\ne\nextra", "bytes after the last merge", "5 bytes");
    refuse("wb-minigpt-gpt2 1 2 0\nH\nH\n", "a token twice", "wb::gpt2_vocab");
}

TEST_CASE("a model with GPT-2's tanh GELU is format version 3 and loads with that GELU",
          "[minigpt][gpt2]") {
    wbtest::TempDir dir("gpt2");
    const std::string path = (dir.path / "tiny-gpt2.model").string();
    const Model m = tiny_gpt2_model();
    wb::minigpt::save_model(path, m);
    const std::string bytes = wbtest::read_all(path);
    CHECK(bytes[8] == 3);   // version 3
    CHECK(bytes[32] == 1);  // gelu = tanh, after version 2's four switches
    const Model back = wb::minigpt::load_model(path);
    CHECK(back.config.gelu == wb::Gelu::tanh);
    CHECK(back.tokenizer.kind() == TokenizerKind::gpt2);
    CHECK(back.variant.is_default());

    // The default GELU stays version 1, byte for byte as before.
    Model exact = m;
    exact.config.gelu = wb::Gelu::exact;
    wb::minigpt::save_model(path, exact);
    CHECK(wbtest::read_all(path)[8] == 1);
    CHECK(wb::minigpt::load_model(path).config.gelu == wb::Gelu::exact);
}

TEST_CASE("load_model refuses an unknown GELU byte of version 3 behind a valid checksum",
          "[minigpt][gpt2]") {
    wbtest::TempDir dir("gpt2_bad");
    const std::string path = (dir.path / "tiny-gpt2.model").string();
    wb::minigpt::save_model(path, tiny_gpt2_model());
    std::string bytes = wbtest::read_all(path);
    bytes[32] = 7;
    wbtest::rehash_model_file(bytes);
    wbtest::write_all(path, bytes);
    WB_CHECK_THROWS(wb::FileError, wb::minigpt::load_model(path),
                    "the GELU byte is 0 (exact) or 1 (tanh)", "wb::minigpt::load_model", "gelu = 7",
                    "byte 32");
}

TEST_CASE("the tiny GPT-2 writes GPT-2's greedy text on chapter 9's cache", "[minigpt][gpt2]") {
    // "Hello worldr Her He": the prompt and 6 greedy tokens of GPT-2's forward in PyTorch
    // (tools/goldens/gpt2_model.py, stated in the golden's header).
    const Model m = tiny_gpt2_model();
    const std::string text = wb::minigpt::generate_text(
        m, "Hello world", 6, wb::SamplingOptions{1.0f, 0, 1.0f}, 1, true);
    INFO("hint: GPT-2's FFN is the tanh GELU (config.gelu), its lm_head is wte");
    CHECK(text == "Hello worldr Her He");
}

TEST_CASE("the fast engine refuses GPT-2's tanh GELU instead of computing the exact one",
          "[minigpt][gpt2]") {
    const Model m = tiny_gpt2_model();
    WB_CHECK_THROWS(wb::ValueError, wb::minigpt::GptDecoder(m.params, m.config, m.variant),
                    "the fast decoder computes the exact GELU only", "wb::minigpt::GptDecoder",
                    "gelu = tanh");
    WB_CHECK_THROWS(wb::ValueError, wb::minigpt::GptTrainer(m.config, 1, 4, m.variant),
                    "the fast trainer computes the exact GELU only", "wb::minigpt::GptTrainer",
                    "gelu = tanh");
}
