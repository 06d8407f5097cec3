// What the fuzz targets share: a scratch folder for the files a target writes, whole-file
// reads and writes, and the check that turns a broken property into a crash.
//
// A target reports a broken property by throwing wbfuzz::Violation. Under libFuzzer the
// exception escapes LLVMFuzzerTestOneInput, std::terminate aborts, and libFuzzer saves the
// input as a crash; under the replay program (replay.cpp) it is printed with the file's name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace wbfuzz {

/// A property of the code under test that an input broke.
struct Violation : std::logic_error {
    using std::logic_error::logic_error;
};

/// Throws Violation(what) unless `ok`.
inline void require(bool ok, const std::string& what) {
    if (!ok) throw Violation("property broken: " + what);
}

/// A folder of this process's own under the system's temporary folder, removed at exit.
/// One per process, so parallel fuzzing jobs never share a file.
class ScratchDir {
  public:
    explicit ScratchDir(const std::string& tag)
        : path_(std::filesystem::temp_directory_path() /
                ("wb_fuzz_" + tag + "_" + std::to_string(::getpid()))) {
        std::filesystem::create_directories(path_);
    }
    ~ScratchDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    /// The path of file `name` inside the folder.
    std::string file(const std::string& name) const { return (path_ / name).string(); }

  private:
    std::filesystem::path path_;
};

/// Replaces the file at `path` with `size` bytes.
inline void write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) throw std::runtime_error("wbfuzz: cannot write " + path);
}

/// The whole file at `path`.
inline std::vector<std::uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
}

/// True when `text` contains `part`.
inline bool names(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace wbfuzz
