/// @file svg.hpp
/// @brief Pictures as plain SVG files: line charts (timings, losses) and heatmaps (attention).
///
/// This file is given, not an exercise. It has no dependency beyond the standard library and
/// workbook/core.hpp (for the exceptions) and POSIX's open. Every picture is written to a new
/// file of a unique name beside `path` first and renamed, so a reader never sees half a file.
///
/// ```
/// wb::svg::write_line_chart("loss.svg", "training loss", "step", "loss",
///                           {{"train", steps, train_loss}, {"val", steps, val_loss}});
/// wb::svg::LineChartOptions o;  o.x_ticks = {256, 512, 1024};  o.note = "3 repetitions";
/// wb::svg::write_line_chart("speed.svg", "GFLOP/s against T", "T", "GFLOP/s", lines, o);
/// wb::svg::Heatmap h;  h.title = "head 0";  h.rows = h.cols = T;  h.values = weights;
/// wb::svg::write_heatmaps("attention.svg", "attention weights", {h});
/// ```
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "workbook/core.hpp"

/// SVG output: line charts and heatmaps, written atomically.
namespace wb::svg {

/// One line of a line chart: a name for the legend and its points, `x[i]` paired with `y[i]`,
/// joined in the order given.
struct Series {
    std::string name;       ///< shown in the legend
    std::vector<double> x;  ///< horizontal positions, one per point
    std::vector<double> y;  ///< vertical positions, as many as `x`
    bool dashed = false;    ///< a dashed line (and legend entry), e.g. for a reference
};

/// What a line chart may add to its axes and series; the defaults draw the plain chart.
struct LineChartOptions {
    /// The x values to mark (e.g. the measured sizes), in place of the round ticks; any order,
    /// repeats drawn once, all finite. Empty: round ticks (steps of 1, 2 or 5 times 10^k).
    std::vector<double> x_ticks;
    std::string note;  ///< a smaller grey line under the title (empty: none)
    /// Start the y axis at 0 when every value is >= 0 (timings, rates: ratios read true);
    /// false: the axis spans the values (loss curves, whose differences are what is read).
    bool y_from_zero = true;
};

/// One panel of a heatmap figure: a `rows x cols` grid of values (e.g. one head's
/// attention weights, queries down, keys across).
struct Heatmap {
    std::string title;                    ///< shown above the panel
    std::size_t rows = 0;                 ///< number of rows (e.g. queries)
    std::size_t cols = 0;                 ///< number of columns (e.g. keys)
    std::vector<double> values;           ///< row-major, rows*cols; NaN or -inf = masked cell
    std::vector<std::string> row_labels;  ///< one per row, or empty for row numbers
    std::vector<std::string> col_labels;  ///< one per column, or empty for column numbers
    std::string row_axis;                 ///< names the rows, e.g. "query ↓" (empty: none)
    std::string col_axis;                 ///< names the columns, e.g. "key →" (empty: none)
};

/// Implementation details of the SVG writers.
namespace detail {

/// The line colours, in legend order (a colour-blind-safe palette).
inline const char* color(std::size_t i) {
    static const char* palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                    "#e69f00", "#56b4e9", "#f0e442", "#000000"};
    return palette[i % 8];
}

/// Escapes `&`, `<`, `>`, `"` and `'` so that `text` can sit inside an element or attribute.
inline std::string escape(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

/// A number short enough for a tick label or a coordinate (`%.4g`).
inline std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

/// Evenly spaced "nice" ticks (steps of 1, 2 or 5 times a power of ten) covering [lo, hi].
inline std::vector<double> ticks(double lo, double hi) {
    if (!(hi > lo)) return {lo};
    const double raw = (hi - lo) / 5.0;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
        if (m * mag >= raw) {
            step = m * mag;
            break;
        }
    }
    std::vector<double> out;
    for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
        out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    }
    return out;
}

/// Writes `text` to `path` through a new file `path.tmp-<pid>-<n>` (a unique name, so that
/// two processes or threads writing the same picture never share it) and a rename; FileError
/// from `function` on failure.
inline void write_atomic(const char* function, const std::string& path, const std::string& text) {
    static std::atomic<unsigned long> counter{0};
    const std::string tmp =
        path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    {
        // Created exclusively: an existing file of that name is never written over.
        const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
            throw FileError(std::string(function) + ": cannot open " + tmp + " for writing");
        }
        ::close(fd);
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) {
            std::remove(tmp.c_str());
            throw FileError(std::string(function) + ": cannot open " + tmp + " for writing");
        }
        out << text;
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            throw FileError(std::string(function) + ": cannot write " + tmp);
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw FileError(std::string(function) + ": cannot rename " + tmp + " to " + path);
    }
}

/// The SVG header: an XML prolog, the root element of size `w x h`, a white background.
inline void open_svg(std::ostringstream& out, double w, double h) {
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
        << "\" viewBox=\"0 0 " << w << ' ' << h
        << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

/// A text element at (x, y); `anchor` is start, middle or end; `extra` adds attributes.
inline void text(std::ostringstream& out, double x, double y, const std::string& s,
                 const char* anchor = "middle", const std::string& extra = "") {
    out << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" text-anchor=\"" << anchor << '"'
        << (extra.empty() ? "" : " ") << extra << '>' << escape(s) << "</text>\n";
}

/// A colour for `t` in [0, 1]: white (0) through blue to dark blue (1).
inline std::string shade(double t) {
    t = std::clamp(t, 0.0, 1.0);
    // from #f7fbff (t = 0) to #08306b (t = 1)
    const int r = static_cast<int>(std::lround(247 + (8 - 247) * t));
    const int g = static_cast<int>(std::lround(251 + (48 - 251) * t));
    const int b = static_cast<int>(std::lround(255 + (107 - 255) * t));
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
    return buf;
}

/// True for a masked heatmap cell: NaN or minus infinity.
inline bool masked(double v) {
    return std::isnan(v) || v == -std::numeric_limits<double>::infinity();
}

}  // namespace detail

/// A line chart of `series` as SVG text: axes with ticks and labels, one coloured line with
/// dots per series (dashed where `Series::dashed`), and a legend whose column is as wide as the
/// longest name. write_line_chart writes it to a file; a program that writes its files its own
/// way (the minigpt program: unique temporary names) takes the text.
/// @param title shown above the chart
/// @param x_label names the horizontal axis, e.g. `"T (tokens)"`
/// @param y_label names the vertical axis, e.g. `"GFLOP/s"`
/// @param series the lines; at least one, each with as many x as y values, all finite
/// @param options explicit x ticks and a note under the title; by default neither
/// @return the SVG document
/// @throws ValueError naming wb::svg::write_line_chart if `series` is empty, a series has no
///         points, its x and y sizes differ, or a value (or an x tick) is not finite
inline std::string line_chart_svg(const std::string& title, const std::string& x_label,
                                  const std::string& y_label, const std::vector<Series>& series,
                                  const LineChartOptions& options = {}) {
    const char* fn = "wb::svg::write_line_chart";
    if (series.empty())
        throw ValueError(std::string(fn) + ": got no series, expected at least one");
    double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
    for (std::size_t s = 0; s < series.size(); ++s) {
        const Series& line = series[s];
        if (line.x.empty() || line.x.size() != line.y.size()) {
            throw ValueError(std::string(fn) + ": series " + std::to_string(s) + " ('" + line.name +
                             "') has " + std::to_string(line.x.size()) + " x and " +
                             std::to_string(line.y.size()) +
                             " y values, expected the same number, at least one");
        }
        for (std::size_t i = 0; i < line.x.size(); ++i) {
            if (!std::isfinite(line.x[i]) || !std::isfinite(line.y[i])) {
                throw ValueError(std::string(fn) + ": series '" + line.name + "' point " +
                                 std::to_string(i) + " is (" + detail::num(line.x[i]) + ", " +
                                 detail::num(line.y[i]) + "), expected finite values");
            }
            x0 = std::min(x0, line.x[i]);
            x1 = std::max(x1, line.x[i]);
            y0 = std::min(y0, line.y[i]);
            y1 = std::max(y1, line.y[i]);
        }
    }
    std::vector<double> given = options.x_ticks;
    for (std::size_t i = 0; i < given.size(); ++i) {
        if (!std::isfinite(given[i])) {
            throw ValueError(std::string(fn) + ": x tick " + std::to_string(i) + " is " +
                             detail::num(given[i]) + ", expected a finite value");
        }
    }
    std::sort(given.begin(), given.end());
    given.erase(std::unique(given.begin(), given.end()), given.end());
    // Start the y axis at zero for non-negative data (timings, rates), so ratios read true.
    if (options.y_from_zero && y0 >= 0) y0 = 0;
    if (x1 == x0) {
        x0 -= 1;
        x1 += 1;
    }
    if (y1 == y0) {
        y1 = y0 + 1;
    }
    const std::vector<double> xt = given.empty() ? detail::ticks(x0, x1) : given;
    const std::vector<double> yt = detail::ticks(y0, y1);
    x0 = std::min(x0, xt.front());
    x1 = std::max(x1, xt.back());
    y0 = std::min(y0, yt.front());
    y1 = std::max(y1, yt.back());

    // The legend's column is as wide as its longest name (about 7 px per character).
    std::size_t longest = 0;
    for (const Series& line : series) longest = std::max(longest, line.name.size());
    const double right = std::max(170.0, 60.0 + 7.0 * static_cast<double>(longest));
    const double W = 550 + right, H = 440, left = 70, top = 40, bottom = 55;
    const double pw = W - left - right, ph = H - top - bottom;  // plot area
    auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
    auto py = [&](double y) { return top + ph - (y - y0) / (y1 - y0) * ph; };

    std::ostringstream out;
    detail::open_svg(out, W, H);
    detail::text(out, W / 2, 22, title, "middle", "font-size=\"15\" font-weight=\"bold\"");
    if (!options.note.empty()) {
        detail::text(out, W / 2, 36, options.note, "middle", "font-size=\"11\" fill=\"#555\"");
    }
    for (double t : xt) {  // vertical grid lines and x ticks
        out << "<line x1=\"" << detail::num(px(t)) << "\" y1=\"" << top << "\" x2=\""
            << detail::num(px(t)) << "\" y2=\"" << top + ph << "\" stroke=\"#e5e5e5\"/>\n";
        detail::text(out, px(t), top + ph + 16, detail::num(t));
    }
    for (double t : yt) {  // horizontal grid lines and y ticks
        out << "<line x1=\"" << left << "\" y1=\"" << detail::num(py(t)) << "\" x2=\"" << left + pw
            << "\" y2=\"" << detail::num(py(t)) << "\" stroke=\"#e5e5e5\"/>\n";
        detail::text(out, left - 6, py(t) + 4, detail::num(t), "end");
    }
    out << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
        << "\" fill=\"none\" stroke=\"#333\"/>\n";
    detail::text(out, left + pw / 2, H - 14, x_label);
    detail::text(out, 18, top + ph / 2, y_label, "middle",
                 "transform=\"rotate(-90 18 " + detail::num(top + ph / 2) + ")\"");
    for (std::size_t s = 0; s < series.size(); ++s) {
        const Series& line = series[s];
        const char* dash = line.dashed ? " stroke-dasharray=\"6 3\"" : "";
        out << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << detail::color(s) << '"'
            << dash << " points=\"";
        for (std::size_t i = 0; i < line.x.size(); ++i) {
            out << (i ? " " : "") << detail::num(px(line.x[i])) << ','
                << detail::num(py(line.y[i]));
        }
        out << "\"/>\n";
        for (std::size_t i = 0; i < line.x.size(); ++i) {
            out << "<circle r=\"3\" fill=\"" << detail::color(s) << "\" cx=\""
                << detail::num(px(line.x[i])) << "\" cy=\"" << detail::num(py(line.y[i]))
                << "\"/>\n";
        }
        const double ly = top + 10 + 20.0 * static_cast<double>(s);  // legend entry
        out << "<line x1=\"" << left + pw + 15 << "\" y1=\"" << ly << "\" x2=\"" << left + pw + 40
            << "\" y2=\"" << ly << "\" stroke-width=\"2\" stroke=\"" << detail::color(s) << '"'
            << dash << "/>\n";
        detail::text(out, left + pw + 46, ly + 4, line.name, "start");
    }
    out << "</svg>\n";
    return out.str();
}

/// Writes a line chart of `series` to `path` as SVG: axes with ticks and labels, one coloured
/// line with dots per series (dashed where `Series::dashed`), and a legend whose column is as
/// wide as the longest name.
/// @param path the SVG file to write (through a temporary file of a unique name, renamed)
/// @param title shown above the chart
/// @param x_label names the horizontal axis, e.g. `"T (tokens)"`
/// @param y_label names the vertical axis, e.g. `"GFLOP/s"`
/// @param series the lines; at least one, each with as many x as y values, all finite
/// @param options explicit x ticks and a note under the title; by default neither
/// @throws ValueError if `series` is empty, a series has no points, its x and y sizes differ,
///         or a value (or an x tick) is not finite
/// @throws FileError if the file cannot be written
inline void write_line_chart(const std::string& path, const std::string& title,
                             const std::string& x_label, const std::string& y_label,
                             const std::vector<Series>& series,
                             const LineChartOptions& options = {}) {
    detail::write_atomic("wb::svg::write_line_chart", path,
                         line_chart_svg(title, x_label, y_label, series, options));
}

/// Writes heatmap panels side by side to `path` as SVG, with one shared colour scale and its
/// legend. Each cell is shaded by its value (white = lowest, dark blue = highest); a masked
/// cell (NaN or -inf) is drawn grey with a cross, so masked and merely small cells differ.
/// @param path the SVG file to write (through a temporary file of a unique name, renamed)
/// @param title shown above the panels
/// @param panels at least one; each with rows, cols > 0, `values.size() == rows * cols`, labels
///        either empty or one per row / column, and no +inf
/// @throws ValueError on an empty `panels`, a size mismatch, or +inf
/// @throws FileError if the file cannot be written
inline void write_heatmaps(const std::string& path, const std::string& title,
                           const std::vector<Heatmap>& panels) {
    const char* fn = "wb::svg::write_heatmaps";
    if (panels.empty())
        throw ValueError(std::string(fn) + ": got no panels, expected at least one");
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (std::size_t p = 0; p < panels.size(); ++p) {
        const Heatmap& h = panels[p];
        const std::string which =
            std::string(fn) + ": panel " + std::to_string(p) + " ('" + h.title + "')";
        if (h.rows == 0 || h.cols == 0 || h.values.size() != h.rows * h.cols) {
            throw ValueError(which + " has " + std::to_string(h.values.size()) + " values for " +
                             std::to_string(h.rows) + "x" + std::to_string(h.cols) +
                             " cells, expected rows*cols values with rows, cols > 0");
        }
        if (!h.row_labels.empty() && h.row_labels.size() != h.rows) {
            throw ValueError(which + " has " + std::to_string(h.row_labels.size()) +
                             " row labels, expected 0 or " + std::to_string(h.rows));
        }
        if (!h.col_labels.empty() && h.col_labels.size() != h.cols) {
            throw ValueError(which + " has " + std::to_string(h.col_labels.size()) +
                             " column labels, expected 0 or " + std::to_string(h.cols));
        }
        for (double v : h.values) {
            if (detail::masked(v)) continue;
            if (!std::isfinite(v)) {
                throw ValueError(which +
                                 " has a value of +inf, expected finite values (NaN or "
                                 "-inf for masked cells)");
            }
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    if (!(lo <= hi)) {
        lo = 0;
        hi = 1;
    }  // every cell masked
    // Start at zero for non-negative data (probabilities), so a pale cell means "near zero".
    if (lo > 0) lo = 0;
    const double span = hi > lo ? hi - lo : 1.0;

    std::size_t max_rows = 0;
    for (const Heatmap& h : panels) max_rows = std::max(max_rows, h.rows);
    const double cell = max_rows > 24 ? std::max(6.0, 480.0 / static_cast<double>(max_rows)) : 24;
    const bool show_text = cell >= 12;  // labels only when they fit
    std::size_t longest = 0;  // the column labels are written at 45 degrees above the grid
    for (const Heatmap& h : panels) {
        for (const std::string& label : h.col_labels) longest = std::max(longest, label.size());
    }
    longest = std::min<std::size_t>(std::max<std::size_t>(longest, 3), 16);
    bool axes = false;  // a panel names its axes: room for them below and at the left
    for (const Heatmap& h : panels) axes = axes || !h.row_axis.empty() || !h.col_axis.empty();
    const double label_w = show_text ? 70 : 10, gap = 30, bottom = axes ? 48 : 30;
    const double top = show_text ? 62 + 3.6 * static_cast<double>(longest) : 60;
    double W = gap;
    for (const Heatmap& h : panels) W += label_w + static_cast<double>(h.cols) * cell + gap;
    W += 90;  // colour scale
    const double H = top + static_cast<double>(max_rows) * cell + bottom;

    std::ostringstream out;
    detail::open_svg(out, W, H);
    detail::text(out, W / 2, 22, title, "middle", "font-size=\"15\" font-weight=\"bold\"");
    double x = gap;
    for (const Heatmap& h : panels) {
        const double gx = x + label_w;  // grid origin
        detail::text(out, gx + static_cast<double>(h.cols) * cell / 2, 44, h.title, "middle",
                     "font-weight=\"bold\"");
        for (std::size_t i = 0; i < h.rows; ++i) {
            for (std::size_t j = 0; j < h.cols; ++j) {
                const double v = h.values[i * h.cols + j];
                const double cx = gx + static_cast<double>(j) * cell;
                const double cy = top + static_cast<double>(i) * cell;
                if (detail::masked(v)) {
                    out << "<rect x=\"" << detail::num(cx) << "\" y=\"" << detail::num(cy)
                        << "\" width=\"" << detail::num(cell) << "\" height=\"" << detail::num(cell)
                        << "\" fill=\"#bdbdbd\" stroke=\"white\"><title>masked</title></rect>\n"
                        << "<path d=\"M" << detail::num(cx + 3) << ' ' << detail::num(cy + 3)
                        << " L" << detail::num(cx + cell - 3) << ' ' << detail::num(cy + cell - 3)
                        << " M" << detail::num(cx + cell - 3) << ' ' << detail::num(cy + 3) << " L"
                        << detail::num(cx + 3) << ' ' << detail::num(cy + cell - 3)
                        << "\" stroke=\"#7a7a7a\" stroke-width=\"1\"/>\n";
                } else {
                    out << "<rect x=\"" << detail::num(cx) << "\" y=\"" << detail::num(cy)
                        << "\" width=\"" << detail::num(cell) << "\" height=\"" << detail::num(cell)
                        << "\" fill=\"" << detail::shade((v - lo) / span)
                        << "\" stroke=\"white\"><title>" << detail::num(v) << "</title></rect>\n";
                }
            }
        }
        if (show_text) {
            for (std::size_t i = 0; i < h.rows; ++i) {
                const std::string label =
                    h.row_labels.empty() ? std::to_string(i) : h.row_labels[i];
                detail::text(out, gx - 5, top + (static_cast<double>(i) + 0.5) * cell + 4, label,
                             "end");
            }
            for (std::size_t j = 0; j < h.cols; ++j) {
                const std::string label =
                    h.col_labels.empty() ? std::to_string(j) : h.col_labels[j];
                const double lx = gx + (static_cast<double>(j) + 0.5) * cell;
                detail::text(out, lx, top - 6, label, "start",
                             "transform=\"rotate(-45 " + detail::num(lx) + ' ' +
                                 detail::num(top - 6) + ")\" font-size=\"10\"");
            }
        }
        // The axes' names: the rows' above the row labels, the columns' below the grid.
        if (!h.row_axis.empty()) {
            detail::text(out, gx - 5, top - 6, h.row_axis, "end", "font-style=\"italic\"");
        }
        if (!h.col_axis.empty()) {
            detail::text(out, gx + static_cast<double>(h.cols) * cell / 2,
                         top + static_cast<double>(h.rows) * cell + 20, h.col_axis, "middle",
                         "font-style=\"italic\"");
        }
        x = gx + static_cast<double>(h.cols) * cell + gap;
    }
    // The colour scale: ten steps from lo (bottom) to hi (top), then the masked swatch.
    const double sx = x + 10, sh = std::min(200.0, static_cast<double>(max_rows) * cell);
    for (int k = 0; k < 10; ++k) {
        out << "<rect x=\"" << detail::num(sx) << "\" y=\"" << detail::num(top + sh * k / 10.0)
            << "\" width=\"16\" height=\"" << detail::num(sh / 10.0 + 0.5) << "\" fill=\""
            << detail::shade(1.0 - (k + 0.5) / 10.0) << "\"/>\n";
    }
    detail::text(out, sx + 20, top + 10, detail::num(hi), "start");
    detail::text(out, sx + 20, top + sh, detail::num(lo), "start");
    out << "<rect x=\"" << detail::num(sx) << "\" y=\"" << detail::num(top + sh + 12)
        << "\" width=\"16\" height=\"16\" fill=\"#bdbdbd\"/>\n";
    detail::text(out, sx + 20, top + sh + 25, "masked", "start");
    out << "</svg>\n";
    detail::write_atomic(fn, path, out.str());
}

}  // namespace wb::svg
