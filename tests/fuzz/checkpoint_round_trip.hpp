// The properties both checkpoint fuzz targets check of a file they wrote: wb::load_checkpoint
// refuses it with a wb::FileError naming the function and the file, or returns a checkpoint
// that wb::save_checkpoint writes back to the same bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "8-training/checkpoint.hpp"
#include "fuzz_support.hpp"

namespace wbfuzz {

/// Loads the checkpoint file `input`, whose bytes are `bytes`, and checks the properties
/// above; the refusal's message when it is refused, for the target's own checks.
inline std::optional<std::string> check_checkpoint_round_trip(
    const ScratchDir& dir, const std::string& input, const std::vector<std::uint8_t>& bytes) {
    wb::Checkpoint ck;
    try {
        ck = wb::load_checkpoint(input);
    } catch (const wb::FileError& e) {
        const std::string message = e.what();
        require(names(message, "wb::load_checkpoint") && names(message, input),
                "a FileError names wb::load_checkpoint and the file, got: " + message);
        return message;
    }
    const std::string again = dir.file("saved_again.ckpt");
    wb::save_checkpoint(again, ck.config, ck.params, ck.optimizer ? &*ck.optimizer : nullptr,
                        ck.step);
    require(read_file(again) == bytes, "a checkpoint that loads is saved back to the same bytes");
    return std::nullopt;
}

}  // namespace wbfuzz
