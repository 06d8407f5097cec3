// Placeholder: the training step through chapter 8's gpt_forward / gpt_backward.
#include "capstone/minigpt/gpt_train.hpp"

namespace wb::minigpt {

struct GptTrainer::Impl {
    GptConfig config;
    std::size_t batch, seq_len;
    GptCache<float> cache;
    bool has_forward = false;
};

GptTrainer::GptTrainer(const GptConfig& config, std::size_t batch, std::size_t seq_len)
    : impl_(std::make_unique<Impl>()) {
    require_valid_config("wb::minigpt::GptTrainer", config);
    impl_->config = config;
    impl_->batch = batch;
    impl_->seq_len = seq_len;
}
GptTrainer::~GptTrainer() = default;
GptTrainer::GptTrainer(GptTrainer&&) noexcept = default;
GptTrainer& GptTrainer::operator=(GptTrainer&&) noexcept = default;

float GptTrainer::forward(const GptParams<float>& params, const TokenIds& inputs,
                          const TokenIds& targets) {
    const float loss = gpt_forward(params, impl_->config, inputs, targets, -1, impl_->cache);
    impl_->has_forward = true;
    return loss;
}

void GptTrainer::backward(const GptParams<float>& params, GptParams<float>& grads) {
    gpt_backward(params, impl_->config, impl_->cache, grads);
}

const GptConfig& GptTrainer::config() const { return impl_->config; }

}  // namespace wb::minigpt
