// Fills a Kernels table from whichever implementation WB_IMPL names. Compiled twice.
#include "kernels.hpp"

#include "1-tensors/tensors.hpp"

#define WB_GLUE2(a, b) a##b
#define WB_GLUE(a, b) WB_GLUE2(a, b)

namespace wbbench {

const Kernels& WB_GLUE(kernels_, WB_IMPL)() {
    static const Kernels table{&wb::softmax, &wb::matmul, &wb::split_heads};
    return table;
}

}  // namespace wbbench
