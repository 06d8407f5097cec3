// Draws a line chart with wb::svg::write_line_chart (workbook/svg.hpp) from a description on
// standard input, so that the Python tools draw their charts with the same writer as the C++
// (`tools/workbook bench --svg` runs it for the scaling charts).
//
//   build/<dir>/bench/svg_chart OUT.svg < chart.txt
//
// The description is plain text, one item per line; a line is a keyword, one space and its
// value. Blank lines and lines starting with '#' are skipped; a trailing '\r' is dropped.
//
//   title TEXT        shown above the chart (at most once; TEXT is the rest of the line)
//   x_label TEXT      names the horizontal axis (at most once)
//   y_label TEXT      names the vertical axis (at most once)
//   note TEXT         a smaller grey line under the title (at most once)
//   x_ticks X X ...   the x values to mark, in place of the round ticks (at most once)
//   series NAME       starts a line, named NAME in the legend
//   dashed            draws the current series dashed (e.g. a reference)
//   point X Y         adds a point to the current series; points are joined in this order
//
// Numbers are decimal (as strtod reads them, e.g. 1024, 2.5, 1e-3) and must be finite. At
// least one series with at least one point is needed. The input is refused above 1 MiB or
// 100,000 lines. Exit status: 0 with OUT.svg written (through OUT.svg.tmp and a rename); 2 on
// a bad argument or a bad description, with one line on stderr naming the line, what it got
// and what was expected; 1 when OUT.svg cannot be written.
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "workbook/core.hpp"
#include "workbook/svg.hpp"

namespace {

constexpr std::size_t max_bytes = std::size_t{1} << 20;
constexpr std::size_t max_lines = 100000;

/// A bad description or argument: the message, without the program's name.
struct BadInput {
    std::string message;
};

/// At most 40 characters of `text`, quoted, for a message.
std::string quoted(const std::string& text) {
    return "'" + (text.size() > 40 ? text.substr(0, 40) + "..." : text) + "'";
}

/// The finite numbers of `text` (separated by blanks), or BadInput naming `line` and `what`.
std::vector<double> numbers(const std::string& text, std::size_t line, const std::string& what) {
    std::vector<double> out;
    std::istringstream words(text);
    std::string word;
    while (words >> word) {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(word.c_str(), &end);
        if (end == word.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
            throw BadInput{"line " + std::to_string(line) + ": got " + quoted(word) +
                           ", expected " + what + " (finite decimal numbers)"};
        }
        out.push_back(v);
    }
    return out;
}

/// Standard input, whole, or BadInput when it is over max_bytes.
std::string read_input() {
    std::string text;
    char buf[65536];
    while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
        text.append(buf, static_cast<std::size_t>(std::cin.gcount()));
        if (text.size() > max_bytes) {
            throw BadInput{"standard input is over " + std::to_string(max_bytes) +
                           " bytes, expected a chart description of at most 1 MiB"};
        }
    }
    return text;
}

struct Chart {
    std::string title, x_label, y_label;
    wb::svg::LineChartOptions options;
    std::vector<wb::svg::Series> series;
};

/// The chart of a description (the format at the top of this file), or BadInput.
Chart parse(const std::string& text) {
    Chart chart;
    bool seen_title = false, seen_x = false, seen_y = false, seen_note = false, seen_ticks = false;
    std::istringstream lines(text);
    std::string line;
    std::size_t number = 0;
    while (std::getline(lines, line)) {
        if (++number > max_lines) {
            throw BadInput{"standard input has over " + std::to_string(max_lines) +
                           " lines, expected a chart description of at most that many"};
        }
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        const std::size_t space = line.find(' ');
        const std::string key = line.substr(0, space);
        const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
        const std::string at = "line " + std::to_string(number) + ": ";
        auto once = [&](bool& seen) {
            if (seen) throw BadInput{at + "got a second '" + key + "', expected it at most once"};
            seen = true;
        };
        if (key == "title") {
            once(seen_title);
            chart.title = value;
        } else if (key == "x_label") {
            once(seen_x);
            chart.x_label = value;
        } else if (key == "y_label") {
            once(seen_y);
            chart.y_label = value;
        } else if (key == "note") {
            once(seen_note);
            chart.options.note = value;
        } else if (key == "x_ticks") {
            once(seen_ticks);
            chart.options.x_ticks = numbers(value, number, "'x_ticks X X ...'");
            if (chart.options.x_ticks.empty()) {
                throw BadInput{at + "got 'x_ticks' without numbers, expected 'x_ticks X X ...'"};
            }
        } else if (key == "series") {
            chart.series.push_back({value, {}, {}});
        } else if (key == "dashed" || key == "point") {
            if (chart.series.empty()) {
                throw BadInput{at + "got " + quoted(line) + " before any series, expected a " +
                               "'series NAME' line first"};
            }
            if (key == "dashed") {
                if (!value.empty()) {
                    throw BadInput{at + "got " + quoted(line) + ", expected 'dashed' alone"};
                }
                chart.series.back().dashed = true;
            } else {
                const std::vector<double> xy = numbers(value, number, "'point X Y'");
                if (xy.size() != 2) {
                    throw BadInput{at + "got " + quoted(line) + ", expected 'point X Y'"};
                }
                chart.series.back().x.push_back(xy[0]);
                chart.series.back().y.push_back(xy[1]);
            }
        } else {
            throw BadInput{at + "got " + quoted(key) + ", expected one of title, x_label, " +
                           "y_label, note, x_ticks, series, dashed, point"};
        }
    }
    if (chart.series.empty()) {
        throw BadInput{"got no 'series NAME' line in " + std::to_string(number) +
                       " lines, expected at least one series"};
    }
    for (const wb::svg::Series& s : chart.series) {
        if (s.x.empty()) {
            throw BadInput{"series " + quoted(s.name) + " has no 'point X Y' line, expected " +
                           "at least one"};
        }
    }
    return chart;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc != 2 || argv[1][0] == '\0' || argv[1][0] == '-') {
            throw BadInput{"got " + std::to_string(argc - 1) + " argument(s)" +
                           (argc > 1 ? std::string(" starting with ") + quoted(argv[1]) : "") +
                           ", expected one: the SVG file to write (the description on stdin)"};
        }
        const Chart chart = parse(read_input());
        wb::svg::write_line_chart(argv[1], chart.title, chart.x_label, chart.y_label, chart.series,
                                  chart.options);
    } catch (const BadInput& error) {
        std::cerr << "svg_chart: " << error.message << '\n';
        return 2;
    } catch (const wb::InvalidInput& error) {
        std::cerr << "svg_chart: " << error.what() << '\n';
        return 2;
    } catch (const wb::FileError& error) {
        std::cerr << "svg_chart: " << error.what() << '\n';
        return 1;
    }
    return 0;
}
