// Generation speed of the mini-GPT with the KV cache, in tokens per second: the capstone's
// fast decoder (wb::minigpt::GptDecoder) beside chapter 9's readable prefill / decode_step,
// both on the reference, on 1 and 2 threads, in alternating rounds.
//
//   build/<dir>/bench/decode_speed [--rounds 7] [--threads 1,2] [--context 256]
//                                  [--d-model 288 --layers 6 --heads 6 --vocab 512]
//                                  [--only fast|chapter9]
//
// One round generates greedily from a 1-token prompt until the context is full (context − 1
// new tokens; the default model D=288 L=6 H=6 V=512 with T_max = context = 256, a random model,
// 6.1 M parameters), once per implementation and thread count; tokens/s = new tokens / wall
// time, prefill included. The two implementations' tokens are compared (they must be equal).
// Prints each median and the range over the rounds, the weight bytes streamed per second, and
// tokens per CPU-second of the whole process (on 1 thread, less sensitive to other load than
// the wall-clock rate; on more threads it counts OpenMP's spinning too), and the roofline: the
// bytes one token reads against the read bandwidth measured for that working set (peak.hpp).
// On a machine shared with other work, compare the rows of one run, not numbers across runs.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <omp.h>
#include <CLI/CLI.hpp>

#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"
#include "median.hpp"
#include "minigpt/fast/gpt_decode.hpp"
#include "peak.hpp"

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

std::vector<int> int_list(const std::string& text) {
    std::vector<int> out;
    std::stringstream s(text);
    std::string item;
    while (std::getline(s, item, ','))
        if (!item.empty()) out.push_back(std::stoi(item));
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 7;
    std::string thread_list = "1,2";
    std::size_t context = 256, D = 288, L = 6, H = 6, V = 512;
    std::string only;
    CLI::App app{"Tokens per second of greedy generation: GptDecoder against chapter 9"};
    app.add_option("--rounds", rounds, "alternating rounds (the median is printed)")
        ->check(CLI::PositiveNumber);
    app.add_option("--threads", thread_list, "thread counts, comma-separated");
    app.add_option("--context", context, "T_max: the generation fills it")
        ->check(CLI::Range(2, 1 << 16));
    app.add_option("--d-model", D, "model width")->check(CLI::PositiveNumber);
    app.add_option("--layers", L, "blocks")->check(CLI::PositiveNumber);
    app.add_option("--heads", H, "heads, must divide the width")->check(CLI::PositiveNumber);
    app.add_option("--vocab", V, "vocabulary size")->check(CLI::PositiveNumber);
    app.add_option("--only", only, "time one side only")
        ->check(CLI::IsMember({"fast", "chapter9"}));
    CLI11_PARSE(app, argc, argv);
    const std::vector<int> threads = int_list(thread_list);

    try {
        const wb::GptConfig config{V, context, D, H, L};
        // Random weights a little larger than init_gpt's, so that greedy decoding does not
        // settle on one repeated token.
        wb::GptParams<float> params = wb::init_gpt<float>(config, 1);
        std::mt19937 gen(2);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::size_t count = 0;
        for (auto& r : wb::parameters(params)) {
            count += r.size;
            if (r.shape.size() == 2)
                for (std::size_t i = 0; i < r.size; ++i) r.data[i] += 0.05f * normal(gen);
        }
        const std::vector<std::int64_t> prompt{0};
        const std::size_t n = context - 1;
        const wb::SamplingOptions options{};
        std::printf(
            "GPT V=%zu T_max=%zu D=%zu H=%zu L=%zu (%zu parameters, %.1f MB of float "
            "weights), greedy from a 1-token prompt to %zu tokens, %d rounds\n",
            V, context, D, H, L, count, count * 4e-6, context, rounds);

        wb::minigpt::GptDecoder decoder(params, config);
        using clock = std::chrono::steady_clock;
        std::map<std::pair<std::string, int>, std::vector<double>> rates, cpu_rates;
        std::vector<std::int64_t> reference_tokens;
        bool equal = true;
        for (int r = 0; r <= rounds; ++r) {  // round 0 warms up, not counted
            for (int t : threads) {
                omp_set_num_threads(t);
                if (openblas_set_num_threads != nullptr) openblas_set_num_threads(t);
                for (const std::string side : {"fast", "chapter9"}) {
                    if (!only.empty() && only != side) continue;
                    const std::clock_t c0 = std::clock();
                    const auto t0 = clock::now();
                    const std::vector<std::int64_t> out =
                        side == "fast"
                            ? wb::minigpt::generate_fast(decoder, prompt, n, options, 0, true)
                            : wb::generate(params, config, prompt, n, options, 0, true);
                    const double s = std::chrono::duration<double>(clock::now() - t0).count();
                    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
                    if (r > 0) rates[{side, t}].push_back(static_cast<double>(n) / s);
                    if (r > 0) cpu_rates[{side, t}].push_back(static_cast<double>(n) / cpu);
                    if (reference_tokens.empty()) reference_tokens = out;
                    equal = equal && out == reference_tokens;
                }
            }
        }
        for (const std::string side : {"fast", "chapter9"}) {
            for (int t : threads) {
                const auto it = rates.find({side, t});
                if (it == rates.end()) continue;
                const auto [lo, hi] = std::minmax_element(it->second.begin(), it->second.end());
                const double m = wbbench::median(it->second);
                std::printf(
                    "%-30s threads %d: median %7.0f tokens/s (range %.0f-%.0f), "
                    "weights %5.1f GB/s; %7.0f tokens per CPU-second\n",
                    side == "fast" ? "GptDecoder (capstone)" : "chapter 9 decode_step", t, m, *lo,
                    *hi, m * count * 4e-9, wbbench::median(cpu_rates[{side, t}]));
            }
        }
        // The roofline: one token reads every weight once and, on average over the
        // generation, half the full KV cache; the read bandwidth of a working set that size,
        // measured now on each thread count, bounds the tokens per second.
        const double kv_bytes = 2.0 * L * (context / 2.0) * D * sizeof(float);
        const double bytes = static_cast<double>(count) * sizeof(float) + kv_bytes;
        std::printf("roofline: %.1f MB read per token (weights %.1f + KV cache %.1f on average)\n",
                    bytes * 1e-6, count * 4e-6, kv_bytes * 1e-6);
        for (int t : threads) {
            const double gbs = wbbench::read_bandwidth_gbs(static_cast<std::size_t>(bytes), t);
            std::printf(
                "  threads %d: read bandwidth at that working set %5.1f GB/s -> at most "
                "%6.0f tokens/s\n",
                t, gbs, gbs * 1e9 / bytes);
        }
        if (only.empty()) {
            std::printf("tokens of the two implementations: %s\n", equal ? "equal" : "DIFFERENT");
        }
        return equal ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "decode_speed: %s\n", e.what());
        return 1;
    }
}
