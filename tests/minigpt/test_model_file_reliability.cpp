#include "check.hpp"
#include "child_process.hpp"
#include "minigpt/file_io.hpp"
#include "minigpt/model_file.hpp"
#include "temp_files.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "8-training/checkpoint.hpp"
#include "8-training/model.hpp"

// Crash safety and bounded reads of the one-file model: a save killed with `kill -9` at any
// moment, a save that runs out of disk, concurrent saves, paths that are not regular files,
// and damaged or oversized files given to load_model.

namespace {

using wbtest::model_of;
using wbtest::same_model;
using wbtest::TempDir;
using wbtest::write_all;

using wb::FileError;
using wb::minigpt::Model;

namespace fs = std::filesystem;

std::size_t files_in(const fs::path& dir) {
    std::size_t n = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        (void)entry;
        ++n;
    }
    return n;
}

}  // namespace

TEST_CASE("a save killed with kill -9 at any moment leaves a whole, correct model", "[minigpt]") {
    TempDir dir("kill");
    const std::string path = (dir.path / "m.ckpt").string();
    // Two models of different alphabets and shapes: a vocabulary of one beside the weights of
    // the other cannot load, and a load that succeeds is compared with both, bit for bit.
    const Model a = model_of("abcd\n", 16, 32, 2, 3);
    const Model b = model_of("wxyz", 8, 16, 3, 4);
    wb::minigpt::save_model(path, a);

    std::mt19937 rng(20240611);
    std::uniform_int_distribution<int> pause_us(0, 4000);
    const int kills = 40;
    int saw_a = 0, saw_b = 0, mid_save = 0;
    for (int k = 0; k < kills; ++k) {
        const int status = wbtest::status_of_saver_signalled(path, a, b, SIGKILL, pause_us(rng));
        INFO("kill " << k << ": the child must die of the kill, not exit on its own");
        REQUIRE(WIFSIGNALED(status));
        if (files_in(dir.path) > 1) ++mid_save;  // a temporary file: the kill cut a save

        Model back;
        try {
            back = wb::minigpt::load_model(path);
        } catch (const std::exception& e) {
            FAIL("kill " << k << ": the model no longer loads: " << e.what());
        }
        const bool is_a = same_model(back, a), is_b = same_model(back, b);
        INFO("kill " << k << ": the model that loads is one of the two saved, whole");
        REQUIRE((is_a || is_b));
        saw_a += is_a;
        saw_b += is_b;
    }
    CHECK(saw_a + saw_b == kills);
    // The next save removes the temporary files of the killed saves.
    INFO(mid_save << " of " << kills << " kills cut a save in the middle");
    wb::minigpt::save_model(path, a);
    CHECK(files_in(dir.path) == 1);
    CHECK(same_model(wb::minigpt::load_model(path), a));
}

TEST_CASE("a save that runs out of space leaves the previous model and says so", "[minigpt]") {
    TempDir dir("full");
    const std::string path = (dir.path / "m.ckpt").string();
    const Model a = model_of("abcd\n", 16, 32, 2, 3);
    const Model b = model_of("wxyz", 64, 64, 2, 4);  // far larger than the limit below
    wb::minigpt::save_model(path, a);
    const std::string message = wbtest::text_from_child([&] {
        wbtest::limit_file_size(64 * 1024);
        try {
            wb::minigpt::save_model(path, b);
        } catch (const FileError& e) {
            return std::string(e.what());
        } catch (const std::exception& e) {
            return std::string("not a FileError: ") + e.what();
        }
        return std::string("no error");
    });
    INFO(message);
    CHECK(message.find("wb::minigpt::save_model") != std::string::npos);
    CHECK(message.find("is unchanged") != std::string::npos);
    CHECK(same_model(wb::minigpt::load_model(path), a));  // what the message says is true
    CHECK(files_in(dir.path) == 1);                       // no temporary file left
}

TEST_CASE("concurrent saves to one path never share a temporary file", "[minigpt]") {
    TempDir dir("race");
    const std::string path = (dir.path / "m.ckpt").string();
    std::vector<Model> models;
    for (std::uint64_t s = 1; s <= 4; ++s) models.push_back(model_of("abcd\n", 16, 32, 2, s));
    std::vector<int> failures(models.size(), 0);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < models.size(); ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 5; ++i) {
                try {
                    wb::minigpt::save_model(path, models[t]);
                } catch (...) {
                    ++failures[t];
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    for (int f : failures) CHECK(f == 0);
    const Model back = wb::minigpt::load_model(path);
    bool one_of_them = false;
    for (const Model& m : models) one_of_them = one_of_them || same_model(back, m);
    CHECK(one_of_them);
    CHECK(files_in(dir.path) == 1);
}

TEST_CASE("save_model refuses a path that is not a regular file and leaves it as it is",
          "[minigpt]") {
    TempDir dir("paths");
    const Model a = model_of("abcd\n", 4, 8, 1, 3);
    const std::string folder = (dir.path / "folder").string();
    fs::create_directories(folder);
    WB_CHECK_THROWS(FileError, wb::minigpt::save_model(folder, a), "a folder is not replaced",
                    "wb::minigpt::save_model", folder, "a directory", "expected a regular file");
    CHECK(fs::is_directory(folder));

    const std::string fifo = (dir.path / "fifo").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    WB_CHECK_THROWS(FileError, wb::minigpt::save_model(fifo, a), "a FIFO is not replaced",
                    "wb::minigpt::save_model", fifo, "a FIFO");
    CHECK(fs::is_fifo(fifo));

    const std::string target = (dir.path / "target.ckpt").string();
    wb::minigpt::save_model(target, a);
    const std::string link = (dir.path / "link.ckpt").string();
    fs::create_symlink(target, link);
    WB_CHECK_THROWS(FileError, wb::minigpt::save_model(link, a), "a symbolic link is not replaced",
                    "wb::minigpt::save_model", link, "a symbolic link");
    CHECK(fs::is_symlink(link));

    WB_CHECK_THROWS(FileError, wb::minigpt::save_model("/dev/null", a),
                    "a device is never replaced by a file", "wb::minigpt::save_model", "/dev/null",
                    "a character device");
    const std::string missing_dir = (dir.path / "no" / "such" / "m.ckpt").string();
    WB_CHECK_THROWS(FileError, wb::minigpt::save_model(missing_dir, a), "a missing folder is named",
                    "wb::minigpt::save_model", "cannot write", "is unchanged");
}

TEST_CASE("load_model refuses special, damaged and inconsistent files before reading them",
          "[minigpt]") {
    TempDir dir("load");
    const std::string path = (dir.path / "m.ckpt").string();
    const Model a = model_of("abcd\n", 4, 8, 1, 3);
    wb::minigpt::save_model(path, a);
    const std::string good = wbtest::read_all(path);
    const std::string bad = (dir.path / "bad.ckpt").string();

    WB_CHECK_THROWS(FileError, wb::minigpt::load_model("/dev/zero"),
                    "a device is refused before it is read", "wb::minigpt::load_model", "/dev/zero",
                    "a character device", "expected a regular file");
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(dir.path.string()), "a folder is refused",
                    "wb::minigpt::load_model", "a directory");
    const std::string fifo = (dir.path / "fifo").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(fifo), "a FIFO is refused, not waited on",
                    "wb::minigpt::load_model", "a FIFO");
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model((dir.path / "none").string()),
                    "a missing file", "wb::minigpt::load_model", "cannot open");

    write_all(bad, "");
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(bad), "an empty file",
                    "wb::minigpt::load_model", bad, "not a mini-GPT model");
    write_all(bad, "PNG\x89 not a model at all, just text");
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(bad), "another format",
                    "not a mini-GPT model", "WBMINIGP");
    write_all(bad, good.substr(0, 20));
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(bad), "a file cut in its header",
                    "truncated at byte 20");
    std::string version = good;
    version[8] = 9;
    write_all(bad, version);
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(bad), "another version",
                    "format version 9, expected 1, 2 or 3");
    write_all(bad, good.substr(0, good.size() - 1));
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(bad), "a file one byte short",
                    "header announces");
    write_all(bad, good + "x");
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(bad), "a byte too many", "header announces");
    std::string huge = good;
    for (int i = 0; i < 8; ++i) huge[20 + i] = '\xff';  // a checkpoint of 2^64 - 1 bytes
    write_all(bad, huge);
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(bad),
                    "an announced size larger than the file is refused before reading",
                    "header announces", std::to_string(good.size()));
    for (std::size_t at : {std::size_t(30), good.size() / 2, good.size() - 3}) {
        std::string flipped = good;
        flipped[at] = static_cast<char>(flipped[at] ^ 0x10);
        write_all(bad, flipped);
        INFO("byte " << at << " flipped");
        WB_CHECK_THROWS(FileError, wb::minigpt::load_model(bad), "a flipped byte",
                        "wb::minigpt::load_model", "checksum mismatch");
    }
    // A vocabulary of another size, with a correct checksum: the parts must agree.
    const Model other = model_of("xyz", 4, 8, 1, 3);
    const std::string other_path = (dir.path / "other.ckpt").string();
    wb::minigpt::save_model(other_path, other);
    CHECK(same_model(wb::minigpt::load_model(other_path), other));
    CHECK(same_model(wb::minigpt::load_model(path), a));
}

TEST_CASE("read_regular_file states its limit", "[minigpt]") {
    TempDir dir("limit");
    const std::string path = (dir.path / "f.txt").string();
    write_all(path, std::string(100, 'a'));
    CHECK(wb::minigpt::read_regular_file("f", path, 100).size() == 100);
    WB_CHECK_THROWS(FileError, wb::minigpt::read_regular_file("wb::f", path, 99),
                    "a file over the limit is refused with the limit", "wb::f", "100 bytes",
                    "limit of 99 bytes");
}
