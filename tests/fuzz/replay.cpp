// Replays fuzz inputs without libFuzzer, so that every build checks the corpus:
//
//   fuzz_<target>_replay FILE...
//
// runs the target's LLVMFuzzerTestOneInput on each file. Exit status 0: every file passed;
// 1: a property broke or an unexpected exception escaped (printed with the file's name);
// 77: the code under test is still a stub (wb::NotImplemented), reported to ctest as skipped.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "workbook/core.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s FILE...\n", argv[0]);
        return 2;
    }
    int status = 0;
    for (int i = 1; i < argc; ++i) {
        const std::vector<std::uint8_t> bytes = wbfuzz::read_file(argv[i]);
        try {
            LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
            std::printf("ok    %s (%zu bytes)\n", argv[i], bytes.size());
        } catch (const wb::NotImplemented& e) {
            std::printf("skip  %s: %s\n", argv[i], e.what());
            return 77;
        } catch (const std::exception& e) {
            std::printf("FAIL  %s (%zu bytes): %s\n", argv[i], bytes.size(), e.what());
            status = 1;
        }
    }
    return status;
}
