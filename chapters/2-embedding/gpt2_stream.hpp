/// @file gpt2_stream.hpp
/// @brief Chapter 2 — GPT-2's ids of a text too large to hold: encoding a stream, chunk by chunk.
///
/// gpt2_encode takes the whole text at once. A corpus of gigabytes is read in chunks instead,
/// and the ids of each part given out as soon as they are final, so that memory does not grow
/// with the text. The whole difficulty is the seam between two chunks: a chunk may end inside a
/// UTF-8 character, and the last pieces of gpt2_pretokenize may still change when the next
/// chunk comes (`you'l` + `l` is `you` `'ll`, not `you` `'` `ll`; a run of spaces gives its
/// last space to the word that follows it). CS336's `encode_iterable` is the same exercise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>

#include "2-embedding/gpt2.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @addtogroup chapter2
/// @{

/// Encodes the UTF-8 text read from `in` into GPT-2's ids, giving each id to `emit` as soon as
/// it is final, without holding the whole text.
///
/// The ids given to `emit`, in order, are exactly gpt2_encode's ids of the whole text, for
/// every chunk size. <!-- clause: gpt2_encode_stream.same-ids --> The text is read with
/// `in.read` in chunks of at most `chunk_bytes` bytes, and what is held between chunks is
/// bounded, whatever the length of the text: whenever `emit` is called, the bytes read from
/// `in` so far minus the bytes of the ids given so far are at most `chunk_bytes` plus twice
/// (the longest piece of the whole text's gpt2_pretokenize + 1) plus 3 (a character the chunk
/// cut). <!-- clause: gpt2_encode_stream.bounded --> An empty stream gives no ids.
/// <!-- clause: gpt2_encode_stream.empty -->
/// @param in the text, UTF-8, read to its end
/// @param vocab the vocabulary (gpt2_load for GPT-2's)
/// @param emit called once per id, in the order of the text
/// @param chunk_bytes the most bytes read from `in` at once, >= 1
/// @return the number of ids given to `emit`
/// @throws ValueError naming wb::gpt2_encode_stream if chunk_bytes is 0 (the message gives the
///         value and that at least 1 is expected), before anything is read
///         <!-- clause: gpt2_encode_stream.chunk-zero -->
/// @throws ValueError naming wb::gpt2_pretokenize if the text is not valid UTF-8, as gpt2_encode
///         does, a character cut off by the end of the stream included; ids of the text before
///         the bad byte may have been given already <!-- clause: gpt2_encode_stream.invalid-utf8 -->
std::size_t gpt2_encode_stream(std::istream& in, const Gpt2Vocab& vocab,
                               const std::function<void(std::int64_t)>& emit,
                               std::size_t chunk_bytes = 65536);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
