#include "check.hpp"
#include "child_process.hpp"
#include "minigpt/file_io.hpp"
#include "minigpt/model_file.hpp"
#include "minigpt/train.hpp"
#include "temp_files.hpp"
#include "workbook/svg.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "8-training/model.hpp"

// What a save leaves behind, and files written by several runs at once:
// - a save ended by SIGTERM or SIGINT removes its temporary files before the process ends;
// - `kill -9` cannot be caught: the next save to the path removes the temporary files of
//   processes that no longer run (and only those);
// - the loss log and the loss curve, written by many runs into one folder at the same time,
//   never share a temporary file (each save has a name of its own);
// - a load is refused before any allocation when the model needs more memory than the
//   process may allocate, and the message states both figures.

namespace {

using wbtest::model_of;
using wbtest::read_all;
using wbtest::TempDir;

using wb::FileError;
using wb::minigpt::Model;

namespace fs = std::filesystem;

// The names in `dir` other than `keep`.
std::vector<std::string> others(const fs::path& dir, const std::set<std::string>& keep) {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (keep.count(name) == 0) out.push_back(name);
    }
    return out;
}

// A process id that no longer runs: a child that has exited and been waited for.
pid_t dead_pid() {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    return child;
}

}  // namespace

TEST_CASE("a save ended by SIGTERM or SIGINT removes its temporary files", "[minigpt]") {
    TempDir dir("term");
    const std::string path = (dir.path / "m.ckpt").string();
    // The child saves back to back: nearly every signal lands inside a save (its temporary
    // files exist from its first step to its rename).
    const Model a = model_of("abcd\n", 32, 64, 2, 3);
    const Model b = model_of("wxyz", 16, 64, 2, 4);
    wb::minigpt::save_model(path, a);

    std::mt19937 rng(20240612);
    std::uniform_int_distribution<int> pause_us(0, 20000);
    const int signals = 8;
    for (int k = 0; k < signals; ++k) {
        const int signal_number = k % 2 == 0 ? SIGTERM : SIGINT;
        const int status =
            wbtest::status_of_saver_signalled(path, a, b, signal_number, pause_us(rng));
        INFO("signal " << k << " (" << (signal_number == SIGTERM ? "SIGTERM" : "SIGINT")
                       << "): the process ends by the signal, as it would without a save");
        REQUIRE(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == signal_number);
        const std::vector<std::string> left = others(dir.path, {"m.ckpt"});
        INFO("left beside the model: " << (left.empty() ? std::string("nothing") : left.front()));
        CHECK(left.empty());
        const Model back = wb::minigpt::load_model(path);  // whole: the old model or the new
        CHECK((back.step == a.step || back.step == b.step));
    }
}

TEST_CASE(
    "the next save removes the temporary files of processes that no longer run, and only "
    "those",
    "[minigpt]") {
    TempDir dir("stale");
    const std::string path = (dir.path / "m.ckpt").string();
    const Model a = model_of("abcd\n", 4, 8, 1, 3);
    const std::string dead = std::to_string(dead_pid());
    const std::string live = std::to_string(::getppid());  // the process that runs the checks
    const std::vector<std::string> stale = {"m.ckpt.tmp-" + dead + "-1",
                                            "m.ckpt.tmp-" + dead + "-2.tmp"};
    const std::vector<std::string> kept = {"m.ckpt.tmp-" + live + "-1",       // still running
                                           "m.ckpt.tmp-" + dead + "-1x",      // not the pattern
                                           "m.ckpt.tmp-" + dead,              // no counter
                                           "other.ckpt.tmp-" + dead + "-1"};  // another file's
    for (const auto& name : stale) std::ofstream(dir.path / name) << "half a model";
    for (const auto& name : kept) std::ofstream(dir.path / name) << "not ours to remove";
    wb::minigpt::save_model(path, a);
    for (const auto& name : stale) {
        INFO(name << ": a temporary file of a process that no longer runs");
        CHECK(!fs::exists(dir.path / name));
    }
    for (const auto& name : kept) {
        INFO(name);
        CHECK(fs::exists(dir.path / name));
    }
    CHECK(wb::minigpt::load_model(path).step == a.step);
    CHECK(wb::minigpt::remove_stale_temporaries(path) == 0);  // nothing more to remove
}

TEST_CASE("a failed save removes its temporary files", "[minigpt]") {
    TempDir dir("fail");
    const std::string path = (dir.path / "m.ckpt").string();
    const Model a = model_of("abcd\n", 4, 8, 1, 3);
    wb::minigpt::save_model(path, a);
    // Wrong weights are refused before any file is made; the message names the tensor.
    Model wrong = a;
    wrong.params.wte = xt::zeros<float>({5, 9});
    WB_CHECK_THROWS(wb::ShapeError, wb::minigpt::save_model(path, wrong),
                    "the tensor that does not match the config is named", "wb::minigpt::save_model",
                    "wte", "[5, 9]", "[5, 8]");
    // A file size limit below the model: the checkpoint part fails, in a child. The stale file
    // of a process killed with kill -9 goes even so: a save removes them when it starts.
    std::ofstream(dir.path / ("m.ckpt.tmp-" + std::to_string(dead_pid()) + "-1")) << "half";
    const Model big = model_of("wxyz", 64, 64, 2, 4);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        wbtest::limit_file_size(64 * 1024);
        try {
            wb::minigpt::save_model(path, big);
        } catch (const FileError&) {
            ::_exit(0);
        }
        ::_exit(1);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    const std::vector<std::string> left = others(dir.path, {"m.ckpt"});
    INFO("left: " << (left.empty() ? std::string("nothing") : left.front()));
    CHECK(left.empty());
    CHECK(wb::minigpt::load_model(path).step == a.step);
}

TEST_CASE(
    "runs writing their loss log and curve into one folder at once never share a "
    "temporary file",
    "[minigpt]") {
    TempDir dir("logs");
    const std::string csv = (dir.path / "m.loss.csv").string();
    const std::string svg = (dir.path / "m.loss.svg").string();
    const int writers = 8, rounds = 20;
    std::vector<int> failures(writers, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < writers; ++t) {
        threads.emplace_back([&, t] {
            std::vector<wb::minigpt::StepLog> log(3);
            for (std::size_t i = 0; i < log.size(); ++i) {
                log[i].step = i + 1;
                log[i].train_loss = static_cast<float>(t);
            }
            const wb::svg::Series line{"run " + std::to_string(t), {1, 2, 3}, {3, 2, 1.0 * t}};
            for (int i = 0; i < rounds; ++i) {
                try {
                    wb::minigpt::write_loss_csv(csv, log);
                    wb::svg::write_line_chart(svg, "loss", "step", "loss", {line});
                } catch (...) {
                    ++failures[static_cast<std::size_t>(t)];
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    for (int f : failures) CHECK(f == 0);
    CHECK(others(dir.path, {"m.loss.csv", "m.loss.svg"}).empty());
    CHECK(read_all(csv).rfind("step,train_loss", 0) == 0);  // one whole log
    CHECK(read_all(svg).find("</svg>") != std::string::npos);
}

TEST_CASE(
    "load_model refuses a model that needs more memory than it may allocate, before "
    "reading it",
    "[minigpt]") {
    TempDir dir("memory");
    const std::string path = (dir.path / "big.ckpt").string();
    // 10 GiB with a consistent header, sparse: the sizes add up, nothing else is there.
    const std::uint64_t size = std::uint64_t(10) << 30, n_vocab = 100;
    const std::uint64_t n_ckpt = size - 28 - 8 - n_vocab;
    {
        std::string header(wb::minigpt::kModelMagic, wb::minigpt::kModelMagic + 8);
        header += std::string("\x01\x00\x00\x00", 4);
        for (std::uint64_t v : {n_vocab, n_ckpt}) {
            for (int i = 0; i < 8; ++i) header.push_back(static_cast<char>(v >> (8 * i)));
        }
        std::ofstream(path, std::ios::binary) << header;
    }
    fs::resize_file(path, size);
    const wb::minigpt::MemoryLimit four_gib{std::uint64_t(4) << 30, "the check's own limit"};
    WB_CHECK_THROWS(FileError, wb::minigpt::load_model(path, four_gib),
                    "3 x 10 GiB do not fit in 4 GiB: say so before allocating",
                    "wb::minigpt::load_model", path, "4294967296", "the check's own limit",
                    std::to_string(wb::minigpt::model_load_memory(n_vocab, n_ckpt)));
    CHECK(wb::minigpt::model_load_memory(UINT64_MAX, 5) == UINT64_MAX);  // never wraps around
    CHECK(!wb::minigpt::memory_limit().source.empty());

#if !WB_UNDER_ASAN  // AddressSanitizer reserves terabytes of address space
    // The same file under an address-space limit (ulimit -v), found by memory_limit().
    const std::string message = wbtest::error_under_address_limit(
        std::uint64_t(1) << 30, [&] { (void)wb::minigpt::load_model(path); });
    INFO(message);
    CHECK(message.find("wb::minigpt::load_model") != std::string::npos);
    CHECK(message.find("ulimit -v") != std::string::npos);
#endif
}
