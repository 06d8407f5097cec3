"""Goldens of chapter 7 (the Transformer block) from torch.nn.

Run with Debian's PyTorch:  /usr/bin/python3 tools/goldens/chapter7.py
Writes tests/goldens/7-blocks/{layer_norm,gelu,ffn,block,stack}.txt
(format: tests/goldens/README.md).

- layer_norm: nn.LayerNorm(6) with non-trivial weight (gamma) and bias (beta), eps 1e-5, and
  the same input with eps = 0.1 (output_eps01), so that where eps goes matters.
- gelu: nn.GELU() (exact, erf) and nn.GELU(approximate='tanh') on the same values.
- ffn: nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8)).
- block: one Pre-LN block  y = x + MHA(LN1(x)); z = y + FFN(LN2(y))  written with
  nn.LayerNorm, nn.MultiheadAttention(batch_first=True, causal boolean attn_mask) and the FFN
  above, returning (output, per-head weights); the Post-LN wiring of the same parameters
  (post_output, post_weights). Both are cross-checked against torch's own
  nn.TransformerEncoderLayer(norm_first=True / False, activation='gelu', dropout=0).
- stack: two Pre-LN blocks with different parameters, then a final nn.LayerNorm, the
  ModuleList loop of notes §21.6; cross-checked against nn.TransformerEncoder(..., norm=...).

Parameter names in the files (weights in PyTorch's [out, in] layout):
  ln1_gamma ln1_beta  w_q w_k w_v w_o  b_q b_k b_v b_o  ln2_gamma ln2_beta
  up_w up_b down_w down_b            (prefixed l0_, l1_ in stack.txt, plus final_gamma/beta)
The causal mask is stored both ways: `allowed` (ours, 1 = may read, [1, T, T]) and
`torch_attn_mask` (what nn.MultiheadAttention was given, 1 = hidden, [T, T]).
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_io import write  # noqa: E402

SCRIPT = "chapter7.py"


def randn_fn(seed):
    g = torch.Generator().manual_seed(seed)

    def randn(*shape, scale=1.0, shift=0.0):
        return (torch.randn(*shape, generator=g) * scale + shift).to(torch.float32)

    return randn


class Block(nn.Module):
    """The notes' block: returns (output, weights); pre_ln chooses the wiring."""

    def __init__(self, D, H):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, H, bias=True, batch_first=True)
        self.ln2 = nn.LayerNorm(D)
        self.ffn = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x, attn_mask, pre_ln=True):
        if pre_ln:
            h = self.ln1(x)
            a, w = self.attn(h, h, h, attn_mask=attn_mask, need_weights=True,
                             average_attn_weights=False)
            y = x + a
            return y + self.ffn(self.ln2(y)), w
        a, w = self.attn(x, x, x, attn_mask=attn_mask, need_weights=True,
                         average_attn_weights=False)
        y = self.ln1(x + a)
        return self.ln2(y + self.ffn(y)), w


def random_block(D, H, randn):
    """A Block with random non-trivial parameters, and the tensors to store."""
    blk = Block(D, H).eval()
    t = {
        "ln1_gamma": randn(D, scale=0.2, shift=1.0), "ln1_beta": randn(D, scale=0.1),
        "w_q": randn(D, D, scale=D ** -0.5), "w_k": randn(D, D, scale=D ** -0.5),
        "w_v": randn(D, D, scale=D ** -0.5), "w_o": randn(D, D, scale=D ** -0.5),
        "b_q": randn(D, scale=0.1), "b_k": randn(D, scale=0.1),
        "b_v": randn(D, scale=0.1), "b_o": randn(D, scale=0.1),
        "ln2_gamma": randn(D, scale=0.2, shift=1.0), "ln2_beta": randn(D, scale=0.1),
        "up_w": randn(4 * D, D, scale=D ** -0.5), "up_b": randn(4 * D, scale=0.1),
        "down_w": randn(D, 4 * D, scale=(4 * D) ** -0.5), "down_b": randn(D, scale=0.1),
    }
    load_block(blk, t)
    return blk, t


def load_block(blk, t):
    """Copies the stored tensors into a Block or an nn.TransformerEncoderLayer."""
    with torch.no_grad():
        if isinstance(blk, Block):
            ln1, ln2, attn, up, down = blk.ln1, blk.ln2, blk.attn, blk.ffn[0], blk.ffn[2]
        else:  # nn.TransformerEncoderLayer: norm1, self_attn, norm2, linear1, linear2
            ln1, ln2, attn, up, down = blk.norm1, blk.norm2, blk.self_attn, blk.linear1, blk.linear2
        ln1.weight.copy_(t["ln1_gamma"]); ln1.bias.copy_(t["ln1_beta"])
        ln2.weight.copy_(t["ln2_gamma"]); ln2.bias.copy_(t["ln2_beta"])
        attn.in_proj_weight.copy_(torch.cat([t["w_q"], t["w_k"], t["w_v"]], dim=0))  # [3D, D]
        attn.in_proj_bias.copy_(torch.cat([t["b_q"], t["b_k"], t["b_v"]], dim=0))    # [3D]
        attn.out_proj.weight.copy_(t["w_o"]); attn.out_proj.bias.copy_(t["b_o"])
        up.weight.copy_(t["up_w"]); up.bias.copy_(t["up_b"])
        down.weight.copy_(t["down_w"]); down.bias.copy_(t["down_b"])


def torch_layer(D, H, t, norm_first):
    layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=4 * D, dropout=0.0,
                                       activation="gelu", batch_first=True,
                                       norm_first=norm_first).eval()
    load_block(layer, t)
    return layer


def causal(T):
    forbidden = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = hidden
    return forbidden, (~forbidden).unsqueeze(0)  # torch's attn_mask, ours [1, T, T]


def layer_norm_case():
    seed = 701
    randn = randn_fn(seed)
    # Tokens of different scales and offsets, so that per-token statistics matter.
    x = randn(2, 3, 6) * torch.tensor([0.5, 2.0, 4.0]).view(1, 3, 1) + \
        torch.tensor([1.0, -3.0]).view(2, 1, 1)
    gamma, beta = randn(6, scale=0.5, shift=1.0), randn(6, scale=0.5)
    ln = nn.LayerNorm(6)
    ln01 = nn.LayerNorm(6, eps=0.1)
    with torch.no_grad():
        for m in (ln, ln01):
            m.weight.copy_(gamma)
            m.bias.copy_(beta)
    write("7-blocks/layer_norm.txt",
          "nn.LayerNorm(6) with non-trivial weight (gamma) and bias (beta), x [2, 3, 6]; "
          "output with eps = 1e-5, output_eps01 with eps = 0.1", seed,
          {"x": x, "gamma": gamma, "beta": beta, "output": ln(x), "output_eps01": ln01(x)},
          SCRIPT)


def gelu_case():
    seed = 702
    randn = randn_fn(seed)
    x = torch.cat([torch.linspace(-5.0, 5.0, 21), randn(19, scale=2.0)]).view(1, 4, 10)
    write("7-blocks/gelu.txt",
          "nn.GELU() (exact, erf) and nn.GELU(approximate='tanh') of x [1, 4, 10] "
          "(-5 .. 5 in steps of 0.5, then 19 samples of N(0, 4))", seed,
          {"x": x, "gelu": nn.GELU()(x), "gelu_tanh": nn.GELU(approximate="tanh")(x)}, SCRIPT)


def ffn_case():
    seed = 703
    randn = randn_fn(seed)
    D = 8
    x = randn(2, 3, D)
    f = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
    t = {"up_w": randn(4 * D, D, scale=D ** -0.5), "up_b": randn(4 * D, scale=0.1),
         "down_w": randn(D, 4 * D, scale=(4 * D) ** -0.5), "down_b": randn(D, scale=0.1)}
    with torch.no_grad():
        f[0].weight.copy_(t["up_w"]); f[0].bias.copy_(t["up_b"])
        f[2].weight.copy_(t["down_w"]); f[2].bias.copy_(t["down_b"])
    write("7-blocks/ffn.txt",
          "nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8)) of x [2, 3, 8]", seed,
          {"x": x, **t, "output": f(x)}, SCRIPT)


def block_case():
    seed = 704
    randn = randn_fn(seed)
    B, T, D, H = 2, 5, 8, 2
    x = randn(B, T, D)
    blk, t = random_block(D, H, randn)
    forbidden, allowed = causal(T)
    out, w = blk(x, forbidden, pre_ln=True)
    post_out, post_w = blk(x, forbidden, pre_ln=False)
    # Independent cross-check: torch's own encoder layer with the same parameters.
    for norm_first, expected in ((True, out), (False, post_out)):
        ref = torch_layer(D, H, t, norm_first)(x, src_mask=forbidden)
        diff = (ref - expected).abs().max().item()
        assert diff < 1e-5, f"TransformerEncoderLayer(norm_first={norm_first}) differs by {diff}"
    write("7-blocks/block.txt",
          "one block, D=8 H=2 B=2 T=5, causal: Pre-LN (output, weights) and Post-LN "
          "(post_output, post_weights) of the same parameters; nn.LayerNorm, "
          "nn.MultiheadAttention(batch_first=True), nn.Sequential(Linear(8, 32), GELU(), "
          "Linear(32, 8)); agrees with nn.TransformerEncoderLayer(norm_first=True/False, "
          "activation='gelu', dropout=0)", seed,
          {"x": x, **t, "torch_attn_mask": forbidden, "allowed": allowed,
           "output": out, "weights": w, "post_output": post_out, "post_weights": post_w},
          SCRIPT)


def stack_case():
    seed = 705
    randn = randn_fn(seed)
    B, T, D, H, L = 2, 4, 8, 2, 2
    x = randn(B, T, D)
    blocks, tensors = [], {"x": x}
    for l in range(L):
        blk, t = random_block(D, H, randn)
        blocks.append(blk)
        tensors.update({f"l{l}_{k}": v for k, v in t.items()})
    final = nn.LayerNorm(D)
    final_gamma, final_beta = randn(D, scale=0.2, shift=1.0), randn(D, scale=0.1)
    with torch.no_grad():
        final.weight.copy_(final_gamma)
        final.bias.copy_(final_beta)
    forbidden, allowed = causal(T)
    h, weights = x, []
    for blk in blocks:  # the ModuleList loop of §21.6
        h, w = blk(h, forbidden)
        weights.append(w)
    out = final(h)
    # Cross-check with nn.TransformerEncoder (it deep-copies the layer: load each one).
    enc = nn.TransformerEncoder(torch_layer(D, H, {k[3:]: v for k, v in tensors.items()
                                                    if k.startswith("l0_")}, True),
                                num_layers=L, norm=nn.LayerNorm(D)).eval()
    for l in range(L):
        load_block(enc.layers[l], {k[3:]: v for k, v in tensors.items() if k.startswith(f"l{l}_")})
    with torch.no_grad():
        enc.norm.weight.copy_(final_gamma)
        enc.norm.bias.copy_(final_beta)
    diff = (enc(x, mask=forbidden) - out).abs().max().item()
    assert diff < 1e-5, f"nn.TransformerEncoder differs by {diff}"
    tensors.update({"final_gamma": final_gamma, "final_beta": final_beta,
                    "torch_attn_mask": forbidden, "allowed": allowed,
                    "output": out, "weights_0": weights[0], "weights_1": weights[1]})
    write("7-blocks/stack.txt",
          "two Pre-LN blocks (different parameters, D=8 H=2 B=2 T=4, causal) then a final "
          "nn.LayerNorm; agrees with nn.TransformerEncoder(norm_first layers, norm=LayerNorm)",
          seed, tensors, SCRIPT)


def main():
    torch.set_grad_enabled(False)
    layer_norm_case()
    gelu_case()
    ffn_case()
    block_case()
    stack_case()


if __name__ == "__main__":
    main()
