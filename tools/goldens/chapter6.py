"""Goldens of chapter 6 (masks): the masks and masked attention, computed by PyTorch.

Run with Debian's PyTorch:  /usr/bin/python3 tools/goldens/chapter6.py
Writes tests/goldens/6-masks/*.txt (format: tests/goldens/README.md).

The masks are built the PyTorch way, as in the notes' §21.5: `torch.triu(ones, diagonal=1)`
marks the future and `masked_fill(mask, -inf)` hides the entries where the mask is TRUE. So the
files hold both conventions, as 0/1:
  forbidden  true = hidden (torch's masked_fill convention)
  allowed    true = may read (wb::Mask's convention) = NOT forbidden
The checks compare wb's masks with `allowed`, and wb::sdpa run with wb's masks with the
weights and outputs below.
"""

import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import golden_io  # noqa: E402

SCRIPT = "chapter6.py"


def masked_attention(q, k, v, forbidden):
    """softmax(q kᵀ / sqrt(d_k) with forbidden entries set to -inf) v, as in §21.5.

    q [B, H, N, d_k], k [B, H, M, d_k], v [B, H, M, d_v], forbidden [B, N, M] (true = hidden).
    """
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)          # [B, H, N, M]
    scores = scores.masked_fill(forbidden[:, None], float("-inf"))  # same pattern in every head
    weights = torch.softmax(scores, dim=-1)                     # [B, H, N, M]
    return weights @ v, weights                                 # [B, H, N, d_v], [B, H, N, M]


def causal_padding(seed):
    """A GPT batch: causal AND key padding, T = 5, lengths 5, 3, 1 (no row fully masked)."""
    torch.manual_seed(seed)
    B, H, T, d_k, d_v = 3, 2, 5, 4, 3
    lengths = torch.tensor([5, 3, 1])
    q = torch.randn(B, H, T, d_k)
    k = torch.randn(B, H, T, d_k)
    v = torch.randn(B, H, T, d_v)
    causal_forbidden = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # [T, T]
    key_padding = torch.arange(T)[None, :] >= lengths[:, None]                      # [B, T]
    forbidden = causal_forbidden[None, :, :] | key_padding[:, None, :]             # [B, T, T]
    output, weights = masked_attention(q, k, v, forbidden)
    assert torch.isfinite(output).all() and torch.isfinite(weights).all()
    golden_io.write(
        "6-masks/causal_padding.txt",
        "causal + padding attention, B=3 H=2 T=5 d_k=4 d_v=3, lengths 5 3 1; "
        "forbidden = triu(ones, diagonal=1) | (j >= length), allowed = ~forbidden",
        seed,
        {
            "lengths": lengths,
            "causal_forbidden": causal_forbidden,
            "causal_allowed": ~causal_forbidden,
            "forbidden": forbidden,
            "allowed": ~forbidden,
            "q": q,
            "k": k,
            "v": v,
            "weights": weights,
            "output": output,
        },
        SCRIPT,
    )


def padding_cross(seed):
    """Cross attention with padded keys: N = 3 queries, M = 5 keys, key lengths 5 and 2."""
    torch.manual_seed(seed)
    B, H, N, M, d_k, d_v = 2, 2, 3, 5, 4, 2
    lengths = torch.tensor([5, 2])
    q = torch.randn(B, H, N, d_k)
    k = torch.randn(B, H, M, d_k)
    v = torch.randn(B, H, M, d_v)
    key_padding = torch.arange(M)[None, :] >= lengths[:, None]   # [B, M], true = padded key
    forbidden = key_padding[:, None, :].expand(B, N, M)          # [B, N, M]: keys only
    output, weights = masked_attention(q, k, v, forbidden)
    assert torch.isfinite(output).all() and torch.isfinite(weights).all()
    golden_io.write(
        "6-masks/padding_cross.txt",
        "cross attention with key padding, B=2 H=2 N=3 M=5 d_k=4 d_v=2, key lengths 5 2; "
        "forbidden = (j >= length) for every query, allowed = ~forbidden",
        seed,
        {
            "lengths": lengths,
            "forbidden": forbidden,
            "allowed": ~forbidden,
            "q": q,
            "k": k,
            "v": v,
            "weights": weights,
            "output": output,
        },
        SCRIPT,
    )


if __name__ == "__main__":
    causal_padding(seed=6)
    padding_cross(seed=60)
