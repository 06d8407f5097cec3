/// @file curves.hpp
/// @brief Runs side by side: the held-out loss curves of several training runs in one SVG
/// (`minigpt curves`), for comparing the experiments of docs/experiments.md.
///
/// Each run is the loss log training writes beside `--out` (`m.loss.csv`:
/// `step,train_loss,held_out_loss,lr,tokens_per_s`, the held-out loss empty on steps without an
/// evaluation). A run is named by its file: `exp-rope-1.loss.csv` is the line "exp-rope-1".
#pragma once

#include <string>
#include <vector>

namespace wb::minigpt {

/// One run's held-out losses: the steps that were evaluated and the loss at each.
struct LossCurve {
    std::string name;          ///< the run, from its file name
    std::vector<double> step;  ///< evaluated steps, increasing
    std::vector<double> loss;  ///< the held-out loss at each, nats per token
};

/// Reads the held-out curve of a loss log, at most 16 MiB.
/// @param path a `*.loss.csv` written by training
/// @return its curve, named by the file name without `.loss.csv` (or its last extension)
/// @throws FileError naming wb::minigpt::read_loss_curve and the path if the file is missing,
///         not a regular file or larger than 16 MiB; if its first line is not the loss log's
///         header; if a line has not 5 fields, a step that is not a whole number after the
///         previous one, or a loss that is not a finite number (the message names the line)
/// @throws ValueError naming wb::minigpt::read_loss_curve if no step has a held-out loss
///         (the run had `--eval-interval 0` and ended before evaluating)
LossCurve read_loss_curve(const std::string& path);

/// The SVG line chart of the curves, one line each, in their order.
/// @param curves at least one
/// @param title the chart's title
/// @throws ValueError naming wb::minigpt::loss_curves_svg if `curves` is empty
std::string loss_curves_svg(const std::vector<LossCurve>& curves, const std::string& title);

}  // namespace wb::minigpt
