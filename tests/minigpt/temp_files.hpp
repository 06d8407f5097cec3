// Files for the program's checks: a temporary folder per check, whole-file reads and writes,
// and small one-file models to save and compare.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

#include "8-training/checkpoint.hpp"
#include "8-training/model.hpp"
#include "minigpt/model_file.hpp"
#include "minigpt/tokenizer.hpp"

namespace wbtest {

/// A fresh folder for one check's files (<tmp>/wb_minigpt_<tag>_<pid>, emptied first), removed
/// with everything in it when the check ends.
struct TempDir {
    std::filesystem::path path;  ///< the folder
    explicit TempDir(const std::string& tag = "files") {
        path = std::filesystem::temp_directory_path() /
               ("wb_minigpt_" + tag + "_" + std::to_string(::getpid()));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    /// Writes `bytes` to the file `name` of the folder; its path.
    [[nodiscard]] std::string write(const std::string& name, const std::string& bytes) const {
        const std::filesystem::path p = path / name;
        std::ofstream(p, std::ios::binary) << bytes;
        return p.string();
    }
};

/// The bytes of a file ("" if it cannot be read).
inline std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Replaces a file's bytes.
inline void write_all(const std::string& path, const std::string& data) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

/// Makes a model file's stored FNV-1a (its last 8 bytes, the hash of all before them) right
/// again after a check edited the bytes before it, so that what the load meets is the edit.
inline void rehash_model_file(std::string& bytes) {
    const std::size_t body = bytes.size() - 8;
    const std::uint64_t h = wb::fnv1a64(reinterpret_cast<const unsigned char*>(bytes.data()), body);
    for (int i = 0; i < 8; ++i) bytes[body + i] = static_cast<char>(h >> (8 * i));
}

/// A model of the characters of `alphabet`, context T, width D, 2 heads, L blocks, its weights
/// init_gpt's for `seed`, its step `seed` (so two seeds give two different files).
inline wb::minigpt::Model model_of(const std::string& alphabet, std::size_t T, std::size_t D,
                                   std::size_t L, std::uint64_t seed) {
    wb::minigpt::Model m;
    m.tokenizer = wb::minigpt::Tokenizer::from_text(alphabet);
    m.config = {m.tokenizer.size(), T, D, 2, L};
    m.params = wb::init_gpt<float>(m.config, seed);
    m.step = static_cast<std::int64_t>(seed);
    return m;
}

/// Whether two models have the same vocabulary, step and every parameter's bits.
inline bool same_model(const wb::minigpt::Model& a, const wb::minigpt::Model& b) {
    if (a.tokenizer.serialize() != b.tokenizer.serialize() || a.step != b.step) return false;
    const auto ra = wb::parameters(a.params);
    const auto rb = wb::parameters(b.params);
    if (ra.size() != rb.size()) return false;
    for (std::size_t i = 0; i < ra.size(); ++i) {
        if (ra[i].name != rb[i].name || ra[i].size != rb[i].size) return false;
        if (std::memcmp(ra[i].data, rb[i].data, ra[i].size * sizeof(float)) != 0) return false;
    }
    return true;
}

}  // namespace wbtest
