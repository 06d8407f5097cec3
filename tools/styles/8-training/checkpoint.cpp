// Chapter 8, a second answer: the file built through a byte-writer struct, read back through a
// bounded cursor; every tensor header parsed before the config is trusted.
#include "8-training/checkpoint.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

namespace {

struct Bytes {
    std::vector<unsigned char> out;
    void u(std::uint64_t value, int width) {
        for (int i = 0; i < width; ++i) out.push_back(static_cast<unsigned char>(value >> (8 * i)));
    }
    void f(float value) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &value, sizeof bits);
        u(bits, 4);
    }
    void text(const std::string& s) { out.insert(out.end(), s.begin(), s.end()); }
};

struct Cursor {
    const std::vector<unsigned char>& in;
    std::size_t pos;
    std::size_t end;
    const std::string& where;

    void need(std::size_t n) const {
        if (end - pos < n) {
            throw FileError(where + ": invalid payload: a field at byte " + std::to_string(pos) +
                            " needs " + std::to_string(n) + " bytes, the payload ends at byte " +
                            std::to_string(end));
        }
    }
    std::uint64_t u(int width) {
        need(static_cast<std::size_t>(width));
        std::uint64_t v = 0;
        for (int i = 0; i < width; ++i) v |= std::uint64_t(in[pos + i]) << (8 * i);
        pos += static_cast<std::size_t>(width);
        return v;
    }
    float f() {
        const auto bits = static_cast<std::uint32_t>(u(4));
        float value = 0.0f;
        std::memcpy(&value, &bits, sizeof value);
        return value;
    }
};

struct TensorEntry {
    std::string name;
    Shape dims;
    std::size_t values_at;  // where its floats start
    std::size_t count;
};

// The names and shapes a config gives its tensors, in the order of parameters().
std::vector<std::pair<std::string, Shape>> layout(const GptConfig& c) {
    const std::size_t D = c.D, F = 4 * D;
    std::vector<std::pair<std::string, Shape>> l;
    l.push_back({"wte", {c.V, D}});
    l.push_back({"wpe", {c.positions == Positions::learned ? c.T_max : 0, D}});
    for (std::size_t b = 0; b < c.L; ++b) {
        const std::string p = "blocks." + std::to_string(b) + ".";
        l.push_back({p + "ln1_g", {D}});
        l.push_back({p + "ln1_b", {D}});
        l.push_back({p + "w_q", {D, D}});
        l.push_back({p + "b_q", {D}});
        l.push_back({p + "w_k", {D, D}});
        l.push_back({p + "b_k", {D}});
        l.push_back({p + "w_v", {D, D}});
        l.push_back({p + "b_v", {D}});
        l.push_back({p + "w_o", {D, D}});
        l.push_back({p + "b_o", {D}});
        l.push_back({p + "ln2_g", {D}});
        l.push_back({p + "ln2_b", {D}});
        l.push_back({p + "w_fc", {F, D}});
        l.push_back({p + "b_fc", {F}});
        l.push_back({p + "w_proj", {D, F}});
        l.push_back({p + "b_proj", {D}});
    }
    l.push_back({"ln_f_g", {D}});
    l.push_back({"ln_f_b", {D}});
    l.push_back({"lm_head", {c.V, D}});
    return l;
}

}  // namespace

std::uint64_t fnv1a64(const unsigned char* data, std::size_t size) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char* p = data; p != data + size; ++p) {
        h = (h ^ *p) * 0x100000001b3ull;
    }
    return h;
}

void save_checkpoint(const std::string& path, const GptConfig& config,
                     const GptParams<float>& params, const AdamWState<float>* optimizer,
                     std::int64_t step) {
    const char* fn = "wb::save_checkpoint";
    require_valid_config(fn, config);
    require_gpt_shapes(fn, "params", params, config);
    const std::vector<ParamRef<const float>> refs = parameters(params);
    if (optimizer != nullptr) {
        bool ok = optimizer->m.size() == refs.size() && optimizer->v.size() == refs.size();
        for (std::size_t i = 0; ok && i < refs.size(); ++i) {
            ok = optimizer->m[i].size() == refs[i].size && optimizer->v[i].size() == refs[i].size;
        }
        if (!ok) {
            throw ShapeError(std::string(fn) + ": the optimizer state (" +
                             std::to_string(optimizer->m.size()) + " m, " +
                             std::to_string(optimizer->v.size()) +
                             " v tensors) does not fit the model of config " + config_str(config) +
                             " with " + std::to_string(refs.size()) + " tensors");
        }
    }
    Bytes payload;
    for (std::size_t n : {config.V, config.T_max, config.D, config.H, config.L}) payload.u(n, 8);
    payload.u(static_cast<std::uint64_t>(step), 8);
    payload.u(optimizer != nullptr ? 1 : 0, 1);
    payload.u(refs.size(), 8);
    for (const ParamRef<const float>& r : refs) {
        payload.u(r.name.size(), 4);
        payload.text(r.name);
        payload.u(r.shape.size(), 4);
        for (std::size_t d : r.shape) payload.u(d, 8);
        for (std::size_t i = 0; i < r.size; ++i) payload.f(r.data[i]);
    }
    if (optimizer != nullptr) {
        payload.u(static_cast<std::uint64_t>(optimizer->step), 8);
        for (const Vec<float>& m : optimizer->m)
            for (float x : m) payload.f(x);
        for (const Vec<float>& v : optimizer->v)
            for (float x : v) payload.f(x);
    }
    Bytes file;
    file.out.assign(kCheckpointMagic, kCheckpointMagic + 8);
    file.u(kCheckpointVersion, 4);
    file.u(payload.out.size(), 8);
    file.out.insert(file.out.end(), payload.out.begin(), payload.out.end());
    file.u(fnv1a64(payload.out.data(), payload.out.size()), 8);

    const std::string tmp = path + ".tmp";
    bool written = false;
    {
        std::ofstream os(tmp, std::ios::binary | std::ios::trunc);
        if (os) {
            os.write(reinterpret_cast<const char*>(file.out.data()),
                     static_cast<std::streamsize>(file.out.size()));
            os.close();
            written = !os.fail();
        }
    }
    std::error_code ec;
    if (written) std::filesystem::rename(tmp, path, ec);
    if (!written || ec) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        throw FileError(std::string(fn) + ": could not write " + path +
                        (ec ? " (" + ec.message() + ")" : " (writing " + tmp + " failed)"));
    }
}

Checkpoint load_checkpoint(const std::string& path) {
    const std::string where = "wb::load_checkpoint: " + path;
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::is_regular_file(st)) {
        throw FileError(where + ": cannot open (missing, or not a regular file)");
    }
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) throw FileError(where + ": cannot open (" + ec.message() + ")");
    std::ifstream is(path, std::ios::binary);
    if (!is) throw FileError(where + ": cannot open");
    std::vector<unsigned char> bytes(static_cast<std::size_t>(std::min<std::uintmax_t>(size, 20)));
    is.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (static_cast<std::size_t>(is.gcount()) != bytes.size())
        throw FileError(where + ": cannot open (read failed)");

    const std::size_t have = bytes.size();
    if (have == 0 ||
        std::memcmp(bytes.data(), kCheckpointMagic, std::min<std::size_t>(have, 8)) != 0) {
        throw FileError(where + ": not a workbook checkpoint");
    }
    if (have < 20) throw FileError(where + ": truncated at byte " + std::to_string(size));
    const std::string& w = where;
    Cursor head{bytes, 8, 20, w};
    const auto version = static_cast<std::uint32_t>(head.u(4));
    if (version != kCheckpointVersion) {
        throw FileError(where + ": version " + std::to_string(version) + ", expected " +
                        std::to_string(kCheckpointVersion));
    }
    const std::uint64_t P = head.u(8);
    if (size < 28 || P > size - 28) {
        throw FileError(where + ": truncated at byte " + std::to_string(size));
    }
    if (size > 28 + P) {
        throw FileError(where + ": " + std::to_string(size - 28 - P) +
                        " unexpected bytes after the checksum");
    }
    bytes.resize(static_cast<std::size_t>(size));
    is.read(reinterpret_cast<char*>(bytes.data() + 20), static_cast<std::streamsize>(size - 20));
    if (static_cast<std::uintmax_t>(is.gcount()) != size - 20) {
        throw FileError(where + ": truncated at byte " + std::to_string(20 + is.gcount()));
    }
    Cursor tail{bytes, static_cast<std::size_t>(20 + P), static_cast<std::size_t>(size), w};
    const std::uint64_t stored = tail.u(8);
    if (stored != fnv1a64(bytes.data() + 20, static_cast<std::size_t>(P))) {
        throw FileError(where + ": checksum mismatch");
    }

    Cursor c{bytes, 20, static_cast<std::size_t>(20 + P), w};
    GptConfig config{};
    config.V = c.u(8);
    config.T_max = c.u(8);
    config.D = c.u(8);
    config.H = c.u(8);
    config.L = c.u(8);
    const auto step = static_cast<std::int64_t>(c.u(8));
    const std::uint64_t flag = c.u(1);
    if (flag > 1) throw FileError(where + ": invalid has_optimizer byte " + std::to_string(flag));
    const std::uint64_t n = c.u(8);
    std::vector<TensorEntry> entries;
    for (std::uint64_t i = 0; i < n; ++i) {
        TensorEntry e;
        const std::uint64_t len = c.u(4);
        c.need(static_cast<std::size_t>(len));
        e.name.assign(bytes.begin() + static_cast<std::ptrdiff_t>(c.pos),
                      bytes.begin() + static_cast<std::ptrdiff_t>(c.pos + len));
        c.pos += static_cast<std::size_t>(len);
        const std::uint64_t rank = c.u(4);
        c.need(static_cast<std::size_t>(rank) * 8);
        std::size_t count = 1;
        bool zero = false, huge = false;
        for (std::uint64_t r = 0; r < rank; ++r) {
            const std::uint64_t d = c.u(8);
            e.dims.push_back(static_cast<std::size_t>(d));
            zero = zero || d == 0;
            if (!huge && d != 0 && count > (c.end - c.pos) / d) huge = true;
            if (!huge) count *= static_cast<std::size_t>(d);
        }
        if (zero) count = 0;
        if (huge && !zero) c.need(SIZE_MAX);
        c.need(count * 4);
        e.values_at = c.pos;
        e.count = count;
        c.pos += count * 4;
        entries.push_back(std::move(e));
    }
    config.positions = entries.size() >= 2 && entries[1].dims.size() == 2 &&
                               entries[1].dims[0] == 0 && config.T_max != 0
                           ? Positions::rope
                           : Positions::learned;
    try {
        require_valid_config("wb::load_checkpoint", config);
        checked_size("wb::load_checkpoint", "blocks", {config.L, 16});
    } catch (const ShapeError& e) {
        throw FileError(where + ": invalid config " + config_str(config) + " (" + e.what() + ")");
    }
    const auto expected = layout(config);
    if (entries.size() != expected.size()) {
        throw FileError(where + ": holds " + std::to_string(entries.size()) +
                        " tensors, expected " + std::to_string(expected.size()) + " for config " +
                        config_str(config));
    }
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].name != expected[i].first || entries[i].dims != expected[i].second) {
            throw FileError(where + ": tensor '" + entries[i].name + "' " +
                            shape_str(entries[i].dims) + ", expected '" + expected[i].first + "' " +
                            shape_str(expected[i].second));
        }
    }
    std::optional<AdamWState<float>> opt;
    if (flag == 1) {
        AdamWState<float> s;
        s.step = static_cast<std::int64_t>(c.u(8));
        std::size_t total = 0;
        for (const TensorEntry& e : entries) total += e.count;
        c.need(total * 8);
        for (int which = 0; which < 2; ++which) {
            for (const TensorEntry& e : entries) {
                Vec<float> t = Vec<float>::from_shape({e.count});
                for (std::size_t j = 0; j < e.count; ++j) t(j) = c.f();
                (which == 0 ? s.m : s.v).push_back(std::move(t));
            }
        }
        opt = std::move(s);
    }
    if (c.pos != c.end) {
        throw FileError(where + ": invalid payload: " + std::to_string(c.end - c.pos) +
                        " bytes left over after the last field");
    }
    Checkpoint ck;
    ck.config = config;
    ck.params = init_gpt<float>(config, 0);
    std::vector<ParamRef<float>> refs = parameters(ck.params);
    for (std::size_t i = 0; i < refs.size(); ++i) {
        Cursor r{bytes, entries[i].values_at, static_cast<std::size_t>(20 + P), w};
        for (std::size_t j = 0; j < refs[i].size; ++j) refs[i].data[j] = r.f();
    }
    ck.optimizer = std::move(opt);
    ck.step = step;
    return ck;
}

}  // namespace WB_IMPL
}  // namespace wb
