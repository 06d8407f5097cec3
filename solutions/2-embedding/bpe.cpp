// Chapter 2 — reference implementation of the byte-level BPE.
#include "2-embedding/bpe.hpp"

#include <algorithm>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

namespace {

constexpr std::int64_t kByteTokens = 256;  // ids 0..255 are the bytes themselves
const char* const kHeader = "wb-bpe 1 ";   // the first line of bpe_serialize, before the count

// A pair of ids as one hash key: left in the high 32 bits, right in the low 32. Every id of a
// valid list is below 256 + kMaxBpeMerges, far below 2^32.
std::uint64_t pair_key(std::int64_t left, std::int64_t right) {
    return (static_cast<std::uint64_t>(left) << 32) | static_cast<std::uint64_t>(right);
}

// Throws unless merge r uses ids defined before it, [0, 256 + r), and repeats no earlier pair.
// `where` names the merge in the message ("merge 3", or "line 5 (merge 3)" when reading).
void check_merge(const std::string& fn, const std::string& where, std::size_t r, const BpeMerge& m,
                 std::unordered_set<std::uint64_t>& seen) {
    const std::int64_t limit = kByteTokens + static_cast<std::int64_t>(r);
    for (const std::int64_t id : {m.left, m.right}) {
        if (id < 0 || id >= limit) {
            throw ValueError(fn + ": " + where + " uses id " + std::to_string(id) +
                             ", expected an id in [0, " + std::to_string(limit) +
                             ") (a byte, or the id of an earlier merge)");
        }
    }
    if (!seen.insert(pair_key(m.left, m.right)).second) {
        throw ValueError(fn + ": " + where + " repeats the pair (" + std::to_string(m.left) + ", " +
                         std::to_string(m.right) +
                         ") of an earlier merge (expected every pair once)");
    }
}

void check_merges(const std::string& fn, const std::vector<BpeMerge>& merges) {
    std::unordered_set<std::uint64_t> seen;
    seen.reserve(merges.size());
    for (std::size_t r = 0; r < merges.size(); ++r) {
        check_merge(fn, "merge " + std::to_string(r), r, merges[r], seen);
    }
}

// ---- training: a linked list of tokens and pair counts kept up to date ----------------------

// The corpus as a doubly linked list: merging a pair rewrites one node and unlinks the next,
// in O(1), without moving the rest of the corpus.
struct Sequence {
    std::vector<std::int64_t> token;  // [n] id at each position; -1 once the position is unlinked
    std::vector<std::int64_t> prev;   // [n] previous live position, -1 at the start
    std::vector<std::int64_t> next;   // [n] next live position, -1 at the end
};

// A pair and its count when it was pushed. The heap's top is the pair to merge next: the
// highest count, and among equal counts the smallest (left, right) — the pinned tie rule.
struct Candidate {
    std::int64_t count, left, right;
    bool operator<(const Candidate& o) const {  // "lower priority than o"
        if (count != o.count) return count < o.count;
        return std::tie(left, right) > std::tie(o.left, o.right);
    }
};

// The count of every adjacent pair, where it was seen, and a heap to find the best one.
// A count change pushes a fresh heap entry; an entry whose count is no longer the pair's count
// is stale and skipped when it reaches the top (cheaper than updating entries in place).
struct PairStats {
    std::unordered_map<std::uint64_t, std::int64_t> count;               // pair -> occurrences
    std::unordered_map<std::uint64_t, std::vector<std::int64_t>> where;  // pair -> left positions
    std::priority_queue<Candidate> heap;
};

// count(left, right) += delta; a new occurrence (delta > 0) also records its position `at`.
void change(PairStats& s, std::int64_t left, std::int64_t right, std::int64_t delta,
            std::int64_t at) {
    const std::uint64_t key = pair_key(left, right);
    std::int64_t& c = s.count[key];
    c += delta;
    if (delta > 0) s.where[key].push_back(at);
    if (c > 0) s.heap.push({c, left, right});
}

Sequence sequence_of(const std::string& corpus) {
    const auto n = static_cast<std::int64_t>(corpus.size());
    Sequence seq;
    seq.token.resize(corpus.size());
    seq.prev.resize(corpus.size());
    seq.next.resize(corpus.size());
    for (std::int64_t i = 0; i < n; ++i) {
        seq.token[i] = static_cast<unsigned char>(corpus[i]);  // a byte is its own id, 0..255
        seq.prev[i] = i - 1;
        seq.next[i] = i + 1 < n ? i + 1 : -1;
    }
    return seq;
}

PairStats count_pairs(const Sequence& seq) {
    PairStats s;
    for (std::size_t i = 0; i + 1 < seq.token.size(); ++i) {
        const std::uint64_t key = pair_key(seq.token[i], seq.token[i + 1]);
        ++s.count[key];
        s.where[key].push_back(static_cast<std::int64_t>(i));
    }
    for (const auto& [key, c] : s.count) {
        s.heap.push({c, static_cast<std::int64_t>(key >> 32),
                     static_cast<std::int64_t>(key & 0xFFFFFFFFu)});
    }
    return s;
}

// The pair to merge next, or false when no pair occurs at least twice.
bool best_pair(PairStats& s, Candidate& best) {
    while (!s.heap.empty()) {
        const Candidate top = s.heap.top();
        const auto it = s.count.find(pair_key(top.left, top.right));
        if (it != s.count.end() && it->second == top.count) {
            best = top;
            return top.count >= 2;
        }
        s.heap.pop();  // stale: the pair's count changed since this entry was pushed
    }
    return false;
}

// Replaces every occurrence of (a, b) by z, left to right, and updates the counts: only the
// pairs that touch a merged occurrence change, (p, a) → (p, z) on the left and (b, q) → (z, q)
// on the right.
void merge_everywhere(Sequence& seq, PairStats& s, std::int64_t a, std::int64_t b, std::int64_t z) {
    const std::uint64_t key = pair_key(a, b);
    std::vector<std::int64_t> positions = std::move(s.where[key]);
    s.where.erase(key);
    // Left to right: in "aaa" the occurrence at 0 is merged, the one at 1 is then gone.
    std::sort(positions.begin(), positions.end());
    for (const std::int64_t i : positions) {
        // A recorded position may be stale: already unlinked, or rewritten by an earlier merge.
        if (seq.token[i] != a) continue;
        const std::int64_t j = seq.next[i];
        if (j < 0 || seq.token[j] != b) continue;
        const std::int64_t p = seq.prev[i], q = seq.next[j];
        change(s, a, b, -1, i);
        if (p >= 0) {
            change(s, seq.token[p], a, -1, p);
            change(s, seq.token[p], z, +1, p);
        }
        if (q >= 0) {
            change(s, b, seq.token[q], -1, j);
            change(s, z, seq.token[q], +1, i);
        }
        seq.token[i] = z;  // i now holds the merged token, j leaves the list
        seq.token[j] = -1;
        seq.next[i] = q;
        if (q >= 0) seq.prev[q] = i;
    }
}

std::uint64_t digits_value(const std::string& text) {
    std::uint64_t v = 0;
    for (const char ch : text) v = v * 10 + static_cast<std::uint64_t>(ch - '0');
    return v;
}

bool all_digits(const std::string& text, std::size_t most) {
    return !text.empty() && text.size() <= most &&
           std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

}  // namespace

std::vector<BpeMerge> bpe_train(const std::string& corpus, std::size_t vocab_size) {
    if (vocab_size < static_cast<std::size_t>(kByteTokens)) {
        throw ValueError("wb::bpe_train: vocab_size = " + std::to_string(vocab_size) +
                         ", expected at least 256 (the 256 byte tokens come first, each merge "
                         "adds one)");
    }
    const std::size_t wanted = vocab_size - kByteTokens;  // merges to learn
    Sequence seq = sequence_of(corpus);
    PairStats stats = count_pairs(seq);
    std::vector<BpeMerge> merges;
    Candidate best{};
    while (merges.size() < wanted && best_pair(stats, best)) {
        const std::int64_t z = kByteTokens + static_cast<std::int64_t>(merges.size());
        merges.push_back({best.left, best.right});
        merge_everywhere(seq, stats, best.left, best.right, z);
    }
    return merges;
}

std::vector<std::int64_t> bpe_encode(const std::string& text, const std::vector<BpeMerge>& merges) {
    check_merges("wb::bpe_encode", merges);
    std::vector<std::int64_t> ids(text.size());  // [n] the bytes, then fewer ids per merge
    for (std::size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
    // Merge r only ever sees the result of merges 0..r-1, as in training.
    for (std::size_t r = 0; r < merges.size() && ids.size() >= 2; ++r) {
        const std::int64_t a = merges[r].left, b = merges[r].right;
        const std::int64_t z = kByteTokens + static_cast<std::int64_t>(r);
        std::size_t out = 0;  // compacts in place: out <= i always
        for (std::size_t i = 0; i < ids.size();) {
            if (i + 1 < ids.size() && ids[i] == a && ids[i + 1] == b) {
                ids[out++] = z;
                i += 2;  // left to right, never overlapping
            } else {
                ids[out++] = ids[i++];
            }
        }
        ids.resize(out);
    }
    return ids;
}

std::vector<std::string> bpe_vocab(const std::vector<BpeMerge>& merges) {
    check_merges("wb::bpe_vocab", merges);
    std::vector<std::string> bytes(kByteTokens + merges.size());  // [V]
    for (int b = 0; b < kByteTokens; ++b) bytes[b] = std::string(1, static_cast<char>(b));
    for (std::size_t r = 0; r < merges.size(); ++r) {
        bytes[kByteTokens + r] = bytes[merges[r].left] + bytes[merges[r].right];
    }
    return bytes;
}

std::string bpe_decode(const std::vector<std::int64_t>& ids, const std::vector<BpeMerge>& merges) {
    check_merges("wb::bpe_decode", merges);  // under this function's name, not bpe_vocab's
    const std::vector<std::string> vocab = bpe_vocab(merges);
    const auto V = static_cast<std::int64_t>(vocab.size());
    std::string out;
    for (std::size_t t = 0; t < ids.size(); ++t) {
        // Check before indexing: a bad id must not read outside the table.
        if (ids[t] < 0 || ids[t] >= V) {
            throw ValueError("wb::bpe_decode: id " + std::to_string(ids[t]) + " at position " +
                             std::to_string(t) + " is outside [0, " + std::to_string(V) +
                             ") (V = 256 + " + std::to_string(merges.size()) + " merges)");
        }
        out += vocab[ids[t]];
    }
    return out;
}

std::string bpe_serialize(const std::vector<BpeMerge>& merges) {
    check_merges("wb::bpe_serialize", merges);
    std::string out = kHeader + std::to_string(merges.size()) + "\n";
    for (const BpeMerge& m : merges) {
        out += std::to_string(m.left) + " " + std::to_string(m.right) + "\n";
    }
    return out;
}

std::vector<BpeMerge> bpe_deserialize(const std::string& data) {
    const std::string fn = "wb::bpe_deserialize";
    const std::string header = kHeader;
    const std::size_t newline = data.find('\n');
    if (data.compare(0, header.size(), header) != 0 || newline == std::string::npos ||
        newline <= header.size()) {
        throw ValueError(fn + ": not a BPE merge list (expected a first line \"" + header +
                         "<count>\")");
    }
    const std::string count_text = data.substr(header.size(), newline - header.size());
    if (!all_digits(count_text, 10)) {
        throw ValueError(fn + ": bad count \"" + count_text.substr(0, 40) +
                         "\" in the first line (expected a decimal number of merges)");
    }
    const std::uint64_t count = digits_value(count_text);
    if (count > kMaxBpeMerges) {
        throw ValueError(fn + ": the first line announces " + std::to_string(count) +
                         " merges, more than the limit of " + std::to_string(kMaxBpeMerges));
    }
    // Every line is at least 4 bytes ("0 0\n"): refuse a count the data cannot hold before
    // storing anything.
    const std::size_t body = data.size() - newline - 1;
    if (count > body / 4) {
        throw ValueError(fn + ": the first line announces " + std::to_string(count) +
                         " merges, but only " + std::to_string(body) +
                         " bytes follow (a merge line takes at least 4; truncated?)");
    }
    std::vector<BpeMerge> merges;
    merges.reserve(count);
    std::unordered_set<std::uint64_t> seen;
    std::size_t at = newline + 1;
    for (std::size_t r = 0; r < count; ++r) {
        const std::string line =
            "line " + std::to_string(r + 2) + " (merge " + std::to_string(r) + ")";
        const std::size_t end = data.find('\n', at);
        if (end == std::string::npos) {
            throw ValueError(fn + ": " + line + " has no end of line (expected " +
                             std::to_string(count) + " merge lines, each ending in a newline)");
        }
        const std::string text = data.substr(at, end - at);
        const std::size_t space = text.find(' ');
        const std::string left = space == std::string::npos ? text : text.substr(0, space);
        const std::string right = space == std::string::npos ? "" : text.substr(space + 1);
        if (!all_digits(left, 10) || !all_digits(right, 10)) {
            throw ValueError(fn + ": " + line + " \"" + text.substr(0, 40) +
                             "\" is not two decimal ids (expected \"<left> <right>\")");
        }
        const BpeMerge m{static_cast<std::int64_t>(digits_value(left)),
                         static_cast<std::int64_t>(digits_value(right))};
        check_merge(fn, line, r, m, seen);
        merges.push_back(m);
        at = end + 1;
    }
    if (at != data.size()) {
        throw ValueError(fn + ": " + std::to_string(data.size() - at) + " bytes follow the " +
                         std::to_string(count) +
                         " announced merges (expected the data to end there)");
    }
    return merges;
}

}  // namespace WB_IMPL
}  // namespace wb
