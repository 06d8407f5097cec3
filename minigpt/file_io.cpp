// Bounded reads and crash-safe writes of whole files (POSIX: open, fstat, fsync, rename).
#include "minigpt/file_io.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "workbook/core.hpp"

namespace wb::minigpt {

namespace {

std::string reason(int error) { return std::strerror(error); }

const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

// Closes a descriptor when it goes out of scope.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// Opens `path` for reading without blocking (a FIFO with no writer would block an open) and
// checks that it is a regular file; returns its size.
std::uint64_t open_regular(const std::string& function, const std::string& path, Fd& f) {
    f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f.fd < 0) {
        throw FileError(function + ": cannot open " + path + " (" + reason(errno) + ")");
    }
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) {
        throw FileError(function + ": cannot read " + path + " (" + reason(errno) + ")");
    }
    if (!S_ISREG(st.st_mode)) {
        throw FileError(function + ": " + path + " is " + kind_of(st.st_mode) +
                        ", expected a regular file");
    }
    return static_cast<std::uint64_t>(st.st_size);
}

// Reads exactly up to `count` bytes from `fd` at `offset` (fewer only at the end of the file).
std::string pread_all(const std::string& function, const std::string& path, int fd,
                      std::uint64_t offset, std::size_t count) {
    std::string out(count, '\0');
    std::size_t done = 0;
    while (done < count) {
        const ssize_t n = ::pread(fd, &out[done], count - done, static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            throw FileError(function + ": cannot read " + path + " (" + reason(errno) + ")");
        }
        if (n == 0) break;
        done += static_cast<std::size_t>(n);
    }
    out.resize(done);
    return out;
}

std::string parent_of(const std::string& path) {
    const std::string parent = std::filesystem::path(path).parent_path().string();
    return parent.empty() ? "." : parent;
}

// Removes `<name>.tmp-<pid>-...` beside `path` whose process no longer runs.
void remove_stale_temporaries(const std::string& path) {
    namespace fs = std::filesystem;
    const std::string prefix = fs::path(path).filename().string() + ".tmp-";
    std::error_code ec;
    for (fs::directory_iterator it(parent_of(path), ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string rest = name.substr(prefix.size());
        char* stop = nullptr;
        const long pid = std::strtol(rest.c_str(), &stop, 10);
        if (pid <= 0 || stop == rest.c_str() || *stop != '-') continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
            std::error_code ignored;
            fs::remove(it->path(), ignored);
        }
    }
}

void write_all(const std::string& function, const std::string& tmp, int fd,
               const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw FileError(function + ": cannot write " + tmp + " (" + reason(errno) + ")");
        }
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace

std::uint64_t regular_file_size(const std::string& function, const std::string& path) {
    Fd f;
    return open_regular(function, path, f);
}

std::string read_file_part(const std::string& function, const std::string& path,
                           std::uint64_t offset, std::size_t count) {
    Fd f;
    const std::uint64_t size = open_regular(function, path, f);
    if (offset >= size) return std::string();
    const std::uint64_t left = size - offset;
    return pread_all(function, path, f.fd, offset,
                     left < count ? static_cast<std::size_t>(left) : count);
}

std::string read_regular_file(const std::string& function, const std::string& path,
                              std::uint64_t limit) {
    Fd f;
    const std::uint64_t size = open_regular(function, path, f);
    if (size > limit) {
        throw FileError(function + ": " + path + " has " + std::to_string(size) +
                        " bytes, more than the limit of " + std::to_string(limit) + " bytes");
    }
    std::string data = pread_all(function, path, f.fd, 0, static_cast<std::size_t>(size));
    if (data.size() != size) {
        throw FileError(function + ": " + path + " shrank while it was read (" +
                        std::to_string(data.size()) + " of " + std::to_string(size) + " bytes)");
    }
    return data;
}

void require_replaceable(const std::string& function, const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return;  // a new file
        throw FileError(function + ": cannot use " + path + " (" + reason(errno) + ")");
    }
    if (!S_ISREG(st.st_mode)) {
        throw FileError(function + ": " + path + " is " + kind_of(st.st_mode) +
                        ", expected a regular file or a new path; it was left as it is");
    }
}

std::string unique_temporary_path(const std::string& path) {
    static std::atomic<unsigned long> counter{0};
    return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

void write_file_atomic(const std::string& function, const std::string& path,
                       const std::string& data) {
    require_replaceable(function, path);
    remove_stale_temporaries(path);
    const std::string unchanged = "; the previous file at " + path + " is unchanged";
    std::string tmp;
    Fd f;
    for (int attempt = 0; attempt < 100 && f.fd < 0; ++attempt) {
        tmp = unique_temporary_path(path);
        f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (f.fd < 0 && errno != EEXIST) {
            throw FileError(function + ": cannot create " + tmp + " (" + reason(errno) + ")" +
                            unchanged);
        }
    }
    if (f.fd < 0) {
        throw FileError(function + ": cannot create a temporary file beside " + path + unchanged);
    }
    try {
        write_all(function, tmp, f.fd, data);
        if (::fsync(f.fd) != 0) {
            throw FileError(function + ": cannot flush " + tmp + " to the disk (" + reason(errno) +
                            ")");
        }
        const int fd = f.fd;
        f.fd = -1;
        if (::close(fd) != 0) {
            throw FileError(function + ": cannot close " + tmp + " (" + reason(errno) + ")");
        }
        if (::rename(tmp.c_str(), path.c_str()) != 0) {
            throw FileError(function + ": cannot rename " + tmp + " to " + path + " (" +
                            reason(errno) + ")");
        }
    } catch (const FileError& e) {
        ::unlink(tmp.c_str());
        throw FileError(e.what() + unchanged);
    }
    // The rename is durable once the folder's entry is on the disk.
    Fd dir;
    dir.fd = ::open(parent_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir.fd >= 0) (void)::fsync(dir.fd);
}

}  // namespace wb::minigpt
