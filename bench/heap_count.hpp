// Heap accounting for the benchmarks' extra_MiB counter: linking heap_count.cpp into a
// program replaces its operator new and delete with versions that count the bytes in use and
// the most in use since the last reset.
#pragma once

#include <cstddef>

namespace wbbench {

/// Starts a measurement: the peak restarts from the bytes in use now, which are returned.
std::size_t heap_reset_peak();

/// The most bytes in use at once since the last heap_reset_peak().
std::size_t heap_peak();

}  // namespace wbbench
