/// @file tokenizer.hpp
/// @brief The program's two tokenizers of UTF-8 text: characters (one token per Unicode code
/// point, so a Chinese character is one token, not three bytes) and chapter 2's byte-level BPE
/// (bpe_train, bpe_encode, bpe_decode: the learner's own, once chapter 2 passes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <memory>

#include "2-embedding/bpe.hpp"
#include "workbook/gpt2_given.hpp"

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// Decodes UTF-8 into code points.
/// @throws ValueError naming "wb::minigpt::utf8_decode" and the byte offset if the bytes are
///         not valid UTF-8 (bad lead byte, truncated sequence, overlong form, surrogate, > U+10FFFF)
std::vector<char32_t> utf8_decode(const std::string& bytes);

/// Encodes code points as UTF-8.
/// @throws ValueError if a code point is a surrogate or above U+10FFFF
std::string utf8_encode(const std::vector<char32_t>& code_points);

/// Makes bytes showable as text: every valid UTF-8 sequence is kept, every byte that starts
/// none is replaced by U+FFFD (the replacement character). Valid UTF-8 comes back unchanged.
/// A BPE model may generate a token that ends in the middle of a character; this is what the
/// text then shows.
/// @param bytes any bytes
/// @return valid UTF-8
std::string utf8_repair(const std::string& bytes);

/// The most bytes the tokens of a BPE vocabulary may hold in all: 64 MiB. Decoding builds the
/// table of every token's bytes (wb::bpe_vocab), and a valid list of merges can make that table
/// huge (2^17 merges forming a chain, token r holding r + 2 bytes, need 8 GiB): such a list is
/// refused when it is read or learned, before any table is built. A learned vocabulary of
/// 2^16 tokens holds well under 1 MiB.
inline constexpr std::uint64_t kMaxBpeVocabularyBytes = std::uint64_t(64) << 20;

/// The kinds of vocabulary (`minigpt --tokenizer char|bpe|gpt2`).
enum class TokenizerKind {
    characters,  ///< one token per distinct code point of the training text
    bpe,         ///< chapter 2's byte-level BPE: 256 byte tokens and the learned merges
    gpt2,        ///< GPT-2's vocabulary, encoded by chapter 2's gpt2_encode (a converted GPT-2)
};

/// The largest number of tokens or merges a GPT-2 vocabulary part may announce: 2^20 (GPT-2
/// has 50,257 tokens and 50,000 merges).
inline constexpr std::size_t kMaxGpt2Entries = std::size_t(1) << 20;

/// The vocabulary: either the distinct code points of a text, sorted, id = rank; or the 256
/// bytes and the merges of chapter 2's BPE, id = 256 + rank of the merge.
class Tokenizer {
  public:
    /// The character vocabulary of `text` (UTF-8).
    /// @throws ValueError if text is empty or not valid UTF-8
    static Tokenizer from_text(const std::string& text);

    /// A byte-level BPE vocabulary learned on `text` with chapter 2's wb::bpe_train.
    /// @param text the training text (UTF-8)
    /// @param vocab_size V wanted, >= 256 (fewer when no pair of the text repeats any more)
    /// @throws ValueError naming "wb::minigpt::Tokenizer::bpe_from_text" if text is empty or not
    ///         valid UTF-8, or vocab_size < 256, or the learned tokens hold more than
    ///         kMaxBpeVocabularyBytes bytes in all (the message states both figures)
    /// @throws NotImplemented if chapter 2's BPE is still the stub
    static Tokenizer bpe_from_text(const std::string& text, std::size_t vocab_size);

    /// GPT-2's vocabulary (chapter 2's Gpt2Vocab): encode is chapter 2's gpt2_encode, decode its
    /// gpt2_decode.
    static Tokenizer from_gpt2(Gpt2Vocab vocab);

    /// Reads the form written by serialize(): any kind; the character form is the one
    /// earlier versions of the program wrote, read as before.
    /// @throws ValueError naming "wb::minigpt::Tokenizer::deserialize" if the data is not a
    ///         vocabulary (bad header, a count with a leading zero, not UTF-8, duplicate or
    ///         unsorted entries, empty; for BPE anything wb::bpe_deserialize refuses, and tokens
    ///         that hold more than kMaxBpeVocabularyBytes bytes in all, the message stating both
    ///         figures). Bytes of the data quoted in a message are shown printable: a carriage
    ///         return of a CRLF line end as `\r`.
    static Tokenizer deserialize(const std::string& data);

    /// A text form of the vocabulary. Characters: a header line `wb-minigpt-vocab 1 <count>`,
    /// then the characters as UTF-8. BPE: a line `wb-minigpt-bpe 1`, then wb::bpe_serialize.
    /// GPT-2: a line `wb-minigpt-gpt2 1 <tokens> <merges>`, then each token in id order on a
    /// line of its own (encoder.json's strings), then each merge `first second` on a line, in
    /// rank order (vocab.bpe's lines): tools/convert-gpt2 writes this form.
    std::string serialize() const;

    /// Ids of `text`.
    /// @throws ValueError if text is not valid UTF-8 (the message gives the byte offset), or,
    ///         for characters, naming the character and its byte offset if it is not in the
    ///         vocabulary (BPE encodes every text)
    std::vector<std::int64_t> encode(const std::string& text) const;

    /// Text of `ids`. For BPE the bytes of the tokens, made valid UTF-8 by utf8_repair (a
    /// list of ids cut from a longer text may end inside a character).
    /// @throws ValueError if an id is outside [0, size())
    std::string decode(const std::vector<std::int64_t>& ids) const;

    /// The model's V: distinct characters, 256 + the number of merges, or GPT-2's tokens.
    std::size_t size() const;

    /// Characters, BPE or GPT-2's.
    TokenizerKind kind() const;

    /// The merges of a BPE vocabulary, in the order learned (empty for characters).
    const std::vector<BpeMerge>& merges() const;

  private:
    TokenizerKind kind_ = TokenizerKind::characters;
    std::vector<char32_t> chars_;            // characters: sorted, distinct
    std::vector<BpeMerge> merges_;           // bpe: chapter 2's merges, token 256 + r is merge r
    std::shared_ptr<const Gpt2Vocab> gpt2_;  // gpt2: GPT-2's merges and tokens (shared, 4 MB)
};

/// @}

}  // namespace wb::minigpt
