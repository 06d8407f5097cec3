// Fuzz target: wb::load_checkpoint (chapter 8) behind its checksum.
//
// fuzz_checkpoint feeds whole files, and almost none of them has a valid FNV-1a checksum, so
// the payload parser is reached only through the committed seeds. Here every input is a
// payload: the target wraps it in a correct header (magic, version 1, payload size) and
// appends its correct checksum before loading, so every input reaches the parser of the
// config, the tensors and the optimizer state. Its corpus, corpus/checkpoint_payload, holds
// the payloads of the checkpoint seeds (valid models and contents that are not a model).
//
// Properties, for every payload:
//   - the loader refuses it with wb::FileError naming wb::load_checkpoint and the file, or
//     returns a checkpoint; nothing else escapes, nothing reads out of bounds, no allocation
//     follows a size that only the payload claims;
//   - a checkpoint that loads is saved back byte for byte (one encoding per checkpoint).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "8-training/checkpoint.hpp"
#include "checkpoint_round_trip.hpp"
#include "fuzz_support.hpp"

namespace {

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const wbfuzz::ScratchDir dir("checkpoint_payload");
    std::vector<std::uint8_t> file(wb::kCheckpointMagic, wb::kCheckpointMagic + 8);
    for (int i = 0; i < 4; ++i) {
        file.push_back(static_cast<std::uint8_t>(wb::kCheckpointVersion >> (8 * i)));
    }
    put_u64(file, size);
    file.insert(file.end(), data, data + size);
    put_u64(file, wb::fnv1a64(data, size));  // the checksum fixed up: the parser is reached

    const std::string input = dir.file("input.ckpt");
    wbfuzz::write_file(input, file.data(), file.size());
    const auto refused = wbfuzz::check_checkpoint_round_trip(dir, input, file);
    if (refused) {
        wbfuzz::require(!wbfuzz::names(*refused, "checksum mismatch"),
                        "the checksum was fixed up, got: " + *refused);
    }
    return 0;
}
