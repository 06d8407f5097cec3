#include "golden.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#ifndef WB_GOLDEN_DIR
#error "WB_GOLDEN_DIR must name the tests/goldens folder"
#endif

namespace wbtest {

Golden::Golden(const std::string& relative_path)
    : path_(std::string(WB_GOLDEN_DIR) + "/" + relative_path) {
    std::ifstream in(path_);
    if (!in) throw std::runtime_error("golden file " + path_ + " cannot be read");
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty()) continue;
        if (line[0] == '#') {
            auto colon = line.find(':');
            if (colon != std::string::npos) {
                auto trim = [](std::string s) {
                    s.erase(0, s.find_first_not_of(" \t"));
                    s.erase(s.find_last_not_of(" \t") + 1);
                    return s;
                };
                meta_[trim(line.substr(1, colon - 1))] = trim(line.substr(colon + 1));
            }
            continue;
        }
        // "tensor NAME RANK DIM... " then one line of values
        std::istringstream head(line);
        std::string word, name;
        std::size_t rank = 0;
        head >> word >> name >> rank;
        if (word != "tensor" || name.empty()) {
            throw std::runtime_error(path_ + ":" + std::to_string(number) +
                                     ": expected 'tensor NAME RANK DIMS...'");
        }
        Entry e;
        std::size_t count = 1;
        for (std::size_t i = 0; i < rank; ++i) {
            std::size_t n = 0;
            head >> n;
            e.shape.push_back(n);
            count *= n;
        }
        std::string values;
        std::getline(in, values);
        ++number;
        std::istringstream body(values);
        double v = 0.0;
        while (body >> v) e.values.push_back(static_cast<float>(v));
        if (e.values.size() != count) {
            throw std::runtime_error(path_ + ":" + std::to_string(number) + ": tensor " + name +
                                     " of shape " + wb::shape_str(e.shape) + " needs " +
                                     std::to_string(count) + " values, found " +
                                     std::to_string(e.values.size()));
        }
        entries_[name] = std::move(e);
    }
}

const Golden::Entry& Golden::find(const std::string& name, std::size_t rank) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) throw std::runtime_error(path_ + ": no tensor named " + name);
    if (it->second.shape.size() != rank) {
        throw std::runtime_error(path_ + ": tensor " + name + " has shape " +
                                 wb::shape_str(it->second.shape) + ", not rank " +
                                 std::to_string(rank));
    }
    return it->second;
}

float Golden::scalar(const std::string& name) const { return find(name, 0).values.at(0); }

std::string Golden::meta(const std::string& key) const {
    auto it = meta_.find(key);
    return it == meta_.end() ? "" : it->second;
}

std::string golden_path(const std::string& relative_path) {
    return std::string(WB_GOLDEN_DIR) + "/" + relative_path;
}

}  // namespace wbtest
