// Chapter 1 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in tensors.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter1  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 1  /  tools/workbook watch 1
#include "1-tensors/tensors.hpp"

#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {

Tensor2 last_token(const Tensor3& x) {
    // Spec: tensors.hpp, @throws first. Guide §2 (an integer index drops an axis, a slice keeps
    // it).
    (void)x;
    WB_STUB();
}

Tensor3 last_token_keep(const Tensor3& x) {
    // Spec: tensors.hpp, @throws first. Guide §2.
    (void)x;
    WB_STUB();
}

Tensor3 drop_last_token(const Tensor3& x) {
    // Spec: tensors.hpp, @throws first. Guide §2.
    (void)x;
    WB_STUB();
}

Tensor4 split_heads(const Tensor3& x, std::size_t H) {
    // Spec: tensors.hpp, @throws first. Guide §3 (reshape groups, transpose reorders).
    (void)x, (void)H;
    WB_STUB();
}

Tensor3 merge_heads(const Tensor4& x) {
    // Spec: tensors.hpp, @throws first. Guide §3: the inverse of split_heads.
    (void)x;
    WB_STUB();
}

Tensor4 transpose_last2(const Tensor4& k) {
    // Spec: tensors.hpp, @throws first. Guide §3 (only the last two axes).
    (void)k;
    WB_STUB();
}

float dot(const Tensor1& q, const Tensor1& k) {
    // Spec: tensors.hpp, @throws first. Guide §4.
    (void)q, (void)k;
    WB_STUB();
}

Tensor4 matmul(const Tensor4& a, const Tensor4& b) {
    // Spec: tensors.hpp, @throws first. Guide §4 (`@` on the last two axes, batch axes kept).
    (void)a, (void)b;
    WB_STUB();
}

Array softmax(const Array& x) {
    // Spec: tensors.hpp, @throws first. Guide §5. Mind the keep_dims trap (guide: Toolchain traps).
    (void)x;
    WB_STUB();
}

Array mean(const Array& x, int axis, bool keepdims) {
    // Spec: tensors.hpp, @throws first. Guide §5 (which axis; keepdims).
    (void)x, (void)axis, (void)keepdims;
    WB_STUB();
}

Array var(const Array& x, int axis, int correction, bool keepdims) {
    // Spec: tensors.hpp, @throws first. Guide §5 (the correction).
    (void)x, (void)axis, (void)correction, (void)keepdims;
    WB_STUB();
}

Array cat(const std::vector<Array>& xs, int axis) {
    // Spec: tensors.hpp, @throws first. Guide §6 (cat joins along an existing axis).
    (void)xs, (void)axis;
    WB_STUB();
}

Array stack(const std::vector<Array>& xs, int axis) {
    // Spec: tensors.hpp, @throws first. Guide §6 (stack makes a new axis).
    (void)xs, (void)axis;
    WB_STUB();
}

float max_abs_diff(const Array& a, const Array& b) {
    // Spec: tensors.hpp, @throws first. Guide §7 (a NaN must show up, not disappear).
    (void)a, (void)b;
    WB_STUB();
}

bool allclose(const Array& a, const Array& b, float rtol, float atol) {
    // Spec: tensors.hpp, @throws first. Guide §7 (the tolerance formula; NaN and infinities).
    (void)a, (void)b, (void)rtol, (void)atol;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
