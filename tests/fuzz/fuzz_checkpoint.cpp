// Fuzz target: wb::load_checkpoint (chapter 8) on arbitrary bytes.
//
// Properties, for every input file:
//   - the loader either refuses it with wb::FileError, whose message names the function and
//     the file, or returns a checkpoint; nothing else escapes, nothing reads out of bounds
//     (AddressSanitizer), no allocation follows a size the file merely claims;
//   - a checkpoint that loads is saved back byte for byte: the format has exactly one encoding
//     of a checkpoint, so `save(load(f)) == f` (this also proves every field was read).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "8-training/checkpoint.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const wbfuzz::ScratchDir dir("checkpoint");
    const std::string input = dir.file("input.bin");
    wbfuzz::write_file(input, data, size);

    wb::Checkpoint ck;
    try {
        ck = wb::load_checkpoint(input);
    } catch (const wb::FileError& e) {
        const std::string message = e.what();
        wbfuzz::require(
            wbfuzz::names(message, "wb::load_checkpoint") && wbfuzz::names(message, input),
            "a FileError names wb::load_checkpoint and the file, got: " + message);
        return 0;
    }

    const std::string again = dir.file("saved_again.bin");
    wb::save_checkpoint(again, ck.config, ck.params, ck.optimizer ? &*ck.optimizer : nullptr,
                        ck.step);
    const std::vector<std::uint8_t> original(data, data + size);
    wbfuzz::require(wbfuzz::read_file(again) == original,
                    "a checkpoint that loads is saved back to the same bytes");
    return 0;
}
