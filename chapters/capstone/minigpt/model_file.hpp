/// @file model_file.hpp
/// @brief A trained mini-GPT on disk, and text generation from it.
///
/// A saved model is two files side by side:
/// ```
///   minigpt.ckpt         chapter 8's checkpoint (config, weights, step): wb::save_checkpoint
///   minigpt.ckpt.vocab   the vocabulary: Tokenizer::serialize()
/// ```
/// Both are written to a temporary file and renamed, the vocabulary first, so a reader never
/// sees a half-written file. Loading checks that the vocabulary has exactly V characters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"
#include "capstone/minigpt/tokenizer.hpp"

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// Everything needed to generate text: the model and its vocabulary.
struct Model {
    GptConfig config;        ///< the shape (V = tokenizer.size())
    GptParams<float> params; ///< the weights
    Tokenizer tokenizer;     ///< ids ↔ characters
    std::int64_t step = 0;   ///< training steps behind these weights
};

/// The vocabulary file that goes with a checkpoint: `checkpoint_path + ".vocab"`.
/// @param checkpoint_path the checkpoint
/// @return its vocabulary's path
std::string vocab_path(const std::string& checkpoint_path);

/// Saves the model: the vocabulary to vocab_path(path), then the checkpoint to path.
/// @param path the checkpoint file
/// @param model what to save
/// @throws ValueError if model.config.V differs from the vocabulary's size
/// @throws ShapeError if the weights do not match the config
/// @throws FileError naming the file that cannot be written
void save_model(const std::string& path, const Model& model);

/// Loads what save_model wrote, checking both files and that they belong together.
/// @param path the checkpoint file
/// @return the model
/// @throws FileError naming the file and the problem: a missing or corrupt checkpoint (see
///         wb::load_checkpoint), a missing or malformed vocabulary, or a vocabulary whose size
///         is not the checkpoint's V
Model load_model(const std::string& path);

/// Counts the model's parameters (every element of every tensor).
/// @param params the model
/// @return the number of floats
std::size_t parameter_count(const GptParams<float>& params);

/// Continues `prompt` by `max_new_tokens` characters with wb::generate on the KV cache.
/// The model reads at most T_max tokens, so a long text is made in pieces: each piece starts
/// from the last tokens so far (the whole prompt if it fits, then the last T_max / 2) and
/// piece i is drawn with seed `seed + i`. The same arguments give the same text.
/// @param model the model and its vocabulary
/// @param prompt UTF-8 text whose characters are all in the vocabulary; empty means start
///        from a newline (or id 0 if the vocabulary has none)
/// @param max_new_tokens characters to add
/// @param options temperature, top-k, top-p
/// @param seed fixes the draws
/// @param use_greedy take the most likely character instead of sampling
/// @return the prompt followed by the generated characters
/// @throws ValueError if a character of the prompt is not in the vocabulary (the message
///         names it and its byte offset) or the options are invalid
std::string generate_text(const Model& model, const std::string& prompt,
                          std::size_t max_new_tokens, const SamplingOptions& options,
                          std::uint64_t seed, bool use_greedy);

/// @}

}  // namespace wb::minigpt
