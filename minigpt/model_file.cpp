// Saving, loading and sampling a trained mini-GPT.
#include "minigpt/model_file.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "8-training/checkpoint.hpp"
#include "minigpt/file_io.hpp"

namespace wb::minigpt {

std::string vocab_path(const std::string& checkpoint_path) { return checkpoint_path + ".vocab"; }

namespace {

constexpr std::size_t kModelHeaderBytes = 8 + 4 + 8 + 8;  // magic, version, N, C
constexpr std::size_t kVariantBytes = 4;           // version 2: the switches, after the 28 bytes
constexpr std::uint32_t kModelVersion = 1;         // chapter 8's model (the default Variant)
constexpr std::uint32_t kModelVariantVersion = 2;  // any other Variant
constexpr std::uint32_t kModelGeluVersion = 3;     // GPT-2's tanh GELU: 4 bytes more
constexpr std::size_t kGeluBytes = 4;              // version 3: gelu, then 3 bytes of zeros

// The 4 bytes of version 2: attention scale, norm, final norm, positions.
std::string variant_bytes(const Variant& v) {
    return {static_cast<char>(v.attention_scale == AttentionScale::none ? 1 : 0),
            static_cast<char>(v.norm == Norm::post ? 1 : 0),
            static_cast<char>(v.final_norm ? 1 : 0), static_cast<char>(v.no_positions ? 1 : 0)};
}

// The switches of version 2's 4 bytes; a FileError from fn naming the byte, its value and the
// values expected if one is unknown.
Variant variant_of(const std::string& fn, const std::string& path, const std::string& bytes) {
    const auto byte = [&](std::size_t i, const char* field, const char* expected) {
        const auto b = static_cast<unsigned char>(bytes[i]);
        if (b > 1) {
            throw FileError(fn + ": " + path + ": " + field + " = " + std::to_string(b) +
                            " (byte " + std::to_string(kModelHeaderBytes + i) + "), expected " +
                            expected);
        }
        return b;
    };
    Variant v;
    v.attention_scale = byte(0, "attention scale", "0 (sqrt) or 1 (none)") == 1
                            ? AttentionScale::none
                            : AttentionScale::sqrt;
    v.norm = byte(1, "norm", "0 (pre) or 1 (post)") == 1 ? Norm::post : Norm::pre;
    v.final_norm = byte(2, "final norm", "0 (off) or 1 (on)") == 1;
    v.no_positions = byte(3, "positions", "0 (the checkpoint's: learned or rope) or 1 (none)") == 1;
    return v;
}
constexpr std::size_t kChunk = std::size_t(1) << 20;  // bytes read or copied at a time

void put_u64(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
std::uint64_t get_u64(const std::string& in, std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
        v |= std::uint64_t(static_cast<unsigned char>(in[at + i])) << (8 * i);
    }
    return v;
}

// FNV-1a, 64 bits, fed piece by piece (the same value as wb::fnv1a64 of the whole range).
struct Fnv1a {
    std::uint64_t h = 14695981039346656037ull;
    void add(const char* data, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            h ^= static_cast<unsigned char>(data[i]);
            h *= 1099511628211ull;
        }
    }
    void add(const std::string& s) { add(s.data(), s.size()); }
};

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t k) {
    return a > UINT64_MAX / k ? UINT64_MAX : a * k;
}

// Removes a file when it goes out of scope.
struct RemoveLater {
    std::string path;
    ~RemoveLater() {
        std::error_code ignored;
        if (!path.empty()) std::filesystem::remove(path, ignored);
    }
};

// Closes a descriptor when it goes out of scope.
struct CloseLater {
    int fd = -1;
    ~CloseLater() {
        if (fd >= 0) ::close(fd);
    }
};

// Replaces every occurrence of `from` in `text` by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

// Refuses a load that needs more memory than the limit, before anything is allocated.
void require_memory(const std::string& fn, const std::string& path, const std::string& parts,
                    std::uint64_t need, const MemoryLimit& limit) {
    if (need <= limit.bytes) return;
    throw FileError(fn + ": " + path + " holds " + parts + "; loading it needs about " +
                    bytes_text(need) + " of memory, more than the " + bytes_text(limit.bytes) +
                    " this process may still allocate (" + limit.source +
                    "); expected a model that fits in memory");
}

Tokenizer vocabulary_of(const std::string& fn, const std::string& where, const std::string& data) {
    try {
        return Tokenizer::deserialize(data);
    } catch (const ValueError& e) {
        throw FileError(fn + ": " + where + " is not a vocabulary: " + e.what());
    }
}

void require_vocabulary_size(const std::string& fn, const std::string& where,
                             const Tokenizer& tokenizer, std::size_t V, const std::string& path) {
    if (tokenizer.size() == V) return;
    const TokenizerKind kind = tokenizer.kind();
    throw FileError(fn + ": " + where + " holds " + std::to_string(tokenizer.size()) +
                    (kind == TokenizerKind::bpe    ? " BPE tokens"
                     : kind == TokenizerKind::gpt2 ? " GPT-2 tokens"
                                                   : " characters") +
                    ", expected V = " + std::to_string(V) + " of the checkpoint " + path +
                    " (the vocabulary does not belong to these weights)");
}

Model from_checkpoint(Checkpoint ckpt, Tokenizer tokenizer) {
    Model m;
    m.tokenizer = std::move(tokenizer);
    m.config = ckpt.config;
    m.params = std::move(ckpt.params);
    m.step = ckpt.step;
    return m;
}

// Where chapter 8's loader (which reads a path) finds the checkpoint part: an in-memory file
// (Linux) or, elsewhere, a temporary file in the system's temporary folder.
struct CheckpointCopy {
    RemoveLater temporary;
    CloseLater file;
    std::string inner;  // the path chapter 8 opens

    CheckpointCopy(const std::string& fn, const std::string& path) {
#ifdef __linux__
        file.fd =
            static_cast<int>(::syscall(SYS_memfd_create, "wb-minigpt-checkpoint", 1u /*CLOEXEC*/));
        if (file.fd >= 0) inner = "/proc/self/fd/" + std::to_string(file.fd);
        if (file.fd >= 0 && !std::filesystem::exists(inner)) {
            ::close(file.fd);
            file.fd = -1;
        }
#endif
        if (file.fd < 0) {
            temporary.path = unique_temporary_path(
                (std::filesystem::temp_directory_path() / "wb-minigpt-checkpoint").string());
            inner = temporary.path;
            file.fd = ::open(inner.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (file.fd < 0) throw FileError(fn + ": cannot create a temporary copy of " + path);
        }
    }
    void write(const std::string& fn, const std::string& path, const char* data, std::size_t n) {
        std::size_t done = 0;
        while (done < n) {
            const ssize_t w = ::write(file.fd, data + done, n - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) throw FileError(fn + ": cannot copy the checkpoint of " + path);
            done += static_cast<std::size_t>(w);
        }
    }
    Checkpoint load(const std::string& fn, const std::string& path) {
        try {
            return load_checkpoint(inner);
        } catch (const FileError& e) {
            throw FileError(fn + ": " + path + ": its checkpoint: " +
                            replace_all(e.what(), inner, path + " (checkpoint part)"));
        }
    }
};

// Reads `count` bytes of `fd` from `offset` into `out`, all of them.
void read_exactly(const std::string& fn, const std::string& path, int fd, std::uint64_t offset,
                  char* out, std::size_t count) {
    std::size_t done = 0;
    while (done < count) {
        const ssize_t n = ::pread(fd, out + done, count - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            throw FileError(fn + ": cannot read " + path + " at byte " +
                            std::to_string(offset + done) +
                            (n == 0 ? " (the file shrank while it was read)"
                                    : " (" + std::string(std::strerror(errno)) + ")"));
        }
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace

std::uint64_t model_load_memory(std::uint64_t vocabulary_bytes, std::uint64_t checkpoint_bytes) {
    return saturating_add(
        saturating_add(saturating_mul(checkpoint_bytes, 3), saturating_mul(vocabulary_bytes, 2)),
        std::uint64_t(1) << 20);
}

void save_model(const std::string& path, const Model& model) {
    const std::string fn = "wb::minigpt::save_model";
    if (model.config.V != model.tokenizer.size()) {
        throw ValueError(fn + ": config V = " + std::to_string(model.config.V) +
                         ", expected the vocabulary's size " +
                         std::to_string(model.tokenizer.size()));
    }
    require_valid_config(fn, model.config);
    require_gpt_shapes(fn.c_str(), "model.params", model.params, model.config);  // names the tensor
    if (model.variant.no_positions && model.config.positions != Positions::rope) {
        throw ValueError(fn + ": the variant has --positions none and the config positions = " +
                         positions_name(model.config.positions) +
                         ", expected positions = rope (a model without positions is stored as "
                         "RoPE's, without the table wpe)");
    }
    const std::string vocabulary = model.tokenizer.serialize();

    // Chapter 8 writes the checkpoint to the temporary file itself (through its own `.tmp`,
    // renamed onto the name), then the file is written again from its first byte: header,
    // vocabulary, the checkpoint's bytes, checksum. Its blocks are reused: one model's space.
    TemporaryFile file(fn, path);
    file.also_remove(file.path() + ".tmp");
    file.close();
    std::string checkpoint;
    try {
        save_checkpoint(file.path(), model.config, model.params, nullptr, model.step);
        checkpoint = read_regular_file(fn, file.path(), kMaxModelBytes);
    } catch (const FileError& e) {
        throw FileError(fn + ": cannot write the checkpoint part: " + e.what() +
                        "; the previous file at " + path + " is unchanged");
    }
    // Chapter 8's model is written as version 1, as before the switches existed; another
    // variant as version 2, its switches after the sizes; GPT-2's GELU as version 3, the
    // switches and then the GELU byte (chapter 8's checkpoint does not hold it).
    const bool tanh = model.config.gelu == Gelu::tanh;
    const bool switches = tanh || !model.variant.is_default();  // versions 2 and 3 hold them
    const std::uint32_t version = tanh       ? kModelGeluVersion
                                  : switches ? kModelVariantVersion
                                             : kModelVersion;
    std::string header(kModelMagic, kModelMagic + 8);
    for (int i = 0; i < 4; ++i) header.push_back(static_cast<char>(version >> (8 * i)));
    put_u64(header, vocabulary.size());
    put_u64(header, checkpoint.size());
    if (switches) header += variant_bytes(model.variant);
    if (tanh) header += std::string{'\1', '\0', '\0', '\0'};
    Fnv1a hash;
    hash.add(header);
    hash.add(vocabulary);
    hash.add(checkpoint);
    std::string tail;
    put_u64(tail, hash.h);
    file.reopen();
    file.write(header);
    file.write(vocabulary);
    file.write(checkpoint);
    file.write(tail);
    file.truncate_here();
    file.commit();
}

Model load_model(const std::string& path) { return load_model(path, memory_limit()); }

Model load_model(const std::string& path, const MemoryLimit& limit) {
    const std::string fn = "wb::minigpt::load_model";
    const std::uint64_t size = regular_file_size(fn, path);
    const std::string header = read_file_part(fn, path, 0, kModelHeaderBytes);
    if (header.size() >= 8 && std::memcmp(header.data(), kCheckpointMagic, 8) == 0) {
        throw FileError(
            fn + ": " + path + " is a bare checkpoint, the older two-file form whose vocabulary " +
            "is a file beside it (" + vocab_path(path) + "); nothing proves that vocabulary " +
            "belongs to these weights, so the form is not loaded. Expected a one-file model: " +
            "convert it once, after making sure the vocabulary is the one it was trained with: " +
            "minigpt convert --checkpoint " + path + " --vocab " + vocab_path(path) +
            " --out <new model file>");
    }
    if (header.size() < 8 || std::memcmp(header.data(), kModelMagic, 8) != 0) {
        throw FileError(fn + ": " + path +
                        " is not a mini-GPT model (it does not start with "
                        "\"WBMINIGP\", nor with a checkpoint's \"WBGPTCKP\")");
    }
    if (header.size() < kModelHeaderBytes) {
        throw FileError(fn + ": " + path + " is truncated at byte " + std::to_string(size) +
                        " (the header alone is " + std::to_string(kModelHeaderBytes) + " bytes)");
    }
    std::uint32_t version = 0;
    for (int i = 0; i < 4; ++i) {
        version |= std::uint32_t(static_cast<unsigned char>(header[8 + i])) << (8 * i);
    }
    if (version != kModelVersion && version != kModelVariantVersion &&
        version != kModelGeluVersion) {
        throw FileError(fn + ": " + path + ": format version " + std::to_string(version) +
                        ", expected " + std::to_string(kModelVersion) + ", " +
                        std::to_string(kModelVariantVersion) + " or " +
                        std::to_string(kModelGeluVersion));
    }
    // Version 2: the switches follow the 28 bytes (version 1 is chapter 8's model); version 3:
    // the switches, then the GELU byte and 3 zeros.
    std::string switches;
    Variant variant;
    Gelu gelu = Gelu::exact;
    if (version != kModelVersion) {
        const std::size_t extra = kVariantBytes + (version == kModelGeluVersion ? kGeluBytes : 0);
        switches = read_file_part(fn, path, kModelHeaderBytes, extra);
        if (switches.size() < extra) {
            throw FileError(fn + ": " + path + " is truncated at byte " + std::to_string(size) +
                            " (the header of version " + std::to_string(version) + " alone is " +
                            std::to_string(kModelHeaderBytes + extra) + " bytes)");
        }
        variant = variant_of(fn, path, switches);
        if (version == kModelGeluVersion) {
            const auto b = static_cast<unsigned char>(switches[kVariantBytes]);
            const bool zeros = switches.compare(kVariantBytes + 1, 3, std::string(3, '\0')) == 0;
            if (b > 1 || !zeros) {
                throw FileError(fn + ": " + path + ": gelu = " + std::to_string(b) + " (byte " +
                                std::to_string(kModelHeaderBytes + kVariantBytes) + ")" +
                                (zeros ? "" : " or bytes 33 to 35 not 0") +
                                ", expected 0 (exact) or 1 (tanh) followed by 3 zeros");
            }
            gelu = b == 1 ? Gelu::tanh : Gelu::exact;
        }
    }
    const std::uint64_t header_bytes = kModelHeaderBytes + switches.size();
    const std::uint64_t n_vocab = get_u64(header, 12), n_ckpt = get_u64(header, 20);
    // The announced sizes, compared with the file's, the size limit and the memory before
    // anything more is read or allocated.
    const std::uint64_t room = size - header_bytes;
    if (room < 8 || n_vocab > room - 8 || n_ckpt > room - 8 - n_vocab ||
        n_vocab + n_ckpt != room - 8) {
        throw FileError(fn + ": " + path + " has " + std::to_string(size) +
                        " bytes, but its header announces a vocabulary of " +
                        std::to_string(n_vocab) + " and a checkpoint of " + std::to_string(n_ckpt) +
                        " bytes (truncated or not a model file)");
    }
    if (size > kMaxModelBytes) {
        throw FileError(fn + ": " + path + " has " + std::to_string(size) +
                        " bytes, more than the limit of " + std::to_string(kMaxModelBytes));
    }
    require_memory(fn, path,
                   "a vocabulary of " + std::to_string(n_vocab) + " bytes and a checkpoint of " +
                       std::to_string(n_ckpt) + " bytes",
                   model_load_memory(n_vocab, n_ckpt), limit);

    // One pass over the file: the checksum of everything before it, the vocabulary into
    // memory, the checkpoint into the copy chapter 8's loader reads.
    CloseLater in;
    in.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (in.fd < 0) {
        throw FileError(fn + ": cannot open " + path + " (" + std::strerror(errno) + ")");
    }
    CheckpointCopy copy(fn, path);
    Fnv1a hash;
    hash.add(header.data(), kModelHeaderBytes);
    hash.add(switches);
    std::string vocabulary(static_cast<std::size_t>(n_vocab), '\0');
    read_exactly(fn, path, in.fd, header_bytes, vocabulary.data(), vocabulary.size());
    hash.add(vocabulary);
    std::string chunk(std::min<std::uint64_t>(kChunk, n_ckpt), '\0');
    for (std::uint64_t at = 0; at < n_ckpt;) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, n_ckpt - at));
        read_exactly(fn, path, in.fd, header_bytes + n_vocab + at, chunk.data(), n);
        hash.add(chunk.data(), n);
        copy.write(fn, path, chunk.data(), n);
        at += n;
    }
    std::string stored(8, '\0');
    read_exactly(fn, path, in.fd, size - 8, stored.data(), 8);
    if (get_u64(stored, 0) != hash.h) {
        throw FileError(fn + ": " + path + ": checksum mismatch: the file is corrupted");
    }
    const std::string where = path + " (vocabulary part)";
    Tokenizer tokenizer = vocabulary_of(fn, where, vocabulary);
    Checkpoint ckpt = copy.load(fn, path);
    require_vocabulary_size(fn, where, tokenizer, ckpt.config.V, path);
    if (variant.no_positions && ckpt.config.positions != Positions::rope) {
        throw FileError(fn + ": " + path + ": positions = 1 (none, byte " +
                        std::to_string(kModelHeaderBytes + 3) +
                        ") with a checkpoint of positions " +
                        positions_name(ckpt.config.positions) +
                        ", expected a checkpoint of positions rope (a model without positions "
                        "has no table wpe)");
    }
    Model model = from_checkpoint(std::move(ckpt), std::move(tokenizer));
    model.variant = variant;
    model.config.gelu = gelu;
    return model;
}

Model load_two_file_model(const std::string& checkpoint_path, const std::string& vocabulary_path) {
    const std::string fn = "wb::minigpt::load_two_file_model";
    const std::uint64_t size = regular_file_size(fn, checkpoint_path);
    const std::uint64_t vocab_size = regular_file_size(fn, vocabulary_path);
    // Chapter 8's loader holds the file and the weights: twice its size.
    require_memory(fn, checkpoint_path,
                   "a checkpoint of " + std::to_string(size) + " bytes (vocabulary " +
                       vocabulary_path + ": " + std::to_string(vocab_size) + " bytes)",
                   saturating_add(model_load_memory(vocab_size, 0), saturating_mul(size, 2)),
                   memory_limit());
    const std::string data = read_regular_file(fn, vocabulary_path, kMaxModelBytes);
    Tokenizer tokenizer = vocabulary_of(fn, vocabulary_path, data);
    Checkpoint ckpt;
    try {
        ckpt = load_checkpoint(checkpoint_path);
    } catch (const FileError& e) {
        throw FileError(fn + ": " + e.what());
    }
    require_vocabulary_size(fn, vocabulary_path, tokenizer, ckpt.config.V, checkpoint_path);
    return from_checkpoint(std::move(ckpt), std::move(tokenizer));
}

std::uint64_t parameter_count(const GptConfig& c) {
    auto mul = [](std::uint64_t a, std::uint64_t b) { return b == 0 ? 0 : saturating_mul(a, b); };
    const std::uint64_t D = c.D;
    std::uint64_t n = saturating_mul(mul(c.V, D), 2);
    if (c.positions == Positions::learned) n = saturating_add(n, mul(c.T_max, D));
    const std::uint64_t block = saturating_add(mul(mul(D, D), 12), mul(D, 13));
    n = saturating_add(n, mul(block, c.L));
    return saturating_add(n, mul(D, 2));
}

std::uint64_t training_memory(const GptConfig& config) {
    return saturating_mul(parameter_count(config), 4 * sizeof(float));
}

std::size_t parameter_count(const GptParams<float>& params) {
    std::size_t n = 0;
    for (const auto& r : parameters(params)) n += r.size;
    return n;
}

std::string generate_text_in_pieces(const Model& model, const std::string& prompt,
                                    std::size_t max_new_tokens, std::uint64_t seed,
                                    const PieceGenerator& piece) {
    std::vector<std::int64_t> ids = model.tokenizer.encode(prompt);
    if (ids.empty()) {
        // No prompt: start after a newline, as if at the start of a speech.
        std::int64_t start = 0;
        try {
            start = model.tokenizer.encode("\n").front();
        } catch (const ValueError&) {
        }
        ids.push_back(start);
    }
    const std::size_t t_max = model.config.T_max;
    const std::size_t prompt_len = ids.size();
    std::size_t remaining = max_new_tokens;
    for (std::uint64_t i = 0; remaining > 0; ++i) {
        // The first piece keeps as much of the prompt as fits beside one new token, later
        // pieces the last T_max / 2 tokens: half the window is context, half is new text.
        const std::size_t keep =
            std::min(ids.size(), i == 0 ? t_max - 1 : std::max<std::size_t>(1, t_max / 2));
        const std::vector<std::int64_t> context(ids.end() - static_cast<std::ptrdiff_t>(keep),
                                                ids.end());
        const std::size_t n = std::min(remaining, t_max - keep);
        const auto out = piece(context, n, seed + i);
        ids.insert(ids.end(), out.begin() + static_cast<std::ptrdiff_t>(keep), out.end());
        remaining -= n;
    }
    // An empty prompt returns only the generated text, not the newline it started from.
    const std::size_t skip = prompt.empty() ? prompt_len : 0;
    return model.tokenizer.decode(
        std::vector<std::int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(skip), ids.end()));
}

std::string generate_text(const Model& model, const std::string& prompt, std::size_t max_new_tokens,
                          const SamplingOptions& options, std::uint64_t seed, bool use_greedy) {
    if (!model.variant.is_default()) {
        throw ValueError("wb::minigpt::generate_text: the model has " +
                         variant_changes(model.variant) +
                         ", expected chapter 8's model: chapter 9's decoder builds only that one; "
                         "this model generates on the fast engine (generate_text_fast, "
                         "--engine fast)");
    }
    return generate_text_in_pieces(
        model, prompt, max_new_tokens, seed,
        [&](const std::vector<std::int64_t>& context, std::size_t n, std::uint64_t piece_seed) {
            return generate(model.params, model.config, context, n, options, piece_seed,
                            use_greedy);
        });
}

}  // namespace wb::minigpt
