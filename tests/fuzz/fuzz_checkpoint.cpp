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

#include "checkpoint_round_trip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const wbfuzz::ScratchDir dir("checkpoint");
    const std::string input = dir.file("input.bin");
    wbfuzz::write_file(input, data, size);

    (void)wbfuzz::check_checkpoint_round_trip(dir, input,
                                              std::vector<std::uint8_t>(data, data + size));
    return 0;
}
