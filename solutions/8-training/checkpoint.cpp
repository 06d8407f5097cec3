// Chapter 8 — reference implementation: checkpoints (format in checkpoint.hpp).
// Save: build the payload in memory, hash it, write header + payload + hash to path.tmp,
// rename onto path. Load: refuse anything but a regular file, read the header, check magic,
// version and the announced size against the file's size, only then read the rest and check
// the hash, then parse and check every tensor against the config; only then build the result.
#include "8-training/checkpoint.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

namespace {

using Bytes = std::vector<unsigned char>;

constexpr std::size_t kHeaderBytes = 8 + 4 + 8;  // magic, version, payload size
constexpr std::size_t kHashBytes = 8;

// ---- little-endian writing ------------------------------------------------------------------

void put_u64(Bytes& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}
void put_u32(Bytes& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}
void put_f32s(Bytes& out, const float* data, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t bits;
        std::memcpy(&bits, &data[i], 4);  // the float's IEEE-754 bits, written little-endian
        put_u32(out, bits);
    }
}

// ---- little-endian reading, every read bounds-checked ---------------------------------------

struct Reader {
    const Bytes& bytes;
    std::size_t pos;
    std::size_t end;
    const std::string& where;  // "wb::load_checkpoint: 'path'"

    void need(std::size_t n) const {
        if (n > end - pos) {
            throw FileError(where + ": malformed payload: needs " + std::to_string(n) +
                            " bytes at byte " + std::to_string(pos) + ", only " +
                            std::to_string(end - pos) + " left");
        }
    }
    std::uint64_t u64() {
        need(8);
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v |= std::uint64_t(bytes[pos + i]) << (8 * i);
        pos += 8;
        return v;
    }
    std::uint32_t u32() {
        need(4);
        std::uint32_t v = 0;
        for (int i = 0; i < 4; ++i) v |= std::uint32_t(bytes[pos + i]) << (8 * i);
        pos += 4;
        return v;
    }
    void f32s(float* data, std::size_t n) {
        need(4 * n);
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t bits = u32();
            std::memcpy(&data[i], &bits, 4);
        }
    }
};

// The rows of the saved wpe, read ahead without moving `r`: the second tensor, after wte.
// Version 1 has no field for the position kind; it is the shape of wpe: [T_max, D] for
// learned positions, [0, D] for RoPE (the model has no table). Every size is bounded by the
// payload (need() throws before any read past it).
std::uint64_t saved_wpe_rows(Reader r) {
    (void)r.u64();  // the number of tensors
    const auto skip_header = [&r](Shape& shape) {
        const std::uint32_t name_size = r.u32();
        r.need(name_size);
        r.pos += name_size;
        const std::uint32_t rank = r.u32();
        shape.clear();
        for (std::uint32_t i = 0; i < rank && i < 8; ++i) shape.push_back(r.u64());
    };
    Shape wte;
    skip_header(wte);
    std::uint64_t values = 1;
    for (std::uint64_t dim : wte) {
        if (dim != 0 && values > (r.end - r.pos) / dim) r.need(r.end - r.pos + 1);  // too big
        values *= dim;
    }
    r.need(4 * values);
    r.pos += 4 * values;
    Shape wpe;
    skip_header(wpe);
    return wpe.size() == 2 ? wpe[0] : 1;
}

std::string hex(std::uint64_t v) {
    std::ostringstream out;
    out << "0x" << std::hex << v;
    return out.str();
}

// The number of floats a config's parameters hold, or 0 if it would overflow: lets a load
// reject an absurd config before allocating anything.
std::uint64_t parameter_count(const GptConfig& c) {
    const long double V = c.V, D = c.D, L = c.L;
    const long double T = c.positions == Positions::learned ? c.T_max : 0;  // rows of wpe
    const long double n = 2 * V * D + T * D + L * (12 * D * D + 13 * D) + 2 * D;
    return n > 1e15L ? 0 : static_cast<std::uint64_t>(n);
}

}  // namespace

std::uint64_t fnv1a64(const unsigned char* data, std::size_t size) {
    std::uint64_t h = 14695981039346656037ull;  // offset basis
    for (std::size_t i = 0; i < size; ++i) {
        h ^= data[i];
        h *= 1099511628211ull;  // FNV prime
    }
    return h;
}

void save_checkpoint(const std::string& path, const GptConfig& config,
                     const GptParams<float>& params, const AdamWState<float>* optimizer,
                     std::int64_t step) {
    const std::string fn = "wb::save_checkpoint";
    const std::vector<ParamRef<const float>> refs = parameters(params);
    // The params must be the model the config describes: a zero model of that config has the
    // shapes to compare with (init_gpt also rejects an invalid config).
    const GptParams<float> shaped = init_gpt<float>(config, 0);
    const std::vector<ParamRef<const float>> expected = parameters(shaped);
    bool same = refs.size() == expected.size();
    for (std::size_t i = 0; same && i < refs.size(); ++i) same = refs[i].shape == expected[i].shape;
    if (!same) {
        throw ShapeError(fn + ": params do not match the config (V = " + std::to_string(config.V) +
                         ", T_max = " + std::to_string(config.T_max) +
                         ", D = " + std::to_string(config.D) + ", H = " + std::to_string(config.H) +
                         ", L = " + std::to_string(config.L) + "): " + std::to_string(refs.size()) +
                         " tensors against " + std::to_string(expected.size()) +
                         ", or a shape differs");
    }
    if (optimizer) {
        bool ok = optimizer->m.size() == refs.size() && optimizer->v.size() == refs.size();
        for (std::size_t i = 0; ok && i < refs.size(); ++i) {
            ok = optimizer->m[i].size() == refs[i].size && optimizer->v[i].size() == refs[i].size;
        }
        if (!ok) {
            throw ShapeError(fn +
                             ": the optimizer state does not match the params (expected one m "
                             "and one v per tensor, each of the tensor's size)");
        }
    }

    // Payload: config, step, optimizer flag, tensors, optimizer moments.
    Bytes payload;
    for (std::uint64_t v : {config.V, config.T_max, config.D, config.H, config.L}) {
        put_u64(payload, v);
    }
    put_u64(payload, static_cast<std::uint64_t>(step));
    payload.push_back(optimizer ? 1 : 0);
    put_u64(payload, refs.size());
    for (const ParamRef<const float>& r : refs) {
        put_u32(payload, static_cast<std::uint32_t>(r.name.size()));
        payload.insert(payload.end(), r.name.begin(), r.name.end());
        put_u32(payload, static_cast<std::uint32_t>(r.shape.size()));
        for (std::size_t n : r.shape) put_u64(payload, n);
        put_f32s(payload, r.data, r.size);
    }
    if (optimizer) {
        put_u64(payload, static_cast<std::uint64_t>(optimizer->step));
        for (const Vec<float>& m : optimizer->m) put_f32s(payload, m.data(), m.size());
        for (const Vec<float>& v : optimizer->v) put_f32s(payload, v.data(), v.size());
    }

    Bytes file(kCheckpointMagic, kCheckpointMagic + 8);
    put_u32(file, kCheckpointVersion);
    put_u64(file, payload.size());
    file.insert(file.end(), payload.begin(), payload.end());
    put_u64(file, fnv1a64(payload.data(), payload.size()));

    // Write everything to the side, then swap it in: `path` is never half-written.
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (out) {
            out.write(reinterpret_cast<const char*>(file.data()),
                      static_cast<std::streamsize>(file.size()));
            out.close();
        }
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(tmp, ignored);
            throw FileError(fn + ": cannot write '" + tmp + "' (for '" + path +
                            "'); the file at the path is unchanged");
        }
    }
    std::error_code error;
    std::filesystem::rename(tmp, path, error);
    if (error) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        throw FileError(fn + ": cannot rename '" + tmp + "' to '" + path + "': " + error.message());
    }
}

Checkpoint load_checkpoint(const std::string& path) {
    const std::string where = "wb::load_checkpoint: '" + path + "'";
    // Only a regular file is read (a FIFO would block, a device such as /dev/zero never ends),
    // and only as far as its header announces: the size comes from the filesystem first.
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    if (error || !std::filesystem::exists(status)) {
        throw FileError(where + ": cannot open the file");
    }
    if (!std::filesystem::is_regular_file(status)) {
        throw FileError(where +
                        ": cannot open the file: it is not a regular file (a directory, "
                        "a device or a FIFO), expected a checkpoint file");
    }
    const std::uintmax_t file_size = std::filesystem::file_size(path, error);
    std::ifstream in(path, std::ios::binary);
    if (!in || error) {
        throw FileError(where + ": cannot open the file");
    }
    // The header first; the rest only once its announced size matches the file's.
    Bytes bytes(static_cast<std::size_t>(std::min<std::uintmax_t>(file_size, kHeaderBytes)));
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (static_cast<std::size_t>(in.gcount()) != bytes.size()) {
        throw FileError(where + ": truncated at byte " + std::to_string(in.gcount()) +
                        " (the file shrank while it was read)");
    }
    const std::size_t size =
        file_size > SIZE_MAX / 2 ? SIZE_MAX / 2 : static_cast<std::size_t>(file_size);

    // 1. The magic: is this a checkpoint at all?
    const std::size_t magic_seen = std::min<std::size_t>(size, 8);
    if (size == 0 || std::memcmp(bytes.data(), kCheckpointMagic, magic_seen) != 0) {
        throw FileError(where +
                        ": not a workbook checkpoint (it does not start with \"WBGPTCKP\")");
    }
    if (size < kHeaderBytes) {
        throw FileError(where + ": truncated at byte " + std::to_string(size) +
                        " (the header alone is " + std::to_string(kHeaderBytes) + " bytes)");
    }
    // 2. The version: a newer format must not be misread as this one.
    Reader header{bytes, 8, kHeaderBytes, where};
    const std::uint32_t version = header.u32();
    if (version != kCheckpointVersion) {
        throw FileError(where + ": format version " + std::to_string(version) + ", expected " +
                        std::to_string(kCheckpointVersion));
    }
    // 3. The size the header announces: header + payload + hash, nothing missing, nothing more.
    const std::uint64_t payload_size = header.u64();
    const std::size_t after_header = size - kHeaderBytes;
    const std::size_t room = after_header < kHashBytes ? 0 : after_header - kHashBytes;
    const std::string announced = payload_size > (1ull << 62)
                                      ? "more than 2^62"
                                      : std::to_string(kHeaderBytes + payload_size + kHashBytes);
    if (after_header < kHashBytes || payload_size > room) {
        throw FileError(where + ": truncated at byte " + std::to_string(size) +
                        " (the header announces " + announced + " bytes)");
    }
    if (payload_size < room) {
        throw FileError(where + ": " + std::to_string(room - payload_size) +
                        " unexpected bytes after the checksum (the header announces " + announced +
                        " bytes, the file has " + std::to_string(size) + ")");
    }
    // The announced size is the file's: now read the payload and the checksum.
    bytes.resize(size);
    in.read(reinterpret_cast<char*>(bytes.data()) + kHeaderBytes,
            static_cast<std::streamsize>(size - kHeaderBytes));
    if (static_cast<std::size_t>(in.gcount()) != size - kHeaderBytes) {
        throw FileError(where + ": truncated at byte " +
                        std::to_string(kHeaderBytes + static_cast<std::size_t>(in.gcount())) +
                        " (the file shrank while it was read)");
    }
    // 4. The checksum: any flipped byte of the payload changes it.
    Reader tail{bytes, kHeaderBytes + payload_size, size, where};
    const std::uint64_t stored = tail.u64();
    const std::uint64_t computed = fnv1a64(bytes.data() + kHeaderBytes, payload_size);
    if (stored != computed) {
        throw FileError(where + ": checksum mismatch (stored " + hex(stored) + ", computed " +
                        hex(computed) + "): the file is corrupted");
    }

    // 5. The payload, checked against its own config.
    Reader r{bytes, kHeaderBytes, kHeaderBytes + payload_size, where};
    Checkpoint ck;
    ck.config.V = r.u64();
    ck.config.T_max = r.u64();
    ck.config.D = r.u64();
    ck.config.H = r.u64();
    ck.config.L = r.u64();
    ck.step = static_cast<std::int64_t>(r.u64());
    r.need(1);
    const unsigned char has_optimizer = bytes[r.pos++];
    ck.config.positions = saved_wpe_rows(r) == 0 ? Positions::rope : Positions::learned;
    const GptConfig& c = ck.config;
    const std::uint64_t count = parameter_count(c);
    if (c.V == 0 || c.T_max == 0 || c.D == 0 || c.H == 0 || c.L == 0 || c.D % c.H != 0 ||
        (c.positions == Positions::rope && (c.D / c.H) % 2 != 0) || count == 0 ||
        4 * count > payload_size || has_optimizer > 1) {
        throw FileError(where + ": invalid config V = " + std::to_string(c.V) +
                        ", T_max = " + std::to_string(c.T_max) + ", D = " + std::to_string(c.D) +
                        ", H = " + std::to_string(c.H) + ", L = " + std::to_string(c.L) +
                        ", positions = " + positions_name(c.positions) + " (or optimizer flag " +
                        std::to_string(has_optimizer) + ")");
    }
    ck.params = init_gpt<float>(c, 0);  // every tensor with its shape; the values are replaced
    std::vector<ParamRef<float>> refs = parameters(ck.params);
    const std::uint64_t n = r.u64();
    if (n != refs.size()) {
        throw FileError(where + ": holds " + std::to_string(n) + " tensors, the config needs " +
                        std::to_string(refs.size()));
    }
    for (ParamRef<float>& ref : refs) {
        const std::uint32_t name_size = r.u32();
        r.need(name_size);
        const std::string name(bytes.begin() + static_cast<std::ptrdiff_t>(r.pos),
                               bytes.begin() + static_cast<std::ptrdiff_t>(r.pos + name_size));
        r.pos += name_size;
        const std::uint32_t rank = r.u32();
        Shape shape;
        for (std::uint32_t i = 0; i < rank && i < 8; ++i) shape.push_back(r.u64());
        if (name != ref.name || shape != ref.shape) {
            throw FileError(where + ": tensor '" + name + "' " + shape_str(shape) + ", expected '" +
                            ref.name + "' " + shape_str(ref.shape) + " for the saved config");
        }
        r.f32s(ref.data, ref.size);
    }
    if (has_optimizer) {
        AdamWState<float> state;
        state.step = static_cast<std::int64_t>(r.u64());
        for (auto* moments : {&state.m, &state.v}) {
            for (const ParamRef<float>& ref : refs) {
                Vec<float> t = Vec<float>::from_shape({ref.size});
                r.f32s(t.data(), ref.size);
                moments->push_back(std::move(t));
            }
        }
        ck.optimizer = std::move(state);
    }
    if (r.pos != r.end) {
        throw FileError(where + ": malformed payload: " + std::to_string(r.end - r.pos) +
                        " bytes left over after the last tensor");
    }
    return ck;
}

}  // namespace WB_IMPL
}  // namespace wb
