/// @file checkpoint.hpp
/// @brief Chapter 8 — saving and restoring a model with what is needed to resume training.
///
/// The notes' §21.9: weights alone are not enough. A `state_dict` restores into a model that
/// was first built "with the same configuration", so the configuration (V, T_max, D, H, L) is
/// saved too; resuming training also needs the optimizer's state and the progress (the step).
///
/// ## The file format (version 1), little-endian
/// ```
///   offset  bytes  field
///   0       8      magic "WBGPTCKP"
///   8       4      u32  format version = 1
///   12      8      u64  payload size P in bytes
///   20      P      payload:
///                    5 × u64   V, T_max, D, H, L
///                    i64       step (training progress)
///                    u8        has_optimizer: 0 or 1
///                    u64       n, the number of tensors (2 + 16·L + 3)
///                    n ×       u32 name length, the name (ASCII, no terminator),
///                              u32 rank, rank × u64 dims, prod(dims) × f32 values
///                              — in the order and with the names of wb::parameters()
///                    if has_optimizer:
///                              i64 AdamW step, then the n tensors' m values (f32),
///                              then the n tensors' v values (f32), each of its tensor's size
///   20 + P  8      u64  FNV-1a 64-bit hash of the P payload bytes
/// ```
/// The position kind (GptConfig::positions) has no field of its own: it is the shape of wpe,
/// the second tensor — `[T_max, D]` for learned positions, `[0, D]` for RoPE (that model has
/// no position table). load_checkpoint reads wpe's shape first to know which model the config
/// describes. The GELU kind (GptConfig::gelu) is not saved either: a loaded config has
/// Gelu::exact, the form the course trains. The program's model file (minigpt/model_file.hpp)
/// keeps GPT-2's tanh form beside the checkpoint.
///
/// The file is `28 + P` bytes. Integers and floats are written byte by byte in little-endian
/// order, so a file is the same on every machine. FNV-1a: `h = 14695981039346656037`, then
/// for each byte `h = (h XOR byte) · 1099511628211` (mod 2⁶⁴).
/// <!-- clause: save_checkpoint.format -->
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "8-training/model.hpp"
#include "8-training/optim.hpp"
#include "workbook/core.hpp"

namespace wb {

/// @addtogroup chapter8
/// @{

/// Everything a checkpoint holds: enough to rebuild the model and resume training.
struct Checkpoint {
    GptConfig config;                            ///< the shape of the model
    GptParams<float> params;                     ///< its weights
    std::optional<AdamWState<float>> optimizer;  ///< AdamW's moments and step, if saved
    std::int64_t step = 0;                       ///< training progress (e.g. batches seen)
};

/// The 8 bytes every checkpoint starts with.
inline constexpr char kCheckpointMagic[8] = {'W', 'B', 'G', 'P', 'T', 'C', 'K', 'P'};

/// The format version written by save_checkpoint and the only one load_checkpoint reads.
inline constexpr std::uint32_t kCheckpointVersion = 1;

/// @}

inline namespace WB_IMPL {

/// @addtogroup chapter8
/// @{

/// FNV-1a, 64 bits, of a byte range: the checksum of the format.
/// Known values: `""` → `0xcbf29ce484222325`, `"a"` → `0xaf63dc4c8601ec8c`. <!-- clause: fnv1a64.values -->
/// @param data the first byte
/// @param size how many bytes
/// @return the hash
std::uint64_t fnv1a64(const unsigned char* data, std::size_t size);

/// Saves a model (and optionally AdamW's state and the step) in the format above.
///
/// The file is written whole to `path + ".tmp"` and then renamed onto `path`
/// (`std::filesystem::rename`, atomic on POSIX), so a crash or a full disk in the middle of a
/// save leaves any previous file at `path` intact <!-- clause: save_checkpoint.atomic -->; on failure the temporary file is removed. <!-- clause: save_checkpoint.tmp-removed -->
/// @param path where to save
/// @param config the model's shape
/// @param params the weights; their shapes must match config
/// @param optimizer AdamW's state to save, or nullptr: its own step goes to the AdamW step
///        field, independent of `step` <!-- clause: save_checkpoint.optimizer-step -->
/// @param step training progress to save (any int64, independent of the optimizer's step) <!-- clause: save_checkpoint.training-step -->
/// @throws ShapeError if params (or a given optimizer state) does not match config, before
///         anything is written <!-- clause: save_checkpoint.shape-mismatch -->
/// @throws FileError if the file cannot be written or renamed (the message names the path) <!-- clause: save_checkpoint.file-error -->
void save_checkpoint(const std::string& path, const GptConfig& config,
                     const GptParams<float>& params, const AdamWState<float>* optimizer = nullptr,
                     std::int64_t step = 0);

/// Loads a checkpoint written by save_checkpoint. The whole file is validated — magic,
/// version, size, checksum, then every tensor's name and shape against the config — before
/// anything is returned, so a bad file can never half-overwrite a model. <!-- clause: load_checkpoint.validate-first --> Reads are bounded:
/// only a regular file is opened (a directory, a FIFO or a device such as /dev/zero is refused
/// with "cannot open") <!-- clause: load_checkpoint.regular-file-only -->, and only its 20-byte header is read until the size it announces has
/// been compared with the file's size from the filesystem. <!-- clause: load_checkpoint.bounded-reads -->
/// @param path the file
/// @return the config (its positions from wpe's shape, see the format) <!-- clause: load_checkpoint.positions-from-wpe -->, the weights, the
///         optimizer state if it was saved, and the step, bit for bit as saved <!-- clause: load_checkpoint.roundtrip -->
/// @throws FileError naming the file and the problem: "cannot open" (missing, or not a regular
///         file) <!-- clause: load_checkpoint.cannot-open -->, "not a workbook
///         checkpoint" (the file is empty or its first bytes differ from the magic) <!-- clause: load_checkpoint.not-checkpoint -->, "version 7,
///         expected 1" <!-- clause: load_checkpoint.version -->, "truncated at byte N" (N = the file's length, when it is shorter than
///         its header or than the size the header announces; a file that is a prefix of the
///         magic is a truncated checkpoint) <!-- clause: load_checkpoint.truncated -->, "unexpected bytes after the checksum" <!-- clause: load_checkpoint.trailing-bytes -->,
///         "checksum mismatch" <!-- clause: load_checkpoint.checksum -->, and, in a file whose checksum is right but whose contents are
///         not a model: "invalid config" (e.g. H does not divide D) <!-- clause: load_checkpoint.invalid-config --> or a tensor whose name or
///         shape disagrees with the config ("tensor 'wtf' [13, 8], expected 'wte' [13, 8]") <!-- clause: load_checkpoint.tensor-mismatch -->
Checkpoint load_checkpoint(const std::string& path);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
