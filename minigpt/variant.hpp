/// @file variant.hpp
/// @brief The ablation switches of a mini-GPT (docs/experiments.md): the parts of chapter 8's
/// model that the fast engine can take out or move, one switch each.
///
/// The default Variant is chapter 8's model: attention scores scaled by 1/√d, Pre-LN blocks
/// `x + f(LN(x))`, a final LayerNorm before the LM head, and the positions GptConfig names
/// (learned or RoPE). Only the fast engine (GptTrainer, GptDecoder) builds another; the chapters
/// engine refuses one (make_step_engine). The parameters are the same tensors for every variant
/// (a switched-off LayerNorm keeps its unused, untrained weights; a model without positions is
/// stored as RoPE's, which has no position table, and its rotation is off), so the checkpoint's
/// format does not change: the model file records the switches (model_file.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "8-training/model.hpp"

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// What multiplies the attention scores q·k before the softmax.
enum class AttentionScale : std::uint8_t {
    sqrt,  ///< 1/√d, d the head width (chapter 4, "Attention Is All You Need")
    none,  ///< 1: the raw dot products
};

/// Where each block's two LayerNorms sit.
enum class Norm : std::uint8_t {
    pre,   ///< GPT-2: `x + f(LN(x))` for each sublayer f (attention, then FFN)
    post,  ///< the original Transformer: `LN(x + f(x))` (LN1 after attention, LN2 after the FFN)
};

/// The switches of one model; `{}` is chapter 8's model.
struct Variant {
    AttentionScale attention_scale = AttentionScale::sqrt;  ///< --attention-scale sqrt | none
    Norm norm = Norm::pre;                                  ///< --norm pre | post
    bool final_norm = true;  ///< --final-norm on | off: LayerNorm ln_f before lm_head
    /// --positions none: no position information at all, neither the table wpe nor RoPE's
    /// rotation. The GptConfig then says Positions::rope (no wpe rows) and the rotation is off.
    bool no_positions = false;
    /// @return true for chapter 8's model (every switch at its default)
    bool is_default() const {
        return attention_scale == AttentionScale::sqrt && norm == Norm::pre && final_norm &&
               !no_positions;
    }
};

/// @return "sqrt" or "none", as `--attention-scale` spells it
inline const char* attention_scale_name(AttentionScale s) {
    return s == AttentionScale::none ? "none" : "sqrt";
}
/// @return "pre" or "post", as `--norm` spells it
inline const char* norm_name(Norm n) { return n == Norm::post ? "post" : "pre"; }
/// @return "on" or "off", as `--final-norm` spells it
inline const char* final_norm_name(bool on) { return on ? "on" : "off"; }

/// The switches as the program's options spell them:
/// `--attention-scale sqrt --norm pre --final-norm on`, and ` --positions none` after them when
/// that switch is on (otherwise the positions are the GptConfig's, learned or rope).
inline std::string variant_str(const Variant& v) {
    return std::string("--attention-scale ") + attention_scale_name(v.attention_scale) +
           " --norm " + norm_name(v.norm) + " --final-norm " + final_norm_name(v.final_norm) +
           (v.no_positions ? " --positions none" : "");
}

/// The switches that differ from chapter 8's model, as options (`--norm post --final-norm
/// off --positions none`); empty for the default.
inline std::string variant_changes(const Variant& v) {
    std::string out;
    const auto add = [&](const std::string& s) { out += (out.empty() ? "" : " ") + s; };
    if (v.attention_scale != AttentionScale::sqrt) {
        add(std::string("--attention-scale ") + attention_scale_name(v.attention_scale));
    }
    if (v.norm != Norm::pre) add(std::string("--norm ") + norm_name(v.norm));
    if (!v.final_norm) add("--final-norm off");
    if (v.no_positions) add("--positions none");
    return out;
}

/// Refuses a model without positions whose config has learned ones: a model without positions
/// is stored with RoPE's layout (no table wpe) and the rotation off.
/// @param function the caller, named in the message
/// @param config the model's shape
/// @param variant its switches
/// @throws ValueError naming `function` if variant.no_positions and config.positions is not rope
inline void require_positions_fit(const std::string& function, const GptConfig& config,
                                  const Variant& variant) {
    if (variant.no_positions && config.positions != Positions::rope) {
        throw ValueError(function + ": variant --positions none with config positions = " +
                         positions_name(config.positions) +
                         ", expected positions = rope (a model without positions has RoPE's "
                         "layout: no table wpe)");
    }
}

/// @}

}  // namespace wb::minigpt
