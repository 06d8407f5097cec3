// Bounded reads and crash-safe writes of whole files (POSIX: open, fstat, fsync, rename).
#include "minigpt/file_io.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

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

bool same_file(const std::string& a, const std::string& b) {
    namespace fs = std::filesystem;
    std::error_code ec_a, ec_b;
    if (fs::exists(a, ec_a) && fs::exists(b, ec_b)) {
        std::error_code ec;
        if (fs::equivalent(a, b, ec) && !ec) return true;
    }
    std::error_code ec1, ec2;
    const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec1), ec1);
    const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec2), ec2);
    if (!ec1 && !ec2) return ca == cb;
    return fs::absolute(a, ec1).lexically_normal() == fs::absolute(b, ec2).lexically_normal();
}

std::string unique_temporary_path(const std::string& path) {
    static std::atomic<unsigned long> counter{0};
    return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

namespace {

// True when `name` is `prefix` followed by `<pid>-<n>` or `<pid>-<n>.tmp`; sets `pid`.
bool temporary_of(const std::string& name, const std::string& prefix, long& pid) {
    if (name.compare(0, prefix.size(), prefix) != 0) return false;
    std::size_t at = prefix.size();
    auto digits = [&] {
        const std::size_t from = at;
        while (at < name.size() && name[at] >= '0' && name[at] <= '9') ++at;
        return at > from && at - from <= 18;
    };
    const std::size_t pid_at = at;
    if (!digits() || at >= name.size() || name[at] != '-') return false;
    pid = std::strtol(name.c_str() + pid_at, nullptr, 10);
    ++at;
    if (!digits()) return false;
    const std::string rest = name.substr(at);
    return pid > 0 && (rest.empty() || rest == ".tmp");
}

}  // namespace

std::size_t remove_stale_temporaries(const std::string& path) {
    namespace fs = std::filesystem;
    const std::string prefix = fs::path(path).filename().string() + ".tmp-";
    std::size_t removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(parent_of(path), ec), end; !ec && it != end; it.increment(ec)) {
        long pid = 0;
        if (!temporary_of(it->path().filename().string(), prefix, pid)) continue;
        if (pid == static_cast<long>(::getpid())) continue;  // this process's own, in use
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
            std::error_code ignored;
            if (fs::remove(it->path(), ignored)) ++removed;
        }
    }
    return removed;
}

// ---- the temporary files a signal removes ----------------------------------------------------
//
// A fixed table, so that the handler only reads memory and calls unlink (both safe in a signal
// handler): a slot is claimed (state 1), its path copied in, then made live (state 2).

namespace {

constexpr int kSlots = 64;
constexpr std::size_t kSlotPath = 4096;
constexpr int kCaught[] = {SIGTERM, SIGINT, SIGHUP};
constexpr int kCaughtCount = 3;

struct Slot {
    std::atomic<int> state{0};  // 0 free, 1 being written, 2 live
    char path[kSlotPath];
};

Slot g_slots[kSlots];
std::mutex g_mutex;  // guards the counts and dispositions below (not used by the handler)
int g_users = 0;
struct sigaction g_previous[kCaughtCount];
bool g_installed[kCaughtCount] = {false, false, false};

extern "C" void remove_temporaries_then_end(int signal_number) {
    for (Slot& s : g_slots) {
        if (s.state.load() == 2) ::unlink(s.path);
    }
    // The disposition found before (the default: end the process), then the signal again; it
    // is blocked while this handler runs and arrives as soon as it returns.
    for (int i = 0; i < kCaughtCount; ++i) {
        if (kCaught[i] == signal_number) ::sigaction(signal_number, &g_previous[i], nullptr);
    }
    ::raise(signal_number);
}

// One more (or one fewer) temporary file alive: the handler is installed while there is one,
// for each signal whose disposition is the default (a program's own handler is left alone).
void count_user(int delta) {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_users += delta;
    if (delta > 0 && g_users == 1) {
        for (int i = 0; i < kCaughtCount; ++i) {
            struct sigaction now {};
            g_installed[i] = false;
            if (::sigaction(kCaught[i], nullptr, &now) != 0) continue;
            if ((now.sa_flags & SA_SIGINFO) != 0 || now.sa_handler != SIG_DFL) continue;
            struct sigaction ours {};
            ours.sa_handler = remove_temporaries_then_end;
            sigemptyset(&ours.sa_mask);
            for (int s : kCaught) sigaddset(&ours.sa_mask, s);
            ours.sa_flags = 0;
            g_previous[i] = now;
            g_installed[i] = ::sigaction(kCaught[i], &ours, nullptr) == 0;
        }
    } else if (delta < 0 && g_users == 0) {
        for (int i = 0; i < kCaughtCount; ++i) {
            if (!g_installed[i]) continue;
            struct sigaction now {};
            if (::sigaction(kCaught[i], nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) == 0 &&
                now.sa_handler == remove_temporaries_then_end) {
                ::sigaction(kCaught[i], &g_previous[i], nullptr);
            }
            g_installed[i] = false;
        }
    }
}

// Adds `path` to the table; -1 when it does not fit (the file is then only removed by the
// destructor or by the next save).
int add_slot(const std::string& path) {
    if (path.size() >= kSlotPath) return -1;
    for (int i = 0; i < kSlots; ++i) {
        int expected = 0;
        if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
            std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
            g_slots[i].state.store(2);
            return i;
        }
    }
    return -1;
}

void free_slot(int slot) {
    if (slot >= 0) g_slots[slot].state.store(0);
}

std::string unchanged_note(const std::string& target) {
    return "; the previous file at " + target + " is unchanged";
}

}  // namespace

TemporaryFile::TemporaryFile(std::string function, std::string path)
    : function_(std::move(function)), target_(std::move(path)) {
    require_replaceable(function_, target_);
    remove_stale_temporaries(target_);
    count_user(+1);
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
        temporary_ = unique_temporary_path(target_);
        slots_[0] = add_slot(temporary_);  // before the file exists: no moment without it
        fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd_ >= 0) break;
        const int error = errno;
        free_slot(slots_[0]);
        slots_[0] = -1;
        if (error != EEXIST) {
            count_user(-1);
            throw FileError(function_ + ": cannot write " + target_ + ": cannot create " +
                            temporary_ + " (" + reason(error) + ")" + unchanged_note(target_));
        }
    }
    if (fd_ < 0) {
        count_user(-1);
        throw FileError(function_ + ": cannot write " + target_ +
                        ": no unused temporary name beside it" + unchanged_note(target_));
    }
}

TemporaryFile::~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) {
        ::unlink(temporary_.c_str());
        if (!other_.empty()) ::unlink(other_.c_str());
    }
    free_slot(slots_[0]);
    free_slot(slots_[1]);
    count_user(-1);
}

void TemporaryFile::also_remove(const std::string& other) {
    free_slot(slots_[1]);
    other_ = other;
    slots_[1] = add_slot(other);
}

void TemporaryFile::close() {
    if (fd_ < 0) return;
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
        throw FileError(function_ + ": cannot write " + temporary_ + " (" + reason(errno) + ")" +
                        unchanged_note(target_));
    }
}

void TemporaryFile::reopen() {
    close();
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd_ < 0) {
        throw FileError(function_ + ": cannot open " + temporary_ + " again (" + reason(errno) +
                        ")" + unchanged_note(target_));
    }
    written_ = 0;
}

void TemporaryFile::write(const char* data, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::write(fd_, data + done, size - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw FileError(function_ + ": cannot write " + temporary_ + " (" + reason(errno) +
                            ")" + unchanged_note(target_));
        }
        done += static_cast<std::size_t>(n);
    }
    written_ += size;
}

void TemporaryFile::truncate_here() {
    if (::ftruncate(fd_, static_cast<off_t>(written_)) != 0) {
        throw FileError(function_ + ": cannot write " + temporary_ + " (" + reason(errno) + ")" +
                        unchanged_note(target_));
    }
}

void TemporaryFile::commit() {
    if (::fsync(fd_) != 0) {
        throw FileError(function_ + ": cannot flush " + temporary_ + " to the disk (" +
                        reason(errno) + ")" + unchanged_note(target_));
    }
    close();
    if (::rename(temporary_.c_str(), target_.c_str()) != 0) {
        throw FileError(function_ + ": cannot rename " + temporary_ + " to " + target_ + " (" +
                        reason(errno) + ")" + unchanged_note(target_));
    }
    committed_ = true;
    // The rename is durable once the folder's entry is on the disk.
    Fd dir;
    dir.fd = ::open(parent_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir.fd >= 0) (void)::fsync(dir.fd);
}

void write_file_atomic(const std::string& function, const std::string& path,
                       const std::string& data) {
    TemporaryFile file(function, path);
    file.write(data);
    file.commit();
}

// ---- memory -----------------------------------------------------------------------------------

namespace {

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

bool parse_u64(const std::string& text, std::uint64_t& v) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
    errno = 0;
    const unsigned long long x = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) return false;
    v = x;
    return true;
}

// Fields of /proc/self/statm, in bytes: the address space (0) and data + stack (5).
bool statm_bytes(int field, std::uint64_t& bytes) {
    std::istringstream in(first_line("/proc/self/statm"));
    std::uint64_t v = 0;
    for (int i = 0; i <= field; ++i) {
        if (!(in >> v)) return false;
    }
    const long page = ::sysconf(_SC_PAGESIZE);
    bytes = v * static_cast<std::uint64_t>(page > 0 ? page : 4096);
    return true;
}

void consider(MemoryLimit& best, std::uint64_t bytes, std::string source) {
    if (bytes < best.bytes) best = MemoryLimit{bytes, std::move(source)};
}

void rlimit_limit(MemoryLimit& best, int resource, const char* name, int statm_field,
                  const char* use) {
    struct rlimit r {};
    if (::getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return;
    std::uint64_t used = 0;
    (void)statm_bytes(statm_field, used);
    const std::uint64_t limit = r.rlim_cur;
    consider(best, limit > used ? limit - used : 0,
             std::string("the ") + name + " of " + bytes_text(limit) + " less the " +
                 bytes_text(used) + " " + use);
}

// The control group's limit less its use, at every level up to the root (cgroup v2), or the
// memory controller's limit (v1).
void cgroup_limit(MemoryLimit& best) {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
        const std::size_t a = line.find(':'), b = line.find(':', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1);
        std::string dir = line.substr(b + 1);
        const bool v2 = line.compare(0, a, "0") == 0 && controllers.empty();
        const bool v1 = controllers.find("memory") != std::string::npos;
        if (!v2 && !v1) continue;
        const std::string root = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
        const char* max_name = v2 ? "/memory.max" : "/memory.limit_in_bytes";
        const char* use_name = v2 ? "/memory.current" : "/memory.usage_in_bytes";
        for (;;) {
            std::uint64_t limit = 0, used = 0;
            if (parse_u64(first_line(root + dir + max_name), limit) && limit < (1ull << 60) &&
                parse_u64(first_line(root + dir + use_name), used)) {
                consider(best, limit > used ? limit - used : 0,
                         "the memory limit of the control group " + dir + " (" + bytes_text(limit) +
                             ", of which " + bytes_text(used) + " in use)");
            }
            if (dir.empty() || dir == "/") break;
            const std::size_t slash = dir.find_last_of('/');
            dir = slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
        }
    }
}

void meminfo_limit(MemoryLimit& best) {
    std::ifstream in("/proc/meminfo");
    std::uint64_t available = 0, swap = 0;
    bool found = false;
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string key;
        std::uint64_t kib = 0;
        if (!(fields >> key >> kib)) continue;
        if (key == "MemAvailable:") {
            available = kib * 1024;
            found = true;
        } else if (key == "SwapFree:") {
            swap = kib * 1024;
        }
    }
    if (found) {
        consider(best, available + swap,
                 "the machine's available memory and free swap (MemAvailable + SwapFree in "
                 "/proc/meminfo)");
    }
}

}  // namespace

MemoryLimit memory_limit() {
    MemoryLimit best;
    best.source = "nothing (no limit was found)";
    rlimit_limit(best, RLIMIT_AS, "address-space limit (ulimit -v)", 0, "that this process maps");
    rlimit_limit(best, RLIMIT_DATA, "data limit (ulimit -d)", 5, "of data this process holds");
    cgroup_limit(best);
    meminfo_limit(best);
    return best;
}

std::string bytes_text(std::uint64_t n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%llu bytes (%.2f GiB)", static_cast<unsigned long long>(n),
                  static_cast<double>(n) / double(1ull << 30));
    return buf;
}

}  // namespace wb::minigpt
