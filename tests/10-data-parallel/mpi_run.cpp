// The helper of mpi_run.hpp (compiled into the chapter's check program).
#include "mpi_run.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

namespace wbtest {

namespace fs = std::filesystem;

namespace {

// `mpirun -np W` as every check starts it. timeout(1) ends a job whose rank hangs (a missing
// message, a rank left out of a collective); the check then fails and says so.
std::string mpirun(int W, int seconds) {
    std::ostringstream cmd;
    cmd << "OMP_NUM_THREADS=1 timeout -k 5 " << seconds << " '" << WB_MPIEXEC << "' -np " << W
        << " --oversubscribe" << (geteuid() == 0 ? " --allow-run-as-root" : "")
        << " -x OMP_NUM_THREADS";
    return cmd.str();
}

// The exit status of a job that ran `command`, and why it failed in words (empty when it
// did not).
std::string failure(int code, int seconds) {
    if (code == 124 || code == 137) {
        return "the MPI job ran past " + std::to_string(seconds) +
               " s and was stopped: a rank waits for a message no rank sends, or a "
               "rank skipped a collective call\n";
    }
    if (code != 0) return "the MPI job failed (exit status " + std::to_string(code) + ")\n";
    return "";
}

int exit_status(const std::string& command) {
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The program's output as a report can hold it: a progress bar's terminal controls (mpirun
// gives the ranks a terminal) left out, so the XML of the checks stays well formed.
std::string printable(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == 0x1B) {  // ESC [ ... letter
            if (i + 1 < text.size() && text[i + 1] == '[') {
                i += 2;
                while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
            }
            continue;
        }
        if (c == '\r') {
            out += '\n';
        } else if (c >= 0x20 || c == '\n' || c == '\t') {
            out += static_cast<char>(c);
        }
    }
    return out;
}

fs::path fresh_dir() {
    static int counter = 0;
    const fs::path dir =
        fs::temp_directory_path() /
        ("wb-dataparallel-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

}  // namespace

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

MpiProgram run_mpi_program(const std::string& program, const std::string& args, int W,
                           int seconds) {
    const fs::path dir = fresh_dir();
    const std::string log = (dir / "log").string();
    const std::string cmd =
        mpirun(W, seconds) + " '" + program + "' " + args + " > '" + log + "' 2>&1";
    const int code = exit_status(cmd);
    MpiProgram run;
    run.ok = code == 0;
    run.report = failure(code, seconds) + "$ " + cmd + "\n" + printable(read_all(log));
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    return run;
}

MpiRun run_mpi(const std::string& scenario, int W, int seconds) {
    MpiRun run;
    const fs::path dir = fresh_dir();
    const std::string out = (dir / "out").string(), log = (dir / "log").string();
    const std::string cmd = mpirun(W, seconds) + " '" + WB_MPI_WORKER + "' " + scenario + " '" +
                            out + "' > '" + log + "' 2>&1";
    const int code = exit_status(cmd);
    std::stringstream output(read_all(log));
    // What the ranks said (the worker writes "rank r of W: <message>"), each message once;
    // mpirun's own output when no rank said anything.
    std::string said, line, seen;
    while (std::getline(output, line)) {
        if (line.rfind("rank ", 0) != 0) continue;
        const std::string message = line.substr(line.find(':') + 1);
        if (seen.find(message + "\n") != std::string::npos) continue;
        seen += message + "\n";
        said += line + "\n";
    }
    run.report = failure(code, seconds) + "$ " + cmd + "\n" + (said.empty() ? output.str() : said);
    run.ok = code == 0;
    for (int r = 0; run.ok && r < W; ++r) {
        std::ifstream in(out + "." + std::to_string(r), std::ios::binary);
        if (!in) {
            run.ok = false;
            run.report = "rank " + std::to_string(r) + " wrote no result\n" + run.report;
            break;
        }
        std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
        std::vector<float> values(bytes.size() / sizeof(float));
        std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
        run.ranks.push_back(std::move(values));
    }
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    return run;
}

long first_difference(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return static_cast<long>(std::min(a.size(), b.size()));
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return static_cast<long>(i);
    }
    return -1;
}

}  // namespace wbtest
