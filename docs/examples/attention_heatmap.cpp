// Chapter 6 in a picture: the attention weights of every head of a masked self attention,
// written as an SVG heatmap (query ↓, key →; masked cells grey with a cross).
//
//   attention_heatmap [OUT.svg]        (default: attention_heatmap.svg; --help for the options)
//
// Two sentences of different lengths share a batch; the shorter one is padded. Its weights
// show both masks at once: no query reads a later key (causal), no query reads a <pad> key
// (padding). The model is untrained (random weights): the point is where the zeros are.
#include <cmath>
#include <cstdint>
#include <exception>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "2-embedding/embedding.hpp"
#include "3-positions/positions.hpp"
#include "5-mha/mha.hpp"
#include "6-masks/masks.hpp"
#include "workbook/svg.hpp"

int main(int argc, char** argv) {
    CLI::App app{
        "Draws the attention weights of every head of a masked self attention (chapter "
        "6) as an SVG heatmap: query down, key across, masked cells grey."};
    std::string path = "attention_heatmap.svg";
    app.add_option("out", path, "the SVG file to write")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    try {
        // A toy vocabulary; id 0 is the padding token.
        const std::vector<std::string> vocab = {"<pad>", "the",  "cat",  "sat",   "on",
                                                "mat",   "dogs", "bark", "loudly"};
        const std::size_t V = vocab.size(), D = 16, H = 4, T = 6;
        const wb::TokenIds ids = {{1, 2, 3, 4, 1, 5},   // the cat sat on the mat
                                  {6, 7, 8, 0, 0, 0}};  // dogs bark loudly <pad> <pad> <pad>
        const std::vector<std::size_t> lengths = {6, 3};
        const std::size_t b = 1;  // the padded sentence: both masks are visible

        // Embedding + sinusoidal positions: x [B, T, D]. Random weights attend almost
        // uniformly; a larger input spreads the scores so that the heads differ visibly.
        wb::Tensor3 x = wb::embed(wb::init_embedding(V, D, 1), ids);      // [B, T, D]
        x = wb::add_positions(x, wb::sinusoidal_positions(T, D)) * 3.0f;  // [B, T, D]

        const wb::MhaParams params = wb::init_mha(D, H, false, 7);
        const wb::Mask mask = wb::causal_padding_mask(lengths, T);         // [B, T, T]
        const wb::MhaResult result = wb::self_attention(x, params, mask);  // weights [B, H, T, T]

        std::vector<std::string> labels;
        for (std::size_t t = 0; t < T; ++t)
            labels.push_back(vocab[static_cast<std::size_t>(ids(b, t))]);
        std::vector<wb::svg::Heatmap> panels;
        for (std::size_t h = 0; h < H; ++h) {
            wb::svg::Heatmap panel;
            panel.title = "head " + std::to_string(h);
            panel.rows = panel.cols = T;
            panel.row_labels = panel.col_labels = labels;
            panel.row_axis = "query ↓";
            panel.col_axis = "key →";
            for (std::size_t i = 0; i < T; ++i) {
                for (std::size_t j = 0; j < T; ++j) {
                    // A masked cell has weight exactly 0; -inf marks it as masked in the picture.
                    panel.values.push_back(mask.allowed(b, i, j)
                                               ? static_cast<double>(result.weights(b, h, i, j))
                                               : -std::numeric_limits<double>::infinity());
                }
            }
            panels.push_back(panel);
        }
        wb::svg::write_heatmaps(
            path, "attention weights, causal + padding mask (\"dogs bark loudly\" + 3 <pad>)",
            panels);

        // The same facts in text: each query's weights sum to 1 over the keys it may read.
        for (std::size_t i = 0; i < T; ++i) {
            double sum = 0;
            std::size_t readable = 0;
            for (std::size_t j = 0; j < T; ++j) {
                sum += static_cast<double>(result.weights(b, 0, i, j));
                readable += mask.allowed(b, i, j);
            }
            std::cout << "query " << i << " (" << labels[i] << "): reads " << readable
                      << " keys, weights sum to " << sum << "\n";
        }
        std::cout << "wrote " << path << "\n";
    } catch (const std::exception& e) {
        std::cerr << "attention_heatmap: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
