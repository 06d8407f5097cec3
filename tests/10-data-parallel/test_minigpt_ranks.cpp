// The minigpt program on N processes (minigpt/README.md, "On N processes"): trained with
// --data-parallel on 1 and on 2 ranks from the same seed and global batch, it writes the same
// loss log and the same model file, byte for byte. Built when the program is (CLI11) and links
// this chapter; the program is compiled before these checks (minigpt/CMakeLists.txt).
#ifdef WB_MINIGPT_PROGRAM

#include "check.hpp"
#include "mpi_run.hpp"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

// The loss log without its last column, tokens/s: the one figure that is the wall clock's.
std::string without_speed(const std::string& csv) {
    std::istringstream in(csv);
    std::string line, out;
    while (std::getline(in, line)) out += line.substr(0, line.rfind(',')) + "\n";
    return out;
}

}  // namespace

TEST_CASE("minigpt --data-parallel on 2 ranks writes the loss log and the model file of 1 rank",
          "[c:data_parallel_step.same]") {
    const fs::path dir =
        fs::temp_directory_path() / ("wb-minigpt-ranks-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    // A tiny model, a few steps, clipping on (the program's default) and one evaluation
    // between the first and the last; no sample (chapter 9 is not needed).
    const std::string args =
        "--engine chapters --data-parallel --steps 4 --batch 4 --context 8 --d-model 16 "
        "--heads 2 --layers 1 --eval-interval 2 --eval-batches 1 --max-new-tokens 0 "
        "--threads 1 --time-limit 0 --seed 3 --out ";
    for (const int W : {1, 2}) {
        const fs::path out = dir / ("ranks" + std::to_string(W) + ".model");
        const wbtest::MpiProgram run =
            wbtest::run_mpi_program(WB_MINIGPT_PROGRAM, args + "'" + out.string() + "'", W);
        INFO("minigpt on " << W << (W == 1 ? " rank" : " ranks"));
        if (!run.ok) FAIL(run.report);
    }
    const std::string log1 = wbtest::read_all(dir / "ranks1.loss.csv");
    const std::string log2 = wbtest::read_all(dir / "ranks2.loss.csv");
    const std::string model1 = wbtest::read_all(dir / "ranks1.model");
    const std::string model2 = wbtest::read_all(dir / "ranks2.model");
    INFO("loss log of 1 rank:\n" << log1 << "loss log of 2 ranks:\n" << log2);
    REQUIRE(!log1.empty());
    REQUIRE(!model1.empty());
    CHECK(without_speed(log1) == without_speed(log2));
    // Where the model files first differ, not their bytes (a binary file in a report).
    long differ = -1;
    if (model1 != model2) {
        const auto at = std::mismatch(model1.begin(), model1.end(), model2.begin(), model2.end());
        differ = static_cast<long>(at.first - model1.begin());
    }
    INFO("the model files: " << model1.size() << " and " << model2.size()
                             << " bytes, first different byte " << differ
                             << " (-1: none); chapter 10's fixed tree gives the same bits for any "
                                "number of ranks");
    CHECK(differ == -1);
    std::error_code ignored;
    fs::remove_all(dir, ignored);
}

#endif  // WB_MINIGPT_PROGRAM
