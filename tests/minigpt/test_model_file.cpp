#include "check.hpp"
#include "minigpt/model_file.hpp"
#include "temp_files.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "8-training/checkpoint.hpp"
#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"

// Checks of the saved model (one file: vocabulary + checkpoint; the older two-file form), the parameter count and text
// generation on top of chapter 9's wb::generate.
//
// The parameter count is the hand formula of the model: per block 12·D² + 13·D (four D×D
// projections with biases, the 4D FFN both ways, two LayerNorms), plus wte and lm_head
// (V·D each), wpe (T_max·D) and the final LayerNorm (2·D). For V = 5, T_max = 4, D = 8, L = 1:
// 40 + 40 + 32 + 16 + 768 + 104 = 1000.

namespace {

using wbtest::TempDir;

using wb::FileError;
using wb::ValueError;
using wb::minigpt::Model;
using wb::minigpt::Tokenizer;

namespace fs = std::filesystem;

Model tiny_model(std::uint64_t seed) {
    Model m;
    m.tokenizer = Tokenizer::from_text("abcd\n");
    m.config = {m.tokenizer.size(), 4, 8, 2, 1};
    m.params = wb::init_gpt<float>(m.config, seed);
    m.step = 17;
    return m;
}

bool same_params(const wb::GptParams<float>& a, const wb::GptParams<float>& b) {
    const auto ra = wb::parameters(a);
    const auto rb = wb::parameters(b);
    if (ra.size() != rb.size()) return false;
    for (std::size_t i = 0; i < ra.size(); ++i) {
        if (ra[i].name != rb[i].name || ra[i].size != rb[i].size) return false;
        for (std::size_t j = 0; j < ra[i].size; ++j) {
            if (ra[i].data[j] != rb[i].data[j]) return false;
        }
    }
    return true;
}

}  // namespace

TEST_CASE("parameter_count matches the hand formula of the model", "[minigpt]") {
    const Model m = tiny_model(1);
    CHECK(wb::minigpt::parameter_count(m.params) == 1000);
    // V = 61, T_max = 64, D = 64, L = 2 (the command's default): 2·61·64 + 64·64 + 128 +
    // 2·(12·4096 + 13·64) = 7808 + 4096 + 128 + 99968 = 112000.
    const wb::GptConfig c{61, 64, 64, 4, 2};
    CHECK(wb::minigpt::parameter_count(wb::init_gpt<float>(c, 1)) == 112000);
}

TEST_CASE("save_model and load_model round-trip weights, config, step and vocabulary",
          "[minigpt]") {
    TempDir dir;
    const std::string path = (dir.path / "m.ckpt").string();
    const Model m = tiny_model(3);
    wb::minigpt::save_model(path, m);
    CHECK(fs::exists(path));
    // One file: no vocabulary beside it, no temporary file left behind.
    std::size_t files = 0;
    for (const auto& entry : fs::directory_iterator(dir.path)) {
        INFO(entry.path().string());
        CHECK(entry.path().filename() == "m.ckpt");
        ++files;
    }
    CHECK(files == 1);

    const Model back = wb::minigpt::load_model(path);
    CHECK(back.config.V == 5);
    CHECK(back.config.T_max == 4);
    CHECK(back.config.D == 8);
    CHECK(back.config.H == 2);
    CHECK(back.config.L == 1);
    CHECK(back.step == 17);
    CHECK(back.tokenizer.serialize() == m.tokenizer.serialize());
    CHECK(same_params(back.params, m.params));
}

TEST_CASE(
    "load_model refuses the older two-file form, which load_two_file_model reads, rejecting a bad "
    "vocabulary",
    "[minigpt]") {
    TempDir dir;
    const std::string path = (dir.path / "m.ckpt").string();
    const std::string vocab = wb::minigpt::vocab_path(path);
    Model m = tiny_model(3);
    // The older form: a bare checkpoint and its vocabulary beside it.
    wb::save_checkpoint(path, m.config, m.params, nullptr, m.step);
    std::ofstream(vocab, std::ios::binary) << m.tokenizer.serialize();
    // A vocabulary beside a checkpoint proves nothing (one of the same size loads as well):
    // load_model says how to convert the pair once, with the vocabulary named.
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(path),
                    "the two-file form is refused, with the command that converts it",
                    "wb::minigpt::load_model", path, "bare checkpoint", "minigpt convert",
                    "--vocab " + vocab);
    const Model old = wb::minigpt::load_two_file_model(path, vocab);
    CHECK(old.tokenizer.serialize() == m.tokenizer.serialize());
    CHECK(old.step == 17);
    CHECK(same_params(old.params, m.params));
    // Converted, it is one file that load_model reads.
    const std::string one = (dir.path / "m.model").string();
    wb::minigpt::save_model(one, old);
    CHECK(same_params(wb::minigpt::load_model(one).params, m.params));

    fs::remove(vocab);
    WB_CHECK_THROWS(FileError, wb::minigpt::load_two_file_model(path, vocab),
                    "a missing vocabulary is named", "wb::minigpt::load_two_file_model",
                    "cannot open", vocab);
    std::ofstream(vocab, std::ios::binary) << "not a vocabulary";
    WB_CHECK_THROWS(FileError, wb::minigpt::load_two_file_model(path, vocab),
                    "a damaged vocabulary is rejected", vocab, "not a vocabulary");
    std::ofstream(vocab, std::ios::binary) << Tokenizer::from_text("xyz").serialize();
    WB_CHECK_THROWS(FileError, wb::minigpt::load_two_file_model(path, vocab),
                    "3 characters cannot drive a model of V = 5", vocab, "3 characters", "V = 5");
    WB_CHECK_THROWS(FileError,
                    wb::minigpt::load_two_file_model((dir.path / "none.ckpt").string(), vocab),
                    "a missing checkpoint is a FileError", "none.ckpt");

    m.config.V = 6;  // the weights still have V = 5
    WB_CHECK_THROWS(ValueError, wb::minigpt::save_model(path, m),
                    "the config and the vocabulary must agree", "wb::minigpt::save_model", "V = 6",
                    "5");
}

TEST_CASE("generate_text continues a prompt with wb::generate and repeats for a seed",
          "[minigpt]") {
    const Model m = tiny_model(5);
    const wb::SamplingOptions opts{1.0f, 0, 1.0f};
    // It fits in T_max = 4: one call of wb::generate on the encoded prompt, decoded.
    const auto ids = wb::generate(m.params, m.config, m.tokenizer.encode("ab"), 2, opts, 9);
    CHECK(wb::minigpt::generate_text(m, "ab", 2, opts, 9, false) == m.tokenizer.decode(ids));
    const auto gids = wb::generate(m.params, m.config, m.tokenizer.encode("c"), 3, opts, 9, true);
    CHECK(wb::minigpt::generate_text(m, "c", 3, opts, 9, true) == m.tokenizer.decode(gids));

    // Longer than T_max: made in pieces, still the prompt plus 20 characters, and repeatable.
    const std::string a = wb::minigpt::generate_text(m, "abc", 20, opts, 4, false);
    CHECK(a.size() == 23);  // all ASCII: one byte per character
    CHECK(a.rfind("abc", 0) == 0);
    CHECK(wb::minigpt::generate_text(m, "abc", 20, opts, 4, false) == a);
    // An empty prompt starts after a newline and returns only the new characters.
    CHECK(wb::minigpt::generate_text(m, "", 6, opts, 4, false).size() == 6);
    CHECK(wb::minigpt::generate_text(m, "d", 0, opts, 4, false) == "d");

    WB_CHECK_THROWS(ValueError, wb::minigpt::generate_text(m, "abz", 5, opts, 1, false),
                    "a prompt character outside the vocabulary is named", "'z'", "byte offset 2");
}
