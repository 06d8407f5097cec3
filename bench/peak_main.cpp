// Prints this CPU's float32 multiply-add peak per instruction set and OpenBLAS's sgemm, on
// 1 thread and on every thread, so that any GFLOP/s figure can be read as a share of it; then
// the streaming read bandwidth by working-set size, the limit of what streams its data (the
// decode's matrix-vector products read 25 MB of weights per token).
//
//   build/<dir>/bench/peak [--threads 1,2] [--rounds 5] [--sgemm 512,1024,2048]
//
// Each figure is the median of `rounds` measurements taken in alternation (FMA on every
// instruction set, then sgemm, then again), so a busy machine slows them alike. On a machine
// shared with other work, compare figures of one run, not across runs.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "median.hpp"
#include "peak.hpp"

namespace {

std::vector<int> int_list(const std::string& text) {
    std::vector<int> out;
    std::stringstream s(text);
    std::string item;
    while (std::getline(s, item, ',')) {
        if (!item.empty()) out.push_back(std::atoi(item.c_str()));
    }
    return out;
}

std::string fma_label(const wbbench::PeakIsa& isa) {
    return std::string(isa.name == "sse2" ? "mul+add peak, " : "FMA peak, ") + isa.name + " (" +
           std::to_string(isa.lanes) + " lanes, 12 chains)";
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> threads = {1, omp_get_max_threads()};
    std::vector<int> sizes = {512, 1024, 2048};
    int rounds = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--threads" && has_value) {
            threads = int_list(argv[++i]);
        } else if (arg == "--sgemm" && has_value) {
            sizes = int_list(argv[++i]);
        } else if (arg == "--rounds" && has_value) {
            rounds = std::max(1, std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr,
                         "usage: peak [--threads 1,2] [--sgemm 512,1024,2048] [--rounds 5]\n");
            return arg == "--help" || arg == "-h" ? 0 : 2;
        }
    }
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());

    std::map<std::string, std::vector<double>> samples;  // "label|threads" -> GFLOP/s
    std::vector<std::string> labels;
    auto add = [&](const std::string& label, int t, double g) {
        const std::string key = label + "|" + std::to_string(t);
        if (samples.find(key) == samples.end() &&
            std::find(labels.begin(), labels.end(), label) == labels.end())
            labels.push_back(label);
        samples[key].push_back(g);
    };
    const std::vector<wbbench::PeakIsa> isas = wbbench::peak_isas();
    for (int r = 0; r < rounds; ++r) {
        for (int t : threads) {
            for (const auto& isa : isas) {
                if (!isa.supported) continue;
                add(fma_label(isa), t, wbbench::fma_peak_gflops(isa.name, t, 0.05, 1));
            }
            for (int n : sizes) {
                add("OpenBLAS sgemm " + std::to_string(n) + "^3", t,
                    wbbench::sgemm_gflops(n, t, 1));
            }
        }
    }

    std::printf("float32 GFLOP/s, median of %d rounds (widest instruction set here: %s)\n", rounds,
                wbbench::widest_isa().c_str());
    std::printf("%-40s", "");
    for (int t : threads) std::printf("  %8d thr", t);
    std::printf("   share of the %s peak\n", wbbench::widest_isa().c_str());
    std::map<int, double> peak;  // the widest supported instruction set's FMA peak
    for (int t : threads) {
        for (const auto& isa : isas) {
            if (!isa.supported) continue;
            peak[t] = wbbench::median(samples[fma_label(isa) + "|" + std::to_string(t)]);
            break;
        }
    }
    for (const std::string& label : labels) {
        std::printf("%-40s", label.c_str());
        std::string shares;
        for (int t : threads) {
            const double g = wbbench::median(samples[label + "|" + std::to_string(t)]);
            std::printf("  %12.1f", g);
            char buf[32];
            std::snprintf(buf, sizeof buf, "%s%.0f %%", shares.empty() ? "" : " / ",
                          peak[t] > 0 ? 100.0 * g / peak[t] : 0.0);
            shares += buf;
        }
        std::printf("   %s\n", shares.c_str());
    }
    // The other limit: bytes per second from each level of the memory, on the same threads.
    std::printf(
        "\nstreaming read bandwidth, GB/s, best of %d (working set split among the threads)\n",
        rounds);
    std::printf("%-40s", "");
    for (int t : threads) std::printf("  %8d thr", t);
    std::printf("\n");
    for (std::size_t mib : {1, 4, 16, 26, 64, 256}) {
        const std::string label = "working set " + std::to_string(mib) + " MiB";
        std::printf("%-40s", label.c_str());
        for (int t : threads)
            std::printf("  %12.1f", wbbench::read_bandwidth_gbs(mib << 20, t, 0.05, rounds));
        std::printf("\n");
    }
    return 0;
}
