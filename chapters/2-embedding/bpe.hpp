/// @file bpe.hpp
/// @brief Chapter 2 — byte-level BPE: the tokenizer that decides what a token is.
///
/// The notes' §2: a token is not necessarily a word or one Chinese character; the tokenizer
/// decides. Byte-pair encoding (BPE) starts from the 256 possible bytes of UTF-8 text and learns,
/// one merge at a time, to write the most frequent adjacent pair of tokens as one new token.
/// Any text can be encoded (every byte is a token), and decoding gives its bytes back exactly.
///
/// Token ids: 0..255 are the bytes themselves; merge r (counting from 0) creates id 256 + r.
/// <!-- clause: bpe_train.merge-ids --> A list of merges is the whole vocabulary:
/// V = 256 + merges.size().
///
/// The rules every function here follows, pinned so that two correct programs agree exactly:
/// - **Counting.** The count of a pair (a, b) is the number of positions i of the sequence
///   with `seq[i] == a` and `seq[i + 1] == b`; overlapping positions all count ("aaa" holds
///   (a, a) twice). <!-- clause: bpe_train.count-overlaps -->
/// - **Choosing.** Each merge takes the pair with the highest count. **Ties**: among the pairs
///   with that count, the smallest pair of ids in lexicographic order — the smallest left id,
///   and among those the smallest right id, wherever the pairs occur and however many pairs
///   tie. <!-- clause: bpe_train.tie-smallest-pair -->
/// - **Merging.** The pair's occurrences are replaced from left to right, never overlapping:
///   "aaa" with the merge (a, a) → X becomes "Xa". <!-- clause: bpe_train.merge-left-to-right -->
/// - **Stopping.** Training stops after vocab_size − 256 merges, or earlier when no pair occurs
///   at least twice (a pair seen once shortens nothing but that one spot).
///   <!-- clause: bpe_train.stop -->
/// - **Encoding** applies the merges in the order they were learned, lowest rank first, each
///   over the whole sequence, with the same left-to-right rule. <!-- clause: bpe_encode.merge-order -->
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "workbook/core.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @addtogroup chapter2
/// @{

/// One learned merge: the adjacent pair (left, right) that becomes one new token.
///
/// Merge r of a list creates token id 256 + r; left and right are ids defined before it
/// (a byte, 0..255, or an earlier merge's id, < 256 + r).
struct BpeMerge {
    std::int64_t left = 0;   ///< id of the first token of the pair
    std::int64_t right = 0;  ///< id of the second token of the pair

    /// Two merges are equal when both ids are.
    bool operator==(const BpeMerge& other) const {
        return left == other.left && right == other.right;
    }
    /// Two merges differ when one id does.
    bool operator!=(const BpeMerge& other) const { return !(*this == other); }
};

/// The most merges a list may hold (a vocabulary of 256 + 2^20 tokens); bpe_deserialize refuses
/// a header that announces more, before reading anything else.
inline constexpr std::size_t kMaxBpeMerges = std::size_t(1) << 20;

/// Learns the merges of a byte-level BPE on `corpus`, by the rules of this file.
///
/// Starts from the corpus's bytes as ids 0..255 and repeats: count every adjacent pair, take the
/// most frequent (ties: the smallest (left, right)), replace its occurrences left to right by the
/// next id. Keep the counts up to date as you merge (only the neighbours of a merged pair
/// change): recounting the whole corpus for every merge is too slow for a real vocabulary (not
/// a promise: advice; a benchmark times it, the checks compare the merges only). The same corpus
/// and vocab_size give the same merges on every run. <!-- clause: bpe_train.deterministic -->
/// @param corpus the training text, any bytes (UTF-8 in practice), each byte read as its
///        unsigned value 0..255; may be empty <!-- clause: bpe_train.any-bytes -->
/// @param vocab_size V, the vocabulary wanted: 256 byte tokens plus up to V − 256 merges
/// @return the merges in the order learned, at most vocab_size − 256 of them (fewer when no pair
///         occurs twice any more; an empty corpus gives none)
/// @throws ValueError naming wb::bpe_train if vocab_size < 256 (the message gives vocab_size and
///         the 256 byte tokens that come first) <!-- clause: bpe_train.vocab-too-small -->
std::vector<BpeMerge> bpe_train(const std::string& corpus, std::size_t vocab_size);

/// Encodes bytes into ids: the text's bytes, then every merge in the order learned.
///
/// Merge 0 is applied to the whole sequence first (left to right, never overlapping), then
/// merge 1 to the result, and so on. On the training corpus this gives the training's own
/// sequence. <!-- clause: bpe_encode.training-sequence -->
/// @param text any bytes (UTF-8 in practice); empty gives no ids <!-- clause: bpe_encode.empty-text -->
/// @param merges a list made by bpe_train (or read back by bpe_deserialize)
/// @return the ids `[n]`, each in [0, 256 + merges.size()) <!-- clause: bpe_encode.ids-in-range -->
/// @throws ValueError naming wb::bpe_encode if the merges are not a valid list: merge r uses an
///         id outside [0, 256 + r) (the message names r, the id and the range)
///         <!-- clause: bpe_encode.merge-id-out-of-range -->
/// @throws ValueError naming wb::bpe_encode if merge r repeats an earlier merge's pair (the
///         message names r) <!-- clause: bpe_encode.merge-repeated -->
std::vector<std::int64_t> bpe_encode(const std::string& text, const std::vector<BpeMerge>& merges);

/// The bytes of every token: entry id is what token id stands for.
///
/// Entries 0..255 are the single bytes; entry 256 + r is entry left + entry right of merge r.
/// <!-- clause: bpe_vocab.entries -->
/// @param merges a valid list (see bpe_encode)
/// @return `[256 + merges.size()]` byte strings
/// @throws ValueError naming wb::bpe_vocab if the merges are not a valid list (the message names
///         r, and the id and the range when an id is outside it) <!-- clause: bpe_vocab.invalid-merges -->
std::vector<std::string> bpe_vocab(const std::vector<BpeMerge>& merges);

/// Decodes ids into bytes: the concatenation of each token's bytes.
///
/// `bpe_decode(bpe_encode(text, m), m) == text` for every text. <!-- clause: bpe_decode.round-trip -->
/// A list of ids that does not come from an encoded text may cut a multi-byte UTF-8 character in
/// two; the bytes are then returned as they are (the caller decides how to show them).
/// <!-- clause: bpe_decode.raw-bytes -->
/// @param ids token ids, each in [0, 256 + merges.size())
/// @param merges a valid list (see bpe_encode)
/// @return the bytes
/// @throws ValueError naming wb::bpe_decode if an id is out of range (the message names the id,
///         its position and the range [0, V)) <!-- clause: bpe_decode.id-out-of-range -->
/// @throws ValueError naming wb::bpe_decode (not a helper it calls) if the merges are not a valid
///         list (the message names r) <!-- clause: bpe_decode.invalid-merges -->
std::string bpe_decode(const std::vector<std::int64_t>& ids, const std::vector<BpeMerge>& merges);

/// Writes the merges as text, so that a model file can carry its vocabulary.
///
/// The form: a first line `wb-bpe 1 <count>`, then one line `<left> <right>` per merge, in
/// order, each line ending in `\n`; ids in decimal. <!-- clause: bpe_serialize.format -->
/// @param merges a valid list (see bpe_encode)
/// @return the text
/// @throws ValueError naming wb::bpe_serialize if the merges are not a valid list (the message
///         names r) <!-- clause: bpe_serialize.invalid-merges -->
std::string bpe_serialize(const std::vector<BpeMerge>& merges);

/// Reads what bpe_serialize wrote, refusing anything else.
///
/// `bpe_deserialize(bpe_serialize(m)) == m` for every valid list.
/// <!-- clause: bpe_deserialize.round-trip --> Reading is bounded: the count of the header is
/// checked against kMaxBpeMerges and against the data's length before any line after the first
/// is read. <!-- clause: bpe_deserialize.count-before-lines --> Every number, the count
/// included, is 1 to 10 decimal digits and nothing else (no sign, no space, no `\r`).
/// <!-- clause: bpe_deserialize.ten-digits --> The data must end exactly after the last line.
/// <!-- clause: bpe_deserialize.trailing-data -->
/// @param data the text
/// @return the merges
/// @throws ValueError naming wb::bpe_deserialize if the first line is not `wb-bpe 1 <count>`
///         followed by `\n` <!-- clause: bpe_deserialize.bad-header -->
/// @throws ValueError naming wb::bpe_deserialize if the count is above kMaxBpeMerges (the
///         message names the count and the limit) <!-- clause: bpe_deserialize.count-above-limit -->
/// @throws ValueError naming wb::bpe_deserialize if the count is larger than the lines the data
///         can hold, a line being at least 4 bytes (the message names the count)
///         <!-- clause: bpe_deserialize.count-exceeds-data -->
/// @throws ValueError naming wb::bpe_deserialize if a line is not two decimal ids separated by
///         one space, or is missing or lacks its `\n` (the message names the line number, the
///         first line being 1) <!-- clause: bpe_deserialize.bad-line -->
/// @throws ValueError naming wb::bpe_deserialize if the list is not valid (see bpe_encode; the
///         message names the line number and, for an id outside [0, 256 + r), the id and that
///         range) <!-- clause: bpe_deserialize.invalid-merges -->
std::vector<BpeMerge> bpe_deserialize(const std::string& data);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
