// Fills a Kernels table from whichever implementation WB_IMPL names. Compiled twice.
#include "kernels.hpp"

#include "1-tensors/tensors.hpp"
#include "2-embedding/bpe.hpp"
#include "4-sdpa/sdpa.hpp"
#include "5-mha/mha.hpp"
#include "6-masks/masks.hpp"
#include "capstone/attention_kernel.hpp"

#define WB_GLUE2(a, b) a##b
#define WB_GLUE(a, b) WB_GLUE2(a, b)

namespace wbbench {
namespace {

wb::Tensor4 sdpa_output(const wb::Tensor4& q, const wb::Tensor4& k, const wb::Tensor4& v) {
    return wb::sdpa(q, k, v).output;
}

wb::Tensor3 self_attention_output(const wb::Tensor3& x, const std::vector<wb::Tensor2>& w,
                                  std::size_t H) {
    wb::MhaParams p;
    p.H = H;
    p.w_q.weight = w.at(0);
    p.w_k.weight = w.at(1);
    p.w_v.weight = w.at(2);
    p.w_o.weight = w.at(3);
    return wb::self_attention(x, p).output;
}

wb::Tensor4 causal_sdpa_output(const wb::Tensor4& q, const wb::Tensor4& k, const wb::Tensor4& v) {
    return wb::sdpa(q, k, v, wb::causal_mask(q.shape(2))).output;
}

void attention_forward_raw(std::size_t B, std::size_t H, std::size_t T, std::size_t d,
                           const float* q, const float* k, const float* v, float* out, float* lse) {
    wb::attention_forward(wb::AttentionShape{B, H, T, d}, q, k, v, out, lse);
}

void attention_backward_raw(std::size_t B, std::size_t H, std::size_t T, std::size_t d,
                            const float* q, const float* k, const float* v, const float* out,
                            const float* lse, const float* dout, float* dq, float* dk, float* dv) {
    wb::attention_backward(wb::AttentionShape{B, H, T, d}, q, k, v, out, lse, dout, dq, dk, dv);
}

// wb::BpeMerge lives in the implementation's namespace: the table returns plain ids.
std::vector<std::int64_t> bpe_train_flat(const std::string& corpus, std::size_t vocab_size) {
    std::vector<std::int64_t> flat;
    for (const auto& m : wb::bpe_train(corpus, vocab_size)) {
        flat.push_back(m.left);
        flat.push_back(m.right);
    }
    return flat;
}

}  // namespace

const Kernels& WB_GLUE(kernels_, WB_IMPL)() {
    static const Kernels table{&wb::softmax,           &wb::matmul,
                               &wb::split_heads,       &sdpa_output,
                               &self_attention_output, &causal_sdpa_output,
                               &attention_forward_raw, &attention_backward_raw,
                               &wb::init_gpt<float>,   &wb::gpt_logits,
                               &wb::make_kv_cache,     &wb::prefill,
                               &wb::decode_step,       &bpe_train_flat};
    return table;
}

}  // namespace wbbench
