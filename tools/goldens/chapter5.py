"""Goldens of chapter 5 (multi-head attention) from torch.nn.MultiheadAttention.

Run with Debian's PyTorch:  /usr/bin/python3 tools/goldens/chapter5.py
Writes tests/goldens/5-mha/{self_bias,cross,causal}.txt (format: tests/goldens/README.md).

Each file holds the inputs, the four projections in PyTorch's [out, in] layout (w_q, w_k, w_v,
w_o and, with bias, b_q, b_k, b_v, b_o), torch's output, the weights of every head
(average_attn_weights=False) and torch's default head-averaged weights (weights_avg).

nn.MultiheadAttention packs W_Q, W_K, W_V into one in_proj_weight [3D, D] = [W_Q; W_K; W_V]
(and in_proj_bias [3D]); out_proj is W_O. Its boolean attn_mask means True = NOT allowed,
the opposite of the workbook's Mask::allowed, so the files store both: `allowed` (ours,
1 = may read) and `torch_attn_mask` (what torch was given, 1 = hidden).
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_io import write  # noqa: E402

SCRIPT = "chapter5.py"


def make_case(name, description, seed, B, N, M, D, H, bias, cross, causal):
    g = torch.Generator().manual_seed(seed)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).to(torch.float32)

    x_q = randn(B, N, D)
    x_kv = randn(B, M, D) if cross else x_q
    s = D ** -0.5  # weights of unit-scale outputs, like nn.Linear's fan-in bound
    w = {k: randn(D, D, scale=s) for k in ("w_q", "w_k", "w_v", "w_o")}
    b = {k: randn(D, scale=0.1) for k in ("b_q", "b_k", "b_v", "b_o")} if bias else {}

    mha = torch.nn.MultiheadAttention(D, H, bias=bias, batch_first=True)
    mha.eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w["w_q"], w["w_k"], w["w_v"]], dim=0))  # [3D, D]
        mha.out_proj.weight.copy_(w["w_o"])
        if bias:
            mha.in_proj_bias.copy_(torch.cat([b["b_q"], b["b_k"], b["b_v"]], dim=0))  # [3D]
            mha.out_proj.bias.copy_(b["b_o"])

    tensors = {"x_q": x_q}
    if cross:
        tensors["x_kv"] = x_kv
    tensors.update(w)
    tensors.update(b)

    attn_mask = None
    if causal:
        # torch: True = query i may NOT read key j (the future, j > i).
        attn_mask = torch.triu(torch.ones(N, M, dtype=torch.bool), diagonal=1)
        tensors["torch_attn_mask"] = attn_mask
        tensors["allowed"] = (~attn_mask).unsqueeze(0)  # ours: [1, N, M], True = may read

    with torch.no_grad():
        out, weights = mha(x_q, x_kv, x_kv, attn_mask=attn_mask, need_weights=True,
                           average_attn_weights=False)  # [B, N, D], [B, H, N, M]
        _, weights_avg = mha(x_q, x_kv, x_kv, attn_mask=attn_mask, need_weights=True)  # [B, N, M]
    tensors["output"] = out
    tensors["weights"] = weights
    tensors["weights_avg"] = weights_avg
    write(f"5-mha/{name}.txt", description, seed, tensors, SCRIPT)


def main():
    torch.set_grad_enabled(False)
    make_case("self_bias", "nn.MultiheadAttention(8, 2, bias=True, batch_first=True): "
              "self attention, B=2 T=4 D=8 H=2 (the example of notes §11)",
              seed=501, B=2, N=4, M=4, D=8, H=2, bias=True, cross=False, causal=False)
    make_case("cross", "nn.MultiheadAttention(8, 4, bias=True, batch_first=True): "
              "cross attention, B=2 N=3 queries, M=5 keys/values, D=8 H=4",
              seed=502, B=2, N=3, M=5, D=8, H=4, bias=True, cross=True, causal=False)
    make_case("causal", "nn.MultiheadAttention(12, 3, bias=False, batch_first=True): "
              "causal self attention, B=2 T=5 D=12 H=3, attn_mask = triu(ones, 1) (True = hidden)",
              seed=503, B=2, N=5, M=5, D=12, H=3, bias=False, cross=False, causal=True)


if __name__ == "__main__":
    main()
