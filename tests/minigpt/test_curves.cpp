#include "check.hpp"
#include "minigpt/curves.hpp"

#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

// `minigpt curves`: the held-out loss of several runs' loss logs, one line each in an SVG.

namespace {

std::string write_log(const std::string& name, const std::string& text) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("wb-curves-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

const std::string kHeader = "step,train_loss,held_out_loss,lr,tokens_per_s\n";

}  // namespace

TEST_CASE("read_loss_curve keeps the evaluated steps of a loss log, named by its file",
          "[minigpt]") {
    const std::string path = write_log("exp-rope-1.loss.csv", kHeader +
                                                                  "1,4.1,4.09,6e-05,30000.0\n"
                                                                  "2,4.0,,0.0001,31000.0\n"
                                                                  "25,3.0,2.95,0.001,30500.0\n"
                                                                  "300,2.2,2.128,0.0001,30000.0\n");
    const wb::minigpt::LossCurve c = wb::minigpt::read_loss_curve(path);
    CHECK(c.name == "exp-rope-1");
    REQUIRE(c.step.size() == 3);
    CHECK(c.step[0] == 1);
    CHECK(c.step[1] == 25);
    CHECK(c.step[2] == 300);
    CHECK(c.loss[2] == Approx(2.128));
    const std::string svg = wb::minigpt::loss_curves_svg({c, c}, "runs");
    CHECK(svg.find("<svg") != std::string::npos);
    CHECK(svg.find("exp-rope-1") != std::string::npos);
}

TEST_CASE("loss_curves_svg spans the losses on its y axis, not 0 to the top", "[minigpt]") {
    // Runs that differ by hundredths of a nat: an axis from 0 would draw them as one line.
    wb::minigpt::LossCurve c;
    c.name = "run";
    c.step = {1, 25, 50};
    c.loss = {2.52, 2.41, 2.33};
    const std::string svg = wb::minigpt::loss_curves_svg({c}, "runs");
    INFO(svg);
    CHECK(svg.find(">2.45<") != std::string::npos);  // a tick between the losses
    CHECK(svg.find(">0<") == std::string::npos);     // and none at 0 (the steps start at 1)
}

TEST_CASE("read_loss_curve refuses a file that is no loss log, naming the line", "[minigpt]") {
    const char* fn = "wb::minigpt::read_loss_curve";
    WB_CHECK_THROWS(wb::FileError, wb::minigpt::read_loss_curve(write_log("a.csv", "x,y\n1,2\n")),
                    "the header comes first", fn, "line 1");
    WB_CHECK_THROWS(wb::FileError, wb::minigpt::read_loss_curve(write_log("b.csv", "")),
                    "an empty file has no header", fn, "line 1");
    WB_CHECK_THROWS(wb::FileError,
                    wb::minigpt::read_loss_curve(write_log("c.csv", kHeader + "1,4.1,4.0\n")),
                    "3 fields of 5", fn, "line 2", "5 fields");
    WB_CHECK_THROWS(wb::FileError,
                    wb::minigpt::read_loss_curve(
                        write_log("d.csv", kHeader + "5,4.1,4.0,1,1\n5,4.0,3.9,1,1\n")),
                    "a step must come after the one before", fn, "line 3");
    WB_CHECK_THROWS(wb::FileError,
                    wb::minigpt::read_loss_curve(write_log("e.csv", kHeader + "-1,4.1,4.0,1,1\n")),
                    "a negative step", fn, "line 2");
    WB_CHECK_THROWS(wb::FileError,
                    wb::minigpt::read_loss_curve(write_log("f.csv", kHeader + "1,4.1,nan,1,1\n")),
                    "a held-out loss of nan", fn, "line 2", "nan");
    WB_CHECK_THROWS(wb::FileError,
                    wb::minigpt::read_loss_curve(write_log("g.csv", kHeader + "1,4.1,inf,1,1\n")),
                    "a held-out loss of inf", fn, "inf");
    WB_CHECK_THROWS(
        wb::ValueError, wb::minigpt::read_loss_curve(write_log("h.csv", kHeader + "1,4.1,,1,1\n")),
        "a run with --eval-interval 0 that never evaluated has no curve", fn, "--eval-interval");
    WB_CHECK_THROWS(wb::FileError, wb::minigpt::read_loss_curve("/nonexistent/x.loss.csv"),
                    "a missing file", fn, "/nonexistent/x.loss.csv");
}

TEST_CASE("read_loss_curve refuses a log larger than 16 MiB before reading it", "[minigpt]") {
    const std::string path = write_log("big.loss.csv", kHeader);
    std::filesystem::resize_file(path, (std::uintmax_t(16) << 20) + 1);  // sparse: no disk used
    WB_CHECK_THROWS(wb::FileError, wb::minigpt::read_loss_curve(path),
                    "a loss log is small; a file this large is something else",
                    "wb::minigpt::read_loss_curve");
    WB_CHECK_THROWS(wb::ValueError, wb::minigpt::loss_curves_svg({}, "none"), "a chart needs a run",
                    "wb::minigpt::loss_curves_svg");
}
