/// @file train.hpp
/// @brief The mini-GPT's training loop: AdamW with a warm-up + cosine learning-rate schedule,
/// global-norm gradient clipping, and evaluation on held-out text.
///
/// One step, as nanoGPT's train.py:
/// ```
///   zero_grad(grads)
///   loss = engine.forward(params, inputs, targets)      inputs, targets [B, T]
///   engine.backward(params, grads)
///   clip_grad_norm(grads, grad_clip)                    the whole gradient, one norm
///   adamw.lr = learning_rate(step, options)
///   adamw_step(params, grads, state, adamw)
/// ```
/// The engine is chapter 8's readable model (Engine::chapters) or the given fast trainer
/// (Engine::fast); the loop around it is the same, so the two give the same curve up to float
/// rounding. Each engine gives the same bits for every thread count: the fast one splits its
/// work so that every sum keeps one order; the chapters one cuts each batch in the same two
/// halves, runs each half's forward and backward on its own thread (OpenBLAS serial inside,
/// because its threaded sgemm rounds differently from its serial one) and adds the halves in
/// one order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "8-training/model.hpp"
#include "8-training/optim.hpp"
#include "minigpt/variant.hpp"

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// Which code computes the forward and the backward (and, in the program, the generation).
enum class Engine {
    /// The learner's chapters end to end: chapter 8's wb::gpt_forward / wb::gpt_backward (the
    /// model made of chapters 1–7) to train, chapter 9's prefill / decode_step to generate.
    /// Training runs the batch's two halves side by side (one per thread, OpenBLAS serial in
    /// each), the same bits for every thread count.
    chapters,
    /// The given fast code: GptTrainer (cblas and the capstone's attention kernel) to train,
    /// GptDecoder to generate. The same numbers up to float rounding, several times faster.
    fast,
};

/// The name of an engine, as the program's `--engine` option spells it.
/// @param engine the engine
/// @return "chapters" or "fast"
const char* engine_name(Engine engine);

/// One step's forward and backward on batches `[B, T]`, whichever engine computes them.
class StepEngine {
  public:
    virtual ~StepEngine() = default;
    /// The mean cross entropy of the batch (targets equal to -1 ignored), keeping what the
    /// backward needs.
    /// @param params the model
    /// @param inputs `[B, T]` ids in `[0, V)`
    /// @param targets `[B, T]` ids in `[0, V)` or -1
    /// @return the loss
    virtual float forward(const GptParams<float>& params, const TokenIds& inputs,
                          const TokenIds& targets) = 0;
    /// The gradient of the last forward's loss, **added** into grads.
    /// @param params the parameters the forward used
    /// @param grads shaped like params
    /// @throws ValueError if no forward ran since the engine was made, or the last forward threw
    ///         (its batch is not the one whose gradients a backward would give)
    virtual void backward(const GptParams<float>& params, GptParams<float>& grads) = 0;
};

/// The step of `engine` for a model of shape `config` and batches `[batch, seq_len]`.
/// @param engine chapters or fast
/// @param config the model's shape
/// @param batch B
/// @param seq_len T, <= config.T_max
/// @param variant the ablation switches (variant.hpp); only Engine::fast builds another than `{}`
/// @return the engine's step
/// @throws ShapeError, ValueError as GptTrainer's constructor (both engines check the same)
/// @throws ValueError if engine is chapters and the variant is not the default (the message
///         names the switches and says that they run on `--engine fast`)
std::unique_ptr<StepEngine> make_step_engine(Engine engine, const GptConfig& config,
                                             std::size_t batch, std::size_t seq_len,
                                             const Variant& variant = {});

/// A training step shared by several processes: the program's data-parallel mode (`mpirun -np N
/// minigpt --engine chapters`, built with MPI: minigpt/parallel/), which runs chapter 10. train()
/// then draws the global batch `[B, T + 1]` on every process from the same seed, and each
/// process computes its share inside step(); only the leading process (rank 0) evaluates.
class DataParallel {
  public:
    virtual ~DataParallel() = default;
    /// One step on the global batch, on every process: the mean gradient of all the shares
    /// (chapter 10's fixed tree), clipped to `grad_clip` when it is > 0, then AdamW.
    /// @param params updated in place, the same bits on every process
    /// @param config the model's shape
    /// @param state AdamW's state, updated
    /// @param adamw the hyper-parameters, this step's learning rate included
    /// @param windows `[B, T + 1]`, the global batch, the same on every process
    /// @param grad_clip the largest global gradient norm; 0 turns clipping off
    /// @param grad_norm set to the norm before clipping (0 when clipping is off)
    /// @return the mean loss of the batch before the step
    virtual float step(GptParams<float>& params, const GptConfig& config, AdamWState<float>& state,
                       const AdamWConfig& adamw, const TokenIds& windows, float grad_clip,
                       float& grad_norm) = 0;
    /// Rank 0's answer on every process (one broadcast): a decision that could differ between
    /// processes, such as the wall clock's "out of time", is taken once.
    /// @param mine this process's answer (only rank 0's counts)
    /// @return rank 0's answer
    virtual bool rank0_decides(bool mine) = 0;
    /// Whether this process is rank 0, the one that evaluates, prints and saves.
    /// @return true on rank 0
    virtual bool leads() const = 0;
};

/// Every setting of a training run.
struct TrainOptions {
    std::size_t steps = 600;          ///< optimizer steps, >= 1
    std::size_t batch = 16;           ///< B, windows per step, >= 1
    std::size_t context = 64;         ///< T, tokens per window (<= the model's T_max)
    float lr = 3e-3f;                 ///< peak learning rate, > 0
    std::size_t warmup = 50;          ///< steps of linear warm-up, <= steps
    float min_lr = 3e-4f;             ///< learning rate at the end of the cosine, in [0, lr]
    float weight_decay = 0.01f;       ///< AdamW's decoupled weight decay, >= 0
    float grad_clip = 1.0f;           ///< largest global gradient norm; 0 turns clipping off
    std::size_t eval_interval = 100;  ///< evaluate every this many steps (and at the first and
                                      ///< last step); 0: only at the first and last
    std::size_t eval_batches = 8;     ///< held-out batches per evaluation, >= 1
    std::uint64_t seed = 1;           ///< seeds the batches (the model has its own seed)
    int threads = 0;                  ///< OpenMP and OpenBLAS threads; 0 leaves them as they are
    double time_limit_s = 0;          ///< stop after this many seconds of training; 0 = none
    Engine engine = Engine::fast;     ///< which code computes each step
    Variant variant;                  ///< the model's ablation switches (Engine::fast only)
    /// Set: every step is data_parallel->step() (Engine::chapters only), the held-out loss is
    /// computed on the leading process only, and the time limit is rank 0's decision. Not owned.
    DataParallel* data_parallel = nullptr;
};

/// Raises a ValueError naming the option, its value and the range expected, unless every
/// option is in range.
/// @param options the settings to check
/// @throws ValueError on the first option out of range
void validate(const TrainOptions& options);

/// The learning rate of step `step` (0-based): a linear warm-up, then a cosine down to min_lr.
/// ```
///   step < warmup:   lr · (step + 1) / warmup
///   otherwise:       p = (step − warmup) / (steps − warmup)            in [0, 1)
///                    min_lr + (lr − min_lr) · (1 + cos(π · p)) / 2
/// ```
/// @param step the step about to be taken, in [0, steps)
/// @param options lr, min_lr, warmup, steps
/// @return the learning rate
float learning_rate(std::size_t step, const TrainOptions& options);

/// Scales the whole gradient down so that its global L2 norm is at most `max_norm`
/// (`torch.nn.utils.clip_grad_norm_`): with `norm = sqrt(Σ g²)` over every tensor,
/// if `norm > max_norm` every gradient is multiplied by `max_norm / (norm + 1e-6)`.
/// @param grads the gradients, changed in place
/// @param max_norm the largest norm allowed, > 0
/// @return the norm before clipping
/// @throws ValueError if max_norm <= 0, or the norm is not finite (the gradient holds a NaN
///         or an infinity: the step would destroy the model), or it is finite only in double,
///         above float's largest value 3.4e38 (gradients of 3e38: the returned norm would be
///         inf); the message names the norm
float clip_grad_norm(GptParams<float>& grads, float max_norm);

/// Sets the OpenMP and OpenBLAS thread counts (a count of 0 or less changes nothing).
/// @param threads the number of threads
void set_threads(int threads);

/// What one training step reports: one point of the loss curve.
struct StepLog {
    std::size_t step = 0;            ///< steps done, 1-based
    std::size_t total_steps = 0;     ///< steps planned
    float train_loss = 0;            ///< the loss of this step's batch (before its update)
    std::optional<float> eval_loss;  ///< held-out loss after this step, when evaluated
    float lr = 0;                    ///< the learning rate this step used
    float grad_norm = 0;             ///< the gradient norm before clipping
    double tokens_per_s = 0;         ///< training tokens per second so far
    double elapsed_s = 0;            ///< seconds since training started
};

/// Called after every step (for a progress bar, a log, or a test watching the curve).
using StepCallback = std::function<void(const StepLog&)>;

/// What a finished run returns.
struct TrainResult {
    std::vector<StepLog> log;      ///< one entry per step
    std::size_t steps_done = 0;    ///< fewer than options.steps if the time limit stopped it
    float first_eval_loss = 0;     ///< held-out loss after the first step
    float final_eval_loss = 0;     ///< held-out loss after the last step
    bool stopped_by_time = false;  ///< true if time_limit_s ended the run early
    double seconds = 0;            ///< wall time of the run
};

/// The mean loss on `batches` batches of held-out windows. The windows come from a loader
/// seeded with `seed`, so every call with the same arguments scores the same text and the
/// numbers of a curve are comparable.
/// @param params the model
/// @param config its shape
/// @param tokens held-out ids, at least context + 1
/// @param batch B
/// @param context T, <= config.T_max
/// @param batches how many batches, >= 1
/// @param seed which windows
/// @param engine which code computes the forwards
/// @param variant the model's ablation switches (as make_step_engine)
/// @return the mean cross entropy (nats per token)
/// @throws ValueError if batches is 0 or the loader rejects the sizes
float evaluate(const GptParams<float>& params, const GptConfig& config,
               const std::vector<std::int64_t>& tokens, std::size_t batch, std::size_t context,
               std::size_t batches, std::uint64_t seed, Engine engine = Engine::fast,
               const Variant& variant = {});

/// Trains `params` in place on random windows of `train_tokens`, scoring `held_out` after the
/// first step, every eval_interval steps and after the last step.
/// @param params the model, updated
/// @param config its shape; options.context must be <= config.T_max
/// @param train_tokens ids to train on
/// @param held_out ids to evaluate on
/// @param options the settings (validated first)
/// @param on_step called after every step, may be empty
/// @return the curve and the final held-out loss
/// @throws ValueError if an option is out of range, context > T_max, a split is shorter than
///         context + 1, or the loss stops being finite (the message names the step and
///         suggests a lower learning rate)
TrainResult train(GptParams<float>& params, const GptConfig& config,
                  const std::vector<std::int64_t>& train_tokens,
                  const std::vector<std::int64_t>& held_out, const TrainOptions& options,
                  const StepCallback& on_step = {});

/// Writes the curve as CSV, `step,train_loss,held_out_loss,lr,tokens_per_s` (held_out_loss
/// empty where the step was not evaluated), to a temporary file of a unique name renamed onto
/// `path` (write_file_atomic, file_io.hpp).
/// @param path the CSV file
/// @param log the steps
/// @throws FileError naming the path if it cannot be written
void write_loss_csv(const std::string& path, const std::vector<StepLog>& log);

/// @}

}  // namespace wb::minigpt
