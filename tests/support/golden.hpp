// Reference numbers from an independent framework (PyTorch), committed as small text files
// under tests/goldens/ and read by the checks. The scripts in tools/goldens/ regenerate them;
// tests/goldens/README.md states the file format and the tolerance policy.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

#include "workbook/core.hpp"

namespace wbtest {

/// One golden file: named tensors plus the header's metadata (framework, dtype, seed).
class Golden {
  public:
    /// Reads tests/goldens/<relative_path>; throws std::runtime_error naming the file if it
    /// is missing or malformed.
    explicit Golden(const std::string& relative_path);

    /// The tensor called `name`, of rank N; throws if it is absent or of another rank.
    template <std::size_t N>
    xt::xtensor<float, N> tensor(const std::string& name) const {
        const Entry& e = find(name, N);
        typename xt::xtensor<float, N>::shape_type shape;
        std::copy(e.shape.begin(), e.shape.end(), shape.begin());
        xt::xtensor<float, N> t(shape);
        std::copy(e.values.begin(), e.values.end(), t.begin());
        return t;
    }

    /// A scalar stored as a tensor of rank 0.
    float scalar(const std::string& name) const;

    /// The metadata line `# key: value` of the header, or "" if absent.
    std::string meta(const std::string& key) const;

    const std::string& path() const { return path_; }

  private:
    struct Entry {
        wb::Shape shape;
        std::vector<float> values;
    };
    const Entry& find(const std::string& name, std::size_t rank) const;

    std::string path_;
    std::map<std::string, Entry> entries_;
    std::map<std::string, std::string> meta_;
};

/// The path of tests/goldens/<relative_path>, for goldens that are not tensors (chapter 2's
/// GPT-2 token ids).
std::string golden_path(const std::string& relative_path);

/// Tolerance for comparing float32 results with float32 goldens: absolute and relative.
inline constexpr double golden_tolerance = 1e-5;

}  // namespace wbtest
