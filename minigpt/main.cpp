// The `minigpt` command: train a small GPT on a text file, save it, and generate a sample.
//
//   minigpt                                  train the default model on the bundled corpus
//   minigpt --steps 200 --prompt "ROMEO:"    a shorter run, then continue a prompt
//   minigpt --load build/solutions/minigpt.ckpt --prompt "KING:"   generate only
//   minigpt explain --load build/solutions/minigpt.ckpt --prompt "KING:" --html explain.html
//                                            a page of its attention and next-token choices
//   minigpt convert --checkpoint old.ckpt --vocab old.ckpt.vocab --out new.ckpt
//                                            a model of the older two-file form as one file
//
// Exit codes: 0 done, 1 a runtime problem (corpus, checkpoint, prompt), 2 bad options.
#include <unistd.h>

#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "minigpt/curves.hpp"
#include "minigpt/data.hpp"
#include "minigpt/explain.hpp"
#include "minigpt/fast/gpt_decode.hpp"
#include "minigpt/file_io.hpp"
#include "minigpt/model_file.hpp"
#include "minigpt/progress.hpp"
#include "minigpt/train.hpp"

#ifdef WB_MINIGPT_MPI  // the build has MPI and chapter 10 (minigpt/CMakeLists.txt)
#include "minigpt/parallel/data_parallel_run.hpp"
#endif

#if __has_include("workbook/svg.hpp")
#include "workbook/svg.hpp"
#define WB_MINIGPT_HAS_SVG 1
#endif

#ifndef WB_MINIGPT_DEFAULT_OUT
#define WB_MINIGPT_DEFAULT_OUT "minigpt.ckpt"
#endif

namespace {

using namespace wb::minigpt;

struct Cli {
    TrainOptions train;
    std::size_t d_model = 128, heads = 4, layers = 4;
    std::string positions = "learned";  // --positions: learned | rope | none (a new model's)
    std::string engine = "fast";        // --engine: chapters | fast
    // A new model's ablation switches (docs/experiments.md), fast engine only.
    std::string attention_scale = "sqrt";  // --attention-scale: sqrt | none
    std::string norm = "pre";              // --norm: pre | post
    std::string final_norm = "on";         // --final-norm: on | off
    std::uint64_t model_seed = 1;
    double held_out_fraction = 0.1;
    std::string corpus = bundled_corpus_path();
    std::string tokenizer = "char";  // --tokenizer: char or bpe (chapter 2); gpt2 with --load
    bool tokenizer_given = false;    // --tokenizer on the command line
    bool engine_given = false;       // --engine on the command line
    std::size_t vocab_size = 512;    // --vocab-size: V of the BPE
    std::string out = WB_MINIGPT_DEFAULT_OUT;
    std::string load;
    std::string prompt;
    std::size_t max_new_tokens = 400;
    wb::SamplingOptions sampling{0.8f, 0, 1.0f};
    bool greedy = false;
    std::string command = "minigpt";  // how the user runs the program, for the lines it prints
    bool data_parallel = false;       // --data-parallel, or mpirun with more than one rank
    std::string explain_load, explain_prompt, explain_html = "explain.html";  // `explain`
    std::string convert_checkpoint, convert_vocab, convert_out;               // `convert`
    std::vector<std::string> curves_logs;                                     // `curves`
    std::string curves_out, curves_title = "held-out loss";
};

// Which code each chapter came from, as CMake compiled it: "chapter1=reference,...,
// capstone=student" (the build's WB_REFERENCE, see CMakeLists.txt).
#ifndef WB_MINIGPT_CHAPTER_KINDS
#define WB_MINIGPT_CHAPTER_KINDS ""
#endif

// Says at start which code runs: each chapter's source (in runs, "1-7 reference, 8 student")
// and the engine.
void print_code(Engine engine) {
    std::vector<std::pair<std::string, std::string>> kinds;  // (label, kind)
    const std::string all = WB_MINIGPT_CHAPTER_KINDS;
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = std::min(all.find(',', at), all.size());
        const std::string item = all.substr(at, end - at);
        const std::size_t eq = item.find('=');
        if (eq != std::string::npos) kinds.emplace_back(item.substr(0, eq), item.substr(eq + 1));
        at = end + 1;
    }
    auto numbered = [](const std::string& label) { return label.rfind("chapter", 0) == 0; };
    auto name = [&](const std::string& label) { return numbered(label) ? label.substr(7) : label; };
    std::string line;
    for (std::size_t i = 0; i < kinds.size();) {
        std::size_t j = i;  // chapters i .. j: one run of the same kind
        while (numbered(kinds[i].first) && j + 1 < kinds.size() && numbered(kinds[j + 1].first) &&
               kinds[j + 1].second == kinds[i].second) {
            ++j;
        }
        line += (line.empty() ? "" : ", ") + name(kinds[i].first) +
                (j > i ? "-" + name(kinds[j].first) : std::string()) + " " + kinds[i].second;
        i = j + 1;
    }
    if (!line.empty()) std::cout << "minigpt: chapters " << line << '\n';
    std::cout << "minigpt: engine " << engine_name(engine)
              << (engine == Engine::chapters
                      ? ": trains with chapter 8's gpt_forward / gpt_backward (chapters 1-7 "
                        "inside), generates with chapter 9's prefill / decode_step\n"
                      : ": trains with the given GptTrainer (the capstone's attention kernel), "
                        "generates with the given GptDecoder\n");
}

// A shell word: the text in single quotes.
std::string shell_quoted(const std::string& s) {
    std::string out = "'";
    for (const char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
}

// `minigpt explain`: the page of the model's attention weights and next-token choices.
int run_explain(const Cli& c) {
    const Model model = load_model(c.explain_load);
    const Explanation e = explain(model, c.explain_prompt);
    const std::string json = write_explanation(c.explain_html, e);
    std::cout << "minigpt: read " << e.ids.size() << " tokens of the prompt with " << c.explain_load
              << " (L=" << model.config.L << " layers, H=" << model.config.H << " heads)\n"
              << "minigpt: page " << c.explain_html << " (open it in a browser; no network)\n"
              << "minigpt: data " << json << '\n';
    return 0;
}

// `minigpt convert`: a model of the older two-file form made one file.
int run_convert(const Cli& c) {
    const Model model = load_two_file_model(c.convert_checkpoint, c.convert_vocab);
    save_model(c.convert_out, model);
    std::cout << "minigpt: converted " << c.convert_checkpoint << " and its vocabulary "
              << c.convert_vocab << " into " << c.convert_out << " (V=" << model.config.V
              << " T=" << model.config.T_max << " D=" << model.config.D << " H=" << model.config.H
              << " L=" << model.config.L << ", trained " << model.step
              << " steps; weights and vocabulary in one file)\n";
    return 0;
}

// A usage error found after parsing (options that contradict each other).
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The switches of --attention-scale, --norm, --final-norm and --positions none (values already
// checked by CLI11).
Variant variant_of(const Cli& c) {
    Variant v;
    v.attention_scale = c.attention_scale == "none" ? AttentionScale::none : AttentionScale::sqrt;
    v.norm = c.norm == "post" ? Norm::post : Norm::pre;
    v.final_norm = c.final_norm != "off";
    v.no_positions = c.positions == "none";
    return v;
}

// A new model's GptConfig positions: learned has the table wpe; rope, and none (the variant's
// no_positions, RoPE's layout with the rotation off), have none.
wb::Positions config_positions(const Cli& c) {
    return c.positions == "learned" ? wb::Positions::learned : wb::Positions::rope;
}

// The model's positions as --positions spells them (learned, rope or none), and the other
// switches that differ from chapter 8's model (" --norm post"; empty if none do).
std::string positions_label(const wb::GptConfig& config, const Variant& v) {
    return v.no_positions ? "none" : wb::positions_name(config.positions);
}
std::string other_changes(Variant v) {
    v.no_positions = false;  // said by positions_label
    return v.is_default() ? std::string() : " " + variant_changes(v);
}

void check_usage(const Cli& c) {
    if (c.train.engine == Engine::chapters && !variant_of(c).is_default()) {
        throw UsageError(variant_changes(variant_of(c)) +
                         " runs on --engine fast: the chapters engine (your chapter 8) builds "
                         "the Pre-LN model with scaled attention, a final LayerNorm and learned "
                         "or rope positions; add --engine fast or leave it out");
    }
    if (c.d_model % c.heads != 0) {
        throw UsageError("--heads " + std::to_string(c.heads) + " does not divide --d-model " +
                         std::to_string(c.d_model) + " (each head has width d-model / heads)");
    }
    if (c.positions == "rope" && (c.d_model / c.heads) % 2 != 0) {
        throw UsageError("--positions rope needs an even head width, got d-model / heads = " +
                         std::to_string(c.d_model / c.heads) + " (RoPE turns pairs of features)");
    }
    if (c.positions == "none" && (c.d_model / c.heads) % 2 != 0) {
        throw UsageError("--positions none needs an even head width, got d-model / heads = " +
                         std::to_string(c.d_model / c.heads) +
                         " (the model is stored as RoPE's, without a position table, and "
                         "chapter 8's checkpoint holds RoPE models of even head width only)");
    }
    if (c.train.warmup > c.train.steps) {
        throw UsageError("--warmup " + std::to_string(c.train.warmup) + " is larger than --steps " +
                         std::to_string(c.train.steps));
    }
    if (c.train.min_lr > c.train.lr) {
        throw UsageError("--min-lr " + std::to_string(c.train.min_lr) + " is larger than --lr " +
                         std::to_string(c.train.lr));
    }
}

// Option checks with plain messages ("--steps: expected an integer in [1, 100000000], got
// 'abc'"); CLI11's own range checks print the whole range of a double instead. Each value is
// checked as the program will hold it: an integer option must be a whole number that fits its
// range (2^64 is not silently clamped), a float option must stay finite and, where zero is not
// allowed, positive once converted to float (1e-50 would become 0, 1e39 infinity).
CLI::Validator integer_check(std::uint64_t min, std::uint64_t max) {
    return CLI::Validator(
        [min, max](std::string& text) -> std::string {
            std::string want = "expected an integer in [" + std::to_string(min) + ", " +
                               std::to_string(max) + "], got '" + text + "'";
            if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
                return want;
            }
            errno = 0;
            const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
            if (errno == ERANGE || v < min || v > max) return want;
            return std::string();
        },
        "[" + std::to_string(min) + ", " + std::to_string(max) + "]");
}

CLI::Validator number_check(bool allow_zero, double max = 3.4e38, double min = 0) {
    return CLI::Validator(
        [allow_zero, max, min](std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            const auto as_float = static_cast<float>(v);
            char range[64], top[32];
            std::snprintf(range, sizeof range, "a number in [%g, %g]", min, max);
            std::snprintf(top, sizeof top, "%g", max);
            const std::string want =
                min > 0 ? std::string(range)
                        : std::string(allow_zero ? "a number >= 0" : "a number > 0") +
                              (max < 3.4e38 ? std::string(" and <= ") + top
                                            : std::string(" that is finite as a float"));
            if (text.empty() || *end != '\0' || !std::isfinite(v) || v < min || v > max ||
                !std::isfinite(as_float) || (!allow_zero && !(as_float > 0.0f))) {
                return "expected " + want + ", got '" + text + "'";
            }
            return std::string();
        },
        allow_zero ? ">= 0" : "> 0");
}

// The largest values the program can honour: more steps would not fit the loss log, more
// characters would not be generated in any reasonable time, more threads than the machine's
// hardware threads only wait on each other (and can hang OpenBLAS under a memory limit).
constexpr std::uint64_t kMaxSteps = 100000000;
constexpr std::uint64_t kMaxNewTokens = 10000000;
constexpr std::uint64_t kMaxWidth = 1u << 16;
std::uint64_t max_threads() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 256 : n;
}

std::string with_commas(std::size_t n) {
    std::string s = std::to_string(n);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(std::size_t(i), ",");
    return s;
}

std::string fmt(const char* format, double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, x);
    return buf;
}

// The files a training run writes beside --out: the loss log and, with SVG, the loss curve.
std::string loss_csv_path(const std::string& out) {
    return std::filesystem::path(out).replace_extension(".loss.csv").string();
}
std::string loss_svg_path(const std::string& out) {
    return std::filesystem::path(out).replace_extension(".loss.svg").string();
}

void write_curves(const std::string& ckpt, const std::vector<StepLog>& log) {
    const std::string csv = loss_csv_path(ckpt);
    write_loss_csv(csv, log);
    std::cout << "minigpt: loss log  " << csv << '\n';
#ifdef WB_MINIGPT_HAS_SVG
    wb::svg::Series train{"train (batch)", {}, {}}, held{"held-out", {}, {}};
    for (const auto& e : log) {
        train.x.push_back(double(e.step));
        train.y.push_back(double(e.train_loss));
        if (e.eval_loss) {
            held.x.push_back(double(e.step));
            held.y.push_back(double(*e.eval_loss));
        }
    }
    const std::string svg = loss_svg_path(ckpt);
    // The picture through a TemporaryFile like every file the program writes (a unique name).
    write_file_atomic("wb::svg::write_line_chart", svg,
                      wb::svg::line_chart_svg("mini-GPT loss", "step",
                                              "cross entropy (nats per character)", {train, held}));
    std::cout << "minigpt: loss curve " << svg << '\n';
#endif
}

// The prompt must be made of characters the model knows; say so before any training.
void check_prompt(const Tokenizer& tokenizer, const std::string& prompt) {
    try {
        (void)tokenizer.encode(prompt);
    } catch (const wb::ValueError& e) {
        throw wb::ValueError(std::string("--prompt: ") + e.what());
    }
}

// A file the program writes, named by an option (or derived from one).
struct Output {
    std::string path;
    std::string what;  // "--out", "the loss log of --out m.model" ...
    // How a message names it: "--out m.model", "the loss log of --out m.model (m.loss.csv)".
    std::string shown() const {
        return what.rfind("--", 0) == 0 ? what + " " + path : what + " (" + path + ")";
    }
};

// A file the program reads, and the option that names it.
struct Input {
    std::string what;    // "the corpus"
    std::string option;  // "--corpus"
    std::string path;
};

// Every output must be a file name in a folder that exists or can be made, a new path or a
// regular file, and none may be an input or another output: checked before any training, so a
// run never ends by overwriting its corpus or its model, or by failing to save.
void check_outputs(const std::vector<Output>& outputs, const std::vector<Input>& inputs) {
    namespace fs = std::filesystem;
    for (const Output& o : outputs) {
        const fs::path p(o.path);
        if (o.path.empty() || p.filename().empty() || p.filename() == "." || p.filename() == "..") {
            throw UsageError(o.what + " '" + o.path +
                             "' names no file (empty, or a folder ending in /); expected a file "
                             "name such as minigpt.ckpt or out/minigpt.ckpt");
        }
        // The folder: the nearest part of it that exists must be a folder this user may write.
        fs::path dir = p.parent_path();
        std::error_code ec;
        while (!dir.empty() && !fs::exists(dir, ec)) dir = dir.parent_path();
        const std::string shown = dir.empty() ? std::string(".") : dir.string();
        if (!fs::is_directory(dir.empty() ? fs::path(".") : dir, ec)) {
            throw UsageError(o.shown() + ": " + shown +
                             " is not a folder (expected a path in a folder)");
        }
        if (::access(shown.c_str(), W_OK | X_OK) != 0) {
            throw UsageError(o.shown() + ": cannot write in the folder " + shown + " (" +
                             std::strerror(errno) + ")");
        }
        try {
            require_replaceable(o.what, o.path);
        } catch (const wb::FileError& e) {
            throw UsageError(e.what());
        }
        for (const Input& in : inputs) {
            if (!in.path.empty() && same_file(o.path, in.path)) {
                throw UsageError(o.shown() + " is " + in.what + " (" + in.option + " " + in.path +
                                 "); expected another path: an input is never overwritten");
            }
        }
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        for (std::size_t j = i + 1; j < outputs.size(); ++j) {
            if (same_file(outputs[i].path, outputs[j].path)) {
                throw UsageError(outputs[j].shown() + " is also " + outputs[i].shown() +
                                 "; expected a file of its own for each");
            }
        }
    }
}

// A training run's outputs: --out, its loss log and its loss curve.
std::vector<Output> training_outputs(const Cli& c) {
    std::vector<Output> out{{c.out, "--out"}};
    if (!c.out.empty() && !std::filesystem::path(c.out).filename().empty()) {
        out.push_back({loss_csv_path(c.out), "the loss log of --out " + c.out});
#ifdef WB_MINIGPT_HAS_SVG
        out.push_back({loss_svg_path(c.out), "the loss curve of --out " + c.out});
#endif
    }
    return out;
}

void print_sample(const Model& model, const Cli& c, Engine engine) {
    GenerationSpeed speed;  // fast: GptDecoder (gpt_decode.hpp), chapter 9's numbers, faster
    std::string text;
    if (engine == Engine::chapters) {  // chapter 9's prefill / decode_step
        const auto t0 = std::chrono::steady_clock::now();
        text = generate_text(model, c.prompt, c.max_new_tokens, c.sampling, c.train.seed, c.greedy);
        speed.tokens = c.max_new_tokens;
        speed.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        speed.threads = omp_get_max_threads();
    } else {
        text = generate_text_fast(model, c.prompt, c.max_new_tokens, c.sampling, c.train.seed,
                                  c.greedy, &speed);
    }
    const bool characters = model.tokenizer.kind() == TokenizerKind::characters;
    std::cout << "\nminigpt: sample (" << c.max_new_tokens
              << (characters ? " characters, " : " tokens, ")
              << (c.greedy ? std::string("greedy")
                           : "temperature " + fmt("%g", c.sampling.temperature) + ", top-k " +
                                 std::to_string(c.sampling.top_k) + ", top-p " +
                                 fmt("%g", c.sampling.top_p))
              << ", seed " << c.train.seed << "):\n"
              << "----------------------------------------\n"
              << text << "\n----------------------------------------\n"
              << "minigpt: generated " << speed.tokens << " tokens in "
              << fmt("%.3f", speed.seconds) << " s: " << fmt("%.0f", speed.tokens_per_s())
              << " tokens/s (" << speed.threads << (speed.threads == 1 ? " thread" : " threads")
              << ")\n";
}

// What run() needs of the data-parallel mode (minigpt/parallel/): nothing on one process.
struct Parallel {
    DataParallel* step = nullptr;                          // set: train on every rank
    bool leads = true;                                     // rank 0, or the only process
    std::function<void(wb::GptParams<float>&)> broadcast;  // rank 0's weights everywhere
    int ranks = 1;                                         // N
    std::string where;                                     // every rank's host and pid
};

#ifdef WB_MINIGPT_MPI
// Options that the data-parallel mode cannot honour on every rank alike: refused up front,
// on every rank (each finds the same), before any training.
void check_data_parallel(const Cli& c, int ranks) {
    if (c.train.engine != Engine::chapters) {
        throw UsageError(
            "data-parallel training runs your chapter 10 on chapter 8's model: add --engine "
            "chapters (--engine fast trains on one process)");
    }
    if (!c.load.empty()) {
        throw UsageError(
            "--load only generates, on one process: run it without mpirun and "
            "without --data-parallel");
    }
    if (c.train.batch < static_cast<std::size_t>(ranks)) {
        throw UsageError("--batch " + std::to_string(c.train.batch) + " is smaller than the " +
                         std::to_string(ranks) +
                         " ranks: each rank takes at least one sequence of the batch");
    }
}
#endif  // WB_MINIGPT_MPI

const char* tokenizer_label(TokenizerKind kind) {
    return kind == TokenizerKind::gpt2 ? "gpt2" : kind == TokenizerKind::bpe ? "bpe" : "char";
}

// GPT-2 ties lm_head to wte; the file holds the table twice: say how many are distinct.
std::string tied_note(const wb::GptParams<float>& p) {
    if (p.lm_head.shape() != p.wte.shape() ||
        !std::equal(p.wte.begin(), p.wte.end(), p.lm_head.begin())) {
        return "";
    }
    return " (" + with_commas(parameter_count(p) - p.wte.size()) + " with lm_head tied to wte)";
}

// The engine a loaded model generates on, and --tokenizer, if given, checked against its
// vocabulary. GPT-2's tanh GELU runs on the chapters, so such a model takes --engine chapters
// unless --engine says otherwise (the fast decoder then refuses it: it computes the exact GELU).
Engine loaded_engine(const Model& model, const Cli& c) {
    const char* kind = tokenizer_label(model.tokenizer.kind());
    if (c.tokenizer_given && c.tokenizer != kind) {
        throw wb::ValueError("--tokenizer " + c.tokenizer + ": " + c.load + " holds a " + kind +
                             " vocabulary; expected --tokenizer " + kind + " or none");
    }
    const bool gpt2_gelu = model.config.gelu == wb::Gelu::tanh && !c.engine_given;
    return gpt2_gelu ? Engine::chapters : c.train.engine;
}

int run(const Cli& c, const Parallel& p) {
    set_threads(c.train.threads);
    // A loaded model says which code runs once it is known: GPT-2's GELU picks the chapters.
    std::optional<Model> loaded;
    Engine engine = c.train.engine;
    if (!c.load.empty()) {
        loaded = load_model(c.load);
        engine = loaded_engine(*loaded, c);
    }
    print_code(engine);
    if (p.step != nullptr) {
        std::cout << "minigpt: data-parallel on " << p.ranks << (p.ranks == 1 ? " rank" : " ranks")
                  << " (" << p.where
                  << "): chapter 10's data_parallel_gradients, the same bits for any number "
                     "of ranks; rank 0 evaluates, prints and saves\n";
    }
    if (!c.load.empty()) {
        const Model& model = *loaded;
        check_prompt(model.tokenizer, c.prompt);  // a bad prompt fails before any output
        if (engine == Engine::chapters && !model.variant.is_default()) {
            throw wb::ValueError(c.load + " was trained with " + variant_changes(model.variant) +
                                 ", which runs on --engine fast: chapter 9 decodes only the "
                                 "Pre-LN model with scaled attention, a final LayerNorm and "
                                 "learned or rope positions; expected --engine fast");
        }
        std::cout << "minigpt: loaded " << c.load << ": V=" << model.config.V
                  << " T=" << model.config.T_max << " D=" << model.config.D
                  << " H=" << model.config.H << " L=" << model.config.L << " positions "
                  << positions_label(model.config, model.variant) << other_changes(model.variant)
                  << (model.config.gelu == wb::Gelu::tanh ? ", GELU tanh" : "") << ", "
                  << tokenizer_label(model.tokenizer.kind()) << " vocabulary"
                  << ", " << with_commas(parameter_count(model.params)) << " parameters"
                  << tied_note(model.params) << ", trained " << model.step << " steps\n";
        print_sample(model, c, engine);
        return 0;
    }

    const std::size_t window = c.train.context + 1;
    // Both splits need a window: the held-out part is held_out_fraction of the text.
    const auto min_tokens = static_cast<std::size_t>(double(window) / c.held_out_fraction) + 1;
    const TokenizerChoice choice{
        c.tokenizer == "bpe" ? TokenizerKind::bpe : TokenizerKind::characters, c.vocab_size};
    const Corpus corpus = load_corpus(c.corpus, min_tokens, choice);
    check_prompt(corpus.tokenizer, c.prompt);  // check the prompt before training, not after
    const Split split = split_tokens(corpus.ids, 1.0 - c.held_out_fraction, window);

    Model model;
    model.tokenizer = corpus.tokenizer;
    // The model's memory, compared with what the process may allocate before any of it is.
    const wb::GptConfig shape{
        corpus.tokenizer.size(), c.train.context, c.d_model, c.heads, c.layers,
        config_positions(c)};
    const MemoryLimit limit = memory_limit();
    if (training_memory(shape) > limit.bytes) {
        throw wb::ValueError(
            "a model of V=" + std::to_string(shape.V) + " T=" + std::to_string(shape.T_max) +
            " D=" + std::to_string(shape.D) + " L=" + std::to_string(shape.L) + " has " +
            std::to_string(parameter_count(shape)) + " parameters; training it needs at least " +
            std::to_string(training_memory(shape)) +
            " bytes (weights, gradients and AdamW's two moments), more than the " +
            std::to_string(limit.bytes) + " bytes this process may still allocate (" +
            limit.source + "); expected a smaller --d-model, --layers or --context");
    }
    model.config = {corpus.tokenizer.size(), c.train.context, c.d_model, c.heads, c.layers,
                    config_positions(c)};
    model.params = wb::init_gpt<float>(model.config, c.model_seed);
    if (p.broadcast) p.broadcast(model.params);  // every rank starts from rank 0's weights
    model.variant = variant_of(c);
    TrainOptions train_options = c.train;
    train_options.variant = model.variant;
    train_options.data_parallel = p.step;

    std::cout << "minigpt: corpus " << c.corpus << ": " << token_summary(corpus) << "; "
              << with_commas(split.train.size()) << " to train on, "
              << with_commas(split.held_out.size()) << " held out\n"
              << "minigpt: model V=" << model.config.V << " T=" << model.config.T_max
              << " D=" << model.config.D << " H=" << model.config.H << " L=" << model.config.L
              << " positions " << c.positions << other_changes(model.variant) << ": "
              << with_commas(parameter_count(model.params)) << " parameters\n"
              << "minigpt: training " << c.train.steps << " steps of " << c.train.batch << " x "
              << c.train.context << " tokens; AdamW lr " << fmt("%g", c.train.lr) << " (warm-up "
              << c.train.warmup << ", cosine to " << fmt("%g", c.train.min_lr) << "), weight decay "
              << fmt("%g", c.train.weight_decay) << ", clip " << fmt("%g", c.train.grad_clip)
              << ", seed " << c.train.seed << ", threads "
              << (c.train.threads > 0 ? std::to_string(c.train.threads) : std::string("default"))
              << (c.train.time_limit_s > 0
                      ? ", time limit " + fmt("%g", c.train.time_limit_s) + " s"
                      : std::string())
              << "\nminigpt: a loss of " << fmt("%.2f", std::log(double(model.config.V)))
              << " = ln V is guessing uniformly; lower is better\n"
              << std::flush;

    ProgressPrinter progress(std::cout, isatty(fileno(stdout)) != 0, c.train.time_limit_s);
    const TrainResult result = train(model.params, model.config, split.train, split.held_out,
                                     train_options, [&](const StepLog& e) { progress(e); });
    progress.finish();
    model.step = static_cast<std::int64_t>(result.steps_done);
    if (!p.leads) return 0;  // rank 0 holds the same weights, and saves them

    std::cout << "minigpt: held-out loss " << fmt("%.4f", result.first_eval_loss) << " -> "
              << fmt("%.4f", result.final_eval_loss) << " in " << result.steps_done << " steps ("
              << format_duration(result.seconds) << ")"
              << (result.stopped_by_time ? ", stopped by --time-limit" : "") << '\n';
    if (corpus.tokenizer.kind() == TokenizerKind::bpe) {
        // Per character, to compare with --tokenizer char: a BPE token holds several.
        const double chars = characters_per_token(corpus.tokenizer, split.held_out);
        std::cout << "minigpt: held-out loss per character "
                  << fmt("%.4f", result.final_eval_loss / chars) << " (" << fmt("%.3f", chars)
                  << " characters per BPE token)\n";
    }

    namespace fs = std::filesystem;
    const fs::path out_dir = fs::path(c.out).parent_path();
    if (!out_dir.empty()) fs::create_directories(out_dir);
    save_model(c.out, model);
    std::cout << "minigpt: model " << c.out << " (weights and vocabulary in one file)\n";
    write_curves(c.out, result.log);
    print_sample(model, c, c.train.engine);
    // The command that shows what this model attends to, on the prompt or the corpus's first line.
    std::vector<std::int64_t> first(
        corpus.ids.begin(),
        corpus.ids.begin() + std::ptrdiff_t(std::min<std::size_t>(corpus.ids.size(), 40)));
    std::string look = c.prompt.empty() ? corpus.tokenizer.decode(first) : c.prompt;
    if (c.prompt.empty() && look.find('\n') != std::string::npos) look.erase(look.find('\n'));
    if (look.empty()) look = corpus.tokenizer.decode({first.front()});
    std::cout << "\nminigpt: see inside: " << c.command << " explain --load " << shell_quoted(c.out)
              << " --prompt " << shell_quoted(look) << " --html explain.html\n";
    return 0;
}

// The options of training and generation (the command without a subcommand), with their
// defaults: the README's run.
void add_training_options(CLI::App& app, Cli& c) {
    auto& t = c.train;
    t.steps = 1500;
    t.time_limit_s = 300;  // a safety net: the default run ends within minutes anywhere
    t.batch = 16;
    t.context = 128;
    t.lr = 2e-3f;
    t.warmup = 50;
    t.eval_interval = 100;
    t.threads = 0;
    app.add_option("--steps", t.steps, "optimizer steps")->check(integer_check(1, kMaxSteps));
    app.add_option("--time-limit", t.time_limit_s,
                   "stop training after this many seconds (0: no limit)")
        ->check(number_check(true));
    app.add_option("--batch", t.batch, "windows per step (B)")->check(integer_check(1, kMaxWidth));
    // T_max = 1 leaves no room for a prompt beside a new token: such a model never generates.
    app.add_option("--context", t.context, "tokens per window, the model's T_max (T), >= 2")
        ->check(integer_check(2, kMaxWidth));
    app.add_option("--d-model", c.d_model, "model width (D)")->check(integer_check(1, kMaxWidth));
    app.add_option("--heads", c.heads, "attention heads (H), must divide D")
        ->check(integer_check(1, kMaxWidth));
    app.add_option("--layers", c.layers, "transformer blocks (L)")->check(integer_check(1, 1024));
    app.add_option("--lr", t.lr, "peak learning rate")->check(number_check(false));
    app.add_option("--min-lr", t.min_lr, "learning rate at the end of the cosine")
        ->check(number_check(true));
    app.add_option("--warmup", t.warmup,
                   "steps of linear warm-up (default: 50, at most steps / 10)")
        ->check(integer_check(0, kMaxSteps));
    app.add_option("--weight-decay", t.weight_decay, "AdamW's decoupled weight decay")
        ->check(number_check(true));
    app.add_option("--grad-clip", t.grad_clip, "largest global gradient norm (0: off)")
        ->check(number_check(true));
    app.add_option("--eval-interval", t.eval_interval,
                   "held-out evaluation every this many steps (0: first and last only)")
        ->check(integer_check(0, kMaxSteps));
    app.add_option("--eval-batches", t.eval_batches, "held-out batches per evaluation")
        ->check(integer_check(1, 1000000));
    app.add_option("--seed", t.seed, "seeds the batches and the sampling")
        ->check(integer_check(0, UINT64_MAX));
    app.add_option("--model-seed", c.model_seed, "seeds the initial weights")
        ->check(integer_check(0, UINT64_MAX));
    app.add_option("--threads", t.threads,
                   "OpenMP and OpenBLAS threads (0: the default), at most the hardware threads")
        ->check(integer_check(0, max_threads()));
    app.add_option("--corpus", c.corpus, "UTF-8 text file to train on");
    app.add_option("--tokenizer", c.tokenizer,
                   "char: one token per character; bpe: chapter 2's byte-level BPE, learned "
                   "on the corpus (the vocabulary goes into the model file); gpt2: with --load "
                   "of a GPT-2 converted by tools/convert-gpt2, GPT-2's own tokenizer (chapter "
                   "2's gpt2_encode)")
        ->check(CLI::IsMember({"char", "bpe", "gpt2"}));
    app.add_option("--vocab-size", c.vocab_size, "V of the BPE vocabulary: 256 bytes + merges")
        ->check(integer_check(256, kMaxWidth));
    app.add_option("--out", c.out,
                   "where to save the model: one file, the weights and the vocabulary (the "
                   "loss log and the loss curve go beside it: m.ckpt gives m.loss.csv and "
                   "m.loss.svg)");
    app.add_option("--load", c.load, "skip training: generate from this model file");
    app.add_option("--prompt", c.prompt, "text to continue (empty: start a new line)");
    app.add_option("--max-new-tokens", c.max_new_tokens, "characters to generate")
        ->check(integer_check(0, kMaxNewTokens));
    // Logits divided by a temperature below 1e-3 or above 1e3 leave float's useful range.
    app.add_option("--temperature", c.sampling.temperature,
                   "sampling temperature, in [0.001, 1000]")
        ->check(number_check(false, 1000.0, 1e-3));
    app.add_option("--top-k", c.sampling.top_k, "sample among the k most likely (0: all)")
        ->check(integer_check(0, UINT64_MAX));
    app.add_option("--top-p", c.sampling.top_p, "nucleus sampling mass in (0, 1] (1: off)")
        ->check(number_check(false, 1.0));
    app.add_flag("--greedy", c.greedy, "always take the most likely character");
    app.add_option("--positions", c.positions,
                   "a new model's positions: learned (GPT-2's table), rope (chapter 3's RoPE) or "
                   "none (neither: only the causal mask tells positions apart); none needs "
                   "--engine fast")
        ->check(CLI::IsMember({"learned", "rope", "none"}));
    app.add_option("--attention-scale", c.attention_scale,
                   "a new model's attention scores: sqrt (times 1/sqrt(d), chapter 4) or none "
                   "(the raw dot products); none needs --engine fast")
        ->check(CLI::IsMember({"sqrt", "none"}));
    app.add_option("--norm", c.norm,
                   "a new model's LayerNorms: pre (x + f(LN(x)), GPT-2) or post (LN(x + f(x)), "
                   "the original Transformer); post needs --engine fast")
        ->check(CLI::IsMember({"pre", "post"}));
    app.add_option("--final-norm", c.final_norm,
                   "a new model's final LayerNorm before the LM head: on or off; off needs "
                   "--engine fast")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("--engine", c.engine,
                   "chapters: train and generate with your chapters 8 and 9 (chapters 1-7 "
                   "inside); fast: the given fast trainer and decoder")
        ->check(CLI::IsMember({"chapters", "fast"}));
#ifdef WB_MINIGPT_MPI
    app.add_flag("--data-parallel", c.data_parallel,
                 "train with your chapter 10 on the ranks of mpirun (--engine chapters); "
                 "implied by mpirun -np N with N > 1, given alone it runs the same bits on one "
                 "process");
#endif
}

// The subcommands and their options.
struct Subcommands {
    CLI::App* explain;
    CLI::App* convert;
    CLI::App* curves;
    // The one parsed, or nullptr.
    [[nodiscard]] const char* parsed() const {
        return explain->parsed()   ? "explain"
               : convert->parsed() ? "convert"
               : curves->parsed()  ? "curves"
                                   : nullptr;
    }
};

Subcommands add_subcommands(CLI::App& app, Cli& c) {
    CLI::App* const explain_app = app.add_subcommand(
        "explain",
        "writes an HTML page of a saved model's attention weights and next-token "
        "choices on a prompt, and the same data as JSON beside it");
    explain_app->add_option("--load", c.explain_load, "the model file")->required();
    explain_app
        ->add_option("--prompt", c.explain_prompt, "text to read (its last T_max characters)")
        ->required();
    explain_app->add_option("--html", c.explain_html,
                            "the page to write (the JSON goes beside it)");
    CLI::App* const convert_app = app.add_subcommand(
        "convert",
        "makes a model saved by an older version as two files (a bare checkpoint and its "
        "vocabulary beside it) one model file; name the vocabulary you know belongs to it");
    convert_app->add_option("--checkpoint", c.convert_checkpoint, "the bare checkpoint (m.ckpt)")
        ->required();
    convert_app->add_option("--vocab", c.convert_vocab, "its vocabulary (usually m.ckpt.vocab)")
        ->required();
    convert_app->add_option("--out", c.convert_out, "the model file to write")->required();
    CLI::App* const curves_app = app.add_subcommand(
        "curves",
        "draws the held-out loss of several training runs in one SVG, one line per run "
        "(each run's loss log, m.loss.csv, written beside its --out)");
    curves_app->add_option("logs", c.curves_logs, "the runs' loss logs (*.loss.csv)")->required();
    curves_app->add_option("--out", c.curves_out, "the SVG to write")->required();
    curves_app->add_option("--title", c.curves_title, "the chart's title");
    return {explain_app, convert_app, curves_app};
}

// What a subcommand or a run prints when it fails: the error, after what it printed before.
template <class Fn>
int reporting_errors(Fn&& fn) {
    try {
        return fn();
    } catch (const std::exception& e) {
        std::cout << std::flush;
        std::cerr << "minigpt: error: " << e.what() << '\n';
        return 1;
    }
}

int run_curves(const Cli& c) {
    std::vector<LossCurve> curves;
    curves.reserve(c.curves_logs.size());
    for (const std::string& log : c.curves_logs) curves.push_back(read_loss_curve(log));
    write_file_atomic("wb::minigpt::loss_curves_svg", c.curves_out,
                      loss_curves_svg(curves, c.curves_title));
    std::cout << "minigpt: " << curves.size() << " runs' held-out loss in " << c.curves_out << '\n';
    return 0;
}

// The subcommand SUB: its usage checks (UsageError), then its run.
int run_subcommand(const std::string& sub, const CLI::App& app, const Cli& c) {
    // The training and generation options belong to the command without a subcommand: given
    // before `explain`, `convert` or `curves`, they would be ignored.
    for (const CLI::Option* option : app.get_options()) {
        if (option->get_name() == "--help" || option->count() == 0) continue;
        throw UsageError(option->get_name() + " has no effect with " + sub +
                         " (it is an option of training and generation); leave it out");
    }
    if (sub == "explain") {
        if (std::filesystem::path(c.explain_html).extension() == ".json") {
            throw UsageError("--html " + c.explain_html +
                             " would be overwritten by the JSON "
                             "beside it; expected a name ending in .html");
        }
        const std::string json =
            std::filesystem::path(c.explain_html).replace_extension(".json").string();
        check_outputs({{c.explain_html, "--html"}, {json, "the JSON of --html " + c.explain_html}},
                      {{"the model", "--load", c.explain_load}});
        return reporting_errors([&] { return run_explain(c); });
    }
    if (sub == "curves") {
        std::vector<Input> logs;
        logs.reserve(c.curves_logs.size());
        for (const std::string& log : c.curves_logs) logs.push_back({"a loss log", "curves", log});
        check_outputs({{c.curves_out, "--out"}}, logs);
        return reporting_errors([&] { return run_curves(c); });
    }
    check_outputs({{c.convert_out, "--out"}},
                  {{"the checkpoint", "--checkpoint", c.convert_checkpoint},
                   {"the vocabulary", "--vocab", c.convert_vocab}});
    return reporting_errors([&] { return run_convert(c); });
}

// The options of a training or generation run that do not fit together (UsageError).
void check_run_usage(const CLI::App& app, Cli& c) {
    auto& t = c.train;
    // Without --warmup, a short run warms up for a tenth of its steps at most.
    if (app.count("--warmup") == 0) t.warmup = std::min(t.warmup, t.steps / 10);
    t.engine = c.engine == "chapters" ? Engine::chapters : Engine::fast;
    c.engine_given = app.count("--engine") > 0;
    c.tokenizer_given = app.count("--tokenizer") > 0;
    if (c.load.empty() && c.tokenizer == "gpt2") {
        throw UsageError(
            "--tokenizer gpt2 runs a GPT-2 converted by tools/convert-gpt2: add --load "
            "gpt2.model; to train a new model, expected --tokenizer char or bpe");
    }
    check_usage(c);
    if (app.count("--vocab-size") > 0 && c.tokenizer != "bpe") {
        throw UsageError(
            "--vocab-size has no effect with --tokenizer char (it is the size "
            "of a BPE vocabulary); add --tokenizer bpe or leave it out");
    }
    if (c.load.empty()) {  // before training, not after
        if (std::filesystem::exists(c.out) && same_file(c.out, c.corpus)) {
            throw UsageError("--out " + c.out + " is the corpus itself (--corpus " + c.corpus +
                             "); expected another path, the corpus is never overwritten");
        }
        check_outputs(training_outputs(c), {{"the corpus", "--corpus", c.corpus}});
    }
    if (!c.load.empty()) {
        // The model file fixes the shape and the training is over: say so, not ignore.
        for (const char* name :
             {"--steps",         "--time-limit",   "--batch",        "--context",
              "--d-model",       "--heads",        "--layers",       "--lr",
              "--min-lr",        "--warmup",       "--weight-decay", "--grad-clip",
              "--eval-interval", "--eval-batches", "--model-seed",   "--corpus",
              "--out",           "--positions",    "--vocab-size",   "--attention-scale",
              "--norm",          "--final-norm"}) {
            if (app.count(name) > 0) {
                throw UsageError(std::string(name) +
                                 " has no effect with --load (the model "
                                 "file fixes the model and its training); leave it out");
            }
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    Cli c;
    CLI::App app{
        "Trains a small GPT on a text file (by default the bundled Shakespeare), saves "
        "it, and prints a sample of generated text.",
        "minigpt"};
    app.option_defaults()->always_capture_default();
    add_training_options(app, c);
    const Subcommands subcommands = add_subcommands(app, c);
    if (const char* command = std::getenv("WB_MINIGPT_COMMAND")) {
        c.command = command;  // tools/run-minigpt
    } else if (argc > 0) {
        c.command = argv[0];
    }

    try {
        app.parse(argc, argv);
        if (const char* sub = subcommands.parsed()) return run_subcommand(sub, app, c);
        check_run_usage(app, c);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "minigpt: error: " << e.what() << " (see minigpt --help)\n";
        return 2;
    } catch (const UsageError& e) {
        std::cerr << "minigpt: error: " << e.what() << " (see minigpt --help)\n";
        return 2;
    }
    Parallel p;
#ifdef WB_MINIGPT_MPI
    // MPI starts only when asked for: mpirun, or --data-parallel (on one process, the
    // reference run of the same bits).
    std::unique_ptr<parallel::World> world;
    std::unique_ptr<DataParallel> step;
    if (c.data_parallel || parallel::launched_by_mpirun()) {
        world = std::make_unique<parallel::World>(&argc, &argv);
        p.ranks = world->size();
        if (p.ranks > 1) c.data_parallel = true;
    }
    if (c.data_parallel) {
        try {
            check_data_parallel(c, p.ranks);
        } catch (const UsageError& e) {
            if (world->rank() == 0) {
                std::cerr << "minigpt: error: " << e.what() << " (see minigpt --help)\n";
            }
            return 2;
        }
        p.where = world->describe();
        step = parallel::make_data_parallel(*world);
        p.step = step.get();
        p.leads = world->rank() == 0;
        p.broadcast = [](wb::GptParams<float>& params) { parallel::broadcast(params); };
        if (!p.leads) std::cout.setstate(std::ios::failbit);  // rank 0 prints
    }
#endif
    try {
        return run(c, p);
    } catch (const std::exception& e) {
        std::cout << std::flush;
#ifdef WB_MINIGPT_MPI
        if (world && world->size() > 1) {
            // The other ranks may be waiting for this one in a collective call: end them all.
            std::cerr << "minigpt: error on rank " << world->rank() << " of " << world->size()
                      << ": " << e.what() << '\n';
            world->abort(1);
        }
#endif
        std::cerr << "minigpt: error: " << e.what() << '\n';
        return 1;
    }
}
