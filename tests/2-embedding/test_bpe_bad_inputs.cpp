#include "2-embedding/bpe.hpp"
#include "check.hpp"

#include <string>
#include <vector>

// Text that bpe_serialize never writes: bpe_serialize writes every number as std::to_string
// does, so one list of merges has exactly one text, and bpe_deserialize reads only that text.

TEST_CASE("bpe_deserialize refuses leading zeros, which bpe_serialize never writes",
          "[bpe][bpe_deserialize][errors][c:bpe_deserialize.leading-zero]") {
    // The list (97, 97) then (256, 98): its own text reads back, with the id 0 written as "0".
    const std::vector<wb::BpeMerge> merges{{97, 97}, {256, 98}, {0, 0}};
    const std::string text = "wb-bpe 1 3\n97 97\n256 98\n0 0\n";
    CHECK(wb::bpe_serialize(merges) == text);
    CHECK(wb::bpe_deserialize(text) == merges);

    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 03\n97 97\n256 98\n0 0\n"),
                    "a count of \"03\" is 3 written in a way bpe_serialize never writes",
                    "wb::bpe_deserialize", "03", "leading zero");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 3\n097 97\n256 98\n0 0\n"),
                    "an id \"097\" on line 2 is refused, naming the line", "wb::bpe_deserialize",
                    "line 2", "leading zero");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 3\n97 97\n256 098\n0 0\n"),
                    "the right id of line 3 too", "wb::bpe_deserialize", "line 3", "leading zero");
    WB_CHECK_THROWS(wb::ValueError, wb::bpe_deserialize("wb-bpe 1 3\n97 97\n256 98\n00 0\n"),
                    "zero itself is written \"0\", not \"00\"", "wb::bpe_deserialize", "line 4",
                    "leading zero");
}
