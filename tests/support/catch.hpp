// The one Catch2 include of the checks, for both Catch2 2.13 (Debian 12) and Catch2 3
// (Debian 13, Ubuntu 24.04). CMake defines WB_CATCH2_MAJOR from the version it found.
//
// Catch2 3 split the single header into one per feature and moved Approx into the Catch
// namespace; the checks use the test macros, Approx and generators (GENERATE, range), so
// these are all it needs.
#pragma once

#if WB_CATCH2_MAJOR >= 3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
