// The median of a benchmark's timed rounds: what every benchmark here prints, as it is robust
// to the slow rounds of a machine shared with other jobs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace wbbench {

/// The median of `v` (the mean of the two middle values when there is an even number; 0 when
/// there is none).
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

}  // namespace wbbench
