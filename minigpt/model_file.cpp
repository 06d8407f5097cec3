// Saving, loading and sampling a trained mini-GPT.
#include "minigpt/model_file.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "8-training/checkpoint.hpp"
#include "minigpt/file_io.hpp"

namespace wb::minigpt {

std::string vocab_path(const std::string& checkpoint_path) { return checkpoint_path + ".vocab"; }

namespace {

constexpr std::size_t kModelHeaderBytes = 8 + 4 + 8 + 8;  // magic, version, N, C
constexpr std::uint32_t kModelVersion = 1;

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
std::uint64_t hash_of(const std::string& bytes, std::size_t size) {
    return fnv1a64(reinterpret_cast<const unsigned char*>(bytes.data()), size);
}

// Removes a file when it goes out of scope.
struct RemoveLater {
    std::string path;
    ~RemoveLater() {
        std::error_code ignored;
        if (!path.empty()) std::filesystem::remove(path, ignored);
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

Tokenizer vocabulary_of(const std::string& fn, const std::string& where, const std::string& data,
                        std::size_t V, const std::string& path) {
    Tokenizer tokenizer;
    try {
        tokenizer = Tokenizer::deserialize(data);
    } catch (const ValueError& e) {
        throw FileError(fn + ": " + where + " is not a vocabulary: " + e.what());
    }
    if (tokenizer.size() != V) {
        throw FileError(fn + ": " + where + " holds " + std::to_string(tokenizer.size()) +
                        " characters, expected V = " + std::to_string(V) + " of the checkpoint " +
                        path + " (the vocabulary does not belong to these weights)");
    }
    return tokenizer;
}

Model from_checkpoint(Checkpoint ckpt, Tokenizer tokenizer) {
    Model m;
    m.tokenizer = std::move(tokenizer);
    m.config = ckpt.config;
    m.params = std::move(ckpt.params);
    m.step = ckpt.step;
    return m;
}

// A model saved as two files: a bare checkpoint at path, its vocabulary at path + ".vocab".
Model load_two_files(const std::string& fn, const std::string& path) {
    Checkpoint ckpt = load_checkpoint(path);  // validates the whole file
    const std::string vpath = vocab_path(path);
    std::string data;
    try {
        data = read_regular_file(fn, vpath, kMaxModelBytes);
    } catch (const FileError& e) {
        throw FileError(std::string(e.what()) + " (" + path +
                        " is a bare checkpoint, which is saved with its vocabulary beside it)");
    }
    Tokenizer tokenizer = vocabulary_of(fn, vpath, data, ckpt.config.V, path);
    return from_checkpoint(std::move(ckpt), std::move(tokenizer));
}

// Chapter 8's loader reads a path: give it the checkpoint's bytes as an in-memory file
// (Linux) or, elsewhere, as a temporary file in the system's temporary folder.
Checkpoint load_checkpoint_bytes(const std::string& fn, const std::string& path,
                                 const std::string& bytes) {
    RemoveLater temporary;
    std::string inner;
    int fd = -1;
#ifdef __linux__
    fd = static_cast<int>(::syscall(SYS_memfd_create, "wb-minigpt-checkpoint", 1u /*CLOEXEC*/));
    if (fd >= 0) inner = "/proc/self/fd/" + std::to_string(fd);
    if (fd >= 0 && !std::filesystem::exists(inner)) {
        ::close(fd);
        fd = -1;
    }
#endif
    if (fd < 0) {
        temporary.path = unique_temporary_path(
            (std::filesystem::temp_directory_path() / "wb-minigpt-checkpoint").string());
        inner = temporary.path;
        fd = ::open(inner.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) throw FileError(fn + ": cannot create a temporary copy of " + path);
    }
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n <= 0) {
            ::close(fd);
            throw FileError(fn + ": cannot copy the checkpoint of " + path);
        }
        done += static_cast<std::size_t>(n);
    }
    try {
        Checkpoint ckpt = load_checkpoint(inner);
        ::close(fd);
        return ckpt;
    } catch (const FileError& e) {
        ::close(fd);
        throw FileError(fn + ": " + path + ": its checkpoint: " +
                        replace_all(e.what(), inner, path + " (checkpoint part)"));
    }
}

}  // namespace

void save_model(const std::string& path, const Model& model) {
    const std::string fn = "wb::minigpt::save_model";
    if (model.config.V != model.tokenizer.size()) {
        throw ValueError(fn + ": config V = " + std::to_string(model.config.V) +
                         ", expected the vocabulary's size " +
                         std::to_string(model.tokenizer.size()));
    }
    require_replaceable(fn, path);
    // Chapter 8 writes the checkpoint to a file of its own (a unique name beside the model);
    // its bytes are then wrapped with the vocabulary into the one model file.
    RemoveLater part{unique_temporary_path(path)};
    std::string checkpoint;
    try {
        save_checkpoint(part.path, model.config, model.params, nullptr, model.step);
        checkpoint = read_regular_file(fn, part.path, kMaxModelBytes);
    } catch (const FileError& e) {
        throw FileError(fn + ": cannot write the checkpoint part: " + e.what() +
                        "; the previous file at " + path + " is unchanged");
    }
    const std::string vocabulary = model.tokenizer.serialize();
    std::string file(kModelMagic, kModelMagic + 8);
    file.reserve(kModelHeaderBytes + vocabulary.size() + checkpoint.size() + 8);
    for (int i = 0; i < 4; ++i) file.push_back(static_cast<char>(kModelVersion >> (8 * i)));
    put_u64(file, vocabulary.size());
    put_u64(file, checkpoint.size());
    file += vocabulary;
    file += checkpoint;
    put_u64(file, hash_of(file, file.size()));
    write_file_atomic(fn, path, file);
}

Model load_model(const std::string& path) {
    const std::string fn = "wb::minigpt::load_model";
    const std::uint64_t size = regular_file_size(fn, path);
    const std::string header = read_file_part(fn, path, 0, kModelHeaderBytes);
    if (header.size() >= 8 && std::memcmp(header.data(), kCheckpointMagic, 8) == 0) {
        return load_two_files(fn, path);
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
    if (version != kModelVersion) {
        throw FileError(fn + ": " + path + ": format version " + std::to_string(version) +
                        ", expected " + std::to_string(kModelVersion));
    }
    const std::uint64_t n_vocab = get_u64(header, 12), n_ckpt = get_u64(header, 20);
    // The announced size, compared with the file's before anything more is read.
    const std::uint64_t room = size - kModelHeaderBytes;
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
    const std::string bytes = read_regular_file(fn, path, kMaxModelBytes);
    if (bytes.size() != size) {
        throw FileError(fn + ": " + path + " changed while it was read");
    }
    const std::uint64_t stored = get_u64(bytes, bytes.size() - 8);
    const std::uint64_t computed = hash_of(bytes, bytes.size() - 8);
    if (stored != computed) {
        throw FileError(fn + ": " + path + ": checksum mismatch: the file is corrupted");
    }
    const std::string vocabulary = bytes.substr(kModelHeaderBytes, n_vocab);
    Checkpoint ckpt =
        load_checkpoint_bytes(fn, path, bytes.substr(kModelHeaderBytes + n_vocab, n_ckpt));
    Tokenizer tokenizer =
        vocabulary_of(fn, path + " (vocabulary part)", vocabulary, ckpt.config.V, path);
    return from_checkpoint(std::move(ckpt), std::move(tokenizer));
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
    return generate_text_in_pieces(
        model, prompt, max_new_tokens, seed,
        [&](const std::vector<std::int64_t>& context, std::size_t n, std::uint64_t piece_seed) {
            return generate(model.params, model.config, context, n, options, piece_seed,
                            use_greedy);
        });
}

}  // namespace wb::minigpt
