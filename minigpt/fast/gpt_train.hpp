/// @file gpt_train.hpp
/// @brief The mini-GPT's training step on preallocated buffers, with the capstone's attention
/// kernel in place of the readable attention of chapter 8.
///
/// Given code (not an exercise): the same model and the same numbers as chapter 8's
/// gpt_forward / gpt_backward (equal up to float rounding, ~1e-6 of each tensor's scale),
/// organised for speed like llm.c's train_gpt2.c: every activation buffer is allocated once
/// for a batch shape and a step allocates nothing, each Linear layer is one `cblas_sgemm` on
/// raw buffers with its bias, residual or GELU fused into a neighbouring loop, and the
/// attention is wb::attention_forward / wb::attention_backward — the learner's kernel once it
/// passes, the reference otherwise. Both position kinds of GptConfig: learned (the table wpe)
/// and RoPE (q and k of every layer turned from cos / sin tables made once per trainer, and
/// their gradients turned back in the backward). And the ablation switches of variant.hpp:
/// attention without the 1/√d scale, Post-LN blocks, no final LayerNorm, no positions (RoPE's
/// layout with the rotation off).
///
/// Threads: OMP_NUM_THREADS. The matrix products are cut into pieces that the OpenMP threads
/// share, each piece a single-threaded sgemm (OpenBLAS is set to 1 thread during a step and
/// restored after): one piece per thread on gemm.hpp's own kernels, whose bits do not depend
/// on the cut, bands of a height fixed by the shapes on OpenBLAS. Every other sum over rows
/// runs over bands of a fixed height, so a step gives the same bits for any number of threads.
#pragma once

#include <cstddef>
#include <memory>

#include "8-training/model.hpp"
#include "minigpt/variant.hpp"

namespace wb::minigpt {

/// @defgroup minigpt The mini-GPT program (given)
/// @{

/// One training (or evaluation) step of a GPT of a fixed shape on batches `[B, T]`.
/// ```
///   GptTrainer trainer(config, B, T);
///   float loss = trainer.forward(params, inputs, targets);  // keeps the activations
///   trainer.backward(params, grads);                         // grads += dloss/dparams
/// ```
class GptTrainer {
  public:
    /// Allocates every activation buffer for batches of `batch` sequences of `seq_len` tokens.
    /// @param config the model's shape
    /// @param batch B, the sequences of a batch
    /// @param seq_len T, the tokens of each sequence, at most config.T_max
    /// @param variant the ablation switches; `{}` is chapter 8's model
    /// @throws ShapeError if the config is invalid, batch is 0, or seq_len is 0
    /// @throws ValueError if config.gelu is not Gelu::exact (the fast engine computes the
    ///         exact GELU only; GPT-2's tanh form runs on the chapters)
    /// @throws ValueError if seq_len > config.T_max, or variant.no_positions and
    ///         config.positions is not rope
    GptTrainer(const GptConfig& config, std::size_t batch, std::size_t seq_len,
               const Variant& variant = {});
    /// Frees the buffers.
    ~GptTrainer();
    /// Takes over another trainer's buffers (the moved-from trainer must not be used).
    GptTrainer(GptTrainer&&) noexcept;
    /// Takes over another trainer's buffers (the moved-from trainer must not be used).
    /// @return this trainer
    GptTrainer& operator=(GptTrainer&&) noexcept;

    /// The forward with its loss, as wb::gpt_forward (targets equal to -1 are ignored). Keeps
    /// every activation the backward needs in the trainer's buffers.
    /// @param params the model; its shapes must match the config
    /// @param inputs `[B, T]` ids in `[0, V)`, the shape given to the constructor
    /// @param targets `[B, T]` ids in `[0, V)` or -1
    /// @return the mean cross entropy
    /// @throws ShapeError if a shape differs from the constructor's or the config's
    /// @throws ValueError if an id is out of range
    float forward(const GptParams<float>& params, const TokenIds& inputs, const TokenIds& targets);

    /// The backward of the last forward: the gradients are **added** into grads.
    /// @param params the parameters the forward used
    /// @param grads shaped like params
    /// @throws ValueError if no forward ran since the trainer was made, or the last forward threw
    /// @throws ShapeError if params or grads does not match the config
    void backward(const GptParams<float>& params, GptParams<float>& grads);

    /// The next-token probabilities of the last forward (the softmax of its logits), row
    /// `b·T + t` for token t of sequence b: `[B·T, V]`, valid until the next forward.
    /// @throws ValueError if no forward ran since the trainer was made, or the last forward threw
    const float* probabilities() const;

    /// The model shape this trainer was made for.
    const GptConfig& config() const;
    /// The ablation switches this trainer was made for.
    const Variant& variant() const;

  private:
    struct Impl;                  // the config, [B, T], and every activation and scratch buffer
    std::unique_ptr<Impl> impl_;  // (defined in gpt_train.cpp, which alone needs <cblas.h>)
};

/// @}

}  // namespace wb::minigpt
