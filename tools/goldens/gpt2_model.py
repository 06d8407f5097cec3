"""Golden of GPT-2's own forward: a tiny GPT-2 with random weights, in GPT-2's parameter names
and layout, and its logits as GPT-2's code computes them.

Run with Debian's PyTorch:  /usr/bin/python3 tools/goldens/gpt2_model.py
Writes tests/goldens/8-training/gpt2_tiny.txt (format: tests/goldens/README.md) and the tiny
vocabulary of the program's check, tests/goldens/8-training/gpt2_tiny_vocab/{vocab.bpe,
encoder.json}.

The forward is written here from GPT-2's own definition (Hugging Face's modeling_gpt2.py,
OpenAI's gpt-2/src/model.py), in *their* layout, not the workbook's:

    x = wte[ids] + wpe[:T]
    for each block h.l:
        a = ln_1(x);  q | k | v = a @ c_attn.weight + c_attn.bias      (Conv1D: [in, out])
        x = x + merge(causal_softmax(q kᵀ / sqrt(d)) v) @ attn.c_proj.weight + attn.c_proj.bias
        m = ln_2(x);  x = x + gelu_new(m @ c_fc.weight + c_fc.bias) @ mlp.c_proj.weight + …
    logits = ln_f(x) @ wteᵀ                                              (tied output weights)

with gelu_new(x) = 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³))) and LayerNorm ε = 1e-5. The
checks map these names onto wb::GptParams themselves (transposing each Conv1D weight); the
converter tools/convert-gpt2 does the same for the program. The weights are larger than
GPT-2's (std 0.7) so that the GELU's inputs reach the range where the tanh form and the exact
one differ by more than 3e-4: a model that runs the exact GELU misses these logits.
"""

import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import golden_io  # noqa: E402

SCRIPT = "gpt2_model.py"
EPS = 1e-5
V, T_MAX, D, H, L = 13, 16, 8, 2, 2
SEED = 124

# The tiny vocabulary of the program's check: 8 characters, the space (Ġ) and 4 merges, in
# GPT-2's file formats. "Hello world" is He llo Ġw o r l d.
TOKENS = ["H", "e", "l", "o", "\u0120", "w", "r", "d", "!", "ll", "He", "llo", "\u0120w"]
MERGES = [("l", "l"), ("H", "e"), ("ll", "o"), ("\u0120", "w")]
PROMPT = "Hello world"
NEW_TOKENS = 6


def hf_names():
    """GPT-2's parameter names (GPT2LMHeadModel's state dict; lm_head.weight is wte's)."""
    out = ["transformer.wte.weight", "transformer.wpe.weight"]
    for l in range(L):
        p = f"transformer.h.{l}."
        out += [p + n for n in [
            "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
            "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
            "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"]]
    return out + ["transformer.ln_f.weight", "transformer.ln_f.bias"]


def hf_shape(name):
    table = {
        "wte.weight": (V, D), "wpe.weight": (T_MAX, D),
        "attn.c_attn.weight": (D, 3 * D), "attn.c_attn.bias": (3 * D,),
        "attn.c_proj.weight": (D, D), "mlp.c_fc.weight": (D, 4 * D), "mlp.c_fc.bias": (4 * D,),
        "mlp.c_proj.weight": (4 * D, D),
    }
    for suffix, shape in table.items():
        if name.endswith(suffix):
            return shape
    return (D,)  # LayerNorms and the projections' biases


def random_state():
    torch.manual_seed(SEED)
    state = {}
    for name in hf_names():
        shape = hf_shape(name)
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or "ln_f.weight" in name:
            t = 1.0 + 0.2 * torch.randn(shape)
        elif len(shape) == 1:
            t = 0.2 * torch.randn(shape)
        else:
            t = 0.7 * torch.randn(shape)
        state[name] = t
    return state


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def layer_norm(x, s, name):
    return torch.nn.functional.layer_norm(x, (D,), s[name + ".weight"], s[name + ".bias"], EPS)


def gpt2_logits(s, ids, gelu=gelu_new):
    """[B, T] ids -> [B*T, V] logits, GPT-2's forward in GPT-2's layout."""
    B, T = ids.shape
    d = D // H
    x = s["transformer.wte.weight"][ids] + s["transformer.wpe.weight"][:T]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    for l in range(L):
        p = f"transformer.h.{l}."
        a = layer_norm(x, s, p + "ln_1")
        qkv = a @ s[p + "attn.c_attn.weight"] + s[p + "attn.c_attn.bias"]   # [B, T, 3D]
        q, k, v = (t.view(B, T, H, d).transpose(1, 2) for t in qkv.split(D, dim=2))
        w = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        w = torch.softmax(w.masked_fill(future, float("-inf")), dim=-1)
        att = (w @ v).transpose(1, 2).reshape(B, T, D)
        x = x + att @ s[p + "attn.c_proj.weight"] + s[p + "attn.c_proj.bias"]
        m = layer_norm(x, s, p + "ln_2")
        fc = gelu(m @ s[p + "mlp.c_fc.weight"] + s[p + "mlp.c_fc.bias"])
        x = x + fc @ s[p + "mlp.c_proj.weight"] + s[p + "mlp.c_proj.bias"]
    x = layer_norm(x, s, "transformer.ln_f")
    return (x @ s["transformer.wte.weight"].T).reshape(B * T, V)


def bytes_to_unicode():
    """GPT-2's byte -> character map (encoder.py)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def decode(ids):
    back = {c: b for b, c in bytes_to_unicode().items()}
    return bytes(back[c] for i in ids for c in TOKENS[i]).decode("utf-8")


def greedy(s, ids, n):
    ids = list(ids)
    for _ in range(n):
        logits = gpt2_logits(s, torch.tensor([ids]))  # prompt + new tokens fit in T_max
        ids.append(int(logits[-1].argmax()))
    return ids


def main():
    s = random_state()
    ids = torch.randint(0, V, (2, 6), generator=torch.Generator().manual_seed(SEED + 1))
    logits = gpt2_logits(s, ids)
    exact = gpt2_logits(s, ids, gelu=torch.nn.functional.gelu)
    gap = float((logits - exact).abs().max())
    # 10 times the checks' tolerance (about 3e-5 at these logits), so the exact GELU fails them
    assert gap > 3e-4, f"the exact GELU changes the logits by only {gap}: raise the weights"

    prompt = [10, 11, 12, 3, 6, 2, 7]  # He llo Ġw o r l d
    assert len(prompt) + NEW_TOKENS <= T_MAX  # one piece: the program cuts no window
    assert decode(prompt) == PROMPT
    continued = greedy(s, prompt, NEW_TOKENS)
    tensors = {"config": torch.tensor([V, T_MAX, D, H, L]), "inputs": ids, "logits": logits}
    tensors.update(s)
    tensors["prompt"] = torch.tensor(prompt)
    tensors["greedy"] = torch.tensor(continued)
    golden_io.write(
        "8-training/gpt2_tiny.txt",
        f"GPT-2's forward (tanh GELU, tied output weights, Conv1D layout [in, out]): V={V} "
        f"T_max={T_MAX} D={D} H={H} L={L}; logits of inputs [2, 6]; greedy: prompt "
        f"{PROMPT!r} and {NEW_TOKENS} greedy tokens = {decode(continued)!r}",
        SEED, tensors, SCRIPT)
    print(f"greedy text: {decode(continued)!r}; exact GELU moves the logits by {gap:.4f}")

    out = golden_io.GOLDENS / "8-training" / "gpt2_tiny_vocab"
    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.bpe").write_text(
        "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in MERGES), encoding="utf-8")
    (out / "encoder.json").write_text(
        json.dumps({t: i for i, t in enumerate(TOKENS)}, ensure_ascii=False), encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
