// Fuzz target: wb::minigpt::load_model, the one-file model format, behind both of its
// checksums.
//
// A model file is a header, a vocabulary part, a checkpoint part (chapter 8's format, with its
// own checksum) and a checksum over everything. Random bytes almost never pass either
// checksum, so here every input is the two parts, and the target writes the file around them
// with both checksums right: every input reaches the vocabulary's parser (characters or BPE),
// chapter 8's loader and the check that the two agree.
//
// Input: a u32, little-endian, the vocabulary part's length N (cut to what follows), then the
// N bytes of the vocabulary part, then the checkpoint's payload (its bytes 20 to size - 8).
// The corpus (corpus/model) is written by fuzz_make_model_corpus.
//
// Properties, for every input:
//   - load_model refuses it with wb::FileError naming wb::minigpt::load_model and the file
//     (never "checksum mismatch": both checksums are right), or returns a model; nothing else
//     escapes, nothing reads out of bounds, no allocation follows a size only the file claims;
//   - a model that loads has a vocabulary of its weights' V, and is saved back by save_model
//     to the same bytes when its checkpoint holds no optimizer state (load_model drops that
//     state): the vocabulary, like the checkpoint, has one text; saved again, it loads to the
//     same bytes in any case.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "8-training/checkpoint.hpp"
#include "fuzz_support.hpp"
#include "minigpt/model_file.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;

void put_le(Bytes& out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::uint64_t fnv1a(const std::uint8_t* data, std::size_t size) {
    std::uint64_t h = 14695981039346656037ull;
    for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
    return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const wbfuzz::ScratchDir dir("model");
    std::size_t n_vocab = 0;
    std::size_t at = 0;
    if (size >= 4) {
        for (int i = 0; i < 4; ++i) n_vocab |= std::size_t(data[i]) << (8 * i);
        at = 4;
    }
    if (n_vocab > size - at) n_vocab = size - at;
    const Bytes vocabulary(data + at, data + at + n_vocab);
    const Bytes payload(data + at + n_vocab, data + size);

    Bytes checkpoint(wb::kCheckpointMagic, wb::kCheckpointMagic + 8);
    put_le(checkpoint, wb::kCheckpointVersion, 4);
    put_le(checkpoint, payload.size(), 8);
    checkpoint.insert(checkpoint.end(), payload.begin(), payload.end());
    put_le(checkpoint, fnv1a(payload.data(), payload.size()), 8);

    Bytes file(wb::minigpt::kModelMagic, wb::minigpt::kModelMagic + 8);
    put_le(file, 1, 4);
    put_le(file, vocabulary.size(), 8);
    put_le(file, checkpoint.size(), 8);
    file.insert(file.end(), vocabulary.begin(), vocabulary.end());
    file.insert(file.end(), checkpoint.begin(), checkpoint.end());
    put_le(file, fnv1a(file.data(), file.size()), 8);

    const std::string input = dir.file("input.model");
    wbfuzz::write_file(input, file.data(), file.size());
    wb::minigpt::Model model;
    try {
        model = wb::minigpt::load_model(input);
    } catch (const wb::FileError& e) {
        const std::string message = e.what();
        wbfuzz::require(
            wbfuzz::names(message, "wb::minigpt::load_model") && wbfuzz::names(message, input),
            "a FileError names wb::minigpt::load_model and the file, got: " + message);
        // (A message may quote the vocabulary's text, which may say anything, the loaders' own
        // words included: only the part before the vocabulary's parser speaks is looked at.)
        const std::string own = message.substr(0, message.find(" is not a vocabulary"));
        wbfuzz::require(!wbfuzz::names(own, input + ": checksum mismatch") &&
                            !wbfuzz::names(own, "(checkpoint part)': checksum mismatch"),
                        "both checksums were fixed up, got: " + message);
        return 0;
    }
    wbfuzz::require(model.tokenizer.size() == model.config.V,
                    "a model that loads has a vocabulary of its weights' V");

    const std::string again = dir.file("saved_again.model");
    wb::minigpt::save_model(again, model);
    const Bytes saved = wbfuzz::read_file(again);
    // The payload's byte 48 is has_optimizer (after V, T_max, D, H, L and the step).
    const bool has_optimizer = payload.size() > 48 && payload[48] != 0;
    if (!has_optimizer) {
        wbfuzz::require(saved == file, "a model that loads is saved back to the same bytes");
    }
    const std::string third = dir.file("saved_third.model");
    wb::minigpt::save_model(third, wb::minigpt::load_model(again));
    wbfuzz::require(wbfuzz::read_file(third) == saved,
                    "a model saved by save_model loads and saves back to the same bytes");
    return 0;
}
