// Writes the seed corpus of the checkpoint fuzz target: valid files saved by
// wb::save_checkpoint, and the damaged files a loader must refuse (truncated, another magic or
// version, a flipped byte, sizes that would exhaust memory if believed, contents that are not
// the model). Where a damage keeps the checksum right, it is recomputed here with FNV-1a
// written out independently (h = 14695981039346656037, h = (h ^ byte) · 1099511628211).
//
//   fuzz_make_corpus tests/fuzz/corpus/checkpoint
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "8-training/checkpoint.hpp"
#include "8-training/model.hpp"
#include "8-training/optim.hpp"

namespace {

using Bytes = std::vector<unsigned char>;

Bytes read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const Bytes& b) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void put_le(Bytes& b, std::size_t at, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) b.at(at + i) = static_cast<unsigned char>(v >> (8 * i));
}

// Recomputes the checksum of the payload [20, size - 8) into the last 8 bytes.
Bytes rehash(Bytes b) {
    std::uint64_t h = 14695981039346656037ull;
    for (std::size_t i = 20; i + 8 < b.size(); ++i) h = (h ^ b[i]) * 1099511628211ull;
    put_le(b, b.size() - 8, h, 8);
    return b;
}

Bytes prefix(const Bytes& b, std::size_t n) { return Bytes(b.begin(), b.begin() + n); }

// A valid checkpoint of `config`, saved by the reference, as bytes.
Bytes saved(const std::string& dir, const wb::GptConfig& config, bool with_optimizer,
            std::int64_t step) {
    wb::GptParams<float> params = wb::init_gpt<float>(config, 1);
    wb::AdamWState<float> state;
    if (with_optimizer) {
        wb::GptParams<float> grads = wb::zeros_like(params);
        wb::zero_grad(grads);
        float g = 0.25f;
        for (auto& ref : wb::parameters(grads)) {
            for (std::size_t i = 0; i < ref.size; ++i) ref.data[i] = (g = -g * 1.5f);
        }
        wb::adamw_step(params, grads, state, wb::AdamWConfig{});
    }
    const std::string tmp = dir + "/.make_corpus.tmp.ckpt";
    wb::save_checkpoint(tmp, config, params, with_optimizer ? &state : nullptr, step);
    Bytes b = read_all(tmp);
    std::filesystem::remove(tmp);
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    std::filesystem::create_directories(dir);
    auto out = [&](const std::string& name, const Bytes& b) {
        write_all(dir + "/" + name, b);
        std::printf("%-32s %zu bytes\n", name.c_str(), b.size());
    };

    // Payload offsets in a file of config {V, T_max, D, H, L}: V 20, T_max 28, D 36, H 44,
    // L 52, step 60, optimizer flag 68, tensor count 69, first name length 77, "wte" 81,
    // its rank 84, its dims 88 and 96, its values from 104.
    const Bytes tiny = saved(dir, {3, 2, 2, 1, 1}, false, 0);
    const Bytes adam = saved(dir, {3, 2, 2, 1, 1}, true, 7);
    out("valid_tiny.ckpt", tiny);
    out("valid_tiny_adamw.ckpt", adam);
    out("valid_two_blocks_adamw.ckpt", saved(dir, {5, 4, 4, 2, 2}, true, 123456789));

    out("empty.ckpt", {});
    out("truncated_in_magic.ckpt", prefix(tiny, 4));
    out("truncated_in_header.ckpt", prefix(tiny, 15));
    out("truncated_in_payload.ckpt", prefix(adam, adam.size() / 2));
    out("truncated_in_checksum.ckpt", prefix(tiny, tiny.size() - 3));
    out("magic_only.ckpt", prefix(tiny, 8));

    Bytes b = tiny;
    const char png[8] = {'\x89', 'P', 'N', 'G', '\r', '\n', '\x1a', '\n'};
    std::copy(png, png + 8, b.begin());
    out("bad_magic_png.ckpt", b);
    out("text_file.ckpt", Bytes{'W', 'B', 'G', 'P', 'T', ' ', 'n', 'o', 't', 'e', 's', '\n'});

    b = tiny;
    put_le(b, 8, 7, 4);
    out("version_7.ckpt", b);

    b = adam;
    b[b.size() / 2] ^= 0x10;
    out("checksum_flipped_weight.ckpt", b);
    b = tiny;
    b[b.size() - 1] ^= 0x01;
    out("checksum_flipped_hash.ckpt", b);

    b = tiny;
    put_le(b, 12, 1ull << 63, 8);
    out("payload_size_2p63.ckpt", b);
    b = tiny;
    put_le(b, 12, ~0ull - 20, 8);
    out("payload_size_wraps.ckpt", b);

    b = tiny;
    put_le(b, 20, 1ull << 40, 8);  // V = 2^40: 8 TiB of weights, if believed
    out("config_huge_V.ckpt", rehash(b));
    b = tiny;
    put_le(b, 36, 1ull << 31, 8);  // D = 2^31: D·D overflows 32 bits
    out("config_huge_D.ckpt", rehash(b));
    b = tiny;
    put_le(b, 44, 3, 8);  // H = 3 does not divide D = 2
    out("config_H_not_dividing_D.ckpt", rehash(b));
    b = tiny;
    put_le(b, 52, 0, 8);  // L = 0
    out("config_L_zero.ckpt", rehash(b));
    b = tiny;
    b[68] = 2;  // optimizer flag neither 0 nor 1
    out("optimizer_flag_2.ckpt", rehash(b));
    b = tiny;
    put_le(b, 69, 1000000, 8);
    out("tensor_count_wrong.ckpt", rehash(b));
    b = tiny;
    put_le(b, 77, 0xFFFFFFFFull, 4);
    out("name_length_huge.ckpt", rehash(b));
    b = tiny;
    b[83] = 'f';
    out("tensor_renamed_wtf.ckpt", rehash(b));
    b = tiny;
    put_le(b, 84, 0xFFFFFFFFull, 4);
    out("tensor_rank_huge.ckpt", rehash(b));
    b = tiny;
    put_le(b, 88, 1ull << 62, 8);
    out("tensor_dim_huge.ckpt", rehash(b));

    b = tiny;
    b.insert(b.end(), {0, 0, 0, 0});
    out("trailing_bytes.ckpt", b);
    b = adam;  // the optimizer flag says 0 but the moments are still there
    b[68] = 0;
    out("optimizer_flag_cleared.ckpt", rehash(b));
    return 0;
}
