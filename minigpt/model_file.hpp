/// @file model_file.hpp
/// @brief A trained mini-GPT on disk, and text generation from it.
///
/// A saved model is one file: the vocabulary and chapter 8's checkpoint (config, weights, step)
/// side by side, little-endian:
/// ```
///   offset      bytes  field
///   0           8      magic "WBMINIGP"
///   8           4      u32  format version = 1
///   12          8      u64  vocabulary size N in bytes
///   20          8      u64  checkpoint size C in bytes
///   28          N      the vocabulary: Tokenizer::serialize()
///   28 + N      C      the checkpoint, exactly as wb::save_checkpoint writes it
///   28 + N + C  8      u64  FNV-1a 64-bit hash (wb::fnv1a64) of the 28 + N + C bytes before
/// ```
/// The file is written with write_file_atomic (file_io.hpp): a unique temporary name in the
/// same folder, fsync, rename, fsync of the folder. A `kill -9` or a full disk at any moment
/// leaves the previous model or the new one, whole; the vocabulary can never belong to other
/// weights. A load reads the 28-byte header first and checks the sizes it announces against
/// the file's size before reading the rest.
///
/// Models saved by earlier versions of the program are two files, `m.ckpt` (a bare checkpoint)
/// and `m.ckpt.vocab`; load_model still reads them. `save_model(path, load_model(path))`
/// converts one to a single file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"
#include "minigpt/tokenizer.hpp"

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// Everything needed to generate text: the model and its vocabulary.
struct Model {
    GptConfig config;         ///< the shape (V = tokenizer.size())
    GptParams<float> params;  ///< the weights
    Tokenizer tokenizer;      ///< ids ↔ characters
    std::int64_t step = 0;    ///< training steps behind these weights
};

/// The 8 bytes a model file starts with.
inline constexpr char kModelMagic[8] = {'W', 'B', 'M', 'I', 'N', 'I', 'G', 'P'};

/// The largest model file load_model reads: 16 GiB.
inline constexpr std::uint64_t kMaxModelBytes = std::uint64_t(16) << 30;

/// The vocabulary file of a model saved in the older two-file form: `checkpoint_path + ".vocab"`.
/// @param checkpoint_path the checkpoint
/// @return its vocabulary's path
std::string vocab_path(const std::string& checkpoint_path);

/// Saves the model as one file (the format above), atomically and durably.
/// @param path the model file: absent, or a regular file that is replaced
/// @param model what to save
/// @throws ValueError if model.config.V differs from the vocabulary's size
/// @throws ShapeError if the weights do not match the config
/// @throws FileError naming the file: the path exists and is not a regular file (a folder, a
///         device, a FIFO, a symbolic link), or it cannot be written; the message says that
///         the previous file at the path is unchanged, which it then is
void save_model(const std::string& path, const Model& model);

/// Loads what save_model wrote (or the older two-file form), checking all of it.
/// @param path the model file
/// @return the model
/// @throws FileError naming the file and the problem: missing, not a regular file, larger than
///         kMaxModelBytes, a header whose sizes disagree with the file's size, a checksum
///         mismatch, a malformed vocabulary or checkpoint (see wb::load_checkpoint), or a
///         vocabulary whose size is not the checkpoint's V
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
std::string generate_text(const Model& model, const std::string& prompt, std::size_t max_new_tokens,
                          const SamplingOptions& options, std::uint64_t seed, bool use_greedy);

/// Draws one piece of generate_text: the `context` ids followed by `n` new ones, with `seed`.
using PieceGenerator = std::function<std::vector<std::int64_t>(
    const std::vector<std::int64_t>& context, std::size_t n, std::uint64_t seed)>;

/// generate_text's loop over pieces (the prompt or a newline, the windows of T_max tokens,
/// seed + i for piece i), with the pieces drawn by `piece`: chapter 9's `generate` in
/// generate_text, the fast decoder in generate_text_fast. One loop, so both engines cut the
/// text at the same places and give the same greedy text.
/// @throws ValueError if a character of the prompt is not in the vocabulary
std::string generate_text_in_pieces(const Model& model, const std::string& prompt,
                                    std::size_t max_new_tokens, std::uint64_t seed,
                                    const PieceGenerator& piece);

/// @}

}  // namespace wb::minigpt
