// The progress bar and the plain progress lines of the minigpt command.
#include "minigpt/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace wb::minigpt {

std::string format_duration(double seconds) {
    const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
    char buf[32];
    if (s >= 3600) {
        std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
    } else {
        std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
    }
    return buf;
}

std::string progress_line(const StepLog& e, double time_limit_s, std::size_t width) {
    const double done = e.total_steps ? double(e.step) / double(e.total_steps) : 1.0;
    const auto filled = static_cast<std::size_t>(done * double(width));
    std::string bar = "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
    // Time left: the mean time per step so far times the steps still to go.
    double left = e.step ? e.elapsed_s / double(e.step) * double(e.total_steps - e.step) : 0.0;
    if (time_limit_s > 0) left = std::min(left, std::max(0.0, time_limit_s - e.elapsed_s));
    char buf[160];
    std::snprintf(buf, sizeof buf, " step %zu/%zu  loss %.3f  %.0f tok/s  left %s", e.step,
                  e.total_steps, static_cast<double>(e.train_loss), e.tokens_per_s,
                  format_duration(left).c_str());
    return bar + buf;
}

ProgressPrinter::ProgressPrinter(std::ostream& out, bool is_tty, double time_limit_s,
                                 std::size_t plain_every)
    : out_(&out),
      tty_(is_tty),
      time_limit_s_(time_limit_s),
      plain_every_(std::max<std::size_t>(1, plain_every)) {}

void ProgressPrinter::operator()(const StepLog& e) {
    char eval[96] = "";
    if (e.eval_loss) {
        std::snprintf(eval, sizeof eval, "step %zu/%zu: held-out loss %.4f (train %.4f, lr %.2g)",
                      e.step, e.total_steps, static_cast<double>(*e.eval_loss),
                      static_cast<double>(e.train_loss), static_cast<double>(e.lr));
    }
    if (tty_) {
        // \r + clear line (ESC [K), then the held-out line if any, then the bar again.
        if (e.eval_loss) {
            *out_ << "\r\033[K" << eval << '\n';
            bar_open_ = false;
        }
        if (e.eval_loss || e.step == e.total_steps || e.elapsed_s - last_draw_s_ >= 0.1) {
            *out_ << "\r\033[K" << progress_line(e, time_limit_s_) << std::flush;
            last_draw_s_ = e.elapsed_s;
            bar_open_ = true;
        }
    } else {
        if (e.eval_loss) {
            *out_ << eval << '\n';
        } else if (e.step % plain_every_ == 0) {
            *out_ << progress_line(e, time_limit_s_) << '\n';
        }
        out_->flush();
    }
}

void ProgressPrinter::finish() {
    if (tty_ && bar_open_) *out_ << '\n';
    bar_open_ = false;
    out_->flush();
}

}  // namespace wb::minigpt
