/// @file file_io.hpp
/// @brief Bounded reads and crash-safe writes of whole files, for the mini-GPT program.
///
/// Every file the program reads (a corpus, a model) goes through read_regular_file: only a
/// regular file is read (a FIFO, a device or a folder is refused before anything is read, so
/// `--load /dev/zero` cannot fill the memory and a FIFO cannot hang the program), and only up
/// to a stated limit. Every file it writes goes through a TemporaryFile: a new file with a
/// unique name in the same folder, written, flushed to the disk (`fsync`), then renamed onto
/// the path, and the folder flushed too; a `kill -9`, a crash or a full disk at any moment
/// leaves either the old file or the new one at the path, never a mixture.
///
/// Temporary files never outlive their save for long:
/// - an error anywhere in a save removes its temporary files before the error leaves it;
/// - SIGTERM, SIGINT or SIGHUP during a save (when the signal would end the process, i.e. no
///   handler of the program's own is installed for it) removes them before the process ends;
/// - `kill -9` cannot be caught: the temporary files of a process that no longer runs are
///   removed by the next save to the same path (remove_stale_temporaries).
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

/// True when `a` and `b` name the same file: the same path once made absolute and normalised
/// (`./m.model` and `m.model`; links among the folders resolved), or two existing names of one
/// file (a symbolic or hard link).
/// @param a a path, existing or not
/// @param b another
/// @return whether writing one would change the other
bool same_file(const std::string& a, const std::string& b);

/// Removes the temporary files beside `path` that a save to `path` made in a process that no
/// longer runs (`<name>.tmp-<pid>-<n>`, and `<name>.tmp-<pid>-<n>.tmp`, the name chapter 8's
/// save_checkpoint writes first). A process that still runs keeps its files.
/// @param path the file that a save is about to replace
/// @return how many files were removed
std::size_t remove_stale_temporaries(const std::string& path);

/// The memory a load may still allocate, and where that figure comes from.
struct MemoryLimit {
    std::uint64_t bytes = UINT64_MAX;  ///< the most bytes; UINT64_MAX when nothing limits it
    std::string source;                ///< e.g. "the address-space limit (ulimit -v) ..."
};

/// The memory this process may still allocate: the smallest of its address-space and data
/// limits (`ulimit -v`, `ulimit -d`) less what it already uses, its control group's memory
/// limit less what the group uses, and the machine's available memory and free swap
/// (`/proc/meminfo`). Each read that fails is skipped.
/// @return the limit and its source
MemoryLimit memory_limit();

/// A size for messages: `1073741824 bytes (1.00 GiB)`.
/// @param n bytes
/// @return the text
std::string bytes_text(std::uint64_t n);

/// A temporary file beside `path`, for a save: created exclusively as `path.tmp-<pid>-<n>`
/// (so concurrent saves never share one), removed by the destructor unless commit() renamed
/// it onto `path`, and removed by a SIGTERM, SIGINT or SIGHUP that ends the process meanwhile.
/// Stale temporary files beside `path` (remove_stale_temporaries) are removed first.
class TemporaryFile {
  public:
    /// Creates the file, open for writing.
    /// @param function the caller, named in the messages
    /// @param path the file that commit() will replace; see require_replaceable
    /// @throws FileError naming `function` and the path if it cannot be created
    TemporaryFile(std::string function, std::string path);
    /// Closes the file and, unless committed, removes it and every also_remove() file.
    ~TemporaryFile();
    TemporaryFile(const TemporaryFile&) = delete;
    TemporaryFile& operator=(const TemporaryFile&) = delete;

    /// The temporary file's path.
    const std::string& path() const { return temporary_; }

    /// Another file to remove with this one (on an error or a signal), e.g. the temporary of
    /// a function that writes path() itself.
    void also_remove(const std::string& other);

    /// Closes the file (so that another function may replace path() by a rename).
    void close();

    /// Opens path() again for writing from its first byte (after close()).
    /// @throws FileError naming the function and path()
    void reopen();

    /// Appends `size` bytes.
    /// @throws FileError naming the function and path() (a full disk: "No space left")
    void write(const char* data, std::size_t size);
    /// Appends `data`.
    void write(const std::string& data) { write(data.data(), data.size()); }

    /// Cuts the file at its current length (after a reopen() that wrote less than before).
    void truncate_here();

    /// Flushes the file to the disk, renames it onto the path and flushes the folder.
    /// @throws FileError naming the function and the path; the file is then removed
    void commit();

  private:
    std::string function_, target_, temporary_, other_;
    int fd_ = -1;
    std::uint64_t written_ = 0;
    int slots_[2] = {-1, -1};  // this file's entries in the list a signal removes
    bool committed_ = false;
};

/// Replaces the file at `path` with `data`, atomically and durably, through a TemporaryFile.
/// @param function the caller, named in the messages
/// @param path the file to replace or create; see require_replaceable
/// @param data its new contents
/// @throws FileError naming `function`, the path and the reason (the previous file at the
///         path, if any, is then unchanged, and no temporary file is left behind)
void write_file_atomic(const std::string& function, const std::string& path,
                       const std::string& data);

/// A unique path in the folder of `path`, of the form TemporaryFile uses, for a file that a
/// caller writes itself and removes; stale ones are removed by the next save to `path`.
std::string unique_temporary_path(const std::string& path);

/// @}

}  // namespace wb::minigpt
