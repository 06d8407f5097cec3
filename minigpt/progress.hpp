/// @file progress.hpp
/// @brief The training progress display of the `minigpt` command: a bar redrawn in place on a
/// terminal, plain lines in a log file or a pipe.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "minigpt/train.hpp"

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// Formats seconds as `m:ss` (or `h:mm:ss` from an hour up).
/// @param seconds a duration, >= 0
/// @return e.g. `"2:05"`
std::string format_duration(double seconds);

/// One progress line (no newline):
/// `[#######.............] step 120/600  loss 2.314  1234 tok/s  left 1:23`.
/// @param e the step to show
/// @param time_limit_s the run's time limit (0 = none): the time left is the smaller of the
///        estimate from the steps and what remains of the limit
/// @param width the bar's width in characters
/// @return the line
std::string progress_line(const StepLog& e, double time_limit_s, std::size_t width = 24);

/// Shows a run's steps on a stream. On a terminal the bar is redrawn in place (carriage
/// return) at most every 0.1 s, and each held-out loss is printed on its own line above it;
/// otherwise each held-out loss and every `plain_every`-th step is one plain line.
class ProgressPrinter {
  public:
    /// A printer on `out`.
    /// @param out where to print (e.g. std::cout)
    /// @param is_tty draw the in-place bar (a terminal) or plain lines
    /// @param time_limit_s the run's time limit, 0 for none
    /// @param plain_every without a terminal, print a line every this many steps
    ProgressPrinter(std::ostream& out, bool is_tty, double time_limit_s,
                    std::size_t plain_every = 50);

    /// Shows one step (use as the StepCallback of train()).
    /// @param e the step
    void operator()(const StepLog& e);

    /// Ends the bar's line (call once after training).
    void finish();

  private:
    std::ostream* out_;
    bool tty_;
    double time_limit_s_;
    std::size_t plain_every_;
    double last_draw_s_ = -1;
    bool bar_open_ = false;
};

/// @}

}  // namespace wb::minigpt
