// Writes the seed corpus of the model fuzz target (fuzz_model.cpp): each seed is the target's
// input, a u32 vocabulary length, the vocabulary part, then the checkpoint's payload. Valid
// models of both kinds of vocabulary (characters, Chinese characters, BPE), one with RoPE, one
// whose checkpoint holds AdamW's state, and the parts a loader must refuse behind correct
// checksums: a vocabulary of another size than V, a CRLF header, counts and ids with leading
// zeros, a BPE chain whose tokens would hold more than 64 MiB, and nothing at all.
//
//   fuzz_make_model_corpus tests/fuzz/corpus/model
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "8-training/checkpoint.hpp"
#include "8-training/model.hpp"
#include "8-training/optim.hpp"
#include "minigpt/model_file.hpp"

namespace {

using wb::minigpt::Model;
using wb::minigpt::Tokenizer;

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::uint64_t get_u64(const std::string& b, std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= std::uint64_t(static_cast<unsigned char>(b[at + i])) << (8 * i);
    return v;
}

// The target's input for a vocabulary part and a checkpoint's payload.
std::string seed(const std::string& vocabulary, const std::string& payload) {
    std::string out;
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(vocabulary.size() >> (8 * i)));
    return out + vocabulary + payload;
}

// The payload of a checkpoint file (bytes 20 to size - 8).
std::string payload_of(const std::string& checkpoint) {
    return checkpoint.substr(20, checkpoint.size() - 28);
}

Model model_of(const Tokenizer& tokenizer, wb::Positions positions, std::uint64_t seed_value) {
    Model m;
    m.tokenizer = tokenizer;
    m.config = {tokenizer.size(), 4, 8, 2, 1, positions};
    m.params = wb::init_gpt<float>(m.config, seed_value);
    m.step = 3;
    return m;
}

// The two parts of a model saved by save_model.
void parts(const std::string& dir, const Model& m, std::string& vocabulary, std::string& payload) {
    const std::string path = dir + "/parts.model";
    wb::minigpt::save_model(path, m);
    const std::string file = read_all(path);
    const std::uint64_t n = get_u64(file, 12), c = get_u64(file, 20);
    vocabulary = file.substr(28, n);
    payload = payload_of(file.substr(28 + n, c));
    std::filesystem::remove(path);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    const std::string dir = argv[1];
    std::filesystem::create_directories(dir);
    auto write = [&](const std::string& name, const std::string& bytes) {
        std::ofstream(dir + "/" + name, std::ios::binary | std::ios::trunc) << bytes;
    };
    std::string v, p;

    const Tokenizer chars = Tokenizer::from_text("abcd\n");
    parts(dir, model_of(chars, wb::Positions::learned, 1), v, p);
    write("chars.bin", seed(v, p));
    const std::string chars_payload = p;

    parts(dir, model_of(Tokenizer::from_text("注意力就是你所需要的\n"), wb::Positions::rope, 2), v,
          p);
    write("chinese_rope.bin", seed(v, p));

    const Tokenizer bpe = Tokenizer::deserialize("wb-minigpt-bpe 1\nwb-bpe 1 2\n97 98\n256 99\n");
    parts(dir, model_of(bpe, wb::Positions::learned, 3), v, p);
    write("bpe.bin", seed(v, p));

    // A checkpoint with AdamW's state: it loads, the state is dropped.
    {
        const Model m = model_of(chars, wb::Positions::learned, 4);
        wb::GptParams<float> grads = wb::init_gpt<float>(m.config, 9);
        wb::GptParams<float> params = m.params;
        wb::AdamWState<float> state;
        wb::adamw_step(params, grads, state, wb::AdamWConfig{});
        const std::string path = dir + "/optimizer.ckpt";
        wb::save_checkpoint(path, m.config, params, &state, 5);
        write("with_optimizer.bin", seed(chars.serialize(), payload_of(read_all(path))));
        std::filesystem::remove(path);
    }

    // Damaged behind correct checksums.
    write("vocab_of_another_size.bin",
          seed(Tokenizer::from_text("xyz").serialize(), chars_payload));
    write("vocab_crlf.bin", seed("wb-minigpt-vocab 1 5\r\n\nabcd", chars_payload));
    write("vocab_count_leading_zero.bin", seed("wb-minigpt-vocab 1 05\n\nabcd", chars_payload));
    write("bpe_id_leading_zero.bin", seed("wb-minigpt-bpe 1\nwb-bpe 1 1\n097 98\n", chars_payload));
    std::string chain = "wb-minigpt-bpe 1\nwb-bpe 1 12000\n97 97\n";
    for (int r = 1; r < 12000; ++r) chain += std::to_string(255 + r) + " 97\n";
    write("bpe_chain_over_64MiB.bin", seed(chain, chars_payload));
    write("vocab_only.bin", seed(chars.serialize(), ""));
    write("empty.bin", "");
    return 0;
}
