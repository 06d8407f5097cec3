/// @file explain.hpp
/// @brief "See inside" a trained mini-GPT: its attention weights and next-token choices on a
/// prompt, written as one self-contained HTML page and the same data as JSON.
///
/// The numbers come from chapter 8's readable forward (wb::gpt_forward): the attention weights
/// are the `att` tensors its cache keeps for the backward, the logits are its output. The page
/// recomputes the next-token distribution in JavaScript with chapter 9's rules
/// (wb::sampling_distribution: temperature, then top-k, then top-p; ties to the lower id).
///
/// The JSON (and the copy embedded in the page) has this form, every number of a float written
/// with 9 significant digits so that it reads back as the same float:
/// ```
///   { "prompt": "...", "step": 3,
///     "config": {"V": 65, "T_max": 128, "D": 128, "H": 4, "L": 4, "positions": "learned"},
///     "vocab": ["\n", " ", "!", ...],                       V strings, one per id
///     "tokens": [{"id": 20, "text": "H"}, ...],             the T tokens read
///     "attention": [[[[w, ...], ...] ...] ...],             [L][H][T][T], query then key;
///                                                           0 where key > query (masked)
///     "logits": [[z, ...], ...],                            [T][V], row t scores token t + 1
///     "greedy": [id, ...] }                                 [T], the argmax of each row
/// ```
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "minigpt/model_file.hpp"

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// What the page shows, for one prompt of T tokens.
struct Explanation {
    std::string prompt;              ///< the text read (the last T_max characters of --prompt)
    std::int64_t step = 0;           ///< training steps behind the weights
    GptConfig config{};              ///< the model's shape
    std::vector<std::string> vocab;  ///< `[V]` the text of each id
    std::vector<std::int64_t> ids;   ///< `[T]` the prompt's token ids
    /// `[L][H][T·T]` attention weights, row-major: `attention[l][h][q·T + k]` is how much query
    /// position q reads key position k; 0 for k > q (the causal mask)
    std::vector<std::vector<std::vector<float>>> attention;
    std::vector<std::vector<float>> logits;  ///< `[T][V]` row t scores the token after t
    std::vector<std::int64_t> greedy;        ///< `[T]` the argmax of each row (chapter 9's greedy)
};

/// Runs chapter 8's forward on the prompt and keeps what the page shows.
/// @param model the model and its vocabulary
/// @param prompt UTF-8 text of characters in the vocabulary, at least one; only the last
///        T_max characters are read (the model cannot see more)
/// @return the tokens, attention weights, logits and greedy choices
/// @throws ValueError naming "--prompt" if the prompt is empty or has a character outside the
///         vocabulary, or naming wb::minigpt::explain and the switches if the model is not
///         chapter 8's (model.variant is not the default)
Explanation explain(const Model& model, const std::string& prompt);

/// The data as JSON (the form in this file's description).
std::string explanation_json(const Explanation& e);

/// The page: plain HTML, inline SVG heatmaps and a little JavaScript, with the JSON embedded;
/// it needs no network and opens from a file.
std::string explanation_html(const Explanation& e);

/// Writes the page to `html_path` and the JSON beside it (the same path with the extension
/// `.json`), each atomically.
/// @return the path of the JSON file
/// @throws ValueError naming "wb::minigpt::write_explanation" and html_path, before anything
///         is written, if html_path names no file (empty, or ending in `/`) or the JSON's path
///         is html_path itself (a name ending in `.json`: the JSON would overwrite the page)
/// @throws FileError naming the file if either cannot be written
std::string write_explanation(const std::string& html_path, const Explanation& e);

/// @}

}  // namespace wb::minigpt
