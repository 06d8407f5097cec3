/// @file gpt2.hpp
/// @brief Chapter 2 — GPT-2's byte-level BPE: the exact token ids of a tokenizer in real use.
///
/// GPT-2's tokenizer is the byte-level BPE of bpe.hpp with three differences, each an exercise
/// here: its merges are given (50,000 of them, learned by OpenAI), a merge joins two *strings*
/// (each byte written as one printable character), and the text is first cut into pieces by a
/// pattern (wb::gpt2_pretokenize, given), so that no token crosses from a word into the space
/// or the punctuation around it. Encoding a text is: cut it into pieces; write each piece's
/// bytes as characters; merge within the piece, always the pair of lowest rank first; look each
/// resulting token up in encoder.json. Decoding goes back: ids to tokens, characters to bytes.
/// The ids must be exactly GPT-2's: the checks compare them with two independent tokenizers
/// (gpt-3-encoder and tiktoken, tools/goldens/gpt2_tokenizer.js).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workbook/core.hpp"
#include "workbook/gpt2_given.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @addtogroup chapter2
/// @{

/// GPT-2's map from a byte to the printable character that stands for it in vocab.bpe and
/// encoder.json.
///
/// The bytes that are printable characters of Latin-1 keep their own character: `!` .. `~`
/// (33..126), `¡` .. `¬` (161..172) and `®` .. `ÿ` (174..255).
/// <!-- clause: gpt2_bytes_to_unicode.printable-kept --> The other 68 bytes (0..32, 127..160
/// and 173), in increasing order, take the characters U+0100, U+0101, … in turn: byte 0 is
/// U+0100 `Ā`, the space (32) is U+0120 `Ġ`, the newline (10) U+010A `Ċ`.
/// <!-- clause: gpt2_bytes_to_unicode.others-shifted -->
/// @return `[256]` code points: entry b is the character of byte b; no two are equal
std::vector<char32_t> gpt2_bytes_to_unicode();

/// Merges one piece by GPT-2's rule: its bytes as characters, then the lowest-ranked pair, again
/// and again.
///
/// The piece starts as one symbol per byte, each the character gpt2_bytes_to_unicode gives it
/// (as UTF-8). <!-- clause: gpt2_bpe.bytes-as-characters --> Then, while two adjacent symbols
/// form a pair of `vocab.merge_rank`: take the pair of **lowest rank** among all adjacent pairs
/// (not the leftmost, not the first merge of the list that occurs) and join every occurrence of
/// it, left to right and never overlapping ("aaa" with the merge (a, a) gives "aa", "a").
/// <!-- clause: gpt2_bpe.lowest-rank-first --> Stop when no adjacent pair has a rank.
/// <!-- clause: gpt2_bpe.stop -->
/// @param piece one piece's bytes (any bytes; empty gives no symbols)
/// @param vocab the merges, by rank (gpt2_load or gpt2_vocab)
/// @return the symbols, which joined give the piece's characters
std::vector<std::string> gpt2_bpe(const std::string& piece, const Gpt2Vocab& vocab);

/// Encodes UTF-8 text into GPT-2's ids.
///
/// Cuts the text with wb::gpt2_pretokenize, merges each piece on its own with gpt2_bpe (no
/// token crosses two pieces), and maps each symbol to its id through `vocab.encoder`.
/// <!-- clause: gpt2_encode.pieces --> With GPT-2's files the ids are exactly GPT-2's, for
/// every text. <!-- clause: gpt2_encode.gpt2-ids --> Empty text gives no ids.
/// @param text UTF-8 text
/// @param vocab the vocabulary (gpt2_load for GPT-2's)
/// @return the ids, each in [0, vocab.tokens.size())
/// @throws ValueError naming wb::gpt2_pretokenize if the text is not valid UTF-8 (the message
///         gives the byte offset) <!-- clause: gpt2_encode.invalid-utf8 -->
/// @throws ValueError naming wb::gpt2_encode if a symbol has no id in `vocab.encoder` (never
///         with GPT-2's files; the message names the symbol) <!-- clause: gpt2_encode.unknown-symbol -->
std::vector<std::int64_t> gpt2_encode(const std::string& text, const Gpt2Vocab& vocab);

/// Decodes GPT-2's ids back into bytes: each id's token, each of its characters back to its byte.
///
/// `gpt2_decode(gpt2_encode(text, v), v) == text` for every UTF-8 text.
/// <!-- clause: gpt2_decode.round-trip --> Ids that do not come from one text may end in the
/// middle of a UTF-8 character; the bytes are returned as they are. <!-- clause: gpt2_decode.raw-bytes -->
/// @param ids token ids, each in [0, vocab.tokens.size())
/// @param vocab the vocabulary (its tokens are made of gpt2_bytes_to_unicode's characters)
/// @return the bytes
/// @throws ValueError naming wb::gpt2_decode if an id is out of range (the message names the
///         id, its position and the range [0, V)) <!-- clause: gpt2_decode.id-out-of-range -->
std::string gpt2_decode(const std::vector<std::int64_t>& ids, const Gpt2Vocab& vocab);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
