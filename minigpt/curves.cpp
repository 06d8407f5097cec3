// Runs side by side (see curves.hpp): loss logs read with a bound, one SVG line chart.
#include "minigpt/curves.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "minigpt/file_io.hpp"
#include "workbook/core.hpp"
#include "workbook/svg.hpp"

namespace wb::minigpt {
namespace {

constexpr const char* kRead = "wb::minigpt::read_loss_curve";
constexpr std::uint64_t kMaxLogBytes = std::uint64_t(16) << 20;  // a million steps' lines
constexpr const char* kHeader = "step,train_loss,held_out_loss,lr,tokens_per_s";

std::vector<std::string> fields_of(const std::string& line) {
    std::vector<std::string> out(1);
    for (char ch : line) {
        if (ch == ',') {
            out.emplace_back();
        } else {
            out.back() += ch;
        }
    }
    return out;
}

[[noreturn]] void bad_line(const std::string& path, std::size_t number, const std::string& why) {
    throw FileError(std::string(kRead) + ": " + path + " line " + std::to_string(number) + ": " +
                    why);
}

}  // namespace

LossCurve read_loss_curve(const std::string& path) {
    const std::string text = read_regular_file(kRead, path, kMaxLogBytes);
    LossCurve curve;
    std::filesystem::path name = std::filesystem::path(path).filename();
    const std::string file = name.string();
    const std::string suffix = ".loss.csv";
    curve.name = file.size() > suffix.size() &&
                         file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0
                     ? file.substr(0, file.size() - suffix.size())
                     : name.stem().string();
    std::istringstream in(text);
    std::string line;
    std::size_t number = 0;
    double previous = 0;
    while (std::getline(in, line)) {
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (number == 1) {
            if (line != kHeader) {
                bad_line(path, 1,
                         "expected the loss log's header '" + std::string(kHeader) + "', got '" +
                             line.substr(0, 80) + "'");
            }
            continue;
        }
        if (line.empty()) continue;
        const std::vector<std::string> f = fields_of(line);
        if (f.size() != 5) {
            bad_line(path, number, "expected 5 fields, got " + std::to_string(f.size()));
        }
        char* end = nullptr;
        const unsigned long long step = std::strtoull(f[0].c_str(), &end, 10);
        if (f[0].empty() || *end != '\0' || f[0][0] == '-' || double(step) <= previous) {
            bad_line(path, number,
                     "expected a whole step after " + std::to_string(std::uint64_t(previous)) +
                         ", got '" + f[0].substr(0, 40) + "'");
        }
        previous = double(step);
        if (f[2].empty()) continue;  // no evaluation at this step
        const double loss = std::strtod(f[2].c_str(), &end);
        if (*end != '\0' || !std::isfinite(loss)) {
            bad_line(path, number,
                     "expected a finite held-out loss, got '" + f[2].substr(0, 40) + "'");
        }
        curve.step.push_back(double(step));
        curve.loss.push_back(loss);
    }
    if (number == 0) bad_line(path, 1, "the file is empty, expected the loss log's header");
    if (curve.step.empty()) {
        throw ValueError(std::string(kRead) + ": " + path +
                         " has no held-out loss, expected at least one evaluated step (train "
                         "with --eval-interval N, N > 0, to draw a curve)");
    }
    return curve;
}

std::string loss_curves_svg(const std::vector<LossCurve>& curves, const std::string& title) {
    if (curves.empty()) {
        throw ValueError("wb::minigpt::loss_curves_svg: got no curves, expected at least one");
    }
    std::vector<svg::Series> lines;
    lines.reserve(curves.size());
    for (const LossCurve& c : curves) lines.push_back({c.name, c.step, c.loss});
    // The runs differ by tenths of a nat or less: the axis spans the losses, not 0 to the top.
    svg::LineChartOptions options;
    options.y_from_zero = false;
    return svg::line_chart_svg(title, "step", "held-out loss (nats per token)", lines, options);
}

}  // namespace wb::minigpt
