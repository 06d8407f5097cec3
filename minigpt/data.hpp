/// @file data.hpp
/// @brief The mini-GPT's data: a UTF-8 corpus file, its split into training and held-out
/// tokens, and a seeded loader of random windows for next-token prediction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "8-training/model.hpp"
#include "minigpt/file_io.hpp"
#include "minigpt/tokenizer.hpp"
#include "workbook/core.hpp"

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// The bundled corpus, `minigpt/data/shakespeare.txt`, as an absolute path
/// fixed when the program is built (see data/README.md for its source and licence).
/// @return the path
std::string bundled_corpus_path();

/// A corpus read from disk: its text, the vocabulary of that text, and the text as ids.
struct Corpus {
    std::string path;               ///< the file it was read from
    std::string text;               ///< the whole file (UTF-8)
    Tokenizer tokenizer;            ///< the distinct characters of text, or its BPE merges
    std::vector<std::int64_t> ids;  ///< text encoded: one id per character, or per BPE token
};

/// Which vocabulary load_corpus builds (`minigpt --tokenizer char|bpe --vocab-size N`).
struct TokenizerChoice {
    TokenizerKind kind = TokenizerKind::characters;  ///< characters or chapter 2's BPE
    std::size_t vocab_size = 512;                    ///< V for BPE (>= 256); unused for characters
};

/// What a corpus's tokens are, in one line: "154,469 characters, 61 distinct" or
/// "154,469 characters in 71,346 BPE tokens (V = 512: 256 bytes + 256 merges)".
/// @param corpus a loaded corpus
/// @return the line
std::string token_summary(const Corpus& corpus);

/// How many characters (code points) the text of `ids` holds per token: 1 for the character
/// tokenizer; for BPE what turns a loss per token into a loss per character
/// (loss per character = loss per token / characters per token).
/// @param tokenizer the vocabulary of the ids
/// @param ids token ids, e.g. the held-out split
/// @return characters / tokens (1 when ids is empty)
/// @throws ValueError if an id is outside the vocabulary
double characters_per_token(const Tokenizer& tokenizer, const std::vector<std::int64_t>& ids);

/// The largest corpus load_corpus reads: 256 MiB (its ids take 8 bytes per character more).
inline constexpr std::uint64_t kMaxCorpusBytes = std::uint64_t(256) << 20;

/// The memory load_corpus takes per byte of text with the character tokenizer: the text, its
/// code points, the offsets and ids of encode, the two splits (measured: 31.6 on a 4.9 MB
/// corpus).
inline constexpr std::uint64_t kCorpusMemoryPerByte = 32;

/// The same with a BPE vocabulary: bpe_train's linked list and pair lists, then encode
/// (measured: 85 on the same corpus).
inline constexpr std::uint64_t kCorpusMemoryPerByteBpe = 96;

/// Reads a UTF-8 text file and tokenizes it: characters, or a BPE learned on the file.
/// @param path the corpus file
/// @param min_tokens the fewest tokens acceptable (e.g. enough for windows of T + 1
///        tokens in both splits)
/// @param choice the vocabulary to build (characters by default)
/// @return the text, its vocabulary and its ids
/// @throws FileError naming the path if the file is missing, unreadable, not a regular file
///         (a directory, a FIFO, a device: refused before anything is read), larger than
///         kMaxCorpusBytes (the message states the limit), too large to tokenize within
///         memory_limit() (kCorpusMemoryPerByte or kCorpusMemoryPerByteBpe bytes per byte; the
///         message states the need and the limit, before anything is read), empty, or not valid
///         UTF-8 (the message gives the byte offset)
/// @throws ValueError naming the path if it holds fewer than min_tokens tokens, or if
///         choice.vocab_size < 256 for BPE, or if choice.kind is neither characters nor bpe
///         (a value cast from another integer; the message names it)
Corpus load_corpus(const std::string& path, std::size_t min_tokens,
                   const TokenizerChoice& choice = {});

/// Token ids cut in two: the model trains on the first part and is scored on the second.
struct Split {
    std::vector<std::int64_t> train;     ///< the first `floor(train_fraction · n)` ids
    std::vector<std::int64_t> held_out;  ///< the rest: text the model never trains on
};

/// Cuts `ids` at `floor(train_fraction · n)`: the start for training, the end held out.
/// The cut is by position, not at random, so the held-out text is a passage the model never
/// saw (random windows of one text overlap, and would leak).
/// @param ids the corpus ids
/// @param train_fraction in (0, 1), e.g. 0.9
/// @param window the tokens one window needs (T + 1): each part must hold at least that many
/// @return the two parts
/// @throws ValueError if train_fraction is outside (0, 1) or a part is shorter than window
///         (the message names both sizes)
Split split_tokens(const std::vector<std::int64_t>& ids, double train_fraction, std::size_t window);

/// Draws batches of random windows from a token sequence, reproducibly.
/// ```
///   start ~ uniform in [0, n − (T + 1)]        one per row, from std::mt19937_64(seed)
///   window[b] = tokens[start, start + T + 1)   [B, T + 1]
///   inputs, targets = shift_for_next_token(window)   both [B, T]
/// ```
class BatchLoader {
  public:
    /// A loader over `tokens` (kept by reference: they must outlive the loader).
    /// @param tokens the ids to draw from, at least T + 1 of them
    /// @param batch B, the windows per batch, >= 1
    /// @param context T, the model's input length, >= 1
    /// @param seed seeds the generator: the same seed gives the same batches
    /// @throws ValueError if batch or context is 0, tokens holds fewer than T + 1 ids (compared
    ///         without computing T + 1, which wraps around to 0 for T = SIZE_MAX), or a batch
    ///         `[B, T + 1]` would hold more than 2^48 ids (the message names the sizes)
    BatchLoader(const std::vector<std::int64_t>& tokens, std::size_t batch, std::size_t context,
                std::uint64_t seed);

    /// The next B windows of T + 1 consecutive tokens.
    /// @return `[B, T + 1]` ids
    TokenIds next_windows();

    /// The next batch as inputs and targets: shift_for_next_token(next_windows()).
    /// @return inputs and targets, both `[B, T]`
    NextToken next();

  private:
    const std::vector<std::int64_t>* tokens_;
    std::size_t batch_, context_;
    std::mt19937_64 rng_;
};

/// @}

}  // namespace wb::minigpt
