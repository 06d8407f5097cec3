// Corpus loading, the train / held-out split, and the random-window loader.
#include "minigpt/data.hpp"
#include "minigpt/file_io.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef WB_MINIGPT_CORPUS
#define WB_MINIGPT_CORPUS "minigpt/data/shakespeare.txt"
#endif

namespace wb::minigpt {

std::string bundled_corpus_path() { return WB_MINIGPT_CORPUS; }

Corpus load_corpus(const std::string& path, std::size_t min_tokens, const TokenizerChoice& choice) {
    const std::string fn = "wb::minigpt::load_corpus";
    if (choice.kind != TokenizerKind::characters && choice.kind != TokenizerKind::bpe) {
        throw ValueError(fn + ": tokenizer kind " + std::to_string(static_cast<int>(choice.kind)) +
                         ", expected TokenizerKind::characters (0) or TokenizerKind::bpe (1)");
    }
    // The memory tokenizing takes, compared with what the process may allocate before any of it
    // is read (a larger file is refused by read_regular_file's limit instead).
    const std::uint64_t size = regular_file_size(fn, path);
    const std::uint64_t per_byte =
        choice.kind == TokenizerKind::bpe ? kCorpusMemoryPerByteBpe : kCorpusMemoryPerByte;
    const MemoryLimit limit = memory_limit();
    if (size <= kMaxCorpusBytes && size * per_byte > limit.bytes) {
        throw FileError(fn + ": " + path + " has " + std::to_string(size) +
                        " bytes; tokenizing it needs about " + std::to_string(size * per_byte) +
                        " bytes of memory (" + std::to_string(per_byte) +
                        " per byte of text), more than the " + std::to_string(limit.bytes) +
                        " bytes this process may still allocate (" + limit.source +
                        "); expected a smaller corpus");
    }
    Corpus c;
    c.path = path;
    c.text = read_regular_file(fn, path, kMaxCorpusBytes);  // bounded; no FIFO, no device
    if (c.text.empty()) {
        throw FileError(fn + ": " + path + " is empty (expected UTF-8 text, at least " +
                        std::to_string(min_tokens) + " characters)");
    }
    const bool bpe = choice.kind == TokenizerKind::bpe;
    if (bpe && choice.vocab_size < 256) {
        throw ValueError(fn + ": vocab_size = " + std::to_string(choice.vocab_size) +
                         ", expected at least 256 for a BPE vocabulary (the byte tokens)");
    }
    try {
        (void)utf8_decode(c.text);  // the same message for both kinds
        c.tokenizer = bpe ? Tokenizer::bpe_from_text(c.text, choice.vocab_size)
                          : Tokenizer::from_text(c.text);
        c.ids = c.tokenizer.encode(c.text);
    } catch (const ValueError& e) {
        throw FileError(fn + ": " + path + " is not UTF-8 text: " + e.what());
    }
    if (c.ids.size() < min_tokens) {
        throw ValueError(fn + ": " + path + " holds " + std::to_string(c.ids.size()) +
                         (bpe ? " BPE tokens" : " characters") + ", expected at least " +
                         std::to_string(min_tokens) +
                         " (enough for a window of the context in both splits)");
    }
    return c;
}

namespace {

std::string thousands(std::size_t n) {
    std::string s = std::to_string(n);
    for (std::size_t at = s.size(); at > 3; at -= 3) s.insert(at - 3, ",");
    return s;
}

}  // namespace

std::string token_summary(const Corpus& corpus) {
    const std::size_t characters = utf8_decode(corpus.text).size();
    if (corpus.tokenizer.kind() == TokenizerKind::bpe) {
        return thousands(characters) + " characters in " + thousands(corpus.ids.size()) +
               " BPE tokens (V = " + std::to_string(corpus.tokenizer.size()) + ": 256 bytes + " +
               std::to_string(corpus.tokenizer.merges().size()) + " merges)";
    }
    return thousands(characters) + " characters, " + std::to_string(corpus.tokenizer.size()) +
           " distinct";
}

double characters_per_token(const Tokenizer& tokenizer, const std::vector<std::int64_t>& ids) {
    if (ids.empty()) return 1.0;
    // A split may start or end inside a character: utf8_repair counts such a piece as one.
    const std::size_t characters = utf8_decode(tokenizer.decode(ids)).size();
    return static_cast<double>(characters) / static_cast<double>(ids.size());
}

Split split_tokens(const std::vector<std::int64_t>& ids, double train_fraction,
                   std::size_t window) {
    const std::string fn = "wb::minigpt::split_tokens";
    if (!(train_fraction > 0.0 && train_fraction < 1.0)) {
        throw ValueError(fn + ": train_fraction = " + std::to_string(train_fraction) +
                         ", expected a value in (0, 1)");
    }
    const auto cut =
        static_cast<std::size_t>(std::floor(train_fraction * static_cast<double>(ids.size())));
    const std::size_t held = ids.size() - cut;
    if (cut < window || held < window) {
        throw ValueError(fn + ": " + std::to_string(ids.size()) + " tokens split into " +
                         std::to_string(cut) + " for training and " + std::to_string(held) +
                         " held out, expected at least " + std::to_string(window) +
                         " (one window of T + 1 tokens) in each");
    }
    Split s;
    s.train.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(cut));
    s.held_out.assign(ids.begin() + static_cast<std::ptrdiff_t>(cut), ids.end());
    return s;
}

BatchLoader::BatchLoader(const std::vector<std::int64_t>& tokens, std::size_t batch,
                         std::size_t context, std::uint64_t seed)
    : tokens_(&tokens), batch_(batch), context_(context), rng_(seed) {
    const std::string fn = "wb::minigpt::BatchLoader";
    if (batch == 0 || context == 0) {
        throw ValueError(fn + ": batch = " + std::to_string(batch) +
                         ", context = " + std::to_string(context) + ", expected both >= 1");
    }
    // tokens.size() <= context, not tokens.size() < context + 1: that sum wraps to 0 for
    // context = SIZE_MAX.
    if (tokens.size() <= context) {
        throw ValueError(fn + ": " + std::to_string(tokens.size()) +
                         " tokens, expected at least context + 1 = " +
                         (context == SIZE_MAX ? std::string("2^64") : std::to_string(context + 1)) +
                         " (one window: context = " + std::to_string(context) +
                         " inputs and the next token)");
    }
    if (batch > kMaxElements / (context + 1)) {
        throw ValueError(fn + ": batch = " + std::to_string(batch) +
                         " windows of context + 1 = " + std::to_string(context + 1) +
                         " tokens hold more than 2^48 ids, expected a batch that fits in memory");
    }
}

TokenIds BatchLoader::next_windows() {
    const std::size_t w = context_ + 1;
    const std::size_t starts = tokens_->size() - w + 1;  // windows that fit
    TokenIds out({batch_, w});                           // [B, T + 1]
    for (std::size_t b = 0; b < batch_; ++b) {
        // Modulo, not std::uniform_int_distribution: the same batches with every standard
        // library (the bias is below starts / 2^64).
        const std::size_t start = static_cast<std::size_t>(rng_() % starts);
        for (std::size_t t = 0; t < w; ++t) out(b, t) = (*tokens_)[start + t];
    }
    return out;
}

NextToken BatchLoader::next() { return shift_for_next_token(next_windows()); }

}  // namespace wb::minigpt
