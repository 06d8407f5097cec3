// Child processes for the program's checks: a function run in a child that sends a text back,
// a function run under an address-space limit, a file-size limit, and a child that saves a model in a loop
// until it is killed.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>

#include "catch.hpp"
#include "minigpt/model_file.hpp"

// AddressSanitizer maps terabytes of shadow memory: an address-space limit stops it.
#if defined(__SANITIZE_ADDRESS__)
#define WB_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WB_UNDER_ASAN 1
#endif
#endif
#ifndef WB_UNDER_ASAN
#define WB_UNDER_ASAN 0
#endif

namespace wbtest {

/// A child process and its end of a pipe from the child to the parent.
struct Forked {
    pid_t pid;  ///< 0 in the child, the child's id in the parent
    int fd;     ///< the pipe's write end in the child, its read end in the parent
};

/// Forks with a pipe from the child to the parent; each closes the end it does not use.
inline Forked fork_with_pipe() {
    int ends[2];
    REQUIRE(::pipe(ends) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    ::close(ends[child == 0 ? 0 : 1]);
    return {child, ends[child == 0 ? 1 : 0]};
}

/// Runs `body` in a child process and returns the text it returns, sent back through a pipe
/// once the child has ended (it exits with 0; with 2 when it cannot write the text, with 3
/// when `body` throws).
inline std::string text_from_child(const std::function<std::string()>& body) {
    const Forked child = fork_with_pipe();
    if (child.pid == 0) {
        std::string message;
        try {
            message = body();
        } catch (...) {
            ::_exit(3);
        }
        if (::write(child.fd, message.data(), message.size()) < 0) ::_exit(2);
        ::_exit(0);
    }
    std::string message;
    char buf[512];
    for (ssize_t n; (n = ::read(child.fd, buf, sizeof buf)) > 0;)
        message.append(buf, std::size_t(n));
    ::close(child.fd);
    int status = 0;
    REQUIRE(::waitpid(child.pid, &status, 0) == child.pid);
    return message;
}

/// The message of what `f` throws (a std::exception), or "no error", when it runs in a child
/// process whose address space (ulimit -v) is limited to what the child maps at its start plus
/// `headroom` bytes.
template <class F>
std::string error_under_address_limit(std::uint64_t headroom, F f) {
    return text_from_child([&] {
        std::string error = "no error";
        std::ifstream statm("/proc/self/statm");
        std::uint64_t pages = 0;
        statm >> pages;
        struct rlimit limit {};
        limit.rlim_cur = limit.rlim_max =
            pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) + headroom;
        ::setrlimit(RLIMIT_AS, &limit);
        try {
            f();
        } catch (const std::exception& e) {
            error = e.what();
        }
        return error;
    });
}

/// Limits the files the calling process writes to `bytes` each (ulimit -f); a write past the
/// limit fails with EFBIG instead of ending the process with SIGXFSZ.
inline void limit_file_size(std::uint64_t bytes) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {};
    limit.rlim_cur = limit.rlim_max = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
}

/// Starts a child that saves `b` and `a` to `path` in turn as fast as it can, forever, waits
/// until it has finished one save, waits `pause_us` microseconds more (nearly always inside a
/// save: its temporary files exist from its first step to its rename), sends it
/// `signal_number`, and returns its wait status. The child has the dispositions of a program
/// that installs no handler (the checks' framework installs its own, which the child would
/// otherwise inherit); it exits with 3 when a save throws, with 4 when it cannot write.
inline int status_of_saver_signalled(const std::string& path, const wb::minigpt::Model& a,
                                     const wb::minigpt::Model& b, int signal_number,
                                     unsigned pause_us) {
    const Forked child = fork_with_pipe();
    if (child.pid == 0) {
        ::signal(SIGTERM, SIG_DFL);
        ::signal(SIGINT, SIG_DFL);
        for (unsigned i = 0;; ++i) {
            try {
                wb::minigpt::save_model(path, i % 2 == 0 ? b : a);
            } catch (...) {
                ::_exit(3);
            }
            const char one = 1;
            if (::write(child.fd, &one, 1) != 1) ::_exit(4);
        }
    }
    char byte = 0;
    REQUIRE(::read(child.fd, &byte, 1) == 1);  // one save done: the next one is running
    ::usleep(static_cast<useconds_t>(pause_us));
    ::kill(child.pid, signal_number);
    int status = 0;
    REQUIRE(::waitpid(child.pid, &status, 0) == child.pid);
    ::close(child.fd);
    return status;
}

}  // namespace wbtest
