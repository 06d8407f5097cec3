/// @file file_io.hpp
/// @brief Bounded reads and crash-safe writes of whole files, for the mini-GPT program.
///
/// Every file the program reads (a corpus, a model) goes through read_regular_file: only a
/// regular file is read (a FIFO, a device or a folder is refused before anything is read, so
/// `--load /dev/zero` cannot fill the memory and a FIFO cannot hang the program), and only up
/// to a stated limit. Every file it writes goes through write_file_atomic: a new file with a
/// unique name in the same folder, written, flushed to the disk (`fsync`), then renamed onto
/// the path, and the folder flushed too; a `kill -9`, a crash or a full disk at any moment
/// leaves either the old file or the new one at the path, never a mixture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// Reads the whole file at `path`, which must be a regular file of at most `limit` bytes.
/// @param function the caller, named in the messages (e.g. "wb::minigpt::load_corpus")
/// @param path the file
/// @param limit the largest size accepted, in bytes (stated in the message when exceeded)
/// @return the file's bytes
/// @throws FileError naming `function` and the path: missing, not a regular file (a folder,
///         a FIFO, a device), larger than `limit`, or unreadable
std::string read_regular_file(const std::string& function, const std::string& path,
                              std::uint64_t limit);

/// Reads up to `count` bytes of the regular file at `path` from byte `offset`.
/// @return the bytes read (fewer if the file ends first)
/// @throws FileError as read_regular_file (without the size limit)
std::string read_file_part(const std::string& function, const std::string& path,
                           std::uint64_t offset, std::size_t count);

/// The size in bytes of the regular file at `path`.
/// @throws FileError as read_regular_file (without the size limit)
std::uint64_t regular_file_size(const std::string& function, const std::string& path);

/// Refuses a path that a save may not replace: one that exists and is not a regular file
/// (a folder, a device such as /dev/full, a FIFO, a symbolic link).
/// @throws FileError naming `function` and the path
void require_replaceable(const std::string& function, const std::string& path);

/// Replaces the file at `path` with `data`, atomically and durably: the bytes go to a new file
/// `path.tmp-<pid>-<n>` (created exclusively, so concurrent saves never share one), which is
/// flushed with fsync, renamed onto `path`, and the folder is flushed. Temporary files left by
/// processes that no longer run (a save killed with `kill -9`) are removed first.
/// @param function the caller, named in the messages
/// @param path the file to replace or create; see require_replaceable
/// @param data its new contents
/// @throws FileError naming `function`, the path and the reason (the previous file at the
///         path, if any, is then unchanged, and no temporary file is left behind)
void write_file_atomic(const std::string& function, const std::string& path,
                       const std::string& data);

/// A unique path in the folder of `path`, of the form write_file_atomic uses, for a file that a
/// caller writes itself and removes; stale ones are removed by the next write_file_atomic.
std::string unique_temporary_path(const std::string& path);

/// @}

}  // namespace wb::minigpt
