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
///   28 + N + C  8      u64  FNV-1a 64-bit hash (as wb::fnv1a64) of the 28 + N + C bytes before
/// ```
/// That is a model of chapter 8's architecture (the default Variant, variant.hpp). A model with
/// an ablation switch is format version 2: the same with 4 bytes more after the sizes, at
/// offset 28 (so the vocabulary starts at 32, and the hash covers them too):
/// ```
///   28  1  u8  attention scale: 0 = sqrt (1/√d), 1 = none
///   29  1  u8  norm: 0 = pre, 1 = post
///   30  1  u8  final norm: 1 = on, 0 = off
///   31  1  u8  positions: 0 = the checkpoint's (learned or rope), 1 = none (no position
///              information; the checkpoint's config says rope: no table wpe, and no rotation)
/// ```
/// (Byte 31 was reserved, always 0, before `--positions none`: those files read as before.)
/// A model with GPT-2's tanh GELU (GptConfig::gelu, which chapter 8's checkpoint does not hold:
/// a GPT-2 converted by tools/convert-gpt2) is format version 3: version 2's 4 bytes, then 4
/// more, so the vocabulary starts at 36:
/// ```
///   32  1  u8  gelu: 0 = exact, 1 = tanh
///   33  3      0, 0, 0
/// ```
/// A save writes version 1 for the default variant, byte for byte as before the switches
/// existed, so earlier programs still read those models; a load reads both versions.
/// A save writes the file under a unique temporary name in the same folder (a TemporaryFile,
/// file_io.hpp), flushes it, renames it onto the path and flushes the folder. Chapter 8's
/// save_checkpoint writes the checkpoint straight into that temporary file, which then gets the
/// header and the vocabulary in front: a save needs the disk space of one model beside the
/// previous one. A `kill -9` or a full disk at any moment leaves the previous model or the new
/// one, whole; the vocabulary can never belong to other weights. A save removes its temporary
/// files on every error and on SIGTERM, SIGINT or SIGHUP; those of a save killed with
/// `kill -9` are removed by the next save to the same path.
///
/// A load reads the 28-byte header first and checks the sizes it announces against the file's
/// size, against kMaxModelBytes and against the memory the process may still allocate
/// (memory_limit(), file_io.hpp) before it reads or allocates anything more.
///
/// Models saved by earlier versions of the program are two files, `m.ckpt` (a bare checkpoint)
/// and `m.ckpt.vocab`. Nothing ties that vocabulary to those weights (a foreign vocabulary of
/// the same size loads as well), so load_model refuses the form and says how to convert it
/// once, with the vocabulary named explicitly: `minigpt convert --checkpoint m.ckpt --vocab
/// m.ckpt.vocab --out m.model` (load_two_file_model, then save_model).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"
#include "minigpt/file_io.hpp"
#include "minigpt/tokenizer.hpp"
#include "minigpt/variant.hpp"

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// Everything needed to generate text: the model and its vocabulary.
struct Model {
    GptConfig config;         ///< the shape (V = tokenizer.size())
    GptParams<float> params;  ///< the weights
    Tokenizer tokenizer;      ///< ids ↔ characters
    std::int64_t step = 0;    ///< training steps behind these weights
    Variant variant;          ///< the ablation switches it was trained with (`{}`: chapter 8's)
};

/// The 8 bytes a model file starts with.
inline constexpr char kModelMagic[8] = {'W', 'B', 'M', 'I', 'N', 'I', 'G', 'P'};

/// The largest model file load_model reads: 16 GiB.
inline constexpr std::uint64_t kMaxModelBytes = std::uint64_t(16) << 30;

/// The memory a load of a model needs, at most, for a vocabulary part of `vocabulary_bytes`
/// and a checkpoint part of `checkpoint_bytes`: 3 × the checkpoint (a copy for chapter 8's
/// loader, the loader's own buffer, the weights) and 2 × the vocabulary, plus 1 MiB.
/// @return the bytes (saturates at UINT64_MAX instead of wrapping around)
std::uint64_t model_load_memory(std::uint64_t vocabulary_bytes, std::uint64_t checkpoint_bytes);

/// The vocabulary file of a model saved in the older two-file form: `checkpoint_path + ".vocab"`.
/// @param checkpoint_path the checkpoint
/// @return its vocabulary's path
std::string vocab_path(const std::string& checkpoint_path);

/// Saves the model as one file (the format above), atomically and durably.
/// @param path the model file: absent, or a regular file that is replaced
/// @param model what to save
/// @throws ValueError if model.config.V differs from the vocabulary's size
/// @throws ShapeError if the weights do not match the config (the message names the tensor,
///         its shape and the expected one)
/// @throws ValueError if model.variant has no positions and model.config.positions is not rope
/// @throws FileError naming the file: the path exists and is not a regular file (a folder, a
///         device, a FIFO, a symbolic link), or it cannot be written; the message says that
///         the previous file at the path is unchanged, which it then is
void save_model(const std::string& path, const Model& model);

/// Loads what save_model wrote, checking all of it.
/// @param path the model file
/// @return the model
/// @throws FileError naming the file and the problem: missing, not a regular file, larger than
///         kMaxModelBytes, a header whose sizes disagree with the file's size, a load that
///         would need more memory than memory_limit() (the message states both figures and
///         the limit's source), a checksum mismatch, a malformed vocabulary or checkpoint (see
///         wb::load_checkpoint and Tokenizer::deserialize), a vocabulary whose size is not the
///         checkpoint's V, a switch of version 2 with an unknown value (the message names it,
///         its value and the values expected), positions none with a checkpoint whose
///         positions are not rope, a GELU byte of version 3 other than 0 or 1 (or bytes 33
///         to 35 not 0), or a bare checkpoint of the older two-file form
///         (the message gives the `minigpt convert` command that makes it one file)
Model load_model(const std::string& path);

/// load_model with a given memory limit instead of memory_limit().
/// @param path the model file
/// @param limit the memory the load may allocate, stated in the message when exceeded
/// @return the model
/// @throws FileError as load_model
Model load_model(const std::string& path, const MemoryLimit& limit);

/// Reads a model of the older two-file form: a bare checkpoint (chapter 8's format) and the
/// vocabulary that the caller vouches for. Only the sizes can be checked: a foreign vocabulary
/// of the same size is accepted, which is why load_model refuses the form and this function
/// takes the vocabulary's path explicitly (`minigpt convert`).
/// @param checkpoint_path the bare checkpoint
/// @param vocabulary_path its vocabulary (Tokenizer::serialize's form)
/// @return the model
/// @throws FileError naming the file and the problem: missing, not a regular file, a load that
///         would need more memory than memory_limit() (the message states both), a malformed
///         checkpoint or vocabulary, or a vocabulary whose size is not the checkpoint's V
Model load_two_file_model(const std::string& checkpoint_path, const std::string& vocabulary_path);

/// Counts the model's parameters (every element of every tensor).
/// @param params the model
/// @return the number of floats
std::size_t parameter_count(const GptParams<float>& params);

/// The parameters a model of shape `config` will have, counted without allocating it (the
/// shapes of GptParams): V·D twice (wte, lm_head), T_max·D for learned positions, 12·D² + 13·D
/// per block and 2·D for the final LayerNorm.
/// @param config the shape
/// @return the count; saturates at UINT64_MAX instead of wrapping around
std::uint64_t parameter_count(const GptConfig& config);

/// The fewest bytes training a model of shape `config` needs: its weights, their gradients and
/// AdamW's two moments, 4 floats per parameter (activations come on top).
/// @param config the shape
/// @return the bytes; saturates at UINT64_MAX
std::uint64_t training_memory(const GptConfig& config);

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
///         names it and its byte offset) or the options are invalid, or the model is not
///         chapter 8's (model.variant is not the default: chapter 9 builds only that one)
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
