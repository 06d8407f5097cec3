/// @file tokenizer.hpp
/// @brief A character tokenizer that reads UTF-8: one token per Unicode code point, so a
/// Chinese character is one token, not three bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

/// The vocabulary: the distinct code points of a text, sorted, id = rank.
class Tokenizer {
public:
    /// The vocabulary of `text` (UTF-8).
    /// @throws ValueError if text is empty or not valid UTF-8
    static Tokenizer from_text(const std::string& text);

    /// Reads the form written by serialize().
    /// @throws ValueError naming "wb::minigpt::Tokenizer::deserialize" if the data is not a
    ///         vocabulary (bad header, not UTF-8, duplicate or unsorted entries, empty)
    static Tokenizer deserialize(const std::string& data);

    /// A text form of the vocabulary (a header line, then the characters as UTF-8).
    std::string serialize() const;

    /// Ids of `text`.
    /// @throws ValueError naming the character and its byte offset if it is not in the
    ///         vocabulary, or if text is not valid UTF-8
    std::vector<std::int64_t> encode(const std::string& text) const;

    /// Text of `ids`.
    /// @throws ValueError if an id is outside [0, size())
    std::string decode(const std::vector<std::int64_t>& ids) const;

    /// Number of distinct characters (the model's V).
    std::size_t size() const;

private:
    std::vector<char32_t> chars_;  // sorted, distinct
};

/// @}

}  // namespace wb::minigpt
