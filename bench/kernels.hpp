// The kernels a benchmark can time, as plain function pointers: one table for the selected
// implementation (wb::impl) and one for the reference (wb::reference).
#pragma once

#include <cstddef>

#include "workbook/core.hpp"

namespace wbbench {

struct Kernels {
    wb::Array (*softmax)(const wb::Array&);                            ///< chapter 1
    wb::Tensor4 (*matmul)(const wb::Tensor4&, const wb::Tensor4&);     ///< chapter 1
    wb::Tensor4 (*split_heads)(const wb::Tensor3&, std::size_t);       ///< chapter 1
};

const Kernels& kernels_impl();       ///< the selected implementation: yours, or the reference
const Kernels& kernels_reference();  ///< always the reference

}  // namespace wbbench
