// The training loop: batches → the engine's forward/backward → clip → AdamW, with evaluation.
#include "minigpt/train.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <utility>

#include <omp.h>
#include <xtensor/xview.hpp>

#include "minigpt/data.hpp"
#include "minigpt/fast/gpt_train.hpp"
#include "minigpt/file_io.hpp"
#include "minigpt/serial_blas.hpp"

namespace wb::minigpt {

namespace {

constexpr double kPi = 3.14159265358979323846;

std::string num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

void check(bool ok, const std::string& what, const std::string& expected) {
    if (!ok) {
        throw ValueError("wb::minigpt::train: option " + what + ", expected " + expected);
    }
}

}  // namespace

void validate(const TrainOptions& o) {
    check(o.steps >= 1, "steps = " + std::to_string(o.steps), ">= 1");
    check(o.batch >= 1, "batch = " + std::to_string(o.batch), ">= 1");
    check(o.context >= 1, "context = " + std::to_string(o.context), ">= 1");
    check(std::isfinite(o.lr) && o.lr > 0, "lr = " + num(o.lr), "a finite value > 0");
    check(o.warmup <= o.steps, "warmup = " + std::to_string(o.warmup),
          "<= steps = " + std::to_string(o.steps));
    check(std::isfinite(o.min_lr) && o.min_lr >= 0 && o.min_lr <= o.lr, "min_lr = " + num(o.min_lr),
          "a value in [0, lr = " + num(o.lr) + "]");
    check(std::isfinite(o.weight_decay) && o.weight_decay >= 0,
          "weight_decay = " + num(o.weight_decay), ">= 0");
    check(std::isfinite(o.grad_clip) && o.grad_clip >= 0, "grad_clip = " + num(o.grad_clip),
          ">= 0 (0 turns clipping off)");
    check(o.eval_batches >= 1, "eval_batches = " + std::to_string(o.eval_batches), ">= 1");
    check(std::isfinite(o.time_limit_s) && o.time_limit_s >= 0,
          "time_limit_s = " + num(o.time_limit_s), ">= 0 (0 = no limit)");
}

float learning_rate(std::size_t step, const TrainOptions& o) {
    if (step < o.warmup) {
        return o.lr * static_cast<float>(step + 1) / static_cast<float>(o.warmup);
    }
    const std::size_t span = o.steps > o.warmup ? o.steps - o.warmup : 1;
    const double p =
        std::min(1.0, static_cast<double>(step - o.warmup) / static_cast<double>(span));
    return static_cast<float>(o.min_lr + (o.lr - o.min_lr) * 0.5 * (1.0 + std::cos(kPi * p)));
}

float clip_grad_norm(GptParams<float>& grads, float max_norm) {
    if (!(max_norm > 0) || !std::isfinite(max_norm)) {
        throw ValueError("wb::minigpt::clip_grad_norm: max_norm = " + num(max_norm) +
                         ", expected > 0 and finite");
    }
    auto refs = parameters(grads);
    double sum = 0;  // in double: millions of squares
    for (const auto& r : refs) {
        for (std::size_t i = 0; i < r.size; ++i) sum += double(r.data[i]) * double(r.data[i]);
    }
    const double norm = std::sqrt(sum);
    if (!std::isfinite(norm)) {
        throw ValueError("wb::minigpt::clip_grad_norm: the gradient norm is " + num(norm) +
                         " (expected a finite norm; the loss diverged, try a lower learning rate)");
    }
    // Finite in double, but returned as a float: above float's largest value it would be inf.
    if (norm > static_cast<double>(std::numeric_limits<float>::max())) {
        throw ValueError("wb::minigpt::clip_grad_norm: the gradient norm is " + num(norm) +
                         ", beyond the largest float " +
                         num(static_cast<double>(std::numeric_limits<float>::max())) +
                         " (expected a norm that is finite as a float; the loss diverged, try a "
                         "lower learning rate)");
    }
    if (norm > max_norm) {
        const auto scale = static_cast<float>(max_norm / (norm + 1e-6));
        for (auto& r : refs) {
            for (std::size_t i = 0; i < r.size; ++i) r.data[i] *= scale;
        }
    }
    return static_cast<float>(norm);
}

const char* engine_name(Engine engine) { return engine == Engine::chapters ? "chapters" : "fast"; }

namespace {

// The learner's chapters: chapter 8's readable model (chapters 1–7 inside) and its backward.
//
// Two threads without changing a bit: the batch is always cut in the same two halves (rows
// [0, B0) and [B0, B), B0 = ceil(B / 2)), each half runs gpt_forward and gpt_backward on its own
// (serial OpenBLAS, its own cache and gradient buffer), and the halves are combined in one fixed
// order: loss = (n0 l0 + n1 l1) / n, grads += (n0 / n) g0 + (n1 / n) g1, with n_i the scored
// targets of half i. On one thread the halves run one after the other and give the same bits;
// on two they run side by side (data parallelism, as chapter 10 does across processes).
class ChaptersStep final : public StepEngine {
  public:
    ChaptersStep(const GptConfig& config, std::size_t batch, std::size_t seq_len)
        : config_(config) {
        // The fast trainer's checks, so that both engines refuse the same runs up front.
        const std::string fn = "wb::minigpt::make_step_engine";
        require_valid_config(fn, config);
        if (batch == 0 || seq_len == 0) {
            throw ShapeError(fn + ": batch [B, T] = " + shape_str(Shape{batch, seq_len}) +
                             ", expected B >= 1 and T >= 1");
        }
        if (seq_len > config.T_max) {
            throw ValueError(fn + ": T = " + std::to_string(seq_len) + " exceeds T_max = " +
                             std::to_string(config.T_max) + " (the longest sequence of the model)");
        }
    }
    float forward(const GptParams<float>& params, const TokenIds& inputs,
                  const TokenIds& targets) override {
        has_forward_ = false;  // a forward that throws leaves nothing to differentiate
        const SerialBlas serial;
        const std::size_t B = inputs.shape(0);
        if (B < 2 || targets.shape(0) != B) {  // one row (or shapes gpt_forward refuses): whole
            halves_ = 1;
            const float loss = gpt_forward(params, config_, inputs, targets, -1, cache_[0]);
            has_forward_ = true;
            return loss;
        }
        halves_ = 2;
        const std::size_t B0 = (B + 1) / 2;
        const TokenIds in[2] = {xt::view(inputs, xt::range(0, B0), xt::all()),
                                xt::view(inputs, xt::range(B0, B), xt::all())};
        const TokenIds tg[2] = {xt::view(targets, xt::range(0, B0), xt::all()),
                                xt::view(targets, xt::range(B0, B), xt::all())};
        float loss[2] = {0, 0};
        each_half([&](int h) {
            loss[h] = gpt_forward(params, config_, in[h], tg[h], -1, cache_[h]);
            scored_[h] = static_cast<double>(
                std::count_if(tg[h].begin(), tg[h].end(), [](std::int64_t t) { return t != -1; }));
        });
        has_forward_ = true;
        const double n = scored_[0] + scored_[1];
        return n == 0 ? 0.0f
                      : static_cast<float>((scored_[0] * loss[0] + scored_[1] * loss[1]) / n);
    }
    void backward(const GptParams<float>& params, GptParams<float>& grads) override {
        if (!has_forward_) {
            throw ValueError(
                "wb::minigpt::StepEngine::backward (engine chapters): no forward to "
                "differentiate: call forward(params, inputs, targets) first (a forward that "
                "threw leaves none either)");
        }
        const SerialBlas serial;
        if (halves_ == 1) {
            gpt_backward(params, config_, cache_[0], grads);
            return;
        }
        for (auto& g : half_grads_) {
            if (g.wte.size() == 0) g = zeros_like(params);
            zero_grad(g);
        }
        each_half([&](int h) { gpt_backward(params, config_, cache_[h], half_grads_[h]); });
        const double n = scored_[0] + scored_[1];
        if (n == 0) return;  // nothing scored: no gradient
        const auto w0 = static_cast<float>(scored_[0] / n), w1 = static_cast<float>(scored_[1] / n);
        auto out = parameters(grads);
        const auto g0 = parameters(std::as_const(half_grads_[0]));
        const auto g1 = parameters(std::as_const(half_grads_[1]));
        for (std::size_t k = 0; k < out.size(); ++k) {
            for (std::size_t i = 0; i < out[k].size; ++i) {
                out[k].data[i] += w0 * g0[k].data[i] + w1 * g1[k].data[i];
            }
        }
    }

  private:
    // Runs fn(0) and fn(1), on two threads when OpenMP has two; an exception of either half is
    // thrown again here (half 0's first), after both have finished.
    template <class Fn>
    void each_half(Fn&& fn) {
        std::exception_ptr error[2];
#pragma omp parallel for num_threads(std::min(2, omp_get_max_threads())) schedule(static, 1)
        for (int h = 0; h < 2; ++h) {
            try {
                fn(h);
            } catch (...) {
                error[h] = std::current_exception();
            }
        }
        for (const auto& e : error) {
            if (e) std::rethrow_exception(e);
        }
    }

    GptConfig config_;
    GptCache<float> cache_[2];
    GptParams<float> half_grads_[2];
    double scored_[2] = {0, 0};
    int halves_ = 1;
    bool has_forward_ = false;
};

// The given fast trainer: buffers for [B, T], cblas, the capstone's attention kernel.
class FastStep final : public StepEngine {
  public:
    FastStep(const GptConfig& config, std::size_t batch, std::size_t seq_len,
             const Variant& variant)
        : trainer_(config, batch, seq_len, variant) {}
    float forward(const GptParams<float>& params, const TokenIds& inputs,
                  const TokenIds& targets) override {
        return trainer_.forward(params, inputs, targets);
    }
    void backward(const GptParams<float>& params, GptParams<float>& grads) override {
        trainer_.backward(params, grads);
    }

  private:
    GptTrainer trainer_;
};

}  // namespace

std::unique_ptr<StepEngine> make_step_engine(Engine engine, const GptConfig& config,
                                             std::size_t batch, std::size_t seq_len,
                                             const Variant& variant) {
    if (engine == Engine::chapters) {
        // Chapter 8 builds one model: scaled scores, Pre-LN, a final LayerNorm.
        if (!variant.is_default()) {
            throw ValueError("wb::minigpt::make_step_engine: " + variant_changes(variant) +
                             " with engine chapters, expected the chapters' model (" +
                             variant_str(Variant{}) +
                             "): the ablation switches run on --engine fast");
        }
        return std::make_unique<ChaptersStep>(config, batch, seq_len);
    }
    if (engine == Engine::fast) return std::make_unique<FastStep>(config, batch, seq_len, variant);
    throw ValueError("wb::minigpt::make_step_engine: engine = " +
                     std::to_string(static_cast<int>(engine)) + ", expected chapters or fast");
}

void set_threads(int threads) {
    if (threads <= 0) return;
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
}

namespace {

// The held-out score with an existing engine of shape [B, T] (no reallocation per call).
float evaluate_with(StepEngine& engine, const GptParams<float>& params,
                    const std::vector<std::int64_t>& tokens, std::size_t batch, std::size_t context,
                    std::size_t batches, std::uint64_t seed) {
    if (batches == 0) {
        throw ValueError("wb::minigpt::evaluate: batches = 0, expected >= 1");
    }
    BatchLoader loader(tokens, batch, context, seed);
    double sum = 0;
    for (std::size_t i = 0; i < batches; ++i) {
        const NextToken xy = loader.next();
        sum += engine.forward(params, xy.inputs, xy.targets);
    }
    return static_cast<float>(sum / static_cast<double>(batches));
}

// The held-out windows are always the same ones (seed independent of the run's seed).
constexpr std::uint64_t kEvalSeed = 0x5EED0E7A1ULL;

}  // namespace

float evaluate(const GptParams<float>& params, const GptConfig& config,
               const std::vector<std::int64_t>& tokens, std::size_t batch, std::size_t context,
               std::size_t batches, std::uint64_t seed, Engine engine, const Variant& variant) {
    const std::unique_ptr<StepEngine> step =
        make_step_engine(engine, config, batch, context, variant);
    return evaluate_with(*step, params, tokens, batch, context, batches, seed);
}

TrainResult train(GptParams<float>& params, const GptConfig& config,
                  const std::vector<std::int64_t>& train_tokens,
                  const std::vector<std::int64_t>& held_out, const TrainOptions& o,
                  const StepCallback& on_step) {
    validate(o);
    if (o.context > config.T_max) {
        throw ValueError("wb::minigpt::train: context = " + std::to_string(o.context) +
                         ", expected <= the model's T_max = " + std::to_string(config.T_max));
    }
    set_threads(o.threads);

    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };

    DataParallel* const parallel = o.data_parallel;
    if (parallel != nullptr && o.engine != Engine::chapters) {
        throw ValueError(std::string("wb::minigpt::train: data-parallel training with engine ") +
                         engine_name(o.engine) +
                         ", expected engine chapters (chapter 10 runs chapter 8's model)");
    }
    // Only the leading process evaluates: the others hold the same parameters.
    const bool evaluates = parallel == nullptr || parallel->leads();
    const std::unique_ptr<StepEngine> engine =
        make_step_engine(o.engine, config, o.batch, o.context, o.variant);
    BatchLoader loader(train_tokens, o.batch, o.context, o.seed);
    (void)BatchLoader(held_out, o.batch, o.context, kEvalSeed);  // fail now, not after training
    GptParams<float> grads = parallel != nullptr ? GptParams<float>{} : zeros_like(params);
    AdamWState<float> state;
    AdamWConfig adamw;
    adamw.weight_decay = o.weight_decay;

    TrainResult result;
    result.log.reserve(o.steps);
    double train_s = 0;  // time in training steps only, for tokens/s
    for (std::size_t s = 0; s < o.steps; ++s) {
        const auto ts = Clock::now();
        auto diverged = [&](float loss) {
            return ValueError("wb::minigpt::train: the loss is " + num(loss) + " at step " +
                              std::to_string(s + 1) +
                              " (expected a finite loss; try a lower learning rate)");
        };
        StepLog entry;
        float loss = 0;
        adamw.lr = learning_rate(s, o);
        if (parallel != nullptr) {
            // The same windows on every process (the same seed); the step shares them out.
            const TokenIds windows = loader.next_windows();  // [B, T + 1]
            const SerialBlas serial;
            loss =
                parallel->step(params, config, state, adamw, windows, o.grad_clip, entry.grad_norm);
            // Every process holds the same loss, so every one stops here alike.
            if (!std::isfinite(loss)) throw diverged(loss);
        } else {
            const NextToken xy = loader.next();  // inputs, targets [B, T]
            zero_grad(grads);
            loss = engine->forward(params, xy.inputs, xy.targets);
            if (!std::isfinite(loss)) throw diverged(loss);
            engine->backward(params, grads);
            entry.grad_norm = o.grad_clip > 0 ? clip_grad_norm(grads, o.grad_clip) : 0.0f;
            adamw_step(params, grads, state, adamw);
        }
        train_s += std::chrono::duration<double>(Clock::now() - ts).count();

        entry.step = s + 1;
        entry.total_steps = o.steps;
        entry.train_loss = loss;
        entry.lr = adamw.lr;
        entry.tokens_per_s = static_cast<double>(entry.step * o.batch * o.context) / train_s;
        bool out_of_time = o.time_limit_s > 0 && seconds() >= o.time_limit_s;
        // Each process has its own clock: rank 0's says when all of them stop.
        if (parallel != nullptr && o.time_limit_s > 0) {
            out_of_time = parallel->rank0_decides(out_of_time);
        }
        const bool last = entry.step == o.steps || out_of_time;
        if (evaluates && (entry.step == 1 || last ||
                          (o.eval_interval > 0 && entry.step % o.eval_interval == 0))) {
            entry.eval_loss = evaluate_with(*engine, params, held_out, o.batch, o.context,
                                            o.eval_batches, kEvalSeed);
            if (entry.step == 1) result.first_eval_loss = *entry.eval_loss;
            result.final_eval_loss = *entry.eval_loss;
        }
        entry.elapsed_s = seconds();
        result.log.push_back(entry);
        result.steps_done = entry.step;
        if (on_step) on_step(entry);
        if (out_of_time && !(entry.step == o.steps)) {
            result.stopped_by_time = true;
            break;
        }
    }
    result.seconds = seconds();
    return result;
}

void write_loss_csv(const std::string& path, const std::vector<StepLog>& log) {
    std::string out = "step,train_loss,held_out_loss,lr,tokens_per_s\n";
    char buf[160];
    for (const auto& e : log) {
        std::snprintf(buf, sizeof buf, "%zu,%.6f,", e.step, static_cast<double>(e.train_loss));
        out += buf;
        if (e.eval_loss) {
            std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(*e.eval_loss));
            out += buf;
        }
        std::snprintf(buf, sizeof buf, ",%.6g,%.1f\n", static_cast<double>(e.lr), e.tokens_per_s);
        out += buf;
    }
    // A unique temporary name beside the path, renamed onto it (file_io.hpp): concurrent runs
    // writing logs in one folder never share a temporary file.
    write_file_atomic("wb::minigpt::write_loss_csv", path, out);
}

}  // namespace wb::minigpt
