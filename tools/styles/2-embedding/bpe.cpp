// Style answer for chapter 2's BPE (tools/test-styles): training keeps its pair counts in an
// ordered std::set of (-count, left, right) instead of a heap with stale entries, each pair's
// positions in a list sorted only when it is merged; encoding rewrites into a second buffer;
// the reader walks the data with one cursor; messages worded unlike the reference but naming
// each fact bpe.hpp promises. It exists because it is a correct answer: every check of
// chapter 2 must accept it.
#include "2-embedding/bpe.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace wb {
inline namespace WB_IMPL {
namespace {

using Pair = std::pair<std::int64_t, std::int64_t>;

// Raises a ValueError from `fn` unless `merges` is a list bpe_train could have made.
void validate(const std::string& fn, const std::vector<BpeMerge>& merges) {
    std::set<Pair> seen;
    for (std::size_t r = 0; r < merges.size(); ++r) {
        const std::int64_t limit = 256 + static_cast<std::int64_t>(r);
        for (std::int64_t id : {merges[r].left, merges[r].right}) {
            if (id < 0 || id >= limit) {
                throw ValueError(fn + ": merge " + num(r) + " refers to id " + std::to_string(id) +
                                 ", which is not defined before it; expected [0, " +
                                 std::to_string(limit) + ")");
            }
        }
        if (!seen.insert({merges[r].left, merges[r].right}).second) {
            throw ValueError(fn + ": merge " + num(r) + " (" + std::to_string(merges[r].left) +
                             ", " + std::to_string(merges[r].right) +
                             ") repeats the pair of an earlier merge");
        }
    }
}

std::vector<std::int64_t> bytes_of(const std::string& text) {
    std::vector<std::int64_t> ids;
    ids.reserve(text.size());
    for (char c : text) ids.push_back(static_cast<unsigned char>(c));
    return ids;
}

// The training state: tokens in a doubly linked list over the corpus positions.
struct Trainer {
    std::vector<std::int64_t> tok;
    std::vector<long> prev, next;
    std::vector<bool> alive;
    std::map<Pair, long> count;
    std::set<std::tuple<long, std::int64_t, std::int64_t>> ranked;  // (-count, left, right)
    std::map<Pair, std::vector<long>> where;                        // left node of each pair

    void add(const Pair& p, long delta, long at) {
        long& c = count[p];
        if (c > 0) ranked.erase({-c, p.first, p.second});
        c += delta;
        if (c > 0) ranked.insert({-c, p.first, p.second});
        if (delta > 0) where[p].push_back(at);
    }

    explicit Trainer(const std::string& corpus) : tok(bytes_of(corpus)) {
        const long n = static_cast<long>(tok.size());
        prev.resize(tok.size());
        next.resize(tok.size());
        alive.assign(tok.size(), true);
        for (long i = 0; i < n; ++i) {
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        for (long i = 0; i + 1 < n; ++i) add({tok[i], tok[i + 1]}, 1, i);
    }

    void merge(const Pair& p, std::int64_t z) {
        std::vector<long> spots = std::move(where[p]);
        where.erase(p);
        std::sort(spots.begin(), spots.end());
        spots.erase(std::unique(spots.begin(), spots.end()), spots.end());
        for (long i : spots) {
            if (!alive[i] || tok[i] != p.first) continue;
            const long j = next[i];
            if (j < 0 || tok[j] != p.second) continue;
            const long before = prev[i], after = next[j];
            add(p, -1, i);
            if (before >= 0) add({tok[before], p.first}, -1, before);
            if (after >= 0) add({p.second, tok[after]}, -1, j);
            tok[i] = z;
            alive[j] = false;
            next[i] = after;
            if (after >= 0) prev[after] = i;
            if (before >= 0) add({tok[before], z}, 1, before);
            if (after >= 0) add({z, tok[after]}, 1, i);
        }
    }
};

// Applies merge (a, b) -> z left to right over ids, never overlapping.
std::vector<std::int64_t> apply(const std::vector<std::int64_t>& ids, const BpeMerge& m,
                                std::int64_t z) {
    std::vector<std::int64_t> out;
    out.reserve(ids.size());
    std::size_t i = 0;
    while (i < ids.size()) {
        if (i + 1 < ids.size() && ids[i] == m.left && ids[i + 1] == m.right) {
            out.push_back(z);
            i += 2;
        } else {
            out.push_back(ids[i]);
            i += 1;
        }
    }
    return out;
}

std::vector<std::string> table_of(const std::vector<BpeMerge>& merges) {
    std::vector<std::string> bytes(256 + merges.size());
    for (int c = 0; c < 256; ++c) bytes[c] = std::string(1, static_cast<char>(c));
    for (std::size_t r = 0; r < merges.size(); ++r) {
        bytes[256 + r] = bytes[merges[r].left] + bytes[merges[r].right];
    }
    return bytes;
}

// A decimal number of 1 to 10 digits, or false.
bool parse_id(const std::string& s, std::int64_t& value) {
    if (s.empty() || s.size() > 10) return false;
    value = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + (c - '0');
    }
    return true;
}

// "0" is how bpe_serialize writes zero; "03" or "00" it never writes.
bool leading_zero(const std::string& s) { return s.size() > 1 && s[0] == '0'; }

}  // namespace

std::vector<BpeMerge> bpe_train(const std::string& corpus, std::size_t vocab_size) {
    if (vocab_size < 256) {
        throw ValueError("wb::bpe_train: vocab_size = " + num(vocab_size) +
                         " leaves no room for the 256 byte tokens, which come first; expected "
                         "vocab_size >= 256");
    }
    Trainer state(corpus);
    std::vector<BpeMerge> merges;
    while (merges.size() < vocab_size - 256 && !state.ranked.empty()) {
        const auto [neg, left, right] = *state.ranked.begin();
        if (-neg < 2) break;
        const std::int64_t z = 256 + static_cast<std::int64_t>(merges.size());
        state.merge({left, right}, z);
        merges.push_back({left, right});
    }
    return merges;
}

std::vector<std::int64_t> bpe_encode(const std::string& text, const std::vector<BpeMerge>& merges) {
    validate("wb::bpe_encode", merges);
    std::vector<std::int64_t> ids = bytes_of(text);
    for (std::size_t r = 0; r < merges.size() && ids.size() > 1; ++r) {
        ids = apply(ids, merges[r], 256 + static_cast<std::int64_t>(r));
    }
    return ids;
}

std::vector<std::string> bpe_vocab(const std::vector<BpeMerge>& merges) {
    validate("wb::bpe_vocab", merges);
    return table_of(merges);
}

std::string bpe_decode(const std::vector<std::int64_t>& ids, const std::vector<BpeMerge>& merges) {
    const std::int64_t V = 256 + static_cast<std::int64_t>(merges.size());
    for (std::size_t t = 0; t < ids.size(); ++t) {
        if (ids[t] < 0 || ids[t] >= V) {
            throw ValueError("wb::bpe_decode: ids[" + num(t) + "] = " + std::to_string(ids[t]) +
                             " is no token; expected an id in [0, " + std::to_string(V) + ")");
        }
    }
    validate("wb::bpe_decode", merges);
    const std::vector<std::string> bytes = table_of(merges);
    std::string out;
    for (std::int64_t id : ids) out += bytes[static_cast<std::size_t>(id)];
    return out;
}

std::string bpe_serialize(const std::vector<BpeMerge>& merges) {
    validate("wb::bpe_serialize", merges);
    std::string out = "wb-bpe 1 " + num(merges.size()) + "\n";
    for (const BpeMerge& m : merges) {
        out += std::to_string(m.left);
        out += ' ';
        out += std::to_string(m.right);
        out += '\n';
    }
    return out;
}

std::vector<BpeMerge> bpe_deserialize(const std::string& data) {
    const std::string fn = "wb::bpe_deserialize";
    const std::string magic = "wb-bpe 1 ";
    const std::size_t eol = data.find('\n');
    if (eol == std::string::npos || data.compare(0, magic.size(), magic) != 0) {
        throw ValueError(fn + ": line 1 is not 'wb-bpe 1 <count>'");
    }
    std::int64_t count = 0;
    const std::string count_text = data.substr(magic.size(), eol - magic.size());
    if (leading_zero(count_text)) {
        throw ValueError(fn + ": line 1's count '" + count_text.substr(0, 12) +
                         "' starts with a leading zero, which bpe_serialize never writes");
    }
    if (!parse_id(count_text, count)) {
        throw ValueError(fn +
                         ": line 1 is not 'wb-bpe 1 <count>' (the count must be 1 to 10 "
                         "decimal digits)");
    }
    if (static_cast<std::uint64_t>(count) > kMaxBpeMerges) {
        throw ValueError(fn + ": line 1 announces " + std::to_string(count) +
                         " merges, more than kMaxBpeMerges = " + num(kMaxBpeMerges));
    }
    const std::size_t rest = data.size() - eol - 1;
    if (static_cast<std::uint64_t>(count) > rest / 4) {
        throw ValueError(fn + ": line 1 announces " + std::to_string(count) + " merges, but the " +
                         num(rest) + " bytes after it hold at most " + num(rest / 4) +
                         " lines of 4 bytes or more");
    }
    std::vector<BpeMerge> merges;
    merges.reserve(static_cast<std::size_t>(count));
    std::set<Pair> seen;
    std::size_t at = eol + 1;
    for (std::int64_t r = 0; r < count; ++r) {
        const std::string line_no = std::to_string(r + 2);
        const std::size_t end = data.find('\n', at);
        if (end == std::string::npos) {
            throw ValueError(fn + ": line " + line_no + " is missing or unterminated; " +
                             std::to_string(count) + " merge lines were announced");
        }
        const std::string line = data.substr(at, end - at);
        const std::size_t space = line.find(' ');
        BpeMerge m;
        if (space != std::string::npos &&
            (leading_zero(line.substr(0, space)) || leading_zero(line.substr(space + 1)))) {
            throw ValueError(fn + ": line " + line_no + " '" + line.substr(0, 24) +
                             "' has an id with a leading zero, which bpe_serialize never writes");
        }
        if (space == std::string::npos || !parse_id(line.substr(0, space), m.left) ||
            !parse_id(line.substr(space + 1), m.right)) {
            throw ValueError(fn + ": line " + line_no + " is not two decimal ids '<left> <right>'");
        }
        for (std::int64_t id : {m.left, m.right}) {
            if (id >= 256 + r) {
                throw ValueError(fn + ": line " + line_no + " (merge " + std::to_string(r) +
                                 ") uses id " + std::to_string(id) + ", outside [0, " +
                                 std::to_string(256 + r) + ")");
            }
        }
        if (!seen.insert({m.left, m.right}).second) {
            throw ValueError(fn + ": line " + line_no + " repeats an earlier merge's pair");
        }
        merges.push_back(m);
        at = end + 1;
    }
    if (at != data.size()) {
        throw ValueError(fn + ": line " + std::to_string(count + 2) +
                         " follows the last announced merge; expected the data to end there");
    }
    return merges;
}

}  // namespace WB_IMPL
}  // namespace wb
