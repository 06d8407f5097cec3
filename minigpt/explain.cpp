// "See inside" a trained mini-GPT: the attention weights and next-token choices of chapter 8's
// forward on a prompt, as one self-contained HTML page and JSON (explain.hpp).
#include "minigpt/explain.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"
#include "minigpt/file_io.hpp"

namespace wb::minigpt {

namespace {

// A float with 9 significant digits: it reads back (in C++, Python or JavaScript) as the same
// float. JSON has no infinity or NaN: those become null.
std::string number(float x) {
    if (!std::isfinite(x)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
    return buf;
}

// A JSON string. '<', '>' and '&' are escaped too, so the JSON can sit inside a <script>.
std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

template <class T, class F>
std::string array(const std::vector<T>& items, F&& each) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ',';
        out += each(items[i]);
    }
    return out + "]";
}

// The page around the data; the script draws everything from the JSON in #data.
const char* const kPageHead = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Inside the mini-GPT</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1250px; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 1.4em; }
.caveat { background: #fff6dd; border-left: 4px solid #e0a800; padding: 0.5em 0.8em; }
.tok { display: inline-block; font-family: monospace; border: 1px solid #bbb; border-radius: 3px;
       padding: 0 3px; margin: 1px; min-width: 0.8em; text-align: center; background: #f6f6f6; }
.tok small { color: #888; font-size: 0.7em; margin-left: 2px; }
.controls label { margin-right: 1.2em; }
.heatmaps { display: flex; flex-wrap: wrap; gap: 14px; }
.heatmap text { font-family: monospace; font-size: 10px; fill: #444; }
.heatmap .cell:hover { stroke: #d00; stroke-width: 1.5; }
table.next { border-collapse: collapse; font-size: 0.9em; }
table.next td, table.next th { border-bottom: 1px solid #ddd; padding: 2px 6px; text-align: left;
                               vertical-align: top; }
.cand { display: inline-block; font-family: monospace; margin-right: 8px; white-space: nowrap; }
.cand .bar { display: inline-block; height: 8px; background: #3b6fb6; margin-right: 3px; }
.cand.greedy { font-weight: bold; }
.cand.actual { outline: 1px dashed #2a2; }
.legend { color: #555; font-size: 0.85em; }
</style>
</head>
<body>
<svg width="0" height="0" style="position:absolute"><defs>
<pattern id="hatch" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
<rect width="4" height="4" fill="#eee"/><line x1="0" y1="0" x2="0" y2="4" stroke="#bbb" stroke-width="2"/>
</pattern></defs></svg>
<h1>Inside the mini-GPT</h1>
<p id="model"></p>
<p class="caveat" id="caveat"><b>Attention weights are not an explanation.</b> They help to
observe how information moves between positions, but they are not a complete causal explanation
of why the model predicts what it predicts: the values, the output projections, the
feed-forward layers and the residual stream all take part.</p>
<h2>The prompt's tokens</h2>
<p id="tokens"></p>
<h2>Attention weights</h2>
<p class="legend">Rows are queries (the position that reads, top to bottom), columns are keys
(the position read, left to right); each row sums to 1. Hatched cells are masked: a key after
its query, which the causal mask hides. Hover a cell for its exact value.</p>
<p class="controls"><label>layer <select id="layer"></select></label>
<label>head <select id="head"></select></label></p>
<div class="heatmaps" id="heatmaps"></div>
<h2>Next-token choices</h2>
<p class="legend">For each position, the distribution of the next token from the stored logits:
<code>p = softmax(z / temperature)</code>, then top-k, then top-p (the smallest set of the most
likely tokens whose mass reaches top-p; ties go to the lower id), renormalised: the rules
of <code>wb::sampling_distribution</code>. This output softmax over the vocabulary is a
different softmax from attention's, which is over positions. <b>Bold</b>: the greedy choice
(the largest logit); dashed: the token that actually follows in the prompt.</p>
<p class="controls">
<label>temperature <input type="range" id="temperature" min="0.05" max="3" step="0.05" value="1">
<output id="temperature-value">1</output></label>
<label>top-k <input type="number" id="top-k" min="0" value="0" style="width:4em"> (0: off)</label>
<label>top-p <input type="range" id="top-p" min="0.05" max="1" step="0.01" value="1">
<output id="top-p-value">1</output></label></p>
<table class="next"><thead><tr><th>position</th><th>token</th><th>next in prompt</th>
<th>greedy</th><th>most likely next tokens (probability)</th></tr></thead>
<tbody id="next"></tbody></table>
<script type="application/json" id="data">)HTML";

const char* const kPageTail = R"HTML(</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const T = D.tokens.length, V = D.config.V, L = D.config.L, H = D.config.H;
const SHOWN = 5;  // candidates per position
const NS = "http://www.w3.org/2000/svg";
const show = s => s === "\n" ? "\u23ce" : s === " " ? "\u2423" : s === "\t" ? "\u21e5" : s;
const $ = id => document.getElementById(id);

function svg(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

$("model").textContent = `V=${V} T_max=${D.config.T_max} D=${D.config.D} H=${H} L=${L} ` +
  `positions ${D.config.positions || "learned"}, ` +
  `trained ${D.step} steps; ${T} tokens read.`;
for (let t = 0; t < T; ++t) {
  const s = document.createElement("span");
  s.className = "tok";
  s.title = `position ${t}, id ${D.tokens[t].id}`;
  s.textContent = show(D.tokens[t].text);
  const n = document.createElement("small");
  n.textContent = t;
  s.appendChild(n);
  $("tokens").appendChild(s);
}

// White (0) to dark blue (1).
function shade(w) {
  const c = (a, b) => Math.round(a + (b - a) * Math.min(1, Math.max(0, w)));
  return `rgb(${c(255, 20)},${c(255, 60)},${c(255, 140)})`;
}

function heatmap(l, h, cell) {
  const margin = cell >= 9 ? 16 : 4, top = 16 + margin, size = cell * T;
  const root = svg("svg", {width: margin + size + 2, height: top + size + 2, class: "heatmap",
                           "data-layer": l, "data-head": h});
  svg("text", {x: 0, y: 11}, root).textContent = `layer ${l}, head ${h}`;
  const w = D.attention[l][h];
  for (let q = 0; q < T; ++q) {
    for (let k = 0; k < T; ++k) {
      const masked = k > q;
      const r = svg("rect", {x: margin + k * cell, y: top + q * cell, width: cell, height: cell,
                             class: masked ? "cell masked" : "cell", "data-q": q, "data-k": k,
                             fill: masked ? "url(#hatch)" : shade(w[q][k])}, root);
      const qs = JSON.stringify(show(D.tokens[q].text)), ks = JSON.stringify(show(D.tokens[k].text));
      if (masked) {
        svg("title", {}, r).textContent = `masked: key ${k} ${ks} comes after query ${q} ${qs}`;
      } else {
        r.setAttribute("data-value", String(w[q][k]));
        svg("title", {}, r).textContent = `query ${q} ${qs} \u2192 key ${k} ${ks}: ${w[q][k]}`;
      }
    }
  }
  if (margin > 4) {
    for (let t = 0; t < T; ++t) {
      svg("text", {x: margin + t * cell + cell / 2 - 3, y: top - 3}, root).textContent = show(D.tokens[t].text);
      svg("text", {x: 2, y: top + t * cell + cell / 2 + 3}, root).textContent = show(D.tokens[t].text);
    }
  }
  return root;
}

function drawAttention() {
  const l = Number($("layer").value), which = $("head").value;
  const heads = which === "all" ? [...Array(H).keys()] : [Number(which)];
  const width = which === "all" ? Math.max(240, 1200 / Math.min(H, 4) - 40) : 640;
  const cell = Math.max(2, Math.min(28, Math.floor(width / T)));
  $("heatmaps").replaceChildren(...heads.map(h => heatmap(l, h, cell)));
}

for (let l = 0; l < L; ++l) $("layer").add(new Option(`${l}`, `${l}`));
$("head").add(new Option("all heads", "all"));
for (let h = 0; h < H; ++h) $("head").add(new Option(`${h}`, `${h}`));
$("layer").addEventListener("change", drawAttention);
$("head").addEventListener("change", drawAttention);

// Chapter 9's wb::sampling_distribution, in doubles like the C++; the options are floats there.
function byProbability(p) {
  return [...p.keys()].sort((a, b) => (p[b] - p[a]) || (a - b));
}
function renormalise(p) {
  let total = 0;
  for (const x of p) total += x;
  for (let i = 0; i < p.length; ++i) p[i] /= total;
}
function distribution(z, temperature, topK, topP) {
  const tau = Math.fround(temperature), pMass = Math.fround(topP), n = z.length;
  let m = -Infinity;
  for (const x of z) m = Math.max(m, x / tau);
  const p = z.map(x => Math.exp(x / tau - m));
  renormalise(p);
  if (topK > 0 && topK < n) {
    const order = byProbability(p);
    for (let r = topK; r < n; ++r) p[order[r]] = 0;
    renormalise(p);
  }
  if (pMass < 1) {
    const order = byProbability(p);
    let cumulative = 0, keep = 0;
    while (keep < n && cumulative < pMass) cumulative += p[order[keep++]];
    for (let r = keep; r < n; ++r) p[order[r]] = 0;
    renormalise(p);
  }
  return p;
}

function drawNext() {
  const temperature = Number($("temperature").value), topP = Number($("top-p").value);
  const topK = Math.max(0, Math.floor(Number($("top-k").value) || 0));
  $("temperature-value").textContent = temperature;
  $("top-p-value").textContent = topP;
  const rows = [];
  for (let t = 0; t < T; ++t) {
    const p = distribution(D.logits[t], temperature, topK, topP);
    const actual = t + 1 < T ? D.tokens[t + 1].id : -1, g = D.greedy[t];
    const tr = document.createElement("tr");
    tr.dataset.pos = t;
    const td = text => { const c = document.createElement("td"); c.textContent = text; tr.appendChild(c); return c; };
    td(t);
    td(show(D.tokens[t].text));
    td(actual >= 0 ? show(D.vocab[actual]) : "\u2014");
    td(`${show(D.vocab[g])} (${p[g].toFixed(3)})`);
    const cands = td("");
    for (const id of byProbability(p).slice(0, SHOWN)) {
      if (p[id] === 0) break;
      const s = document.createElement("span");
      s.className = "cand" + (id === g ? " greedy" : "") + (id === actual ? " actual" : "");
      s.dataset.id = id;
      s.dataset.p = String(p[id]);
      s.title = `id ${id}: ${p[id]}`;
      const bar = document.createElement("span");
      bar.className = "bar";
      bar.style.width = `${Math.round(40 * p[id])}px`;
      s.append(bar, `${show(D.vocab[id])} ${p[id].toFixed(3)}`);
      cands.appendChild(s);
    }
    rows.push(tr);
  }
  $("next").replaceChildren(...rows);
}
for (const id of ["temperature", "top-k", "top-p"]) $(id).addEventListener("input", drawNext);

drawAttention();
drawNext();
document.body.dataset.ready = "1";
</script>
</body>
</html>
)HTML";

}  // namespace

Explanation explain(const Model& model, const std::string& prompt) {
    if (prompt.empty()) {
        throw ValueError("--prompt: the prompt is empty, expected at least one character to read");
    }
    std::vector<std::int64_t> ids;
    try {
        ids = model.tokenizer.encode(prompt);
    } catch (const ValueError& e) {
        throw ValueError(std::string("--prompt: ") + e.what());
    }
    if (!model.variant.is_default()) {  // chapter 8's forward would compute another model
        throw ValueError("wb::minigpt::explain: the model was trained with " +
                         variant_changes(model.variant) +
                         ", expected chapter 8's model: explain reads the attention weights "
                         "with chapter 8's gpt_forward, which builds only that one");
    }
    const GptConfig& config = model.config;
    if (ids.size() > config.T_max) ids.erase(ids.begin(), ids.end() - std::ptrdiff_t(config.T_max));
    const std::size_t T = ids.size(), V = config.V;

    Explanation e;
    e.prompt = model.tokenizer.decode(ids);
    e.step = model.step;
    e.config = config;
    e.ids = ids;
    for (std::size_t v = 0; v < V; ++v)
        e.vocab.push_back(model.tokenizer.decode({std::int64_t(v)}));

    // Chapter 8's forward on one sequence; no target is scored (all equal the ignore index).
    TokenIds inputs = TokenIds::from_shape({1, T});
    TokenIds targets = TokenIds::from_shape({1, T});
    for (std::size_t t = 0; t < T; ++t) {
        inputs(0, t) = ids[t];
        targets(0, t) = -1;
    }
    GptCache<float> cache;
    (void)gpt_forward(model.params, config, inputs, targets, -1, cache);

    e.attention.resize(config.L);
    for (std::size_t l = 0; l < config.L; ++l) {
        const Heads<float>& att = cache.blocks[l].att;  // [1, H, T, T]
        e.attention[l].assign(config.H, std::vector<float>(T * T));
        for (std::size_t h = 0; h < config.H; ++h) {
            for (std::size_t q = 0; q < T; ++q) {
                for (std::size_t k = 0; k < T; ++k) e.attention[l][h][q * T + k] = att(0, h, q, k);
            }
        }
    }
    for (std::size_t t = 0; t < T; ++t) {
        Vec<float> row = Vec<float>::from_shape({V});
        for (std::size_t v = 0; v < V; ++v) row(v) = cache.logits(t, v);
        e.logits.emplace_back(row.begin(), row.end());
        e.greedy.push_back(greedy(row));
    }
    return e;
}

std::string explanation_json(const Explanation& e) {
    const std::size_t T = e.ids.size();
    std::string out = "{\"prompt\":" + quoted(e.prompt) + ",\"step\":" + std::to_string(e.step);
    out += ",\"config\":{\"V\":" + std::to_string(e.config.V) +
           ",\"T_max\":" + std::to_string(e.config.T_max) + ",\"D\":" + std::to_string(e.config.D) +
           ",\"H\":" + std::to_string(e.config.H) + ",\"L\":" + std::to_string(e.config.L) +
           ",\"positions\":\"" + positions_name(e.config.positions) + "\"}";
    out += ",\n\"vocab\":" + array(e.vocab, quoted);
    out += ",\n\"tokens\":[";
    for (std::size_t t = 0; t < T; ++t) {
        if (t > 0) out += ',';
        out += "{\"id\":" + std::to_string(e.ids[t]) +
               ",\"text\":" + quoted(e.vocab[std::size_t(e.ids[t])]) + "}";
    }
    out += "],\n\"attention\":[";
    for (std::size_t l = 0; l < e.attention.size(); ++l) {
        out += l > 0 ? ",\n[" : "\n[";
        for (std::size_t h = 0; h < e.attention[l].size(); ++h) {
            out += h > 0 ? ",[" : "[";
            for (std::size_t q = 0; q < T; ++q) {
                out += q > 0 ? ",[" : "[";
                for (std::size_t k = 0; k < T; ++k) {
                    if (k > 0) out += ',';
                    out += number(e.attention[l][h][q * T + k]);
                }
                out += ']';
            }
            out += ']';
        }
        out += ']';
    }
    out += "],\n\"logits\":[";
    for (std::size_t t = 0; t < T; ++t) {
        out += (t > 0 ? ",\n" : "\n") + array(e.logits[t], number);
    }
    out += "],\n\"greedy\":" + array(e.greedy, [](std::int64_t id) { return std::to_string(id); });
    return out + "}\n";
}

std::string explanation_html(const Explanation& e) {
    return kPageHead + explanation_json(e) + kPageTail;
}

std::string write_explanation(const std::string& html_path, const Explanation& e) {
    const std::string fn = "wb::minigpt::write_explanation";
    std::string json_path = std::filesystem::path(html_path).replace_extension(".json").string();
    if (std::filesystem::path(html_path).filename().empty()) {
        throw ValueError(fn + ": html_path \"" + html_path +
                         "\" names no file, expected a file name such as explain.html");
    }
    if (same_file(html_path, json_path)) {
        throw ValueError(fn + ": html_path " + html_path + " is also where the JSON goes (" +
                         json_path +
                         "), so the JSON would overwrite the page; expected a name "
                         "that does not end in .json, such as explain.html");
    }
    write_file_atomic(fn, html_path, explanation_html(e));
    write_file_atomic(fn, json_path, explanation_json(e));
    return json_path;
}

}  // namespace wb::minigpt
